"""Paired timing: alternating samples, the speedup's interval, and when sampling stops."""
from __future__ import annotations

import itertools
import random

import pytest

from grader.paired import time_pairs
from grader.rubric import TimingPolicy
from grader.stats import median_ci


class Clock:
    """A server whose samples come from a list (cycled), recording the order of requests."""

    def __init__(self, name, samples, log, status="ok"):
        self.name, self.samples, self.log, self.status = name, itertools.cycle(samples), log, status

    def request(self, message, timeout):
        self.log.append((self.name, message["warmup"]))
        if self.status != "ok":
            return {"op": "time", "status": self.status, "message": "wrong in a timed run", "record": {"hint": "x"}}
        return {"op": "time", "status": "ok", "samples_ms": [next(self.samples)], "sm_mhz": 1980,
                "clock_limit_reasons": "power cap" if self.name == "A" and len(self.log) == 1 else "none"}


POLICY = TimingPolicy(min_pairs=10, max_pairs=40, target_relative_ci=0.01, budget=30.0, warmup=2)


def test_runs_alternate_student_then_solution_and_warm_up_once():
    log = []
    time_pairs(Clock("A", [1.0], log), Clock("B", [2.0], log), POLICY, 10)
    assert [name for name, _ in log[:6]] == ["A", "B", "A", "B", "A", "B"]
    assert log[0] == ("A", 2) and log[1] == ("B", 2) and all(w == 0 for _, w in log[2:])


def test_steady_times_converge_at_the_minimum_pair_count():
    result = time_pairs(Clock("A", [1.0], []), Clock("B", [2.0], []), POLICY, 10)
    assert result.stop_reason == "converged" and len(result.pairs) == POLICY.min_pairs
    assert result.speedup.median == 2.0 and result.speedup.low == result.speedup.high == 2.0


def test_noisy_times_sample_until_the_pair_limit():
    rng = random.Random(1)
    noisy = [1.0 + rng.uniform(-0.3, 0.3) for _ in range(100)]
    result = time_pairs(Clock("A", noisy, []), Clock("B", [1.0], []), POLICY, 10)
    assert result.stop_reason == "max_pairs" and len(result.pairs) == POLICY.max_pairs
    assert result.speedup.low < result.speedup.median < result.speedup.high


def test_a_throttled_sample_is_flagged():
    result = time_pairs(Clock("A", [1.0], []), Clock("B", [1.0], []), POLICY, 10)
    assert result.pairs[0].throttled and not any(p.throttled for p in result.pairs[1:])


def test_a_wrong_timed_run_ends_the_pairing_with_the_students_status():
    result = time_pairs(Clock("A", [1.0], [], status="wrong"), Clock("B", [1.0], []), POLICY, 10)
    assert result.status == "wrong" and result.stop_reason == "student_failed" and not result.pairs


def test_the_median_interval_matches_the_harness_rule():
    ci = median_ci(list(range(1, 101)))
    assert ci.median == 50.5
    assert (ci.low, ci.high) == (40, 61)  # ranks floor(50 - 9.8) = 40 and ceil(51 + 9.8) = 61
    assert median_ci([3.0, 1.0, 2.0]) .low == 1.0
    with pytest.raises(ValueError):
        median_ci([])
