"""The service's pages in a real browser (Debian's chromium and chromedriver, as test_leaderboard_browser.py): a
student logs in with a token, uploads through the client (`make upload`'s tools/service.py), and watches the attempt
appear and its result arrive without reloading; the staff's page shows the job; the leaderboard takes in a new
result without a reload. No page logs an error (a refused script or style would). Screenshots at 1280 px and 390 px
land in results/test-artifacts/service-pages/ (PAGES_SCREENSHOTS=DIR puts them elsewhere).

Without chromium the test skips, unless REQUIRE_BROWSER_TESTS is set (CI's .ci/run sets it)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.tests.browser import Browser, find_browser
from grader.tests.pages_client import PageSession
from grader.tests.service_server import REPO, ServiceUnderTest, archive

pytestmark = pytest.mark.slow  # drives Chromium and a service
BROWSER, DRIVER = find_browser()
REQUIRED = os.environ.get("REQUIRE_BROWSER_TESTS", "") not in ("", "0")
SHOTS = Path(os.environ.get("PAGES_SCREENSHOTS") or REPO / "results" / "test-artifacts" / "service-pages")
FAST = {"fill.cu": b"// fake: ok speed=1.5\n", "matmul_fast.cu": b"// fake: ok speed=2\n"}


@pytest.fixture
def service(tmp_path):
    if BROWSER is None or DRIVER is None:
        why = "Chromium and chromedriver are not installed (Debian: chromium chromium-driver; `make deps-browser`)"
        if REQUIRED:
            pytest.fail(f"{why}, and REQUIRE_BROWSER_TESTS is set: the browser test must run here")
        pytest.skip(f"{why}; CI sets REQUIRE_BROWSER_TESTS=1, so there it runs")
    s = ServiceUnderTest(tmp_path / "service", students=["s01", "s02", "s03"], gpus="0", delay=0.05)
    s.start()
    yield s
    s.stop()


def wait_for(browser: Browser, script: str, what: str, timeout: float = 45.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = browser.run(script)
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"{what}: not seen within {timeout:.0f} s; the page says: "
                         + browser.run("return document.body.innerText;")[:1500])


def log_in(browser: Browser, base: str, token: str):
    browser.open(base + "/")
    browser.run("document.getElementById('token').value = arguments[0];", token)
    browser.click("#login")
    wait_for(browser, "return document.querySelector('nav .who') !== null;", "the page after logging in")


def upload(service: ServiceUnderTest, tmp: Path, student: str, files: dict) -> subprocess.Popen:
    """`make upload` in a student's starter folder, as its tools/service.py runs it."""
    starter = tmp / f"starter-{student}"
    (starter / "tools").mkdir(parents=True)
    shutil.copy(REPO / "starter" / "tools" / "service.py", starter / "tools" / "service.py")
    (starter / "service.json").write_text(json.dumps({"url": f"http://127.0.0.1:{service.port}",
                                                    "assignment": "cuda-kernels"}))
    (starter / "submission.tar.gz").write_bytes(archive(files=files))
    env = {**os.environ, "HOME": str(tmp / f"home-{student}"), "GRADER_TOKEN": service.token(student)}
    return subprocess.Popen([sys.executable, "tools/service.py", "upload", "--archive", "submission.tar.gz"],
                            cwd=starter, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def shoot(base: str, cookie: str, paths: dict[str, str]):
    """Each page at 1280 px and as a 390 px phone, logged in with `cookie`."""
    for width, phone in ((1280, False), (390, True)):
        with Browser(BROWSER, DRIVER, width=width, height=900, phone=phone) as browser:
            browser.open(base + "/")
            browser.cdp("Network.setCookie", {"name": "grader_token", "value": cookie, "url": base,
                                              "httpOnly": True, "sameSite": "Strict"})
            for name, path in paths.items():
                browser.open(base + path)
                browser.screenshot(SHOTS / f"{name}-{width}.png")


def test_a_student_watches_an_upload_arrive_and_the_staff_and_the_leaderboard_see_it(service, tmp_path):
    base = f"http://127.0.0.1:{service.port}"
    with Browser(BROWSER, DRIVER, width=1280, height=900, logging=True) as student:
        log_in(student, base, service.token("s01"))
        assert "No upload yet" in student.text("#live")
        student.run("window.notReloaded = true;")  # gone if the page reloads
        client = upload(service, tmp_path, "s01", FAST)
        wait_for(student, "return document.querySelector('#attempts tr[data-job]') !== null;",
                 "the new attempt on the student's page")
        score = wait_for(student, """var row = document.querySelector('#attempts tr[data-job]');
            return row && row.querySelector('.state').textContent === 'done' ? row.querySelector('.score').textContent
                                                                              : null;""",
                         "the attempt's result on the student's page")
        out, _ = client.communicate(timeout=60)
        assert client.returncode == 0, out
        assert student.run("return window.notReloaded === true;"), "the page reloaded to show the result"
        total = score.split("/")[0].strip()
        assert f"{float(total):g}/100" in out.replace(" ", "") or total in out, (score, out)
        student.click("#attempts tr[data-job] a")
        assert "feedback for s01" in student.title()
        assert student.console_errors() == []

    with Browser(BROWSER, DRIVER, width=1280, height=900, logging=True) as staff:
        log_in(staff, base, service.staff)
        assert staff.run("return location.pathname;") == "/staff"
        assert "s01" in staff.text("#students") and "done" in staff.text("#students")
        staff.run("window.notReloaded = true;")
        queued = upload(service, tmp_path, "s02", FAST)
        wait_for(staff, "var t = document.getElementById('students'); return t && t.textContent.indexOf('s02') >= 0;",
                 "the new job on the staff's page")
        assert staff.run("return window.notReloaded === true;"), "the staff's page reloaded to show the job"
        queued.communicate(timeout=60)
        staff.open(base + "/leaderboard")
        before = staff.run("return document.querySelectorAll('#live tbody tr').length;")
        staff.run("window.notReloaded = true;")
        second = upload(service, tmp_path, "s03", {"fill.cu": b"// fake: ok speed=1.5\n",
                                                    "matmul_fast.cu": b"// fake: ok speed=1.6\n"})
        wait_for(staff, f"return document.querySelectorAll('#live tbody tr').length > {before};",
                 "the new result on the live leaderboard", timeout=60)
        assert staff.run("return window.notReloaded === true;"), "the leaderboard reloaded to show the result"
        second.communicate(timeout=60)
        staff.open(base + "/staff/overview")
        assert "class overview" in staff.title()
        assert staff.console_errors() == []
        assert staff.run("return document.cookie;") == ""  # the login's cookie is HttpOnly: no script reads it

    s01, ta = PageSession(service.port), PageSession(service.port)
    s01.login(service.token("s01"))
    ta.login(service.staff)
    job = service.request("GET", "/api/v1/jobs", service.token("s01"))[1]["jobs"][0]["job"]
    shoot(base, s01.cookie.split("=", 1)[1], {"student-attempts": "/me", "student-feedback": f"/me/attempts/{job}"})
    shoot(base, ta.cookie.split("=", 1)[1], {"staff-queue": "/staff", "staff-overview": "/staff/overview",
                                              "leaderboard": "/leaderboard"})
    for name in ("student-attempts", "student-feedback", "staff-queue", "staff-overview", "leaderboard"):
        for width in (1280, 390):
            assert (SHOTS / f"{name}-{width}.png").stat().st_size > 5000, (name, width)
