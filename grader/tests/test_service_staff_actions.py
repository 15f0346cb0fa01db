"""Staff re-queue or cancel a service job (issue 30's staff page), each action on record with who did it; and the
jobs' fingerprint, the live pages' ETag, which moves with every change a page shows and with nothing else."""
from __future__ import annotations

import pytest

from grader.store.jobs import CANCELLED, FAILED, QUEUED, RUNNING, Jobs, LostClaim
from grader.store.store import Store
from grader.tests.test_service_queue import add


@pytest.fixture
def jobs(tmp_path):
    store = Store(tmp_path / "grades.sqlite")
    j = Jobs(store)
    j.worker_started("gpu0", "0", 1)
    j.worker_started("gpu1", "1", 2)
    yield j
    store.close()


def finish(jobs: Jobs, job_id: int, claim: str, submission_id: int = 100):
    with jobs.store.db:
        jobs.finish_in(job_id, claim, submission_id, "graded", True, 1.0, [])


def failed_job(jobs: Jobs, student: str = "a") -> int:
    """A job its worker died under three times: failed, its tries used up."""
    job_id = add(jobs, student, 1)
    for n in range(3):
        jobs.claim("gpu0", f"c{n}")
        jobs.give_back(job_id, "the worker died", max_attempts=3)
    assert jobs.job(job_id).state == FAILED
    return job_id


def worker_of(jobs: Jobs, name: str) -> dict:
    return next(w for w in jobs.workers() if w["name"] == name)


# --- re-queue -------------------------------------------------------------------------------------------------

def test_a_failed_job_requeued_gets_its_tries_back_and_says_who_requeued_it(jobs):
    job_id = failed_job(jobs)
    assert jobs.requeue(job_id, "ta-kim", "the GPU was mended") == QUEUED
    job = jobs.job(job_id)
    assert (job.state, job.phase, job.attempts, job.claim, job.finished) == (QUEUED, "waiting", 0, None, None)
    assert job.error == "re-queued by ta-kim: the GPU was mended"
    assert jobs.queue() == [job_id]
    [action] = jobs.actions(job_id)
    assert (action["job"], action["action"], action["by"], action["reason"], action["state_before"]) == \
        (job_id, "requeue", "ta-kim", "the GPU was mended", FAILED)
    assert action["at"]
    # its tries are whole again: it is given back twice more before it fails
    jobs.claim("gpu0", "again")
    assert jobs.give_back(job_id, "the worker died", max_attempts=3) == QUEUED


def test_a_requeue_without_a_reason_says_only_who(jobs):
    job_id = failed_job(jobs)
    jobs.requeue(job_id, "ta-kim")
    assert jobs.job(job_id).error == "re-queued by ta-kim" and jobs.actions(job_id)[0]["reason"] == ""


def test_a_running_job_requeued_drops_its_workers_result_and_can_be_taken_again(jobs):
    job_id = add(jobs, "a", 1)
    assert jobs.claim("gpu0", "old").id == job_id
    jobs.progress(job_id, "old", "cases", 3, 10)
    assert worker_of(jobs, "gpu0")["job"] == job_id
    assert jobs.requeue(job_id, "ta-kim") == QUEUED
    job = jobs.job(job_id)
    assert (job.state, job.claim, job.done_cases, job.total_cases) == (QUEUED, None, None, None)
    assert worker_of(jobs, "gpu0")["job"] is None
    assert jobs.actions(job_id)[0]["state_before"] == RUNNING
    with pytest.raises(LostClaim):
        finish(jobs, job_id, "old", 99)
    assert jobs.job(job_id).submission_id is None
    assert jobs.claim("gpu1", "new").id == job_id
    finish(jobs, job_id, "new", 100)
    assert (jobs.job(job_id).state, jobs.job(job_id).submission_id) == ("done", 100)


def test_a_running_job_requeued_is_not_stored_from_its_old_slurm_claim(jobs):
    job_id = add(jobs, "a", 1)
    jobs.claim_batch("slurm", "batch-1", "submitted")
    jobs.requeue(job_id, "ta-kim")
    assert jobs.finish_merged(job_id, "batch-1", 7, "graded", True, 1.0, "a1") is False
    assert jobs.job(job_id).state == QUEUED


@pytest.mark.parametrize("state", ["done", QUEUED])
def test_a_done_or_queued_job_is_not_requeued_and_nothing_is_recorded(jobs, state):
    job_id = add(jobs, "a", 1)
    if state == "done":
        jobs.claim("gpu0", "c")
        finish(jobs, job_id, "c")
    before = jobs.job(job_id)
    assert jobs.requeue(job_id, "ta-kim") == ""
    assert jobs.job(job_id) == before and jobs.actions() == []


def test_a_job_that_does_not_exist_is_neither_requeued_nor_cancelled(jobs):
    assert jobs.requeue(404, "ta-kim") == "" and jobs.cancel_by_staff(404, "ta-kim") == ""
    assert jobs.actions() == []


def test_a_cancelled_job_can_be_requeued(jobs):
    job_id = add(jobs, "a", 1)
    jobs.cancel_by_staff(job_id, "ta-kim", "wrong file")
    assert jobs.requeue(job_id, "ta-lee", "it was the right file") == QUEUED
    assert jobs.job(job_id).state == QUEUED and jobs.job(job_id).finished is None
    assert [(a["action"], a["by"], a["state_before"]) for a in jobs.actions(job_id)] == \
        [("requeue", "ta-lee", CANCELLED), ("cancel", "ta-kim", QUEUED)]


# --- cancel ---------------------------------------------------------------------------------------------------

def test_a_queued_job_cancelled_by_staff_leaves_the_queue_uncounted_on_record(jobs):
    job_id, other = add(jobs, "a", 1), add(jobs, "b", 2)
    assert jobs.cancel_by_staff(job_id, "ta-kim", "uploaded by mistake") == CANCELLED
    job = jobs.job(job_id)
    assert (job.state, job.phase, job.counted, job.claim) == (CANCELLED, "done", 0, None)
    assert job.finished and job.error == "cancelled by ta-kim: uploaded by mistake"
    assert jobs.queue() == [other]
    [action] = jobs.actions(job_id)
    assert (action["action"], action["by"], action["reason"], action["state_before"]) == \
        ("cancel", "ta-kim", "uploaded by mistake", QUEUED)


def test_a_running_job_cancelled_by_staff_cannot_be_finished_by_its_old_claim(jobs):
    job_id = add(jobs, "a", 1)
    jobs.claim("gpu0", "old")
    assert jobs.cancel_by_staff(job_id, "ta-kim") == CANCELLED
    assert worker_of(jobs, "gpu0")["job"] is None
    assert jobs.job(job_id).error == "cancelled by ta-kim"
    assert jobs.actions(job_id)[0]["state_before"] == RUNNING
    with pytest.raises(LostClaim):
        finish(jobs, job_id, "old")
    job = jobs.job(job_id)
    assert (job.state, job.submission_id) == (CANCELLED, None)
    assert jobs.claim("gpu1", "next") is None  # not in the queue any more


@pytest.mark.parametrize("state", ["done", FAILED, CANCELLED])
def test_a_finished_job_is_not_cancelled_and_nothing_is_recorded(jobs, state):
    if state == FAILED:
        job_id = failed_job(jobs)
    else:
        job_id = add(jobs, "a", 1)
        if state == "done":
            jobs.claim("gpu0", "c")
            finish(jobs, job_id, "c")
        else:
            assert jobs.cancel(job_id, "the student's own")
    before = jobs.job(job_id)
    assert jobs.cancel_by_staff(job_id, "ta-kim") == ""
    assert jobs.job(job_id) == before and jobs.actions() == []


def test_the_students_own_cancel_is_unchanged_and_not_a_staff_action(jobs):
    job_id = add(jobs, "a", 1)
    assert jobs.cancel(job_id, "cancelled by its student") is True
    assert jobs.job(job_id).error == "cancelled by its student" and jobs.actions() == []


# --- the record -----------------------------------------------------------------------------------------------

def test_actions_come_newest_first_of_one_job_or_all_up_to_a_limit(jobs):
    a, b = add(jobs, "a", 1), add(jobs, "b", 2)
    jobs.cancel_by_staff(a, "ta-1")
    jobs.cancel_by_staff(b, "ta-2")
    jobs.requeue(a, "ta-3")
    assert [(x["job"], x["by"]) for x in jobs.actions()] == [(a, "ta-3"), (b, "ta-2"), (a, "ta-1")]
    assert [x["by"] for x in jobs.actions(a)] == ["ta-3", "ta-1"]
    assert [x["by"] for x in jobs.actions(limit=2)] == ["ta-3", "ta-2"]
    assert set(jobs.actions()[0]) == {"id", "job", "action", "by", "at", "reason", "state_before"}


# --- the fingerprint ------------------------------------------------------------------------------------------

def test_the_fingerprint_moves_with_every_change_a_page_shows_and_with_nothing_else(jobs):
    seen = [jobs.fingerprint()]

    def changed():
        now = jobs.fingerprint()
        assert now not in seen, f"the fingerprint did not move: {now}"
        assert jobs.fingerprint() == now  # read again with nothing changed: the same
        seen.append(now)

    first = add(jobs, "a", 1)
    changed()
    second = add(jobs, "b", 2)
    changed()
    jobs.claim("gpu0", "c1")
    changed()
    jobs.progress(first, "c1", "cases", 0, 8)
    changed()
    jobs.progress(first, "c1", "cases", 1)
    changed()
    finish(jobs, first, "c1")
    changed()
    assert jobs.requeue(first, "ta-kim") == ""  # done: refused, nothing changes
    assert jobs.fingerprint() == seen[-1]
    jobs.claim("gpu1", "c2")
    changed()
    jobs.requeue(second, "ta-kim")
    changed()
    jobs.cancel_by_staff(second, "ta-kim")
    changed()
    jobs.worker_state("gpu1", "failed", "the GPU fell off the bus")
    changed()
    jobs.worker_started("gpu1", "1", 3)  # restarted: starting again
    changed()


def test_a_workers_heartbeat_alone_does_not_move_the_fingerprint(jobs, monkeypatch):
    before = jobs.fingerprint()
    monkeypatch.setattr("grader.store.jobs.now", lambda: "2030-01-01T00:00:00+00:00")
    jobs.worker_state("gpu0", "starting")  # the same state again: only `seen` moves
    assert worker_of(jobs, "gpu0")["seen"] == "2030-01-01T00:00:00+00:00"
    assert jobs.fingerprint() == before


def test_a_students_fingerprint_moves_with_their_jobs_only(jobs):
    mine = add(jobs, "a", 1)
    before, everyone = jobs.fingerprint("a"), jobs.fingerprint()
    assert before != everyone
    other = add(jobs, "b", 2)
    jobs.claim("gpu0", "c1")  # a's job, the oldest
    assert jobs.fingerprint("a") != before
    before = jobs.fingerprint("a")
    jobs.claim("gpu1", "c2")  # b's
    jobs.progress(other, "c2", "cases", 2, 8)
    jobs.cancel_by_staff(other, "ta-kim")
    jobs.worker_state("gpu1", "idle")
    assert jobs.fingerprint("a") == before
    jobs.cancel_by_staff(mine, "ta-kim")
    assert jobs.fingerprint("a") != before

