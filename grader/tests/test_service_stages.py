"""The service's two stages (issue 43, item 1): each worker's build stage builds the next jobs on the host's cores
while its GPU runs one; a job that does not build never reaches the GPU; a job the build stage holds goes back
to the queue uncounted when its worker dies or the service stops. Each test runs its own `bin/grader serve`
(grader/tests/service_server.py) on the simulated GPUs of fakes.py, whose builds take real seconds where a task
file says `// fake-build: sleep=S`."""
from __future__ import annotations

import os
import re
import signal
from collections import Counter

import pytest

from grader.tests.service_server import (TASK_FILES, ServiceUnderTest, archive, log_tail, stored_jobs, until)

pytestmark = pytest.mark.slow  # four services started and stopped, each grading a few simulated jobs

STUDENTS = [f"s{i:02d}" for i in range(1, 5)]
SLOWER = 0.01  # seconds per simulated request: about 4 s of a job's cases on the GPU


def slow_build(salt: str, seconds: float, marker: str = "ok speed=1.2") -> bytes:
    """An archive whose build takes `seconds` (one task file says so) and whose cases then run as `marker` says."""
    files = {name: f"// fake: {marker}\n// {salt}\n".encode() for name in TASK_FILES}
    files[TASK_FILES[0]] += f"// fake-build: sleep={seconds}\n".encode()
    return archive(files=files)


def upload_for(service: ServiceUnderTest, student: str, data: bytes) -> int:
    return service.upload(service.staff, data, student=student)["job"]


def phases_now(service: ServiceUnderTest) -> dict[int, str]:
    """Every open job's phase, as the staff's API shows it."""
    status, body, _ = service.request("GET", "/api/v1/jobs", service.staff)
    assert status == 200, body
    return {j["job"]: j["phase"] for j in body["jobs"] if j["state"] == "running"}


def one_running_one_built(service: ServiceUnderTest) -> tuple[int, int]:
    """Two uploads of two students; returns once the first runs on the GPU and the second is built, waiting."""
    first = upload_for(service, "s01", archive("ok speed=1.2", salt="first"))
    second = upload_for(service, "s02", archive("ok speed=1.2", salt="second"))
    until(service, f"job {first} on the GPU and job {second} built",
          lambda: phases_now(service) == {first: "running", second: "built"}, timeout=60)
    return first, second


def graded_lines(service: ServiceUnderTest) -> Counter:
    return Counter(int(n) for n in re.findall(r"job (\d+) s\d+ attempt \d+: graded", service.log()))


def test_the_gpu_runs_one_job_while_the_build_stage_builds_the_next_and_holds_it_only_for_its_cases(tmp_path):
    service = ServiceUnderTest(tmp_path, students=STUDENTS, gpus="0", delay=SLOWER,
                               serve_args=["--builders", "2"]).start()
    try:
        ids = [upload_for(service, s, slow_build(f"stage-{s}", 2.0)) for s in STUDENTS[:3]]
        seen: list[dict[int, str]] = []

        def all_done():
            seen.append(phases_now(service))
            jobs = stored_jobs(service.results)
            return all(jobs[i].state == "done" for i in ids)
        until(service, "three jobs to be graded", all_done, timeout=120, every=0.1)
    finally:
        service.stop()
    assert any("running" in now.values() and {"building", "built"} & set(now.values()) for now in seen), \
        f"no moment with one job on the GPU and another in its build stage: {seen}"
    jobs = stored_jobs(service.results)
    for i in ids:
        job = jobs[i]
        assert job.build_seconds >= 2.0, job
        assert 0 < job.gpu_seconds and job.gpu_seconds + job.build_seconds <= job.seconds, job  # one after the other
        assert job.attempts == 1, job
    assert graded_lines(service) == Counter({i: 1 for i in ids})
    assert "ready on GPU 0 (grading run 1; 2 build thread(s))" in service.log()


def test_a_job_that_does_not_build_is_stored_by_the_build_stage_and_never_reaches_the_gpu(tmp_path):
    service = ServiceUnderTest(tmp_path, students=STUDENTS, gpus="0", delay=SLOWER).start()
    try:
        running = upload_for(service, "s01", archive("ok speed=1.2", salt="runs"))
        until(service, f"job {running} to run its cases", lambda: phases_now(service).get(running) == "running")
        broken = upload_for(service, "s02", archive("build-fails", salt="broken"))
        done = service.wait(service.staff, broken, timeout=60)
        still = phases_now(service).get(running)
        service.wait(service.staff, running, timeout=90)
    finally:
        service.stop()
    # stored while the GPU still ran the job before it: the build stage stored it, not the GPU's thread
    assert done["state"] == "done" and done["result"]["status"] == "build_failed", done
    assert still == "running", f"job {running} was {still!r} when job {broken} was stored"
    job = stored_jobs(service.results)[broken]
    assert job.gpu_seconds == 0 and job.worker == "gpu0", job
    line = next(x for x in service.log().splitlines() if f"job {broken} s02 attempt 1:" in x)
    assert "never reached GPU 0: finished by the build stage in" in line, line


def test_a_worker_killed_with_a_job_built_gives_that_job_back_uncounted_and_the_running_one_counted(tmp_path):
    service = ServiceUnderTest(tmp_path, students=STUDENTS, gpus="0", delay=SLOWER,
                               serve_args=["--builders", "1"]).start()
    try:
        first, second = one_running_one_built(service)
        pids = service.worker_pids()
        assert len(pids) == 1
        os.kill(pids[0], signal.SIGKILL)
        until(service, "both jobs to be graded after the worker's restart",
              lambda: all(j.state == "done" for i, j in stored_jobs(service.results).items() if i in (first, second)),
              timeout=120, every=0.2)
    finally:
        service.stop()
    jobs = stored_jobs(service.results)
    assert jobs[first].attempts == 2, jobs[first]  # its worker died under it: counted
    assert jobs[second].attempts == 1, jobs[second]  # only built: not the death's cause, not counted
    assert graded_lines(service) == Counter({first: 1, second: 1}), log_tail(service)


def test_a_stopping_service_gives_back_what_its_build_stage_holds_and_the_next_start_grades_it(tmp_path):
    service = ServiceUnderTest(tmp_path, students=STUDENTS, gpus="0", delay=SLOWER, drain=60,
                               serve_args=["--builders", "1"]).start()
    try:
        first, second = one_running_one_built(service)
        status, body, _ = service.request("GET", "/api/v1/status", service.staff)
        worker = next(w for w in body["workers"] if w["name"] == "gpu0")
        assert status == 200 and (worker["job"], worker["built"], worker["building"]) == (first, 1, 0), worker
        from grader.service.status import status_text
        assert f"gpu0 (GPU 0): busy job {first} (build stage: 1 built, 0 building)" in status_text(body)
        service.stop()
        assert service.process.returncode == 0, log_tail(service)
        at_stop = stored_jobs(service.results)
        assert (at_stop[first].state, at_stop[first].attempts) == ("done", 1), at_stop[first]
        assert (at_stop[second].state, at_stop[second].attempts, at_stop[second].started) == ("queued", 0, None)
        assert f"job {second} goes back to the queue at its old place: the service stopped" in service.log()
        service.start()
        done = service.wait(service.staff, second, timeout=90)
    finally:
        service.stop()
    assert done["state"] == "done" and stored_jobs(service.results)[second].attempts == 1
    assert graded_lines(service) == Counter({first: 1, second: 1})
