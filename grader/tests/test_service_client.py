"""The student's client of the grading service (starter/tools/service.py), run as a student runs it, against a
canned service (canned_service.py) that answers as service-api.md says the real one does."""
from __future__ import annotations

import io
import os
import re
import shutil
import stat
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from grader.tests.canned_service import CLIENT, CannedService, closed_port, job, load_client, running

service_py = load_client()
TOKEN = "student-token-0123456789"
ARCHIVE = b"\x1f\x8b not really gzip, the client sends the bytes as they are"


@pytest.fixture
def starter(tmp_path) -> Path:
    """A student's starter/ with the client, and a HOME of its own."""
    folder = tmp_path / "starter"
    (folder / "tools").mkdir(parents=True)
    shutil.copy(CLIENT, folder / "tools" / "service.py")
    (folder / "submission.tar.gz").write_bytes(ARCHIVE)
    (tmp_path / "home").mkdir()
    return folder


def configure(starter: Path, url: str) -> None:
    (starter / "service.json").write_text(f'{{"url": "{url}", "assignment": "cuda-kernels"}}\n')


def client(starter: Path, *args: str, token: str | None = TOKEN) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "GRADER_TOKEN"}
    env["HOME"] = str(starter.parent / "home")
    if token is not None:
        env["GRADER_TOKEN"] = token
    return subprocess.run([sys.executable, "tools/service.py", *args], cwd=starter, env=env, capture_output=True,
                          text=True, timeout=60)


def one_line_error(done: subprocess.CompletedProcess, status: int = 1) -> str:
    assert done.returncode == status, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    return done.stderr.strip()


@pytest.fixture
def service():
    with running(CannedService()) as canned:
        yield canned


def test_upload_sends_the_archive_with_the_token_and_a_fresh_upload_id(starter, service):
    configure(starter, service.url)
    service.reply("POST /api/v1/uploads", (202, job(state="queued", position=2, eta_seconds=40)))
    service.reply("GET /api/v1/jobs/17", (200, job()))
    done = client(starter, "upload", "--archive", "submission.tar.gz")
    assert done.returncode == 0, done.stderr
    (sent,) = service.sent("POST /api/v1/uploads")
    assert sent.headers["Authorization"] == f"Bearer {TOKEN}"
    assert sent.headers["Content-Type"] == "application/gzip"
    assert re.fullmatch(r"[A-Za-z0-9_-]{8,64}", sent.headers["Upload-Id"])
    assert sent.body == ARCHIVE
    assert "Student" not in sent.headers and "Received-At" not in sent.headers
    assert "job 17" in done.stdout and "number 2 in the queue" in done.stdout and "about 40 s" in done.stdout


def test_each_upload_gets_its_own_upload_id(starter, service):
    configure(starter, service.url)
    service.reply("POST /api/v1/uploads", (202, job()))
    for _ in range(2):
        assert client(starter, "upload").returncode == 0
    ids = [r.headers["Upload-Id"] for r in service.sent("POST /api/v1/uploads")]
    assert len(ids) == 2 and ids[0] != ids[1]


def test_a_connection_dropped_before_any_reply_is_tried_again_with_the_same_upload_id(starter, service):
    configure(starter, service.url)
    service.drops["POST /api/v1/uploads"] = 1
    service.reply("POST /api/v1/uploads", (202, job()))
    done = client(starter, "upload")
    assert done.returncode == 0, done.stderr
    tries = service.sent("POST /api/v1/uploads")
    assert len(tries) == 2 and tries[0].headers["Upload-Id"] == tries[1].headers["Upload-Id"]
    assert tries[1].body == ARCHIVE


def test_a_409_naming_a_job_after_a_new_try_follows_that_job(starter, service):
    """The first try arrived but its reply was lost: the server refuses the repeated Upload-Id and names the job."""
    configure(starter, service.url)
    service.drops["POST /api/v1/uploads"] = 1
    service.reply("POST /api/v1/uploads", (409, {"error": "this upload was already received as job 17", "job": 17}))
    service.reply("GET /api/v1/jobs/17", (200, job()))
    done = client(starter, "upload")
    assert done.returncode == 0, done.stderr
    assert "71.5/100 points" in done.stdout


def test_an_http_error_reply_is_not_tried_again(starter, service):
    configure(starter, service.url)
    service.reply("POST /api/v1/uploads", (413, {"error": "the archive is 12.0 MiB, more than the 10 MiB allowed"}))
    one_line_error(client(starter, "upload"))
    assert len(service.sent("POST /api/v1/uploads")) == 1


@pytest.mark.parametrize("status, error", [
    (401, "unknown token"),
    (403, "this token was revoked; ask the course staff for a new one"),
    (408, "the upload did not arrive within 60 s; try again on a faster connection"),
    (409, "this Upload-Id was already used"),
    (413, "the archive is 12.0 MiB, more than the 10 MiB allowed"),
    (429, "your upload #12 is still being graded; upload again when it is done"),
    (400, "submission.tar.gz is not a gzip archive"),
])
def test_each_refusal_is_the_servers_own_words_on_one_line_with_status_1(starter, service, status, error):
    configure(starter, service.url)
    service.reply("POST /api/v1/uploads", (status, {"error": error}))
    message = one_line_error(client(starter, "upload"))
    assert message.startswith("make upload: ") and error in message
    if status == 401:
        assert "make login TOKEN=" in message


def test_429_shows_retry_after_as_a_time(starter, service):
    configure(starter, service.url)
    service.reply("POST /api/v1/uploads", (429, {"error": "6 uploads counted in the last hour (the limit)"},
                                          {"Retry-After": "600"}))
    message = one_line_error(client(starter, "upload"))
    assert re.search(r"next try possible at \d\d:\d\d UTC", message), message


def test_a_reply_that_is_not_json_is_one_line(starter, service):
    configure(starter, service.url)
    service.reply("GET /api/v1/jobs", (502, b"<html>Bad Gateway</html>"))
    message = one_line_error(client(starter, "history"))
    assert "HTTP 502" in message and "try again later" in message


def test_an_unreachable_service_is_named_with_what_to_do_meanwhile(starter):
    url = f"http://127.0.0.1:{closed_port()}"
    configure(starter, url)
    message = one_line_error(client(starter, "upload"))
    assert url in message and "try again later" in message and "make test" in message
    assert "connection refused" in message


def test_without_service_json_the_course_runs_no_service_exit_2(starter):
    message = one_line_error(client(starter, "upload"), status=2)
    assert "this course runs no grading service: hand in submission.tar.gz on the course's site" in message


def test_a_broken_service_json_is_exit_2_naming_the_file(starter):
    (starter / "service.json").write_text("{not json")
    message = one_line_error(client(starter, "history"), status=2)
    assert "service.json" in message


def test_without_a_token_it_says_how_to_log_in(starter, service):
    configure(starter, service.url)
    message = one_line_error(client(starter, "history", token=None))
    assert "make login TOKEN=" in message
    assert service.requests == []


def test_login_keeps_the_token_for_its_owner_alone_and_later_commands_send_it(starter, service):
    configure(starter, service.url)
    done = client(starter, "login", "file-token-abcdefgh", token=None)
    assert done.returncode == 0, done.stderr
    path = starter.parent / "home" / ".config" / "cuda-kernels" / "token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().strip() == "file-token-abcdefgh"
    service.reply("GET /api/v1/jobs", (200, {"jobs": []}))
    service.reply("GET /api/v1/limits", (200, {"uploads_per_hour": 6, "counted_last_hour": 0, "next_upload_at": None,
                                              "in_flight": None}))
    assert client(starter, "history", token=None).returncode == 0
    assert {r.headers["Authorization"] for r in service.requests} == {"Bearer file-token-abcdefgh"}


def test_login_tightens_a_token_file_that_was_readable_by_others(starter, service):
    configure(starter, service.url)
    path = starter.parent / "home" / ".config" / "cuda-kernels" / "token"
    path.parent.mkdir(parents=True)
    path.write_text("old")
    path.chmod(0o644)
    assert client(starter, "login", "file-token-abcdefgh", token=None).returncode == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_grader_token_wins_over_the_file(starter, service):
    configure(starter, service.url)
    assert client(starter, "login", "file-token-abcdefgh", token=None).returncode == 0
    service.reply("GET /api/v1/jobs/3", (200, job(3)))
    assert client(starter, "status", "3", token="env-token-abcdefgh").returncode == 0
    assert service.requests[0].headers["Authorization"] == "Bearer env-token-abcdefgh"


def test_login_refuses_what_is_not_a_token(starter, service):
    configure(starter, service.url)
    one_line_error(client(starter, "login", "two words", token=None))


LIMITS = {"uploads_per_hour": 6, "counted_last_hour": 2, "next_upload_at": None, "in_flight": None}


def test_history_is_a_table_of_attempts_and_what_the_limit_leaves(starter, service):
    configure(starter, service.url)
    jobs = [job(15, attempt=1, received="2026-11-27T08:00:00+00:00"),
            job(16, state="failed", attempt=2, error="the build machine was lost", counted=False),
            job(17, state="queued", attempt=3, position=1)]
    service.reply("GET /api/v1/jobs", (200, {"jobs": jobs}))
    today = datetime.now(timezone.utc).date().isoformat()
    service.reply("GET /api/v1/limits", (200, {**LIMITS, "next_upload_at": f"{today}T23:59:00+00:00"}))
    done = client(starter, "history")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["attempt", "received", "state", "total", "counted"]
    assert lines[1].split() == ["#1", "2026-11-27", "08:00", "UTC", "done", "71.5/100", "yes"]
    assert lines[2].split()[-3:] == ["failed", "-", "no"]
    assert lines[3].split()[-3:] == ["queued", "-", "yes"]
    assert lines[-1] == "2 of 6 uploads counted in the last hour; next upload possible at 23:59 UTC"


def test_history_says_an_upload_is_possible_now(starter, service):
    configure(starter, service.url)
    service.reply("GET /api/v1/jobs", (200, {"jobs": []}))
    service.reply("GET /api/v1/limits", (200, LIMITS))
    done = client(starter, "history")
    assert done.stdout.splitlines() == ["no uploads yet",
                                        "2 of 6 uploads counted in the last hour; next upload possible now"]


def test_check_refuses_before_a_build_when_the_limit_leaves_no_upload(starter, service):
    configure(starter, service.url)
    service.reply("GET /api/v1/limits", (200, {**LIMITS, "in_flight": 17}))
    message = one_line_error(client(starter, "check"))
    assert message.startswith("make upload: no upload possible now") and "job 17" in message


# The library, as the course's own end-to-end tests and the Gradescope bridge call it.

class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def follow_three_states(service, out) -> dict:
    config = service_py.Config(service.url, "cuda-kernels")
    service.reply("POST /api/v1/uploads", (202, job(state="queued", position=2, eta_seconds=40)))
    service.reply("GET /api/v1/jobs/17",
                  (200, job(state="running", phase="running", progress={"done": 12, "total": 40}, eta_seconds=20)),
                  (200, job()))
    archive = Path(os.environ.get("TMPDIR", "/tmp")) / f"canned-{os.getpid()}.tar.gz"
    archive.write_bytes(ARCHIVE)
    try:
        return service_py.upload(config, TOKEN, archive, out=out, poll=0.01)
    finally:
        archive.unlink()


def test_upload_polls_until_done_then_prints_total_tasks_feedback_hidden_and_counted(service):
    out = io.StringIO()
    final = follow_three_states(service, out)
    assert final["state"] == "done" and len(service.sent("GET /api/v1/jobs/17")) == 2
    text = out.getvalue()
    assert "\r" not in text
    assert "waiting, number 2 in the queue, about 40 s to go" in text
    assert "running, 12/40 cases, about 20 s to go" in text
    assert "graded, 71.5/100 points (on time, timed on the GPU)" in text
    assert re.search(r"^add\s+8/8\s+all cases pass$", text, re.M)
    assert re.search(r"^dot\s+2.5/10\s+slow: 12% of the copy$", text, re.M)
    assert "2/7 tasks pass\nadd: 8/8" in text
    assert "4 more cases are hidden until 2026-12-11 23:59 UTC" in text
    assert text.rstrip().endswith("This upload counted against the hourly limit.")


def test_progress_rewrites_one_line_on_a_terminal(service):
    out = Terminal()
    follow_three_states(service, out)
    uploaded, *progress = out.getvalue().split("\r\x1b[K")
    assert uploaded.startswith("uploaded ") and uploaded.endswith("\n")
    assert [p.split(":")[1].split(",")[0].split("\n")[0].strip() for p in progress] == ["waiting", "running", "done"]
    assert all("\n" not in p for p in progress[:-1])  # each replaces the one before, on the same line


def test_following_stops_at_its_bound_and_says_where_to_look_later(service):
    config = service_py.Config(service.url, "cuda-kernels")
    service.reply("POST /api/v1/uploads", (202, job(state="queued", position=5)))
    service.reply("GET /api/v1/jobs/17", (200, job(state="queued", position=4)))
    out = io.StringIO()
    archive = Path(os.environ.get("TMPDIR", "/tmp")) / f"bound-{os.getpid()}.tar.gz"
    archive.write_bytes(ARCHIVE)
    try:
        final = service_py.upload(config, TOKEN, archive, out=out, wait_seconds=0.05, poll=0.01)
    finally:
        archive.unlink()
    assert final["state"] == "queued"
    assert "make history" in out.getvalue() and "status 17" in out.getvalue()


def test_a_failed_job_says_why(service):
    text = service_py.report(job(state="failed", error="the GPU machine went away", counted=False))
    assert "failed: the GPU machine went away" in text and "did not count" in text


def test_the_client_runs_on_python_3_9():
    """No syntax newer than the oldest Python a student may have (3.9): compiled with 3.9's grammar features."""
    import ast
    tree = ast.parse(CLIENT.read_text(), feature_version=(3, 9))
    assert not [n for n in ast.walk(tree) if type(n).__name__ in ("Match", "TryStar")]


@pytest.mark.slow  # it runs make (refused in the fast tier), though nothing is built
def test_make_upload_without_a_service_refuses_before_building(tmp_path):
    starter = Path(CLIENT).parents[1]
    assert not (starter / "service.json").exists()
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    done = subprocess.run(["make", "-C", str(starter), "upload", f"BUILD={tmp_path / 'build'}"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "this course runs no grading service" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "build").exists()
