"""The service's queue in the store (grader/store/jobs.py): round-robin order, one claim per job, a lost claim
stores nothing, a job given back keeps its place and fails after its attempts."""
from __future__ import annotations

import pytest

from grader.store.jobs import FAILED, QUEUED, Jobs, LostClaim
from grader.store.store import Store


@pytest.fixture
def jobs(tmp_path):
    store = Store(tmp_path / "grades.sqlite")
    j = Jobs(store)
    j.worker_started("gpu0", "0", 1)
    yield j
    store.close()


def add(jobs: Jobs, student: str, n: int) -> int:
    job_id, refused = jobs.admit({"student": student, "upload_id": f"{student}-upload-{n}", "token": "t",
                                  "received": f"2026-11-28T09:00:{n:02d}+00:00", "received_from": "service",
                                  "archive": f"/x/{student}-{n}.tar.gz", "sha256": f"{student}{n}", "bytes": 1},
                                 lambda recent: None)
    assert refused is None
    return job_id


def test_one_students_many_uploads_do_not_starve_the_rest(jobs):
    a = [add(jobs, "a", n) for n in range(4)]
    b, c = add(jobs, "b", 10), add(jobs, "c", 11)
    assert jobs.queue()[:3] == [a[0], b, c]  # the first job of each student first
    order = []
    for n in range(6):
        job = jobs.claim("gpu0", f"claim-{n}")
        order.append(job.id)
        with jobs.store.db:
            jobs.finish_in(job.id, f"claim-{n}", 1000 + n, "graded", True, 1.0, [])
    assert order[:3] == [a[0], b, c] and order[3:] == a[1:]


def test_a_student_with_a_job_running_waits_so_results_come_back_in_upload_order(jobs):
    first = add(jobs, "a", 1)
    add(jobs, "a", 2)
    other = add(jobs, "b", 3)
    assert jobs.claim("gpu0", "c1").id == first
    assert jobs.claim("gpu1", "c2").id == other  # not a's second while a's first runs
    assert jobs.claim("gpu2", "c3") is None


def test_only_the_current_claim_finishes_a_job(jobs):
    job_id = add(jobs, "a", 1)
    jobs.claim("gpu0", "old")
    assert jobs.give_back(job_id, "the worker died", max_attempts=3) == QUEUED
    jobs.claim("gpu0", "new")
    with pytest.raises(LostClaim):
        with jobs.store.db:
            jobs.finish_in(job_id, "old", 99, "graded", True, 1.0, [])
    with jobs.store.db:
        jobs.finish_in(job_id, "new", 100, "graded", True, 1.0, [])
    done = jobs.job(job_id)
    assert done.state == "done" and done.submission_id == 100 and done.attempts == 2


def test_a_job_given_back_too_often_fails_and_stops_counting(jobs):
    job_id = add(jobs, "a", 1)
    for n in range(3):
        jobs.claim("gpu0", f"c{n}")
        state = jobs.give_back(job_id, "the worker died", max_attempts=3)
    assert state == FAILED
    job = jobs.job(job_id)
    assert job.state == FAILED and not job.counted and "tried 3 times" in job.error
    assert jobs.claim("gpu0", "next") is None


def test_a_built_job_taken_by_the_gpu_shows_its_worker_busy_with_it_and_a_lost_claim_changes_nothing(jobs):
    """The phase and the worker's row move in one transaction (CI once read the job running and its worker idle
    between two)."""
    job_id = add(jobs, "a", 1)
    jobs.claim("gpu0", "stage", mark_busy=False)
    jobs.progress(job_id, "stage", "built")
    assert jobs.workers()[0]["job"] is None
    assert not jobs.taken_by_gpu(job_id, "someone-else", "running", "gpu0")
    assert (jobs.job(job_id).phase, jobs.workers()[0]["job"]) == ("built", None)
    assert jobs.taken_by_gpu(job_id, "stage", "running", "gpu0")
    worker = jobs.workers()[0]
    assert (jobs.job(job_id).phase, worker["state"], worker["job"]) == ("running", "busy", job_id)
