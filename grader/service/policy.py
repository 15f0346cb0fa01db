"""The rubric's [service] limits applied to one upload (grader/core/service_policy.py says what they are)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from grader.core.service_policy import ServicePolicy
from grader.store.jobs import Job


def counted(jobs: list[Job], now: datetime) -> list[Job]:
    """The uploads that count against the hourly limit at `now`: those of the last hour still open, or graded
    (an upload rejected at intake or that did not build does not count, nor one the grader failed or staff
    cancelled)."""
    hour_ago = now - timedelta(hours=1)
    return [j for j in jobs if datetime.fromisoformat(j.received) >= hour_ago and (j.open or (j.counted and
                                                                                                j.state == "done"))]


def next_upload_at(jobs: list[Job], policy: ServicePolicy, now: datetime) -> datetime | None:
    """When the next upload will be counted in the limit (None: now)."""
    these = sorted(counted(jobs, now), key=lambda j: j.received)
    if len(these) < policy.uploads_per_hour:
        return None
    return datetime.fromisoformat(these[-policy.uploads_per_hour].received) + timedelta(hours=1)


def refusal(jobs: list[Job], policy: ServicePolicy, now: datetime, attempt_of) -> tuple[str, float] | None:
    """Why a student's new upload is refused, and in how many seconds to try again; None when it is taken.
    `jobs`: the student's jobs of the last hour and their open ones; `attempt_of(job)`: its number for the
    student."""
    open_jobs = [j for j in jobs if j.open]
    if len(open_jobs) >= policy.in_flight:
        first = open_jobs[0]
        return (f"your upload #{attempt_of(first)} is still {'being graded' if first.state == 'running' else 'waiting'}"
                f"; upload again when it is done (`make history` shows it)", 30.0)
    at = next_upload_at(jobs, policy, now)
    if at is not None:
        return (f"{policy.uploads_per_hour} uploads counted in the last hour (the limit); your next upload is "
                f"possible at {at.astimezone(timezone.utc):%H:%M} UTC", max(1.0, (at - now).total_seconds()))
    return None
