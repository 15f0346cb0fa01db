"""The service's pages over real HTTP on loopback (`bin/grader serve` with the simulated GPUs): who may read what,
the cookie and the Content-Security-Policy, escaping of what students control, the live pages' ETags, and the
staff's re-queue and cancel. tests/test_service_pages_browser.py drives the same pages in a real browser."""
from __future__ import annotations

import base64
import hashlib
import re
import time
from html import unescape

import pytest

from grader.cli import main as grader
from grader.reports.page import TEMPLATES
from grader.tests.pages_client import PageSession
from grader.tests.service_server import ServiceUnderTest, archive

FAST = {"fill.cu": b"// fake: ok speed=1.5\n", "matmul_fast.cu": b"// fake: ok speed=2\n"}
HOSTILE = '<img src=x onerror="alert(1)">'


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    s = ServiceUnderTest(tmp_path_factory.mktemp("pages"), students=["s01", "s02", "s03", "s04"], gpus="0",
                         delay=0.001)
    s.start()
    yield s
    s.stop()


def logged_in(service, token: str) -> PageSession:
    session = PageSession(service.port)
    status, _, headers = session.login(token)
    assert status == 303 and headers["location"] == "/", (status, headers)
    return session


def graded(service, student: str, files: dict) -> int:
    job = service.upload(service.token(student), archive(files=files))
    done = service.wait(service.token(student), job["job"])
    assert done["state"] == "done", done
    return job["job"]


def visible_text(html: str) -> str:
    html = re.sub(r"<(style|script)>.*?</\1>", "", html, flags=re.S)
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)))


def test_a_login_sets_a_cookie_no_script_or_other_site_can_use_and_a_wrong_token_gets_one_line(service):
    session = PageSession(service.port)
    status, body, headers = session.login("not-a-token")
    assert status == 401 and "set-cookie" not in headers
    assert "That token is not one the service knows" in visible_text(body)
    status, _, headers = session.login(service.token("s01"))
    cookie = headers["set-cookie"].lower()
    assert status == 303 and "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
    assert session.get("/")[2]["location"] == "/me"
    assert session.get("/me")[0] == 200
    session.post("/logout", {})
    session.cookie = ""
    assert session.get("/me")[0] == 401


def test_the_gradescope_token_and_a_revoked_token_cannot_log_in(service):
    status, body, _ = PageSession(service.port).login(service.assignment)
    assert status == 403 and "Gradescope token" in body
    s03 = logged_in(service, service.token("s03"))
    assert grader(["tokens", "--results", str(service.results), "--revoke", "s03"]) == 0
    status, body, _ = s03.get("/me")  # the cookie of a revoked token counts no more
    assert status == 401 and "no longer valid" in visible_text(body)


def test_a_student_reads_only_their_own_pages_and_staff_pages_need_the_staff_token(service):
    theirs = graded(service, "s02", FAST)
    mine = graded(service, "s01", FAST)
    s01 = logged_in(service, service.token("s01"))
    assert s01.get(f"/me/attempts/{mine}")[0] == 200
    status, body, _ = s01.get(f"/me/attempts/{theirs}")
    assert status == 404 and "s02" not in visible_text(body)  # another's attempt is not confirmed to exist
    for path in ("/staff", "/staff/overview", "/staff/students/s02", f"/staff/jobs/{theirs}",
                 "/staff/feedback/s02.html"):
        status, body, _ = s01.get(path)
        assert status == 403 and "for the course staff" in visible_text(body), path
    anonymous = PageSession(service.port)
    for path in ("/me", f"/me/attempts/{mine}", "/staff", "/staff/overview", "/leaderboard"):
        status, body, _ = anonymous.get(path)
        assert status == 401 and 'name="token"' in body, path  # the login form, nothing else
    staff = logged_in(service, service.staff)
    for path in ("/staff", "/staff/overview", "/staff/students/s02", f"/staff/jobs/{theirs}",
                 "/staff/feedback/s02.html", "/leaderboard"):
        assert staff.get(path)[0] == 200, path


def test_a_students_page_names_each_upload_as_the_client_and_the_api_do(service):
    """One name for an upload wherever its student looks: "upload #N", N their own count; the job id is for tools
    (the staff's pages show it, labelled)."""
    job = graded(service, "s04", FAST)
    view = service.job(service.token("s04"), job)
    s04 = logged_in(service, service.token("s04"))
    page = visible_text(s04.get("/me")[1])
    assert "Your uploads" in page and f"{view['name']} " in page and "attempt" not in page.lower(), page
    limits = service.request("GET", "/api/v1/limits", service.token("s04"))[1]
    line = limits["upload_line"]
    assert f"{line[:1].upper()}{line[1:]}." in page  # the words make history prints
    status, body, _ = s04.get("/me/attempts/999999")
    assert status == 404 and visible_text(body).count("No upload of yours is at this address") == 1
    staff = visible_text(logged_in(service, service.staff).get("/staff/students/s04")[1])
    assert f"{view['name']} job id {job}" in staff, staff


def test_every_page_carries_a_policy_that_allows_only_its_own_style_and_script_by_hash(service):
    job = graded(service, "s01", FAST)
    s01, staff = logged_in(service, service.token("s01")), logged_in(service, service.staff)
    pages = [(s01, "/me"), (s01, f"/me/attempts/{job}"), (s01, "/leaderboard"), (staff, "/staff"),
             (staff, "/staff/overview"), (PageSession(service.port), "/")]
    for session, path in pages:
        status, body, headers = session.get(path)
        policy = headers["content-security-policy"]
        assert status == 200 and "unsafe-inline" not in policy and "frame-ancestors 'none'" in policy, path
        assert "default-src 'none'" in policy and headers["x-content-type-options"] == "nosniff", path
        for tag in ("style", "script"):
            for inline in re.findall(rf"<{tag}>(.*?)</{tag}>", body, flags=re.S):
                digest = base64.b64encode(hashlib.sha256(inline.encode()).digest()).decode()
                assert f"'sha256-{digest}'" in policy, (path, tag)
        assert "connect-src 'self'" in policy or "connect-src" not in policy, path


def test_what_a_student_controls_is_escaped_on_every_page(service):
    nickname = {"nickname.txt": HOSTILE.encode() + b"\n"}
    job = graded(service, "s02", {**FAST, **nickname})
    staff = logged_in(service, service.staff)
    board = staff.get("/leaderboard")[1]
    assert "&lt;img src=x onerror=" in board and "<img src=x" not in board
    for path in ("/staff", "/staff/students/s02", f"/staff/jobs/{job}", "/staff/overview"):
        body = staff.get(path)[1]
        assert "<img src=x" not in body and "<script>alert" not in body, path


def asked_again(client, path: str) -> tuple[str, str, int]:
    """A page, then the same page asked for with its ETag: (the body, the tag, the second answer's status). A
    page's version turns each minute (its HHMM): a minute that began between the two asks them once more."""
    for _ in range(2):
        _, body, headers = client.get(path)
        tag = headers["etag"]
        status, _, again = client.get(path, {"If-None-Match": tag})
        if status == 304 or again["etag"][-5:] == tag[-5:]:
            break
    return body, tag, status


def test_a_live_page_answers_304_until_what_it_shows_changes(service):
    s01 = logged_in(service, service.token("s01"))
    body, tag, status = asked_again(s01, "/me")
    assert f'data-version="{tag.strip(chr(34))}"' in body  # what live.js compares
    assert status == 304
    graded(service, "s02", FAST)  # another student's result: not on s01's page
    status, _, again = s01.get("/me", {"If-None-Match": tag})
    assert status == 304 or again["etag"][-5:] != tag[-5:]  # unchanged, unless a new minute began (its HHMM)
    job = graded(service, "s01", FAST)
    status, body, headers = s01.get("/me", {"If-None-Match": tag})
    assert status == 200 and headers["etag"] != tag and f'data-job="{job}"' in body
    assert asked_again(s01, "/leaderboard")[2] == 304


@pytest.mark.slow  # a service of its own, with a GPU that fails
def test_staff_cancel_and_requeue_a_job_from_the_page_and_the_page_says_who(tmp_path):
    service = ServiceUnderTest(tmp_path, students=["s01", "s02"], gpus="0", delay=0.001, drain=1)
    service.start()
    try:
        (service.broken / "0").touch()  # the only GPU fails at its first job: both jobs stay in the queue
        first = service.upload(service.token("s01"), archive(files=FAST))["job"]
        waiting = service.upload(service.token("s02"), archive(files=FAST))["job"]
        deadline = time.monotonic() + 30
        while service.status()["workers"][0]["state"] != "failed" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert service.job(service.token("s01"), first)["state"] == "queued"
        staff = logged_in(service, service.staff)
        status, _, _ = staff.post(f"/staff/jobs/{waiting}/cancel", {"reason": "x"}, origin="http://evil.example")
        assert status == 403 and service.job(service.token("s02"), waiting)["state"] == "queued"
        status, _, headers = staff.post(f"/staff/jobs/{waiting}/cancel", {"reason": "uploaded by mistake"})
        assert status == 303 and headers["location"] == "/staff"
        assert service.job(service.token("s02"), waiting)["state"] == "cancelled"
        assert staff.post(f"/staff/jobs/{waiting}/requeue", {"reason": "asked again"})[0] == 303
        assert service.job(service.token("s02"), waiting)["state"] == "queued"
        assert staff.post(f"/staff/jobs/{first}/cancel", {"reason": "its GPU failed"})[0] == 303
        assert service.job(service.token("s01"), first)["state"] == "cancelled"
        status, body, _ = staff.post(f"/staff/jobs/{first}/cancel", {})
        assert status == 409 and "only a job that is queued or running can be cancelled" in visible_text(body)
        actions = re.findall(r"<tr><td>[^<]*</td><td>([^<]*)</td><td>([^<]*)</td><td>(\d+)</td><td>([^<]*)</td>"
                             r"<td>([^<]*)</td></tr>", staff.get("/staff")[1])
        assert actions == [("ta", "cancel", str(first), "queued", "its GPU failed"),
                           ("ta", "requeue", str(waiting), "cancelled", "asked again"),
                           ("ta", "cancel", str(waiting), "queued", "uploaded by mistake")], actions
        s01 = logged_in(service, service.token("s01"))
        assert "cancelled by ta: its GPU failed" in visible_text(s01.get("/me")[1])
        assert "failed" in visible_text(staff.get("/staff")[1])  # the worker whose GPU failed, for the staff
    finally:
        service.stop()


def test_the_pages_style_and_scripts_are_files_of_the_templates_folder():
    for name in ("service.css", "live.js", "feedback.css", "overview.css", "leaderboard.css", "leaderboard.js"):
        assert (TEMPLATES / name).is_file(), name


@pytest.mark.slow  # a service of its own, grading slowly on purpose
def test_a_running_job_the_staff_cancel_stops_being_graded_and_its_worker_takes_the_next(tmp_path):
    service = ServiceUnderTest(tmp_path, students=["s01", "s02"], gpus="0", delay=0.2, drain=1)
    service.start()
    try:
        long = service.upload(service.token("s01"), archive())["job"]  # every case 0.2 s: well over 20 s
        deadline = time.monotonic() + 30
        while (service.job(service.token("s01"), long)["progress"] or {}).get("done", 0) < 2 and \
                time.monotonic() < deadline:
            time.sleep(0.1)
        staff = logged_in(service, service.staff)
        assert staff.post(f"/staff/jobs/{long}/cancel", {"reason": "wrong file"})[0] == 303
        deadline = time.monotonic() + 5  # a case or two, not the twenty-odd seconds of the cases left
        while "stopped grading it" not in service.log() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert f"job {long} (s01) was taken from this worker while graded; stopped grading it" in service.log()
        assert service.job(service.token("s01"), long)["state"] == "cancelled"
        nxt = service.upload(service.token("s02"), archive(files=FAST))["job"]
        assert service.wait(service.token("s02"), nxt, timeout=90)["state"] == "done"  # the worker goes on
    finally:
        service.stop()


def test_a_form_that_is_too_big_or_names_no_action_is_refused_in_one_line(service):
    staff = logged_in(service, service.staff)
    status, body, _ = staff.post("/staff/jobs/1/delete", {})
    assert status == 404 and "No action 'delete'" in visible_text(body)
    status, body, _ = staff.post("/login", {"token": "x" * 10_000})
    assert status == 413 and "at most 4096 bytes" in visible_text(body)
    assert staff.get("/staff")[0] == 200  # the staff's login is untouched


@pytest.mark.slow  # a service of its own, with hidden cases
def test_hidden_cases_are_counted_not_shown_on_the_students_pages_and_shown_to_the_staff(tmp_path):
    from grader.tests.test_hidden_cases import rubric_text
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(rubric_text(section='\n[hidden]\nuntil = "2099-01-01T00:00:00+00:00"\n'))
    service = ServiceUnderTest(tmp_path / "s", students=["s01"], gpus="0", delay=0.001, rubric=rubric)
    service.start()
    try:
        job = graded(service, "s01", {**FAST, "dot.cu": b"// fake: ok speed=1.2\n"})
        s01 = logged_in(service, service.token("s01"))
        page = visible_text(s01.get("/me")[1])
        assert "2 hidden cases: graded with every upload" in page and "2099-01-01" in page, page
        cells = re.findall(r'<td class="num wide">(.*?)</td>', s01.get("/me")[1])
        tasks = re.findall(r'<th class="num wide">(.*?)</th>', s01.get("/me")[1])
        shown = dict(zip(tasks, cells))
        assert "hidden" in shown["matmul_fast"] and "hidden" in shown["dot"] and "hidden" not in shown["fill"]
        assert "withheld" in visible_text(s01.get(f"/me/attempts/{job}")[1])
        staff = logged_in(service, service.staff)
        staff_page = staff.get("/staff/students/s01")[1]
        staff_cells = dict(zip(tasks, re.findall(r'<td class="num wide">(.*?)</td>', staff_page)))
        assert "hidden" not in staff_cells["matmul_fast"] and float(staff_cells["dot"]) > 0
    finally:
        service.stop()


@pytest.mark.slow  # a service of its own
def test_serve_leaderboard_ranked_only_leaves_the_unranked_off_the_live_leaderboard(tmp_path):
    service = ServiceUnderTest(tmp_path, students=["s01", "s02"], gpus="0", delay=0.001,
                               serve_args=["--leaderboard-ranked-only"])
    service.start()
    try:
        graded(service, "s01", FAST)
        graded(service, "s02", {"fill.cu": b"// fake: ok speed=1.5\n"})  # no matmul_fast: not ranked
        board = visible_text(logged_in(service, service.staff).get("/leaderboard")[1])
        assert "Not ranked" not in board and "no matmul_fast.cu" not in board, board
    finally:
        service.stop()
    shown = ServiceUnderTest(tmp_path / "all", students=["s01", "s02"], gpus="0", delay=0.001)
    shown.start()
    try:
        graded(shown, "s02", {"fill.cu": b"// fake: ok speed=1.5\n"})
        assert "Not ranked" in visible_text(logged_in(shown, shown.staff).get("/leaderboard")[1])
    finally:
        shown.stop()
