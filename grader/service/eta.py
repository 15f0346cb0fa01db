"""How long until a job's result: from the measured pace of the service's two stages (grader/service/worker.py),
for `make upload`, the pages and the API (issue 43, item 4).

A worker's device takes its jobs one after another, each for about `gpu` seconds (the median of the recent jobs'
seconds on a device, jobs.gpu_seconds, less what a worker's first job spent measuring the solution's times for
the jobs after it), while its build stage builds the next ones on the host's cores in about
`build` seconds each. A job waits for every job ahead of it that still needs a device: those of the queue ahead
of it, those in the build stages, and what is left of the ones on a device, shared among the workers; then its
own device time. Its own build overlaps that wait, unless the wait is shorter. Jobs graded before the stages
were recorded (no gpu_seconds) count with their whole seconds on the device."""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from grader.store.jobs import BUILD_PHASES, BUILDING, QUEUED, RUNNING, Job, Jobs

RECENT = 20  # jobs of a kind whose seconds make the pace


@dataclass(frozen=True)
class Pace:
    gpu: float | None  # None: no job of the kind finished yet, so no estimate
    build: float
    workers: int
    staged: dict[str, list[int]] = field(default_factory=dict)  # worker -> its build stage's jobs, in claim order
    left: dict[str, float] = field(default_factory=dict)  # worker -> the share of its device's job still to run

    @classmethod
    def measured(cls, jobs: Jobs, kind: str, workers: int) -> Pace:
        recent = jobs.recent_stages(RECENT, kind)
        gpu = statistics.median(g if g is not None else s for s, g, _ in recent) if recent else None
        builds = [b or 0.0 for _, g, b in recent if g is not None]
        build = float(statistics.median(builds)) if builds else 0.0
        staged: dict[str, list[int]] = {}
        left: dict[str, float] = {}
        for j in jobs.running():
            if j.phase in BUILD_PHASES:
                staged.setdefault(j.worker or "", []).append(j.id)
            else:
                left[j.worker or ""] = 1.0 - (j.done_cases or 0) / j.total_cases if j.total_cases else 1.0
        return cls(gpu, build, workers, staged, left)

    def eta(self, job: Job, position: int | None) -> float | None:
        if self.gpu is None or self.workers < 1:
            return None
        if job.state == RUNNING and job.phase in BUILD_PHASES:
            mine = self.staged.get(job.worker or "", [])
            ahead = self.left.get(job.worker or "", 0.0) + sum(1 for i in mine if i < job.id)
            own_build = self.build if job.phase == BUILDING else 0.0
            return _seconds(max(own_build, ahead * self.gpu) + self.gpu)
        if job.state == RUNNING:
            return _seconds(self.left.get(job.worker or "", 1.0) * self.gpu)
        if job.state == QUEUED and position is not None:
            ahead = (position - 1 + sum(len(v) for v in self.staged.values()) + sum(self.left.values())) / self.workers
            return _seconds(max(self.build, ahead * self.gpu) + self.gpu)
        return None


def _seconds(value: float) -> float:
    return round(max(1.0, value), 1)
