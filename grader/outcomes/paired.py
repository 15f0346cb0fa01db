"""What paired timing measured for one timed case (grader/run/paired.py times it): each pair's two times and
clocks, and the case's medians with their intervals."""
from __future__ import annotations

from dataclasses import dataclass, field

from grader.core import metrics
from grader.core.stats import MedianCI, median_ci
from grader.core.status import CaseStatus


@dataclass
class Pair:
    student_ms: float
    solution_ms: float
    student_sm_mhz: int | None
    solution_sm_mhz: int | None
    throttled: bool  # either side's sample was taken while the SM clock was throttled

    @property
    def speedup(self) -> float:
        return metrics.speedup(self.solution_ms, self.student_ms)


@dataclass
class PairedResult:
    status: str = CaseStatus.OK  # or the student's status (the harness's word) when a timed run went wrong
    message: str = ""
    pairs: list[Pair] = field(default_factory=list)
    stop_reason: str = ""
    record: dict | None = None  # the harness's case record when a timed run failed
    seconds: float = 0.0  # the case's time: checks, warm-ups and pairs

    @property
    def speedup(self) -> MedianCI:
        return median_ci([p.speedup for p in self.pairs])

    @property
    def student(self) -> MedianCI:
        return median_ci([p.student_ms for p in self.pairs])

    @property
    def solution(self) -> MedianCI:
        return median_ci([p.solution_ms for p in self.pairs])

    @property
    def throttled_pairs(self) -> int:
        return sum(p.throttled for p in self.pairs)
