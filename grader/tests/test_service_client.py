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


# GET /api/v1/limits as the service answers it while an upload is possible (api_handlers.py's _limits, policy.standing's words)
LIMITS = {"upload_line": "you can upload now (4 of 6 uploads an hour left; one that does not build does not count)",
          "upload_refused": False, "profiles": "", "profile_refused": False,
          "profile_line": "you can ask for a profile now (3 of 3 profiles an hour left; one that does not build, or "
                          "that Nsight Compute could not count, does not count)",
          "uploads_per_hour": 6, "counted_last_hour": 2, "next_upload_at": None, "in_flight": None}


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
    assert "upload #3: waiting, number 2 in the queue, about 40 s to go" in done.stdout
    assert not re.search(r"\bjob 17\b", done.stdout), done.stdout  # the job id is a field for tools


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
    assert "upload #3: graded, 71.5 / 100 points" in done.stdout


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


def test_429_is_the_services_words_alone_which_say_when(starter, service):
    """The policy's line says when the next upload is possible; a second time from Retry-After would only differ."""
    said = "6 uploads counted in the last hour (the limit); your next upload is possible at 14:05 UTC"
    configure(starter, service.url)
    service.reply("POST /api/v1/uploads", (429, {"error": said}, {"Retry-After": "600"}))
    assert one_line_error(client(starter, "upload")) == f"make upload: {said}"


STARTING = {"ok": False, "state": "preparing",
            "error": "the grading service is starting (it builds the solution first): try again in a few minutes"}


@pytest.mark.parametrize("line, args", [("GET /api/v1/limits", ["check"]), ("GET /api/v1/jobs", ["history"]),
                                        ("POST /api/v1/uploads", ["upload"]), ("GET /api/v1/limits", ["login", TOKEN]),
                                        ("GET /api/v1/limits", ["check", "--profile", "transpose"])])
def test_a_service_that_is_starting_is_one_line_whatever_the_address(starter, service, line, args):
    configure(starter, service.url)
    service.reply(line, (503, STARTING, {"Retry-After": "60"}))
    done = client(starter, *args)
    if args[0] == "login":  # kept, unchecked
        assert done.returncode == 0 and done.stdout.startswith("logged in, unchecked: the grading service is still "
                                                               "starting, so your token could not be checked")
        return
    said = one_line_error(done)
    assert said.split(": ", 1)[1] == "the grading service is starting: try again in a few minutes", said


def test_no_connection_right_after_the_service_said_it_is_starting_is_still_starting(service):
    config = service_py.Config(service.url, "cuda-kernels")
    service.reply("GET /api/v1/limits", (503, STARTING))
    talk = service_py.Client(config, TOKEN, pauses=())
    with pytest.raises(service_py.ServiceError, match="^the grading service is starting: try again in a few minutes$"):
        talk.get("/limits")
    talk.config = service_py.Config(f"http://127.0.0.1:{closed_port()}", "cuda-kernels")  # it went away meanwhile
    with pytest.raises(service_py.Unreachable, match="^the grading service is starting: try again in a few minutes$"):
        talk.get("/jobs")


def test_a_503_in_the_services_own_words_is_those_words(starter, service):
    """A 503 the service explains (it cannot profile; its disk is full) is its one line, not "failed: try later"."""
    said = ("the grading service cannot run Nsight Compute (its jobs are graded in Slurm batches, which do not "
            "profile): make profile TASK=transpose counts on your machine's CPU instead")
    configure(starter, service.url)
    service.reply("POST /api/v1/profiles?task=transpose", (503, {"error": said}))
    assert one_line_error(client(starter, "profile", "--task", "transpose")) == f"make profile GPU=1: {said}"


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


def token_path(starter: Path) -> Path:
    return starter.parent / "home" / ".config" / "cuda-kernels" / "token"


def test_login_checks_the_token_keeps_it_for_its_owner_alone_and_later_commands_send_it(starter, service):
    configure(starter, service.url)
    service.reply("GET /api/v1/limits", (200, LIMITS))
    done = client(starter, "login", "file-token-abcdefgh", token=None)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("logged in: the grading service knows this token; it is kept in ")
    path = token_path(starter)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().strip() == "file-token-abcdefgh"
    service.reply("GET /api/v1/jobs", (200, {"jobs": []}))
    assert client(starter, "history", token=None).returncode == 0
    assert {r.headers["Authorization"] for r in service.requests} == {"Bearer file-token-abcdefgh"}
    assert len(service.sent("GET /api/v1/limits")) == 2  # the login's check, then history's


@pytest.mark.parametrize("status, error", [
    (401, "this token is not one the service knows: check it, or ask the course staff for yours"),
    (403, "this token was revoked: ask the course staff for a new one")])
def test_login_refuses_a_token_the_service_does_not_know_or_revoked_and_keeps_nothing(starter, service, status,
                                                                                        error):
    configure(starter, service.url)
    service.reply("GET /api/v1/limits", (status, {"error": error}))
    message = one_line_error(client(starter, "login", "unknown-token-abcdefgh", token=None))
    assert message == f"make login: {error}: this token was not kept"
    assert "logged in" not in message and not token_path(starter).exists()


def test_login_keeps_a_token_it_could_not_check_and_says_so(starter):
    url = f"http://127.0.0.1:{closed_port()}"
    configure(starter, url)
    done = client(starter, "login", "file-token-abcdefgh", token=None)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"logged in, unchecked: the grading service at {url} did not answer (connection "
                                  "refused), so your token could not be checked"), done.stdout
    assert "make upload checks it" in done.stdout
    assert token_path(starter).read_text().strip() == "file-token-abcdefgh"


def test_login_tightens_a_token_file_that_was_readable_by_others(starter, service):
    configure(starter, service.url)
    service.reply("GET /api/v1/limits", (200, LIMITS))
    path = starter.parent / "home" / ".config" / "cuda-kernels" / "token"
    path.parent.mkdir(parents=True)
    path.write_text("old")
    path.chmod(0o644)
    assert client(starter, "login", "file-token-abcdefgh", token=None).returncode == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_grader_token_wins_over_the_file(starter, service):
    configure(starter, service.url)
    service.reply("GET /api/v1/limits", (200, LIMITS))
    assert client(starter, "login", "file-token-abcdefgh", token=None).returncode == 0
    service.reply("GET /api/v1/jobs", (200, {"jobs": [job(17, attempt=3)]}))
    service.reply("GET /api/v1/jobs/17", (200, job(17, attempt=3)))
    assert client(starter, "status", "3", token="env-token-abcdefgh").returncode == 0
    assert {r.headers["Authorization"] for r in service.requests[1:]} == {"Bearer env-token-abcdefgh"}


def test_status_takes_the_number_the_student_knows(starter, service):
    """`status 2` is upload #2 (`--profile 2`: profile #2), whatever its job id."""
    configure(starter, service.url)
    listed = [job(40, attempt=1), job(41, attempt=1, kind="profile", task="dot"), job(43, attempt=2)]
    service.reply("GET /api/v1/jobs", (200, {"jobs": listed}))
    service.reply("GET /api/v1/jobs/43", (200, job(43, attempt=2)))
    service.reply("GET /api/v1/jobs/41", (200, job(41, attempt=1, kind="profile", task="dot", result=None,
                                                     profile={"status": "failed", "message": "no kernel of yours"})))
    done = client(starter, "status", "2")
    assert done.returncode == 0 and done.stdout.startswith("upload #2: graded, 71.5 / 100 points"), done.stdout
    profiled = client(starter, "status", "--profile", "1")
    assert profiled.stdout.startswith("profile #1 of dot: no counts: no kernel of yours"), profiled.stdout
    assert one_line_error(client(starter, "status", "5")) == ("service.py status: you have no upload #5: make history "
                                                              "lists yours")


def test_login_refuses_what_is_not_a_token(starter, service):
    configure(starter, service.url)
    one_line_error(client(starter, "login", "two words", token=None))




def test_history_is_a_table_of_attempts_and_what_the_limit_leaves(starter, service):
    configure(starter, service.url)
    jobs = [job(15, attempt=1, received="2026-11-27T08:00:00+00:00"),
            job(16, state="failed", attempt=2, error="the build machine was lost", counted=False),
            job(17, state="queued", attempt=3, position=1)]
    service.reply("GET /api/v1/jobs", (200, {"jobs": jobs}))
    said = "your upload #3 is still waiting; upload again when it is done (`make history` shows it)"
    service.reply("GET /api/v1/limits", (200, {**LIMITS, "upload_line": said, "upload_refused": True}))
    done = client(starter, "history")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["received", "state", "total", "counted"]
    assert lines[1].split() == ["upload", "#1", "2026-11-27", "08:00", "UTC", "done", "71.5", "/", "100", "yes"]
    assert lines[2].split()[:2] == ["upload", "#2"] and lines[2].split()[-3:] == ["failed", "-", "no"]
    assert lines[3].split()[-3:] == ["queued", "-", "yes"]
    assert lines[-1] == "Your upload #3 is still waiting; upload again when it is done (`make history` shows it)."


def test_history_says_what_the_limit_leaves_in_the_services_words(starter, service):
    configure(starter, service.url)
    service.reply("GET /api/v1/jobs", (200, {"jobs": []}))
    service.reply("GET /api/v1/limits", (200, LIMITS))
    done = client(starter, "history")
    assert done.stdout.splitlines() == ["no uploads yet", "You can upload now (4 of 6 uploads an hour left; one that "
                                                          "does not build does not count)."]


def test_check_refuses_before_a_build_in_the_services_words(starter, service):
    configure(starter, service.url)
    said = "your upload #3 is still being graded; upload again when it is done (`make history` shows it)"
    service.reply("GET /api/v1/limits", (200, {**LIMITS, "upload_line": said, "upload_refused": True,
                                              "in_flight": 17}))
    assert one_line_error(client(starter, "check")) == f"make upload: {said}"


def test_check_passes_in_the_services_words(starter, service):
    configure(starter, service.url)
    service.reply("GET /api/v1/limits", (200, LIMITS))
    done = client(starter, "check")
    assert done.returncode == 0 and done.stdout == f"grading service at {service.url}: {LIMITS['upload_line']}\n"


def test_check_of_a_profile_refuses_where_the_service_cannot_profile(starter, service):
    configure(starter, service.url)
    service.reply("GET /api/v1/limits", (200, {**LIMITS, "profiles": "its jobs are graded in Slurm batches, which "
                                                                      "do not profile"}))
    assert one_line_error(client(starter, "check", "--profile", "transpose")) == (
        "make profile GPU=1: the grading service cannot run Nsight Compute (its jobs are graded in Slurm batches, "
        "which do not profile): make profile TASK=transpose counts on your machine's CPU instead")
    assert client(starter, "check").returncode == 0  # uploads are still taken


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


def test_upload_polls_until_done_then_prints_its_name_total_feedback_and_counted(service):
    out = io.StringIO()
    final = follow_three_states(service, out)
    assert final["state"] == "done" and len(service.sent("GET /api/v1/jobs/17")) == 2
    text = out.getvalue()
    assert "\r" not in text
    assert "upload #3: waiting, number 2 in the queue, about 40 s to go" in text
    assert "upload #3: running, 12/40 cases, about 20 s to go" in text
    assert "upload #3: graded, 71.5 / 100 points (on time, timed on the GPU)" in text
    assert "Hidden cases: 4 hidden cases are graded" in text  # the feedback's own line, once
    assert text.rstrip().endswith("This upload counted against the hourly limit.")


def test_a_built_job_waiting_for_its_run_is_shown_in_the_services_words():
    """The service names a phase in words (views.PHASE_WORDS); the client shows them, and an older service's bare
    phase where it sends none."""
    built = job(state="running", phase="built", phase_words="built, waiting for its run", eta_seconds=12)
    assert service_py.progress_line(built) == "upload #3: built, waiting for its run, about 12 s to go"
    del built["phase_words"]
    assert service_py.progress_line(built) == "upload #3: built, about 12 s to go"


def test_the_feedback_is_rendered_for_a_terminal_with_the_pages_points():
    """The condensed feedback is Markdown (the page renders it): the terminal gets plain words, the same points in
    the page's format (8.0 / 8), and a table as aligned columns."""
    text = service_py.report(job())
    assert "**" not in text and "##" not in text and "`" not in text and "|" not in text, text
    lines = text.splitlines()
    assert "Score: 71.5 / 100 (the tasks without hidden cases)" in lines
    assert "add: 8.0 / 8" in lines and "dot: 2.5 / 10" in lines
    assert "  passed 18/18 · all cases pass" in lines
    head = next(line for line in lines if "speedup (95% interval)" in line)
    row = next(line for line in lines if line.startswith("  float32 8192x8192"))
    assert head.index("speedup") == row.index("1.5 (1.5–1.5)") and head.index("points") == row.index("4.0 / 4.0")
    assert "  - wrong: float32 at every shape (18 cases); float32 1x1: 1 of 1 elements are wrong" in lines
    assert "    - reproduce: make test TASK=dot SEED=5" in lines


def test_the_feedback_cannot_send_a_terminal_commands():
    """A compiler message quotes what the student wrote: an escape sequence in it is shown, not obeyed."""
    feedback = "## dot: 0.0 / 10\n\n```\nx\x1b[2J\x07y\n```\n"
    text = service_py.report(job(result={**job()["result"], "feedback": feedback}))
    assert "\x1b" not in text and "\x07" not in text and "x?[2J?y" in text


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
    assert "upload #3 is still queued after" in out.getvalue() and "make history" in out.getvalue()
    assert "python3 tools/service.py status 3" in out.getvalue()


def test_a_service_gone_while_the_upload_waits_says_the_upload_is_kept(service):
    config = service_py.Config(service.url, "cuda-kernels")
    service.reply("POST /api/v1/uploads", (202, job(state="queued", position=5)))
    service.reply("GET /api/v1/jobs/17", (503, STARTING))
    archive = Path(os.environ.get("TMPDIR", "/tmp")) / f"gone-{os.getpid()}.tar.gz"
    archive.write_bytes(ARCHIVE)
    try:
        with pytest.raises(service_py.ServiceError) as said:
            service_py.upload(config, TOKEN, archive, out=io.StringIO(), poll=0.01)
    finally:
        archive.unlink()
    assert str(said.value) == ("the grading service is starting: try again in a few minutes; upload #3 was received "
                               "and is kept: make history shows it once graded")


def test_a_failed_job_says_why(service):
    text = service_py.report(job(state="failed", error="the GPU machine went away", counted=False))
    assert "upload #3 failed: the GPU machine went away" in text and "did not count" in text


def test_the_client_runs_on_python_3_9():
    """No syntax newer than the oldest Python a student may have (3.9): compiled with 3.9's grammar features."""
    import ast
    tree = ast.parse(CLIENT.read_text(), feature_version=(3, 9))
    assert not [n for n in ast.walk(tree) if type(n).__name__ in ("Match", "TryStar")]


def make(starter: Path, *goals: str, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "GRADER_TOKEN")}
    env["HOME"] = str(home)
    return subprocess.run(["make", "-C", str(starter), *goals, f"BUILD={starter.parent / 'build'}"], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow  # it runs make (refused in the fast tier), though nothing is built
@pytest.mark.parametrize("goals, limits, said", [
    (["upload"], {"upload_refused": True, "upload_line": "your upload #3 is still being graded; upload again when "
                                                         "it is done (`make history` shows it)"},
     "make upload: your upload #3 is still being graded; upload again when it is done (`make history` shows it)"),
    (["profile", "TASK=transpose", "GPU=1"], {"profiles": "this service was started without a profiler"},
     "make profile GPU=1: the grading service cannot run Nsight Compute (this service was started without a "
     "profiler): make profile TASK=transpose counts on your machine's CPU instead")])
def test_make_asks_the_service_before_it_builds_and_says_its_refusal(tmp_path, service, goals, limits, said):
    """make upload and make profile GPU=1 build minutes before they send: a refusal the service can give now
    (in flight, the hourly limit, no profiler, an unknown token) comes first, in one line, and nothing is built."""
    starter = tmp_path / "starter"
    shutil.copytree(Path(CLIENT).parents[1], starter, ignore=shutil.ignore_patterns("build", "service.json"))
    configure(starter, service.url)
    service.reply("GET /api/v1/limits", (200, {**LIMITS, **limits}))
    (tmp_path / "home").mkdir()
    assert make(starter, "login", f"TOKEN={TOKEN}", home=tmp_path / "home").returncode == 0
    done = make(starter, *goals, home=tmp_path / "home")
    assert done.returncode != 0 and said in done.stderr.splitlines(), done.stdout + done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "build").exists()
    assert service.sent("POST /api/v1/uploads") == service.sent("POST /api/v1/profiles?task=transpose") == []


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


@pytest.mark.slow  # it runs make (refused in the fast tier), though nothing is built
@pytest.mark.parametrize("argument, sent", [
    ("CODE=-omDEn830jLthdgV", ("POST /api/v1/login-code", "-omDEn830jLthdgV")),
    ("TOKEN=-student-token-0123", ("GET /api/v1/limits", "-student-token-0123"))])
def test_make_login_takes_a_code_or_token_that_begins_with_a_dash(tmp_path, service, argument, sent):
    """The service's codes are secrets.token_urlsafe, so one in 64 begins with '-': make login hands it to
    service.py so that argparse cannot take it for an option (it once did: "--code: expected one argument")."""
    starter = tmp_path / "starter"
    shutil.copytree(Path(CLIENT).parents[1], starter, ignore=shutil.ignore_patterns("build", "service.json"))
    configure(starter, service.url)
    service.reply("POST /api/v1/login-code", (200, {"token": "traded-token-abcdefgh", "student": "s01"}))
    service.reply("GET /api/v1/limits", (200, LIMITS))
    (tmp_path / "home").mkdir()
    done = make(starter, "-s", "login", argument, home=tmp_path / "home")
    assert done.returncode == 0 and done.stdout.startswith("logged in"), done.stdout + done.stderr
    line, value = sent
    (request,) = service.sent(line)
    assert value in (request.body.decode() + request.headers.get("Authorization", ""))
