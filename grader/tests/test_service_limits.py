"""The rubric's [service] policy on the running service: one upload in flight, uploads per hour (an upload that
did not build does not count), the words a student reads about them in every state, the deadline with the
service's clock as the time received; and the same verdicts as `bin/grader grade` for the same archive."""
from __future__ import annotations

import re

import pytest

from grader.cli import main as grader
from grader.core.status import SubmissionStatus
from grader.intake.submission import Submission
from grader.outcomes.build_result import BuildResult
from grader.outcomes.results import SubmissionResult
from grader.service import policy
from grader.tests.service_server import (ServiceUnderTest, archive, rubric_with, run_client, stored_jobs,
                                         student_starter, verdicts)


@pytest.fixture
def late_rubric(tmp_path):
    path = rubric_with(tmp_path, uploads_per_hour=2)
    text = path.read_text() + ('\n[late]\ndue = "2020-01-01T00:00:00"\ntimezone = "UTC"\npenalty = 10\nper = "day"\n'
                               'cap = 50\n')
    path.write_text(text)
    return path


@pytest.fixture
def service(tmp_path, late_rubric):
    s = ServiceUnderTest(tmp_path, students=["s01", "s02"], gpus="0", delay=0.002, rubric=late_rubric)
    s.start()
    yield s
    s.stop()


def test_one_upload_in_flight_then_the_hourly_limit_and_a_failed_build_does_not_count(service, tmp_path):
    token = service.token("s01")
    starter = student_starter(tmp_path / "starter", service.port)

    def check() -> tuple[int, str]:
        """`make upload`'s question before it builds, and its one line"""
        done = run_client(starter, "check", home=tmp_path, token=token)
        return done.returncode, (done.stdout + done.stderr).strip()
    assert check() == (0, f"grading service at http://127.0.0.1:{service.port}: you can upload now (2 of 2 uploads an "
                          "hour left; one that does not build does not count)")
    first = service.upload(token, archive(salt="1", marker="ok sleep=0.5"))
    status, reply, headers = service.request("POST", "/api/v1/uploads", token, archive(salt="2"),
                                             {"Upload-Id": "in-flight-2"})
    assert status == 429 and "upload #1 is still" in reply["error"] and int(headers["retry-after"]) > 0
    status, limits, _ = service.request("GET", "/api/v1/limits", token)
    assert limits["upload_refused"] is True and limits["upload_line"] == reply["error"]  # the 429's own words
    code, said = check()  # (the upload may have left the queue meanwhile)
    assert code == 1 and re.fullmatch(r"make upload: your upload #1 is still (waiting|being graded); upload again when "
                                      r"it is done \(`make history` shows it\)", said), said
    service.wait(token, first["job"])
    broken = service.wait(token, service.upload(token, archive(marker="build-fails", salt="3"))["job"])
    assert broken["result"]["status"] == "build_failed" and broken["counted"] is False
    assert broken["name"] == "upload #2"
    second = service.wait(token, service.upload(token, archive(salt="4"))["job"])
    assert second["counted"] is True
    status, reply, headers = service.request("POST", "/api/v1/uploads", token, archive(salt="5"),
                                             {"Upload-Id": "over-the-limit"})
    assert status == 429 and "2 uploads counted in the last hour" in reply["error"]
    assert re.search(r"next upload is possible at \d\d:\d\d UTC$", reply["error"])
    assert 3500 < int(headers["retry-after"]) <= 3600
    status, limits, _ = service.request("GET", "/api/v1/limits", token)
    assert limits["counted_last_hour"] == 2 and limits["next_upload_at"] and limits["in_flight"] is None
    assert limits["upload_refused"] is True and limits["upload_line"] == reply["error"]
    assert check() == (1, f"make upload: {reply['error']}") and "now" not in reply["error"]
    # staff are held to no limit, and the other student is not slowed by this one's
    service.wait(service.staff, service.upload(service.staff, archive(salt="6"), student="s01")["job"])
    service.wait(service.token("s02"), service.upload(service.token("s02"), archive(salt="7"))["job"])


def graded(files: dict, unbuilt: dict, status=SubmissionStatus.GRADED) -> SubmissionResult:
    sub = Submission(student="s01", source=None, files=files)
    return SubmissionResult(sub, status, BuildResult(True, None, 1.0, unbuilt=unbuilt))


def test_an_upload_none_of_whose_files_compiled_does_not_count_and_one_that_partly_did_does():
    """docs/service.md: an upload rejected at intake, or that did not build, does not count. A file that does not
    compile is a task with a stand-in, graded "does not compile"; when every file handed in is one, nothing built."""
    assert policy.counts(graded({"add.cu": b"", "dot.cu": b""}, {"add.cu": "error"})) is True
    assert policy.counts(graded({"add.cu": b"", "dot.cu": b""}, {"add.cu": "error", "dot.cu": "error"})) is False
    assert policy.counts(graded({"add.cu": b""}, {}, SubmissionStatus.BUILD_FAILED)) is False
    assert policy.counts(graded({}, {}, SubmissionStatus.REJECTED)) is False


def test_an_upload_whose_only_file_does_not_compile_does_not_count_on_the_service(service):
    token = service.token("s02")
    done = service.wait(token, service.upload(token, archive(files={"dot.cu": b"#error no\n"}))["job"])
    assert done["result"]["status"] == "graded" and done["counted"] is False


def test_the_late_policy_reads_the_services_clock(service):
    token = service.token("s02")
    done = service.wait(token, service.upload(token, archive(salt="late"))["job"])
    assert "late" in done["result"]["late"] and done["result"]["total"] == 50  # capped at 50%
    stored = stored_jobs(service.results)[done["job"]]
    assert stored.received_from == "service" and stored.received == done["received"]
    from grader.store.store import Store
    store = Store(service.results / "grades.sqlite")
    try:
        sub = store.submissions().set_index("id").loc[stored.submission_id]
    finally:
        store.close()
    assert sub["received_from"] == "service" and sub["received"] == done["received"]


def test_the_bridges_received_time_is_gradescopes(service):
    job = service.upload(service.assignment, archive(salt="gs"), student="s02",
                         extra={"Received-At": "2019-12-31T23:00:00Z"})
    done = service.wait(service.assignment, job["job"])
    assert done["received"] == "2019-12-31T23:00:00+00:00" and done["result"]["late"].startswith("on time")
    # a student cannot set their own time
    own = service.upload(service.token("s01"), archive(salt="own-time"), extra={"Received-At": "2019-01-01T00:00:00Z"})
    assert own["received"] != "2019-01-01T00:00:00+00:00"


def test_the_service_gives_the_verdicts_grade_gives(service, tmp_path, monkeypatch):
    data = archive(files={"fill.cu": b"// fake: ok speed=1.3\n", "add.cu": b"// fake: wrong\n",
                          "transpose.cu": b"// fake: crash\n", "dot.cu": b"#error no\n",
                          "matmul_naive.cu": b"// fake: not_implemented\n"})
    token = service.token("s01")
    done = service.wait(token, service.upload(token, data)["job"])
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "s01.tar.gz").write_bytes(data)
    monkeypatch.setenv("GRADER_TEST_BACKENDS", "1")
    assert grader(["grade", str(folder), "--results", str(tmp_path / "batch"), "--device", "simulated",
                   "--rubric", str(service.rubric), "--no-progress", "--unsafe-no-sandbox"]) == 0

    served = stored_jobs(service.results)[done["job"]].submission_id
    ours, theirs = verdicts(service.results / "grades.sqlite", served), verdicts(tmp_path / "batch" / "grades.sqlite")
    assert ours["cases"] == theirs["cases"] and len(ours["cases"]) > 50
    assert {t: c for t, (c, _, _) in ours["scores"].items()} == {t: c for t, (c, _, _) in theirs["scores"].items()}
    assert {s for *_, s in ours["cases"]} >= {"ok", "wrong", "crashed", "build_error", "not_implemented", "missing"}
