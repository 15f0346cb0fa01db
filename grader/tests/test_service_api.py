"""The grading service's API on loopback: uploads, results, identity, limits and bad input (docs/service.md).
A real `bin/grader serve` process, real HTTP, the simulated GPUs of fakes.py."""
from __future__ import annotations

import socket
import time

import pytest

from grader.store.jobs import Jobs
from grader.store.store import Store
from grader.tests.service_server import ServiceUnderTest, archive, rubric_with

UPLOAD_SECONDS = 3  # the module's rubric's upload_seconds: a body not whole within it is answered 408


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("service")
    s = ServiceUnderTest(tmp, students=["s01", "s02", "s03", "s04", "s05"], gpus="0",
                         rubric=rubric_with(tmp, uploads_per_hour=3, upload_seconds=UPLOAD_SECONDS))
    s.start()
    yield s
    s.stop()


def stored(service) -> tuple[int, int, list[str]]:
    """(jobs, submissions, files kept under uploads/) in the service's store: what a refusal must not change."""
    store = Store(service.results / "grades.sqlite")
    try:
        jobs = len(Jobs(store).jobs())
        subs = len(store.submissions())
    finally:
        store.close()
    uploads = service.results / "uploads"
    kept = sorted(str(p.relative_to(service.results)) for p in uploads.rglob("*") if p.is_file()) \
        if uploads.exists() else []
    return jobs, subs, kept


def test_an_upload_is_queued_graded_and_its_result_comes_back(service):
    token = service.token("s01")
    job = service.upload(token, archive("ok speed=1.2"))
    assert job["state"] in ("queued", "running") and job["student"] == "s01" and job["attempt"] == 1
    done = service.wait(token, job["job"])
    assert done["state"] == "done", done
    result = done["result"]
    assert result["status"] == "graded" and result["total"] == result["max_total"] == 100
    assert [t["task"] for t in result["tasks"]][:2] == ["fill", "add"]
    assert done["progress"]["done"] == done["progress"]["total"] > 0
    status, history, _ = service.request("GET", "/api/v1/jobs", token)
    assert status == 200 and [j["job"] for j in history["jobs"]] == [job["job"]]
    assert f"job {job['job']} s01 attempt 1: graded 100.0/100" in service.log()


def test_a_job_records_the_seconds_it_held_its_gpu_and_the_seconds_its_build_took_before(service):
    """Issue 43: what a job cost its GPU, beside its wall time, in the store, the job's log line and the staff's
    status. The build stage builds before the GPU's thread takes the job: its seconds are not the GPU's."""
    token = service.token("s04")
    done = service.wait(token, service.upload(token, archive("ok speed=1.0"))["job"])
    store = Store(service.results / "grades.sqlite")
    try:
        job = Jobs(store).job(done["job"])
    finally:
        store.close()
    assert job.gpu_seconds is not None and job.build_seconds is not None
    assert 0 < job.gpu_seconds and job.gpu_seconds + job.build_seconds <= job.seconds
    line = next(x for x in service.log().splitlines() if f"job {job.id} s04 attempt" in x)
    assert f"held GPU 0 {job.gpu_seconds:.1f} s; built before it in {job.build_seconds:.1f} s on the CPU" in line, line
    # The worker's first job measured the solution's correctness times (its timed cases' budget), for every job
    # after it too: those seconds are kept apart, and the ETA's pace leaves them out (test_service_eta.py).
    store = Store(service.results / "grades.sqlite")
    try:
        done_jobs = [j for j in map(Jobs(store).job, range(1, job.id + 1)) if j is not None and j.state == "done"]
    finally:
        store.close()
    first, *later = done_jobs
    assert 0 < first.solution_seconds <= first.gpu_seconds and [j.solution_seconds for j in later] == [0.0] * len(later)
    status, body, _ = service.request("GET", "/api/v1/status", service.staff)
    worker = next(w for w in body["workers"] if w["name"] == job.worker)
    assert status == 200 and worker["gpu_seconds_per_job"] is not None and worker["build_seconds_per_job"] is not None
    from grader.service.status import status_text
    assert (f"each held the GPU {worker['gpu_seconds_per_job']} s, built before it in "
            f"{worker['build_seconds_per_job']} s on the CPU") in status_text(body)


def test_a_wrong_submission_gets_its_verdicts(service):
    token = service.token("s02")
    done = service.wait(token, service.upload(token, archive("wrong"))["job"])
    assert done["result"]["status"] == "graded" and done["result"]["total"] == 0


@pytest.mark.parametrize("case", ["no token", "unknown token", "another student", "no upload id", "malformed",
                                  "oversized", "not a submission"])
def test_bad_uploads_are_refused_in_one_line_and_store_nothing(service, case):
    before = stored(service)
    token, body, headers, expect = service.token("s03"), archive(), {}, 400
    if case == "no token":
        token, expect = None, 401
    elif case == "unknown token":
        token, expect = "gs_" + "x" * 43, 401
    elif case == "another student":
        headers, expect = {"Student": "s04"}, 403
    elif case == "malformed":
        body = b"\x1f\x8b" + b"garbage" * 100
    elif case == "oversized":
        body, expect = b"\x1f\x8b" + b"\0" * (11 * 2**20), 413
    elif case == "not a submission":
        body = archive(files={"README.md": b"hello"})
    sent = {"Upload-Id": "" if case == "no upload id" else f"refused-{case.replace(' ', '-')}", **headers}
    status, reply, _ = service.request("POST", "/api/v1/uploads", token, body, sent)
    assert status == expect, reply
    assert set(reply) == {"error"} and "\n" not in reply["error"] and "Traceback" not in reply["error"], reply
    assert stored(service) == before


def test_a_replayed_upload_is_refused_and_names_its_job(service):
    token = service.token("s04")
    first = service.upload(token, archive(salt="replay"), upload_id="replayed-upload-1")
    before = stored(service)
    status, reply, _ = service.request("POST", "/api/v1/uploads", token, archive(salt="replay"),
                                       {"Upload-Id": "replayed-upload-1"})
    assert status == 409 and reply["job"] == first["job"]
    assert reply["error"] == (f"this upload was received already as {first['name']} (its Upload-Id was used before): "
                              "nothing new was stored")
    assert stored(service) == before
    service.wait(token, first["job"])


def test_a_revoked_token_is_refused(service):
    from grader.cli import main as grader
    token = service.token("s05")
    assert grader(["tokens", "--results", str(service.results), "--revoke", "s05"]) == 0
    status, reply, _ = service.request("GET", "/api/v1/jobs", token)
    assert status == 403 and "revoked" in reply["error"]


def test_a_student_sees_only_their_own_jobs(service):
    mine = service.upload(service.token("s03"), archive(salt="own"))
    service.wait(service.token("s03"), mine["job"])
    status, reply, _ = service.request("GET", f"/api/v1/jobs/{mine['job']}", service.token("s02"))
    assert status == 404 and reply["error"] == f"no upload or profile of yours has job id {mine['job']}"
    status, reply, _ = service.request("GET", "/api/v1/jobs?student=s03", service.token("s02"))
    assert status == 403
    status, reply, _ = service.request("GET", "/api/v1/status", service.token("s02"))
    assert status == 403
    assert service.status()["workers"][0]["state"] in ("idle", "busy")


def test_a_worker_is_named_by_what_it_grades_on_a_cpu_worker_as_this_machines_cpu(tmp_path):
    """`serve --device cpu`'s worker grades on the CPU: bin/grader status, /api/v1/status and the staff's page say
    "this machine's CPU" (as the worker's "ready on" line does), never "GPU cpu"."""
    from grader.service.status import service_status, status_text
    store = Store(tmp_path / "grades.sqlite")
    try:
        jobs = Jobs(store)
        jobs.worker_started("cpu", "cpu", 1)
        jobs.worker_started("gpu1", "1", 2)
        status = service_status(jobs)
    finally:
        store.close()
    assert [w["device"] for w in status["workers"]] == ["this machine's CPU", "GPU 1"]
    text = status_text(status)
    assert "  cpu (this machine's CPU): starting" in text and "  gpu1 (GPU 1): starting" in text
    assert "GPU cpu" not in text


def test_a_client_sending_a_byte_a_second_is_cut_off_and_slows_no_one(service):
    before = stored(service)
    body = archive(salt="slow")
    slow = socket.create_connection(("127.0.0.1", service.port))
    slow.sendall((f"POST /api/v1/uploads HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {service.token('s01')}\r\n"
                  f"Upload-Id: slow-client-1\r\nContent-Length: {len(body)}\r\n\r\n").encode())
    started = time.monotonic()
    answered = None
    for byte in body[:10]:
        slow.sendall(bytes([byte]))
        # meanwhile another student is served at once
        t = time.monotonic()
        assert service.request("GET", "/api/v1/jobs", service.token("s02"))[0] == 200
        answered = max(answered or 0, time.monotonic() - t)
        time.sleep(0.4)
    slow.settimeout(10)
    reply = slow.recv(4096).decode(errors="replace")
    slow.close()
    assert " 408 " in reply.splitlines()[0] and f"did not arrive within {UPLOAD_SECONDS} s" in reply
    # Served beside the slow client, not after it: a service that waited for it would answer once the body
    # timeout cut it (UPLOAD_SECONDS after its headers), so a second below that tells the two apart under any load.
    assert time.monotonic() - started < 10 and answered < UPLOAD_SECONDS - 1, answered
    assert stored(service) == before
