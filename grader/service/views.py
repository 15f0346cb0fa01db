"""What the service says about a job: the JSON of docs/service.md's API, made from the store's rows."""
from __future__ import annotations

import json
from datetime import datetime, timezone

from grader.core.rubric import Rubric
from grader.core.visibility import STAFF_VIEW
from grader.service.eta import Pace
from grader.reports.student_view import result_summaries, student_result
from grader.store.jobs import BUILT, PROFILE, QUEUED, RUNNING, Job, Jobs

# What a phase is called where people read it (the pages, `make upload`); the other phases say it as they are.
PHASE_WORDS = {BUILT: "built, waiting for its run"}
MAX_ID = 2**63 - 1  # SQLite's largest integer: a job number a client sends is checked against it before any query


def typed(text: str) -> str:
    """Text a person typed (a staff reason, a nickname) as one line of the log: control characters escaped, so one
    event stays one line."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def job_view(jobs: Jobs, rubric: Rubric, job: Job, workers: int, now: datetime, feedback: bool = True,
             staff: bool = False) -> dict:
    """The job as the API shows it; its result as its student reads it now (hidden cases counted, not shown), or
    with `staff`, everything; with `feedback`, the condensed feedback and each task's note too."""
    queue = jobs.queue() if job.state == QUEUED else []
    result = None
    if _graded(job):
        view = STAFF_VIEW if staff else None
        result = (student_result(jobs.store, rubric, job.submission_id, now, view) if feedback else
                  result_summaries(jobs.store, rubric, [job.submission_id], now, view).get(job.submission_id))
    position = queue.index(job.id) + 1 if job.id in queue else None
    return _view(job, jobs.attempt_number(job), position, Pace.measured(jobs, job.kind, workers), result)


def job_views(jobs: Jobs, rubric: Rubric, listed: list[Job], workers: int, now: datetime,
              staff: bool = False) -> list[dict]:
    """Many jobs as job_view shows each without feedback (a listing: a student's uploads, a class's), read in a
    few queries however many there are: a staff listing of a whole class answers as fast as one student's."""
    positions = {job_id: i + 1 for i, job_id in enumerate(jobs.queue())}
    attempts = jobs.attempt_numbers({j.student for j in listed})
    paces = {kind: Pace.measured(jobs, kind, workers) for kind in {j.kind for j in listed}}
    results = result_summaries(jobs.store, rubric, [j.submission_id for j in listed if _graded(j)], now,
                               STAFF_VIEW if staff else None)
    return [_view(j, attempts[j.id], positions.get(j.id), paces[j.kind],
                  results.get(j.submission_id) if _graded(j) else None) for j in listed]


def _graded(job: Job) -> bool:
    return job.state == "done" and job.submission_id is not None


def _view(job: Job, attempt: int, position: int | None, pace: Pace, result: dict | None) -> dict:
    return {"job": job.id, "student": job.student, "attempt": attempt, "name": job_name(job, attempt),
            "state": job.state, "phase": job.phase, "phase_words": PHASE_WORDS.get(job.phase, job.phase),
            "position": position,
            "eta_seconds": pace.eta(job, position),
            "progress": ({"done": job.done_cases, "total": job.total_cases} if job.total_cases else None),
            "received": job.received, "started": job.started, "finished": job.finished,
            "counted": bool(job.counted) if job.state == "done" else job.state in (QUEUED, RUNNING),
            "error": job.error if job.state in ("failed", "cancelled") else "", "result": result,
            "kind": job.kind, **({"task": job.task, "profile": profile_result(job)} if job.kind == PROFILE else {})}


def job_name(job: Job, attempt: int) -> str:
    """What a job is called wherever its student looks (the terminal, the pages, the API's messages): "upload #3", their
    third upload, or "profile #1 of transpose", their first profile request. The job id is a field for tools (and the
    staff's pages show it beside the name, labelled)."""
    return f"profile #{attempt} of {job.task}" if job.kind == PROFILE else f"upload #{attempt}"


def profile_result(job: Job) -> dict | None:
    """A done profile job's result (grader/service/worker.py writes it): the task's numbers and the solution's from
    the same GPU, the findings, or why there are none."""
    if job.state != "done" or not job.profile:
        return None
    try:
        return json.loads(job.profile)
    except ValueError:
        return {"status": "failed", "message": "the stored result could not be read"}


def utc_now() -> datetime:
    return datetime.now(timezone.utc)
