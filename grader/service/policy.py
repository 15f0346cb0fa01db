"""The rubric's [service] limits applied to one upload or profile request (grader/core/service_policy.py says what
they are). Each kind of job has its own: uploads to grade count against `uploads_per_hour`, `make profile GPU=1`'s
requests against `profiles_per_hour`, and `in_flight` holds for each kind apart."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from grader.core.service_policy import ServicePolicy
from grader.store.jobs import GRADE, Job


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
    student."""
    what = "upload" if kind == GRADE else "profile request"
    open_jobs = [j for j in jobs if j.open and j.kind == kind]
    if len(open_jobs) >= policy.in_flight:
        first = open_jobs[0]
        state = ("being graded" if kind == GRADE else "running") if first.state == "running" else "waiting"
        return (f"your {what} #{attempt_of(first)} is still {state}; {'upload' if kind == GRADE else 'ask'} again when "
                f"it is done (`make history` shows it)", 30.0)
    at = next_upload_at(jobs, policy, now, kind)
    if at is not None:
        return (f"{per_hour(policy, kind)} {what}s counted in the last hour (the limit); your next {what} is "
                f"possible at {at.astimezone(timezone.utc):%H:%M} UTC", max(1.0, (at - now).total_seconds()))
    return None
