"""The ETA a job is given (grader/service/eta.py): from the measured pace of the two stages, the jobs ahead of it
in the queue and in the build stages, and what is left of the jobs on the devices."""
from __future__ import annotations

import pytest

from grader.service.eta import Pace
from grader.store.jobs import BUILT, Jobs
from grader.tests.test_service_queue import add, jobs  # noqa: F401 (jobs: the queue's store, a fixture)


def done(jobs: Jobs, student: str, seconds: float, gpu: float | None, build: float | None,
         solution: float | None = None) -> int:
    job_id = add(jobs, student, 1)
    claim = f"c{job_id}"
    assert jobs.claim("gpu0", claim).id == job_id
    with jobs.store.db:
        jobs.finish_in(job_id, claim, 100 + job_id, "graded", True, seconds, [], gpu_seconds=gpu, build_seconds=build,
                       solution_seconds=solution)
    return job_id


def test_the_pace_leaves_out_what_a_job_spent_measuring_the_solution_for_the_jobs_after_it(jobs):
    """A fresh worker's first job measures the solution's correctness times, which every later job reuses: on an
    H200 it held the GPU 11.2 s where the next held it 8.1 (docs/gpu-runs/2026-12-05-h200-issue-43-rush60-after.md),
    and a pace made of it made every ETA of the rush after it 12-30% long. Its own seconds are the pace."""
    done(jobs, "first", 20.0, 11.2, 8.7, solution=2.6)
    assert Pace.measured(jobs, "grade", workers=1).gpu == pytest.approx(8.6)
    done(jobs, "second", 17.0, 8.1, 8.6, solution=0.0)
    pace = Pace.measured(jobs, "grade", workers=1)
    assert pace.gpu == pytest.approx((8.6 + 8.1) / 2)
    assert pace.eta(jobs.job(add(jobs, "a", 1)), 1) == pytest.approx(8.65 + 8.35, abs=0.06)  # its build, then its own


def test_a_queued_job_waits_for_every_job_ahead_that_still_needs_a_device_then_its_own_device_time(jobs):
    for i in range(3):  # device 10 s a job (the median), build 6 s; a job stored by its build stage is not pace
        done(jobs, f"old{i}", 30.0, 10.0 + i - 1, 6.0)
    done(jobs, "broken", 2.0, 0.0, 2.0)
    on_gpu = add(jobs, "a", 1)
    jobs.claim("gpu0", "run")
    jobs.progress(on_gpu, "run", "running", 3, 4)  # a quarter left: 2.5 s
    built = add(jobs, "b", 1)
    jobs.claim("gpu0", "built", mark_busy=False)
    jobs.progress(built, "built", BUILT)
    building = add(jobs, "c", 1)
    jobs.claim("gpu0", "building", mark_busy=False)
    first, second = add(jobs, "d", 1), add(jobs, "e", 1)
    pace = Pace.measured(jobs, "grade", workers=1)
    assert (pace.gpu, pace.build) == (10.0, 6.0)
    assert pace.eta(jobs.job(on_gpu), None) == 2.5
    assert pace.eta(jobs.job(built), None) == 2.5 + 10.0  # the job on the device, then its own
    assert pace.eta(jobs.job(building), None) == 2.5 + 10.0 + 10.0  # and the built one before it
    # queued: the device's job left, the two in the build stage, the queue ahead, then its own
    assert pace.eta(jobs.job(first), 1) == 2.5 + 20.0 + 10.0
    assert pace.eta(jobs.job(second), 2) == 2.5 + 30.0 + 10.0
    two = Pace.measured(jobs, "grade", workers=2)  # two devices share the jobs ahead
    assert two.eta(jobs.job(second), 2) == pytest.approx((1 + 2 + 0.25) / 2 * 10.0 + 10.0, abs=0.06)


def test_a_short_wait_is_the_job_s_own_build_then_its_device_time(jobs):
    done(jobs, "old", 30.0, 4.0, 12.0)
    queued = add(jobs, "a", 1)
    pace = Pace.measured(jobs, "grade", workers=1)
    assert pace.eta(jobs.job(queued), 1) == 12.0 + 4.0  # nothing ahead: it waits for its own build
    building = jobs.claim("gpu0", "b", mark_busy=False)
    assert Pace.measured(jobs, "grade", workers=1).eta(building, None) == 12.0 + 4.0


def test_jobs_graded_before_the_stages_were_recorded_count_whole_and_nothing_finished_gives_no_eta(jobs):
    first = add(jobs, "a", 1)
    assert Pace.measured(jobs, "grade", workers=1).eta(jobs.job(first), 1) is None
    assert jobs.claim("gpu0", "c").id == first
    with jobs.store.db:
        jobs.finish_in(first, "c", 100, "graded", True, 30.0, [])
    queued = add(jobs, "b", 1)
    assert Pace.measured(jobs, "grade", workers=1).eta(jobs.job(queued), 1) == 30.0
    assert Pace.measured(jobs, "grade", workers=0).eta(jobs.job(queued), 1) is None


def test_the_job_line_says_what_of_its_device_seconds_measured_the_solution():
    from grader.service.worker import held_words
    assert held_words("0", 11.2, 8.7, measuring=2.6) == ("held GPU 0 11.2 s, 2.6 s of it measuring the solution's "
                                                         "times, which the worker's later jobs reuse; built before it "
                                                         "in 8.7 s on the CPU")
    assert held_words("0", 8.1, 8.6, measuring=0.0) == "held GPU 0 8.1 s; built before it in 8.6 s on the CPU"
