"""Paired timing: the student's and the solution's runs alternate on one GPU.

For one case, each pair is one timed run of the student's kernel (A) then one
of the solution's (B), ABAB..., each through its own `harness --serve`
process, each with the L2 flushed and its output verified. The speedup of a
pair is B's time over A's (above 1: faster than the solution), so drifts in
clock or temperature that last longer than a pair cancel out. Pairs continue
until the 95% interval of the median speedup is within the rubric's target,
or the pair count or time budget runs out.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from grader.rubric import TimingPolicy
from grader.stats import MedianCI, median_ci

# Reasons NVML gives for a clock below its maximum that mean the sample was slowed.
THROTTLE_WORDS = ("power cap", "hardware slowdown", "software thermal", "hardware thermal", "power brake")


@dataclass
class Pair:
    student_ms: float
    solution_ms: float
    student_sm_mhz: int | None
    solution_sm_mhz: int | None
    throttled: bool

    @property
    def speedup(self) -> float:
        return self.solution_ms / self.student_ms


@dataclass
class PairedResult:
    status: str = "ok"  # "ok", or the student's status when a timed run went wrong
    message: str = ""
    pairs: list[Pair] = field(default_factory=list)
    stop_reason: str = ""
    record: dict | None = None  # the harness's case record when a timed run failed

    @property
    def speedup(self) -> MedianCI:
        return median_ci([p.speedup for p in self.pairs])

    @property
    def student(self) -> MedianCI:
        return median_ci([p.student_ms for p in self.pairs])

    @property
    def solution(self) -> MedianCI:
        return median_ci([p.solution_ms for p in self.pairs])


def _throttled(reply: dict) -> bool:
    reasons = reply.get("clock_limit_reasons") or ""
    return any(word in reasons for word in THROTTLE_WORDS)


def time_pairs(student, solution, policy: TimingPolicy, request_timeout: float) -> PairedResult:
    """Both servers hold the same case, checked and ready. `student` and `solution`
    have request(message, timeout) -> reply, as HarnessServer does."""
    result = PairedResult()
    start = time.monotonic()
    while True:
        warmup = policy.warmup if not result.pairs else 0
        a = student.request({"op": "time", "samples": 1, "warmup": warmup}, request_timeout)
        if a.get("status") != "ok":
            result.status = a.get("status", "error")
            result.message = a.get("message") or a.get("error", "")
            result.record = a.get("record")
            result.stop_reason = "student_failed"
            return result
        b = solution.request({"op": "time", "samples": 1, "warmup": warmup}, request_timeout)
        if b.get("status") != "ok":
            raise RuntimeError(f"the solution failed while being timed: {b}")
        result.pairs.append(Pair(a["samples_ms"][0], b["samples_ms"][0], a.get("sm_mhz"), b.get("sm_mhz"),
                                 _throttled(a) or _throttled(b)))
        n = len(result.pairs)
        elapsed = time.monotonic() - start
        if n >= policy.min_pairs and result.speedup.relative_half_width <= policy.target_relative_ci:
            result.stop_reason = "converged"
        elif n >= policy.max_pairs:
            result.stop_reason = "max_pairs"
        elif elapsed >= policy.budget and n >= 3:
            result.stop_reason = "budget"
        elif elapsed >= 4 * policy.budget:
            result.stop_reason = "hard_budget"
        if result.stop_reason:
            return result

