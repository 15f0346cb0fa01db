"""Paired timing: the student's and the solution's runs alternate on one GPU.

For one case, each pair is one timed run of the student's kernel (A) then one
of the solution's (B), ABAB..., each through its own `harness --serve`
process, each with the L2 flushed and its output verified. The speedup of a
pair is B's time over A's (above 1: faster than the solution), so drifts in
clock or temperature that last longer than a pair cancel out.

When pairing stops, and why the time it takes is bounded:
  * converged: at least `min_pairs` pairs and the 95% interval of the median
    speedup within `target_relative_ci` of it;
  * max_pairs;
  * no_credit: the speedup's whole interval lies below half of the curve's
    zero point s_zero, so no further pair could earn credit: a run would have
    to be twice as fast as every run so far. A very slow kernel stops here
    after one pair (slower ones, at most 2 / s_zero times the solution's time,
    keep pairs short enough for the budget rule);
  * budget: the case's time (its checks, warm-ups and pairs, both sides,
    counted from `started`) plus the longest pair so far would pass the
    rubric's per-case `budget`, once there are 3 pairs;
  * hard_budget: twice the budget spent, however few the pairs (a safety
    net: a pair slow enough to reach it has a speedup far below any curve).
Warm-ups run once, in the first request of each side; the caller asks for none
when the student's check already took more than a tenth of the budget (a
run that long needs no warming up, and two of them would eat the budget).

While the solution's sample runs, the student's processes are stopped
(SIGSTOP, every thread: `student.pause()`, nothing for a server with nothing
to stop) from the moment their reply is in until their next request: a
thread of theirs left running in the background cannot launch GPU work that
slows the solution's sample (and so raises the speedup).
"""
from __future__ import annotations

import time
from typing import Callable

from grader.run.server import Server
from grader.core.rubric import TimingPolicy
from grader.core.status import CaseStatus
from grader.core.stats import MedianCI
from grader.outcomes.paired import Pair, PairedResult

VERDICT_PAIRS = 3  # the fewest pairs whose interval (their range) is trusted for stopping


def _sample(reply: dict) -> tuple[float, int | None, bool]:
    """The one sample of a time reply: its time, the SM clock after it, whether it was throttled."""
    mhz = (reply.get("samples_sm_mhz") or [reply.get("sm_mhz")])[0]
    return reply["samples_ms"][0], mhz, bool((reply.get("samples_throttled") or [False])[0])


def no_credit_possible(speedup: MedianCI, s_zero: float) -> bool:
    """Whether the speedup is so far below the curve's zero point that more pairs cannot change the credit."""
    return speedup.high <= s_zero / 2


def time_pairs(student: Server, solution: Server, policy: TimingPolicy, request_timeout: float, s_zero: float,
               started: float | None = None, warmup: int | None = None,
               clock: Callable[[], float] = time.monotonic) -> PairedResult:
    """Both servers (grader/backends/base.py) hold the same case, checked and ready. `started` is when
    the case began on `clock` (its checks count against the budget); `warmup`
    overrides the policy's warm-up count."""
    result = PairedResult()
    start = clock() if started is None else started
    warmup = policy.warmup if warmup is None else warmup
    longest = 0.0  # seconds of the longest pair so far, warm-ups left out
    while True:
        first = not result.pairs
        runs = 1 + (warmup if first else 0)
        t0 = clock()
        a = student.request({"op": "time", "samples": 1, "warmup": warmup if first else 0}, request_timeout)
        if a.get("status") != CaseStatus.OK:
            result.status = a.get("status", CaseStatus.ERROR)
            result.message = a.get("message") or a.get("error", "")
            result.record = a.get("record")
            result.stop_reason = "student_failed"
            result.seconds = clock() - start
            return result
        student.pause()  # resumed by its next request
        b = solution.request({"op": "time", "samples": 1, "warmup": warmup if first else 0}, request_timeout)
        if b.get("status") != CaseStatus.OK:
            raise RuntimeError(f"the solution failed while being timed: {b}")
        longest = max(longest, (clock() - t0) / runs)
        (a_ms, a_mhz, a_throttled), (b_ms, b_mhz, b_throttled) = _sample(a), _sample(b)
        result.pairs.append(Pair(a_ms, b_ms, a_mhz, b_mhz, a_throttled or b_throttled))
        n = len(result.pairs)
        elapsed = clock() - start
        speedup = result.speedup
        if n >= policy.min_pairs and speedup.relative_half_width <= policy.target_relative_ci:
            result.stop_reason = "converged"
        elif n >= policy.max_pairs:
            result.stop_reason = "max_pairs"
        elif no_credit_possible(speedup, s_zero):
            result.stop_reason = "no_credit"
        elif n >= VERDICT_PAIRS and elapsed + longest > policy.budget:
            result.stop_reason = "budget"
        elif elapsed >= 2 * policy.budget:
            result.stop_reason = "hard_budget"
        if result.stop_reason:
            result.seconds = elapsed
            return result
