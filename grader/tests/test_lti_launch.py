"""The service as an LTI 1.3 tool (issue 46, docs/lti.md): a course's LMS launches it and the student or the staff
arrive logged in. The LMS is grader/tests/lti_platform.py, an LTI 1.3 platform built on lti1p3platform (PyPI), a
process of its own on loopback; the service is `bin/grader serve` started the real way (ServiceUnderTest); the
client is `requests`, following the platform's redirects and posting its launch form as a browser would; one
test drives Chromium through the whole launch. Refused: a forged signature, a token for another tool or from
another issuer, an expired token, a replayed launch, another browser's launch, another deployment, a person not
on the roster, and a student who is an Instructor elsewhere in the institution (only the course's role counts).
Grades go back by themselves (Assignment and Grade Services): a student who launched from the graded link and
uploads gets the stored total in the LMS's gradebook, through the platform's token endpoint and score service; a
gradebook that is down gets it on a later try while `bin/grader status` says why; before the hidden-cases date the
LMS gets no score. A student the LMS logged in trades a code from their page for the command line's token. The
roster comes from the LMS's membership service (`bin/grader lti roster`), after which its new student can launch.
(The tests run in this order: the last one changes the roster.)"""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

requests = pytest.importorskip("requests")
pytest.importorskip("jwt")
pytest.importorskip("lti1p3platform")

from grader.cli import main as grader  # noqa: E402
from grader.store.jobs import Jobs  # noqa: E402
from grader.store.store import Store  # noqa: E402
from grader.tests.browser import Browser, find_browser  # noqa: E402
from grader.tests.lti_platform import launch_form  # noqa: E402
from grader.service.lti import passback  # noqa: E402
from grader.tests.service_server import REPO, ServiceUnderTest, archive, free_port  # noqa: E402

pytestmark = pytest.mark.slow  # a service and a platform, each a process
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
LEARNER, INSTRUCTOR = f"{MEMBERSHIP}#Learner", f"{MEMBERSHIP}#Instructor"
INSTITUTION_INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Instructor"
USERS = {"u-alice": {"name": "Alice Adams", "email": "alice@uni.example", "roles": [LEARNER], "sourcedid": "s01"},
         "u-bob": {"name": "Bob Brown", "email": "bob@uni.example",
                   "roles": [LEARNER, INSTITUTION_INSTRUCTOR], "sourcedid": "s02"},
         "u-ta": {"name": "Tara Assistant", "email": "ta@uni.example", "roles": [INSTRUCTOR]},
         "u-eve": {"name": "Eve Outsider", "email": "eve@uni.example", "roles": [LEARNER], "sourcedid": "x99"},
         "u-carol": {"name": "Carol Chen", "email": "carol@uni.example", "roles": [LEARNER], "sourcedid": "s03"}}
CLIENT_ID, DEPLOYMENT = "tool-client-1", "deployment-1"


class Lms:
    """The platform process."""

    def __init__(self, tmp, tool: str):
        self.port = free_port()
        # "localhost", where the service is 127.0.0.1: another site, as an LMS is, so a browser's cookie rules
        # (SameSite) apply to the launch's cross-site requests as they do between Canvas and the service
        self.base = f"http://localhost:{self.port}"
        config = tmp / "platform.json"
        config.write_text(json.dumps({"issuer": self.base, "client_id": CLIENT_ID, "deployment": DEPLOYMENT,
                                      "tool_login_url": f"{tool}/lti/login", "tool_launch_url": f"{tool}/lti/launch",
                                      "tool_jwks_url": f"{tool}/lti/jwks", "users": USERS}))
        self.log = open(tmp / "platform.log", "w")
        self.process = subprocess.Popen([sys.executable, "-m", "grader.tests.lti_platform", str(config),
                                         str(self.port)], cwd=REPO, stdout=self.log, stderr=subprocess.STDOUT,
                                        env={**os.environ, "PYTHONPATH": str(REPO)})
        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(f"{self.base}/jwks", timeout=2)
                break
            except requests.ConnectionError:
                assert self.process.poll() is None and time.monotonic() < deadline, "the platform did not start"
                time.sleep(0.1)

    def stop(self):
        self.process.terminate()
        self.process.wait(10)
        self.log.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lti")
    service = ServiceUnderTest(tmp / "service", students=["s01", "s02"], gpus="0")
    tool = f"http://127.0.0.1:{service.port}"
    lms = Lms(tmp, tool)
    assert grader(["lti", "platform", "--results", str(service.results), "--issuer", lms.base, "--client-id",
                   CLIENT_ID, "--deployment", DEPLOYMENT, "--login-url", f"{lms.base}/authorize", "--jwks-url",
                   f"{lms.base}/jwks", "--token-url", f"{lms.base}/token", "--name", "Test LMS"]) == 0
    service.start()
    yield service, lms, tool
    service.stop()
    lms.stop()


def said(response) -> str:
    """A page's text as a reader sees it (the pages escape what they quote)."""
    return html.unescape(response.text)


def tokens_named_lti(service) -> list:
    store = Store(service.results / "grades.sqlite")
    try:
        return [t for t in Jobs(store).tokens() if "(LTI, " in t.name]
    finally:
        store.close()


def click(lms: Lms, user: str, **extra) -> tuple[requests.Session, str, dict]:
    """The user clicks the assignment in the LMS: the login initiation, the tool's redirect to the platform, the
    platform's launch form; returns the browser (its cookies), the form's action and fields."""
    browser = requests.Session()
    page = browser.get(f"{lms.base}/start", params={"user": user, **extra}, timeout=30)
    assert page.status_code == 200, page.text[:500]
    action, fields = launch_form(page.text)
    return browser, action, fields


def launch(lms: Lms, user: str, **extra) -> tuple[requests.Session, requests.Response]:
    browser, action, fields = click(lms, user, **extra)
    return browser, browser.post(action, data=fields, timeout=30, allow_redirects=False)


def test_a_student_arrives_from_the_lms_on_their_own_page(world):
    service, lms, tool = world
    before = len(tokens_named_lti(service))
    browser, landed = launch(lms, "u-alice")
    assert landed.status_code == 200, landed.text[:800]
    assert 'http-equiv="refresh" content="0; url=/me"' in landed.text and "Alice Adams" in said(landed)
    mine = browser.get(f"{tool}/me", timeout=30)
    assert mine.status_code == 200 and '<span class="who">s01</span>' in mine.text, mine.text[:800]
    assert browser.get(f"{tool}/staff", timeout=30).status_code == 403
    made = tokens_named_lti(service)
    assert len(made) == before + 1 and made[-1].role == "student" and made[-1].student == "s01"
    assert made[-1].name == "Alice Adams (LTI, Test LMS)"
    # the session is the login form's: logging out ends it
    assert "grader_token" in browser.cookies and "grader_lti_state" not in browser.cookies


def test_an_instructor_arrives_on_the_staff_pages(world):
    service, lms, tool = world
    browser, landed = launch(lms, "u-ta")
    assert landed.status_code == 200 and "url=/staff" in said(landed)
    assert browser.get(f"{tool}/staff", timeout=30).status_code == 200


def test_an_instructor_elsewhere_in_the_institution_is_a_student_here(world):
    """Bob is a Learner in this course and an Instructor of the institution: only the course's role counts. A
    role added to the launch form by hand is not read either."""
    service, lms, tool = world
    browser, action, fields = click(lms, "u-bob")
    landed = browser.post(action, data={**fields, "roles": INSTRUCTOR, "role": "staff"}, timeout=30,
                          allow_redirects=False)
    assert landed.status_code == 200 and "url=/me" in said(landed)
    assert browser.get(f"{tool}/staff", timeout=30).status_code == 403
    assert '<span class="who">s02</span>' in browser.get(f"{tool}/me", timeout=30).text


@pytest.mark.parametrize("tamper, words", [
    ("forged", "signature is not one of Test LMS's keys"),
    ("unknown-key", "signed with a key Test LMS does not publish"),
    ("expired", "the id token has expired"),
    ("audience", "is for another tool"),
    ("issuer", "was not issued by"),
    ("deployment", "the deployment 'deployment-9' of Test LMS is not registered"),
])
def test_a_launch_the_platform_did_not_make_for_this_tool_is_refused(world, tamper, words):
    service, lms, tool = world
    before = len(tokens_named_lti(service))
    browser, landed = launch(lms, "u-alice", tamper=tamper)
    assert landed.status_code == 403 and words in said(landed), said(landed)[-800:]
    assert "The LMS's launch was refused" in said(landed) and "Traceback" not in said(landed)
    assert "grader_token" not in browser.cookies and len(tokens_named_lti(service)) == before


def test_a_replayed_launch_is_refused_however_it_is_replayed(world):
    service, lms, tool = world
    browser, action, fields = click(lms, "u-alice")
    assert browser.post(action, data=fields, timeout=30, allow_redirects=False).status_code == 200
    again = browser.post(action, data=fields, timeout=30, allow_redirects=False)
    assert again.status_code == 403 and "unknown, expired or already used" in said(again)
    # the old id token with a fresh login's state: its nonce is not that login's
    fresh, action, new_fields = click(lms, "u-alice")
    swapped = fresh.post(action, data={**new_fields, "id_token": fields["id_token"]}, timeout=30,
                         allow_redirects=False)
    assert swapped.status_code == 403 and "nonce is not the one this login sent" in said(swapped)


def test_a_launch_posted_from_another_browser_is_refused(world):
    """The state binds the launch to the browser that began the login: another browser holding a different
    login's state cookie cannot use this launch."""
    service, lms, tool = world
    _, action, fields = click(lms, "u-alice")
    other, _, _ = click(lms, "u-alice")  # a login of its own: its state cookie is another
    landed = other.post(action, data=fields, timeout=30, allow_redirects=False)
    assert landed.status_code == 403 and "not started in this browser" in said(landed)


def test_another_deployment_and_a_stranger_are_refused(world):
    service, lms, tool = world
    page = requests.get(f"{lms.base}/start", params={"user": "u-alice", "deployment": "deployment-9"}, timeout=30)
    assert page.status_code == 403 and "deployment deployment-9 of Test LMS is not registered" in said(page)
    _, landed = launch(lms, "u-eve")
    assert landed.status_code == 403 and "not on this course's roster" in said(landed) and "x99" in said(landed)


def test_a_login_from_an_unregistered_platform_or_to_another_site_is_refused(world):
    service, lms, tool = world
    stranger = requests.get(f"{tool}/lti/login", params={"iss": "https://lms.example", "login_hint": "x",
                                                          "target_link_uri": f"{tool}/lti/launch"}, timeout=30)
    assert stranger.status_code == 403 and "https://lms.example" in said(stranger)
    assert "not registered" in said(stranger)
    away = requests.get(f"{tool}/lti/login", params={"iss": lms.base, "login_hint": "x", "client_id": CLIENT_ID,
                                                      "target_link_uri": "https://evil.example/lti/launch"},
                        timeout=30, allow_redirects=False)
    assert away.status_code == 400 and "not this service" in said(away)
    empty = requests.post(f"{tool}/lti/launch", data={"state": "x"}, timeout=30)
    assert empty.status_code == 400 and "needs an id_token and a state" in said(empty)


def test_the_tools_key_set_is_what_bin_grader_lti_keys_lists(world, capsys):
    service, lms, tool = world
    published = requests.get(f"{tool}/lti/jwks", timeout=30).json()["keys"]
    assert grader(["lti", "keys", "--results", str(service.results)]) == 0
    listed = capsys.readouterr().out.split()
    assert [k["kid"] for k in published] == listed and all(k["kty"] == "RSA" and "d" not in k for k in published)


def chromium() -> Browser:
    found, driver = find_browser()
    if found is None or driver is None:
        why = "Chromium and chromedriver are not installed (`make deps-browser`)"
        if os.environ.get("REQUIRE_BROWSER_TESTS", "") not in ("", "0"):
            pytest.fail(f"{why}, and REQUIRE_BROWSER_TESTS is set")
        pytest.skip(why)
    return Browser(found, driver)


def wait_until(browser: Browser, script: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while not browser.run(script) and time.monotonic() < deadline:
        time.sleep(0.2)
    return browser.run(script)


def test_a_browser_clicking_the_assignment_lands_on_the_students_page(world):
    service, lms, tool = world
    with chromium() as browser:
        browser.open(f"{lms.base}/start?user=u-alice")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if browser.run("return location.pathname;") == "/me" and browser.run(
                    "return document.querySelector('nav .who') && document.querySelector('nav .who').textContent;"):
                break
            time.sleep(0.2)
        assert browser.run("return location.pathname;") == "/me", browser.run("return document.body.innerText;")
        assert browser.text("nav .who") == "s01"
        browser.click("#make-code")  # the command line's code, from the student's own page
        deadline = time.monotonic() + 30
        while not browser.run("return document.getElementById('command') !== null;") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert re.fullmatch(r"make login CODE=[A-Za-z0-9_-]{16}", browser.text("#command")), browser.text("body")


def lms_scores(lms: Lms, user: str, at_least: int = 1, timeout: float = 60.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        mine = [s for s in requests.get(f"{lms.base}/scores", timeout=10).json() if s["userId"] == user]
        if len(mine) >= at_least:
            return mine
        time.sleep(0.3)
    raise AssertionError(f"no score for {user} reached the LMS within {timeout:.0f} s")


def stored_total(service, student: str) -> tuple[float, float]:
    from grader.core.rubric import load_rubric
    from grader.core.registry import Registry
    from grader.reports.report import grades_table
    store = Store(service.results / "grades.sqlite")
    try:
        table = grades_table(store, load_rubric(service.rubric, Registry.from_file())).set_index("student")
    finally:
        store.close()
    return float(table.loc[student, "total"]), float(table.loc[student, "max_total"])


def status_of(service, capsys) -> str:
    capsys.readouterr()
    assert grader(["status", "--results", str(service.results)]) == 0
    return capsys.readouterr().out


def test_a_students_grade_goes_back_to_the_lms_once_it_is_stored(world, capsys):
    service, lms, tool = world
    launch(lms, "u-alice")
    job = service.upload(service.token("s01"), archive())
    assert service.wait(service.token("s01"), job["job"])["state"] == "done"
    (score,) = lms_scores(lms, "u-alice")
    total, most = stored_total(service, "s01")
    assert score["lineitem"] == "1" and score["gradingProgress"] == "FullyGraded", score
    assert (score["scoreGiven"], score["scoreMaximum"]) == (total, most) and 0 < total <= most
    time.sleep(2 * passback.ROUND_SECONDS + 1)  # the same grade is not sent again
    assert len(lms_scores(lms, "u-alice")) == 1
    # a TA's override changes the total: the LMS gets the new one
    assert grader(["override", "s01", "fill", "1", "--reason", "regraded by hand", "--by", "ta",
                   "--results", str(service.results)]) == 0
    changed = lms_scores(lms, "u-alice", at_least=2)[-1]
    assert changed["scoreGiven"] == stored_total(service, "s01")[0] < total
    told = status_of(service, capsys)  # (Bob may have launched before: with no grade, nothing waits for him)
    assert re.search(r"grades to the LMS \(LTI\): [12] student\(s\), 1 sent\n", told), told


def test_a_gradebook_that_is_down_gets_the_grade_later_and_status_says_why(world, capsys):
    service, lms, tool = world
    requests.post(f"{lms.base}/gradebook", params={"down": "1"}, timeout=10)
    try:
        launch(lms, "u-bob")
        job = service.upload(service.token("s02"), archive())
        assert service.wait(service.token("s02"), job["job"])["state"] == "done"
        deadline = time.monotonic() + 60
        while "s02: " not in (told := status_of(service, capsys)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert "/lineitems/1/scores answered 503: " in told and "the gradebook is down" in told, told
        assert "next try" in told, told
        staff = requests.Session()
        staff.cookies.set("grader_token", service.staff)
        page = html.unescape(staff.get(f"{tool}/staff", timeout=30).text)
        assert 'id="lms-waiting"' in page and "s02" in page and "the gradebook is down" in page, page[-2000:]
    finally:
        requests.post(f"{lms.base}/gradebook", params={"down": "0"}, timeout=10)
    (score,) = lms_scores(lms, "u-bob", timeout=60)  # the next try, 10 s after the first
    assert score["scoreGiven"] == stored_total(service, "s02")[0]
    assert "s02: " not in status_of(service, capsys)


def test_before_the_hidden_date_the_lms_gets_no_score_and_after_it_the_total(world, registry, tmp_path):
    """What the LMS shows students is theirs to read: a total would tell how the hidden cases went."""
    from grader.tests.test_hidden_cases import AFTER, BEFORE, rubric_from, rubric_text
    service, lms, tool = world
    hiding = rubric_from(tmp_path, registry, rubric_text())
    store = Store(service.results / "grades.sqlite")
    try:
        before, after = (passback.current_scores(store, hiding, when) for when in (BEFORE, AFTER))
    finally:
        store.close()
    assert before["s01"] == {"activityProgress": "Completed", "gradingProgress": "Pending",
                             "comment": "The points are withheld until 2026-12-11 23:59 UTC: the assignment has "
                                        "hidden cases."}
    assert after["s01"]["gradingProgress"] == "FullyGraded" and after["s01"]["scoreGiven"] > 0


def test_a_student_from_the_lms_makes_a_code_and_make_login_trades_it_once_for_a_token(world, tmp_path):
    """No token file for a student the LMS logged in: their page gives a one-time code, the command line (`make
    login CODE=...`, starter/Makefile's rule as written) trades it for a token of its own, which uploads."""
    service, lms, tool = world
    browser, _ = launch(lms, "u-alice")
    assert browser.post(f"{tool}/me/login-code", timeout=30, headers={"Origin": "https://evil.example"}).status_code == 403
    page = browser.post(f"{tool}/me/login-code", timeout=30, headers={"Origin": tool})
    code = re.search(r"make login CODE=([A-Za-z0-9_-]+)", page.text).group(1)
    starter = tmp_path / "starter"
    (starter / "tools").mkdir(parents=True)
    shutil.copy(REPO / "starter" / "tools" / "service.py", starter / "tools")
    shutil.copy(REPO / "starter" / "Makefile", starter / "Makefile")
    (starter / "service.json").write_text(json.dumps({"url": tool, "assignment": "cuda-kernels"}))
    env = {**{k: v for k, v in os.environ.items() if k != "GRADER_TOKEN"}, "HOME": str(tmp_path / "home")}
    done = subprocess.run(["make", "-s", "login", f"CODE={code}"], cwd=starter, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and "logged in as s01" in done.stdout, done.stdout + done.stderr
    kept = (tmp_path / "home" / ".config" / "cuda-kernels" / "token").read_text().strip()
    assert kept.startswith("gs_") and service.upload(kept, archive())["job"]
    again = subprocess.run(["make", "-s", "login", f"CODE={code}"], cwd=starter, env=env, capture_output=True,
                           text=True, timeout=60)
    lines = [line for line in again.stderr.splitlines() if not re.match(r"make(\[\d+\])?: \*\*\*", line)]
    assert again.returncode != 0 and lines == ['make login: that code is unknown, expired or already used: make a new '
                                               'one on your page of the grading service ("A code for make login")'], \
        again.stderr


def test_the_roster_comes_from_the_lms_and_its_new_student_then_gets_in(world, capsys):
    service, lms, tool = world
    _, refused = launch(lms, "u-carol")
    assert refused.status_code == 403 and "not on this course's roster" in said(refused)
    launch(lms, "u-ta")  # a launch names the course's membership service
    capsys.readouterr()
    assert grader(["lti", "roster", "--results", str(service.results)]) == 0
    assert "Test LMS: GPU programming: 4 students\n" in capsys.readouterr().out  # the Learners; not the TA
    store = Store(service.results / "grades.sqlite")
    try:
        roster = {r.student: json.loads(r.keys) for r in store.roster().itertuples()}
    finally:
        store.close()
    assert sorted(roster) == ["s01", "s02", "s03", "x99"]
    assert roster["s03"] == ["s03", "carol@uni.example", "u-carol"]
    browser, landed = launch(lms, "u-carol")
    assert landed.status_code == 200 and '<span class="who">s03</span>' in browser.get(f"{tool}/me", timeout=30).text


def test_a_roster_asked_for_before_any_course_launched_is_refused_in_one_line(tmp_path, capsys):
    assert grader(["lti", "roster", "--results", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == ("grader: the roster was not read from the LMS: no course has launched this service yet: the "
                   "roster comes from a course once someone (an instructor, say) has opened the service from it; "
                   "the stored roster is as it was"), err


def test_an_instructor_adds_the_assignment_by_deep_linking_and_the_lms_takes_the_signed_answer(world):
    service, lms, tool = world
    browser, action, fields = click(lms, "u-ta", deep="1")
    page = browser.post(action, data=fields, timeout=30, allow_redirects=False)
    assert page.status_code == 200, said(page)[-800:]
    back, answer = launch_form(page.text)
    answer = answer["JWT"]
    assert back == f"{lms.base}/deeplink-return"
    assert f"form-action 'self' {lms.base}" in page.headers["Content-Security-Policy"]
    taken = requests.post(back, data={"JWT": answer}, timeout=30)
    assert taken.status_code == 200 and "Added CUDA kernels." in taken.text, taken.text
    (item,) = requests.get(f"{lms.base}/links", timeout=30).json()
    assert item["type"] == "ltiResourceLink" and item["url"] == f"{tool}/lti/launch"
    assert item["lineItem"]["scoreMaximum"] == 100.0 and item["window"] == {"targetName": "_blank"}


def test_a_student_cannot_add_the_assignment(world):
    service, lms, tool = world
    _, landed = launch(lms, "u-alice", deep="1")
    assert landed.status_code == 403 and "adding the assignment to a course is for its instructors" in said(landed)


def test_in_a_browser_the_instructors_click_sends_the_answer_to_the_lms(world):
    """The answer's form posts to the LMS's site: the page's Content-Security-Policy must let it, in a browser."""
    service, lms, tool = world
    with chromium() as browser:
        browser.open(f"{lms.base}/start?user=u-ta&deep=1")
        assert wait_until(browser, "return document.getElementById('add') !== null;"), browser.text("body")
        browser.click("#add")
        assert wait_until(browser, "return document.getElementById('added') !== null;"), browser.text("body")
        assert browser.text("#added") == "Added CUDA kernels."
