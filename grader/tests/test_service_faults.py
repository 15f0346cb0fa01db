"""The grading service under faults (issue 29, item 8): the server killed and restarted, a worker killed, a GPU
that fails, a submission that kills its worker every time, a clean shutdown, and the queue's fair order.
Each test runs its own `bin/grader serve` (grader/tests/service_server.py) on the simulated GPUs of fakes.py;
GRADER_SIMULATED_DELAY stretches a job to a second or more so that a fault can land while one is graded.

"Exactly once", after a crash: a job may be *started* more than once (a run cut short by the crash is begun
again after the restart), but it is *stored* once: one grade per job, every stored grade a job's, one "graded"
line per job in the log. jobs.attempts counts only the starts the job itself ended (its worker died under it): a
crash, a restart or a stop of the service is not the job's, and the job goes back at its old place."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections import Counter

import pytest

from grader.tests.service_server import (REPO, ServiceUnderTest, archive, log_tail, opened, stored_grades,
                                          stored_jobs, stored_workers, until)

pytestmark = pytest.mark.slow  # seven services started and stopped: about 90 s on a loaded 2-core machine

STUDENTS = [f"s{i:02d}" for i in range(1, 7)]
SLOW = 0.004  # seconds per simulated request: a job of the default rubric takes 1.5 s or so here
SLOWER = 0.01  # about 4 s a job: long enough that a signal sent once it runs lands before it ends



@pytest.fixture(autouse=True)
def store_intact_and_each_grade_a_job_s(tmp_path):
    """After every test: the store passes SQLite's integrity check, and every stored grade is a done job's (none
    stored twice for one job, none without its job)."""
    yield
    results = tmp_path / "results"
    if not (results / "grades.sqlite").exists():
        return
    with opened(results) as store:
        assert store.integrity() == "ok"
    jobs = stored_jobs(results)
    pointed = {j.submission_id for j in jobs.values() if j.state == "done" and j.kind == "grade"}
    assert set(stored_grades(results)) <= pointed, "a stored grade no done job points to"
    assert all(j.submission_id is None for j in jobs.values() if j.state != "done"), "an unfinished job with a grade"

def integrity(service: ServiceUnderTest) -> str:
    with opened(service.results) as store:
        return store.integrity()


def upload_for(service: ServiceUnderTest, student: str, salt: str, marker: str = "ok speed=1.2") -> int:
    """A staff upload for `student` (no limits), of an archive no other job has."""
    return service.upload(service.staff, archive(marker, salt=salt), student=student)["job"]


def all_jobs(service: ServiceUnderTest) -> dict[int, dict]:
    status, body, _ = service.request("GET", "/api/v1/jobs", service.staff)
    assert status == 200, body
    return {j["job"]: j for j in body["jobs"]}


def running_with_progress(service: ServiceUnderTest, job_id: int):
    """The job, once it runs its cases and is not past half of them (a fault sent now lands mid-run)."""
    job = service.job(service.staff, job_id)
    progress = job["progress"] or {}
    return job if job["state"] == "running" and 0 < progress.get("done", 0) < progress.get("total", 0) / 2 else None


def finished(service: ServiceUnderTest, ids, timeout: float = 90.0) -> dict[int, dict]:
    def check():
        jobs = all_jobs(service)
        return jobs if all(jobs[i]["state"] in ("done", "failed", "cancelled") for i in ids) else None
    return until(service, f"jobs {sorted(ids)} to finish", check, timeout, every=0.2)


def graded_order(service: ServiceUnderTest) -> list[int]:
    """The jobs in the order the log says they were graded (the claims' stamps are seconds: a build stage claims
    several in one)."""
    return [int(n) for n in re.findall(r"job (\d+) s\d+ attempt \d+: graded", service.log())]


def graded_lines(service: ServiceUnderTest) -> Counter:
    """How many times the log says each job was graded (the worker's line after the grade is stored)."""
    return Counter(int(n) for n in re.findall(r"job (\d+) s\d+ attempt \d+: graded", service.log()))


def test_a_server_killed_mid_run_and_restarted_completes_every_accepted_job_exactly_once(tmp_path):
    service = ServiceUnderTest(tmp_path, students=STUDENTS, gpus="0,1", delay=SLOW).start()
    try:
        ids = [upload_for(service, s, salt=f"kill-{s}") for s in STUDENTS]
        until(service, "a job done and another running",
              lambda: {"done", "running"} <= {j["state"] for j in all_jobs(service).values()})
        service.kill()
        assert service.worker_pids() == [], "a worker outlived the service's SIGKILL"
        at_kill = stored_jobs(service.results)
        cut = [i for i in ids if at_kill[i].state == "running"]
        done_before = [i for i in ids if at_kill[i].state == "done"]
        assert cut and done_before, {i: j.state for i, j in at_kill.items()}

        service.start()
        jobs = finished(service, ids)
        rows = stored_jobs(service.results)
    finally:
        service.stop()
    assert [jobs[i]["state"] for i in ids] == ["done"] * len(ids), {i: jobs[i]["state"] for i in ids}
    assert all(jobs[i]["result"]["total"] == 100 for i in ids)
    # the crash cut some runs: they began again, the crash not counted as an attempt; stored once either way
    assert {i: rows[i].attempts for i in ids} == {i: 1 for i in ids}
    assert integrity(service) == "ok"
    grades = [rows[i].submission_id for i in ids]
    assert None not in grades and len(set(grades)) == len(ids), grades
    assert sorted(stored_grades(service.results)) == sorted(grades), "a stored grade no job points to"
    for i in cut:
        assert (f"job {i} ({rows[i].student}) was running when the service stopped: queued again at its old place "
                "(not counted as an attempt)") in service.log()
    lines = graded_lines(service)
    # A job done before the kill was logged after its grade was stored: the kill may fall between the two
    assert all(lines[i] <= 1 for i in done_before), lines
    assert all(lines[i] == 1 for i in ids if i not in done_before), (lines, log_tail(service))


def test_a_job_cut_by_three_service_crashes_is_graded_once_first_in_line_with_no_attempt_counted(tmp_path):
    """Three SIGKILLs of the service while one job runs (the rubric's attempts is 3): each crash gives it back at its
    old place, before the students who were waiting behind it, and none counts against it."""
    service = ServiceUnderTest(tmp_path, students=STUDENTS, gpus="0", delay=SLOWER).start()
    try:
        hit = upload_for(service, "s01", salt="crashes")
        behind = [upload_for(service, s, salt=f"behind-{s}") for s in ("s02", "s03")]
        for crash in range(3):
            until(service, f"job {hit} to run its cases (crash {crash + 1})", lambda: running_with_progress(service, hit))
            service.kill()
            assert stored_jobs(service.results)[hit].state == "running"
            service.start()
        jobs = finished(service, [hit, *behind], timeout=120)
        rows = stored_jobs(service.results)
    finally:
        service.stop()
    assert [jobs[i]["state"] for i in (hit, *behind)] == ["done"] * 3, jobs
    assert jobs[hit]["result"]["total"] == 100 and rows[hit].attempts == 1, rows[hit]
    order = graded_order(service)
    assert order.index(hit) < min(order.index(i) for i in behind), order  # before those who waited behind it
    assert graded_lines(service)[hit] == 1 and "not tried again" not in service.log()
    assert integrity(service) == "ok"


def test_a_killed_worker_s_job_goes_back_to_the_queue_and_is_graded(tmp_path):
    service = ServiceUnderTest(tmp_path, students=STUDENTS, gpus="0", delay=SLOWER).start()
    try:
        job = upload_for(service, "s01", salt="worker-kill")
        until(service, f"job {job} to run its cases", lambda: running_with_progress(service, job))
        pid = stored_workers(service.results)["gpu0"]["pid"]
        os.kill(pid, signal.SIGKILL)
        done = service.wait(service.staff, job, timeout=90)
        row = stored_jobs(service.results)[job]
        new_pids = service.worker_pids()
    finally:
        service.stop()
    assert done["state"] == "done" and done["result"]["total"] == 100, done
    assert row.attempts == 2 and row.worker == "gpu0"
    assert f"job {job} (s01): worker gpu0 ended (signal 9); the job is queued" in service.log()
    assert "worker gpu0 ended (signal 9): started again" in service.log()
    assert new_pids and pid not in new_pids
    assert graded_lines(service)[job] == 1


def test_a_worker_that_cannot_start_is_given_up_after_three_tries_and_the_staff_see_its_own_error(tmp_path):
    service = ServiceUnderTest(tmp_path, students=STUDENTS, gpus="0", delay=SLOW).start()
    try:
        for entry in (service.results / "work" / "cache").glob("*/cache.json"):
            entry.unlink()  # what the worker reads first: each new life now fails before it takes a job
        os.kill(stored_workers(service.results)["gpu0"]["pid"], signal.SIGKILL)
        until(service, "the service to give up on gpu0", lambda: "worker gpu0 not started again" in service.log())
        job = upload_for(service, "s01", salt="no-worker")
        worker = next(w for w in service.status()["workers"] if w["name"] == "gpu0")
        waiting = service.job(service.staff, job)
    finally:
        service.stop()
    assert worker["state"] == "failed", worker
    assert "ended 3 times" in worker["reason"] and "could not start" in worker["reason"], worker
    assert "cache.json" in worker["reason"], worker  # the worker's own error, not only that it ended
    assert waiting["state"] == "queued", waiting  # accepted and kept for a worker that can take it
    assert "Traceback" not in service.log(), log_tail(service)
    # (the kill counts as the first of the three when it came within 10 s of the worker's start)
    assert service.log().count("gpu0: could not start: ") in (2, 3), log_tail(service)


def test_a_failed_gpu_s_worker_stops_taking_jobs_the_staff_see_why_and_nothing_is_lost(tmp_path):
    service = ServiceUnderTest(tmp_path, students=STUDENTS, gpus="0,1", delay=SLOW).start()
    try:
        ids = [upload_for(service, s, salt=f"gpu-{s}") for s in STUDENTS]

        def gpu1_busy():
            gpu1 = next(w for w in service.status()["workers"] if w["name"] == "gpu1")
            return gpu1["job"] and running_with_progress(service, gpu1["job"])
        victim = until(service, "GPU 1 to grade a job", gpu1_busy)["job"]
        (service.broken / "1").touch()
        done_by_gpu1 = {i for i, j in stored_jobs(service.results).items() if j.state == "done" and j.worker == "gpu1"}
        jobs = finished(service, ids)
        status = service.status()
        rows = stored_jobs(service.results)
        cli = subprocess.run([sys.executable, "-m", "grader", "status", "--results", str(service.results)],
                             cwd=REPO, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    finally:
        service.stop()
    assert [jobs[i]["state"] for i in ids] == ["done"] * len(ids) and all(jobs[i]["result"]["total"] == 100
                                                                        for i in ids), jobs
    gpu1 = next(w for w in status["workers"] if w["name"] == "gpu1")
    assert gpu1["state"] == "failed" and "fell off the bus" in gpu1["reason"], gpu1
    assert cli.returncode == 0, cli.stderr
    assert re.search(r"gpu1 \(GPU 1\): failed: .*fell off the bus", cli.stdout), cli.stdout
    assert rows[victim].worker == "gpu0" and rows[victim].attempts == 2, rows[victim]
    assert {i for i in ids if rows[i].worker == "gpu1"} == done_by_gpu1, "GPU 1 took a job after it failed"
    assert "worker gpu1 stopped for good" in service.log()


def test_a_job_that_kills_its_worker_every_time_fails_after_the_rubric_s_attempts_and_the_queue_moves_on(tmp_path):
    service = ServiceUnderTest(tmp_path, students=STUDENTS, gpus="0").start()
    try:
        poison = upload_for(service, "s01", salt="poison", marker="kills-grader")
        after = [upload_for(service, s, salt=f"after-{s}") for s in ("s02", "s03")]
        jobs = finished(service, [poison, *after], timeout=120)
        status = service.status()
        later = upload_for(service, "s04", salt="later")
        last = service.wait(service.staff, later)
        rows = stored_jobs(service.results)
    finally:
        service.stop()
    assert jobs[poison]["state"] == "failed", jobs[poison]
    assert "tried 3 times" in jobs[poison]["error"] and "signal 9" in jobs[poison]["error"], jobs[poison]["error"]
    assert rows[poison].attempts == 3 and rows[poison].submission_id is None
    assert [jobs[i]["state"] for i in after] == ["done", "done"] and last["state"] == "done"
    assert status["workers"][0]["state"] in ("idle", "busy"), status["workers"]
    assert any(f["job"] == poison for f in status["failed"])


def test_sigterm_lets_the_running_job_finish_and_leaves_the_queue_for_the_next_start(tmp_path):
    service = ServiceUnderTest(tmp_path, students=STUDENTS, gpus="0", delay=SLOWER, drain=60).start()
    try:
        ids = [upload_for(service, s, salt=f"term-{s}") for s in ("s01", "s02", "s03")]
        running = until(service, "a job to run its cases",
                        lambda: next((j for i in ids if (j := running_with_progress(service, i))), None))["job"]
        service.stop()
        assert service.process.returncode == 0, log_tail(service)
        at_stop = stored_jobs(service.results)
        assert at_stop[running].state == "done" and at_stop[running].attempts == 1, at_stop[running]
        waiting = [i for i in ids if i != running]
        assert [(at_stop[i].state, at_stop[i].attempts) for i in waiting] == [("queued", 0)] * len(waiting)
        assert "gpu0: stopped" in service.log()

        service.start()
        jobs = finished(service, ids)
    finally:
        service.stop()
    assert [jobs[i]["state"] for i in ids] == ["done"] * len(ids)
    assert Counter(graded_lines(service)) == Counter({i: 1 for i in ids})


def test_sigterm_with_a_short_drain_gives_the_running_job_back_and_the_next_start_grades_it(tmp_path):
    service = ServiceUnderTest(tmp_path, students=STUDENTS, gpus="0", delay=SLOWER, drain=0.5).start()
    try:
        job = upload_for(service, "s01", salt="short-drain")
        until(service, f"job {job} to run its cases", lambda: running_with_progress(service, job))
        service.stop()
        assert service.process.returncode == 0, log_tail(service)
        assert service.worker_pids() == []
        row = stored_jobs(service.results)[job]
        assert (row.state, row.attempts, row.submission_id) == ("queued", 0, None), row  # the stop is not the job's
        assert f"job {job} (s01) was not finished within 0.5 s: queued again at its old place" in service.log()

        service.start()
        done = service.wait(service.staff, job, timeout=90)
    finally:
        service.stop()
    assert done["state"] == "done" and done["result"]["total"] == 100
    assert stored_jobs(service.results)[job].attempts == 1


def test_one_student_s_many_uploads_do_not_starve_the_rest(tmp_path):
    service = ServiceUnderTest(tmp_path, students=STUDENTS, gpus="0", delay=SLOW).start()
    try:
        many = [upload_for(service, "s01", salt=f"many-{n}") for n in range(6)]
        others = [upload_for(service, s, salt=f"one-{s}") for s in ("s02", "s03")]
        # Round robin can only put first what is queued: s02's and s03's uploads came while s01's third waited
        started = [j for j in all_jobs(service).values() if j["student"] == "s01" and j["started"]]
        assert len(started) <= 2, f"the machine was too slow to set the scene: {len(started)} of s01's jobs began"
        jobs = finished(service, many + others, timeout=120)
    finally:
        service.stop()
    assert all(jobs[i]["state"] == "done" for i in many + others)
    order = graded_order(service)
    assert all(order.index(i) < order.index(many[2]) for i in others), order
    assert [i for i in order if i in many] == many, order
