"""The rubric's [service] limits applied to one upload or profile request (grader/core/service_policy.py says what
they are). Each kind of job has its own: uploads to grade count against `uploads_per_hour`, `make profile GPU=1`'s
requests against `profiles_per_hour`, and `in_flight` holds for each kind apart. The words a student reads about
the limits (the 429's error, /api/v1/limits, the student's page, `make upload`'s check) are this module's."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from grader.core.service_policy import ServicePolicy
from grader.core.status import SubmissionStatus
from grader.outcomes.results import SubmissionResult
from grader.service.views import job_name
from grader.store.jobs import GRADE, Job


def counts(result: SubmissionResult) -> bool:
    """Whether a graded upload counts against the hourly limit, as docs/service.md says: one rejected at intake, or
    that did not build, does not. A task file that does not compile gets a stand-in and the others are graded, so
    "did not build" is also an upload none of whose task files compiled (the grade is its status word otherwise)."""
    if result.status != SubmissionStatus.GRADED:
        return False
    handed_in = set(result.submission.files)
    return result.build is None or not handed_in or not handed_in <= set(result.build.unbuilt)


def counted(jobs: list[Job], now: datetime, kind: str = GRADE) -> list[Job]:
    """The jobs of `kind` that count against its hourly limit at `now`: those of the last hour still open, or
    done and counted (one rejected at intake or that did not build does not count, nor one the grader failed or
    staff cancelled)."""
    hour_ago = now - timedelta(hours=1)
    return [j for j in jobs if j.kind == kind and datetime.fromisoformat(j.received) >= hour_ago
            and (j.open or (j.counted and j.state == "done"))]


def per_hour(policy: ServicePolicy, kind: str) -> int:
    return policy.uploads_per_hour if kind == GRADE else policy.profiles_per_hour


def next_upload_at(jobs: list[Job], policy: ServicePolicy, now: datetime, kind: str = GRADE) -> datetime | None:
    """When the next job of `kind` will be counted in its limit (None: now)."""
    these = sorted(counted(jobs, now, kind), key=lambda j: j.received)
    limit = per_hour(policy, kind)
    if len(these) < limit:
        return None
    return datetime.fromisoformat(these[-limit].received) + timedelta(hours=1)


def refusal(jobs: list[Job], policy: ServicePolicy, now: datetime, attempt_of, kind: str = GRADE
            ) -> tuple[str, float] | None:
    """Why a student's new job of `kind` is refused, and in how many seconds to try again; None when it is taken.
    `jobs`: the student's jobs of the last hour and their open ones; `attempt_of(job)`: its number for the
    student. The line names the job as its student knows it ("your upload #3"), and when to try again."""
    what = "upload" if kind == GRADE else "profile"
    open_jobs = [j for j in jobs if j.open and j.kind == kind]
    if len(open_jobs) >= policy.in_flight:
        first = open_jobs[0]
        state = ("being graded" if kind == GRADE else "running") if first.state == "running" else "waiting"
        again = "upload again" if kind == GRADE else "ask for a profile again"
        return (f"your {job_name(first, attempt_of(first))} is still {state}; {again} when it is done (`make history` "
                "shows it)", 30.0)
    at = next_upload_at(jobs, policy, now, kind)
    if at is not None:
        return (f"{per_hour(policy, kind)} {what}s counted in the last hour (the limit); your next {what} is "
                f"possible at {at.astimezone(timezone.utc):%H:%M} UTC", max(1.0, (at - now).total_seconds()))
    return None


def standing(jobs: list[Job], policy: ServicePolicy, now: datetime, attempt_of, kind: str = GRADE
             ) -> tuple[str, bool]:
    """What the limits leave a student now, in one line, and whether a new job of `kind` would be refused: the
    refusal it would get (refusal above), or how many are left this hour."""
    refused = refusal(jobs, policy, now, attempt_of, kind)
    if refused:
        return refused[0], True
    left = per_hour(policy, kind) - len(counted(jobs, now, kind))
    if kind == GRADE:
        return (f"you can upload now ({left} of {policy.uploads_per_hour} uploads an hour left; one that does not "
                "build does not count)"), False
    return (f"you can ask for a profile now ({left} of {policy.profiles_per_hour} profiles an hour left; one that "
            "does not build, or that Nsight Compute could not count, does not count)"), False
