"""Paired timing: alternating samples, the speedup's interval, and when sampling stops."""
from __future__ import annotations

import itertools
import random

import pytest

from grader.run.server import Server
from grader.run.paired import time_pairs
from grader.core.rubric import TimingPolicy
from grader.core.stats import median_ci
from grader.tests.fakes import SimClock


class Clock(Server):
    """A server whose samples come from a list (cycled), recording the order of requests."""

    def __init__(self, name, samples, log, status="ok"):
        self.name, self.samples, self.log, self.status = name, itertools.cycle(samples), log, status

    def request(self, message, timeout):
        self.log.append((self.name, message["warmup"]))
        if self.status != "ok":
            return {"op": "time", "status": self.status, "message": "wrong in a timed run", "record": {"hint": "x"}}
        return {"op": "time", "status": "ok", "samples_ms": [next(self.samples)], "samples_sm_mhz": [1980],
                "samples_throttled": [self.name == "A" and len(self.log) == 1]}

    def close(self):
        pass


class Timed(Server):
    """A server whose every run takes `ms` of simulated time, on a shared SimClock."""

    def __init__(self, ms, sim, overhead=0.001):
        self.ms, self.sim, self.overhead, self.warmups = ms, sim, overhead, []

    def request(self, message, timeout):
        self.warmups.append(message["warmup"])
        self.sim.advance((message["warmup"] + message["samples"]) * (self.ms / 1e3 + self.overhead))
        return {"op": "time", "status": "ok", "samples_ms": [self.ms], "samples_sm_mhz": [1980],
                "samples_throttled": [False]}

    def close(self):
        pass


POLICY = TimingPolicy(min_pairs=10, max_pairs=40, target_relative_ci=0.01, budget=30.0, warmup=2,
                      submission_budget=240.0, review_speedup=1.5)
S_ZERO = 0.25


def pairs(a, b, policy=POLICY, **kw):
    return time_pairs(a, b, policy, 10, S_ZERO, **kw)


def test_runs_alternate_student_then_solution_and_warm_up_once():
    log = []
    pairs(Clock("A", [1.0], log), Clock("B", [2.0], log))
    assert [name for name, _ in log[:6]] == ["A", "B", "A", "B", "A", "B"]
    assert log[0] == ("A", 2) and log[1] == ("B", 2) and all(w == 0 for _, w in log[2:])


def test_steady_times_converge_at_the_minimum_pair_count():
    result = pairs(Clock("A", [1.0], []), Clock("B", [2.0], []))
    assert result.stop_reason == "converged" and len(result.pairs) == POLICY.min_pairs
    assert result.speedup.median == 2.0 and result.speedup.low == result.speedup.high == 2.0


def test_noisy_times_sample_until_the_pair_limit():
    rng = random.Random(1)
    noisy = [1.0 + rng.uniform(-0.3, 0.3) for _ in range(100)]
    result = pairs(Clock("A", noisy, []), Clock("B", [1.0], []))
    assert result.stop_reason == "max_pairs" and len(result.pairs) == POLICY.max_pairs
    assert result.speedup.low < result.speedup.median < result.speedup.high


def test_a_throttled_sample_is_flagged():
    result = pairs(Clock("A", [1.0], []), Clock("B", [1.0], []))
    assert result.pairs[0].throttled and not any(p.throttled for p in result.pairs[1:])


def test_a_wrong_timed_run_ends_the_pairing_with_the_students_status():
    result = pairs(Clock("A", [1.0], [], status="wrong"), Clock("B", [1.0], []))
    assert result.status == "wrong" and result.stop_reason == "student_failed" and not result.pairs


def test_a_very_slow_kernel_stops_after_one_pair_with_no_credit_possible():
    sim = SimClock()
    result = pairs(Timed(2200.0, sim), Timed(20.0, sim), clock=sim)
    assert result.stop_reason == "no_credit" and len(result.pairs) == 1
    assert result.speedup.high < S_ZERO / 2
    assert result.seconds == pytest.approx(3 * 2.201 + 3 * 0.021)  # two warm-ups and one sample per side


def test_a_kernel_near_the_curve_keeps_pairing_within_the_budget():
    sim = SimClock()
    rng = random.Random(3)
    student = Timed(100.0, sim)  # speedup ~0.3: above s_zero / 2, so no early stop
    student_times = iter([100.0 * rng.uniform(0.7, 1.3) for _ in range(1000)])

    class Noisy(Timed):
        def request(self, message, timeout):
            reply = super().request(message, timeout)
            reply["samples_ms"] = [next(student_times)]
            return reply

    policy = TimingPolicy(min_pairs=10, max_pairs=200, target_relative_ci=0.001, budget=2.0, warmup=2,
                          submission_budget=60.0, review_speedup=1.5)
    result = pairs(Noisy(student.ms, sim), Timed(30.0, sim), policy, clock=sim)
    assert result.stop_reason == "budget" and len(result.pairs) >= 3
    assert result.seconds <= policy.budget  # never starts a pair that would end past the budget
    assert result.seconds > policy.budget - 2 * 0.132  # and uses what it has


def test_the_budget_counts_the_case_from_its_start_including_the_checks():
    sim = SimClock()
    sim.advance(29.5)  # the checks took most of the 30 s budget
    result = pairs(Timed(100.0, sim), Timed(100.0, sim), started=0.0, clock=sim,
                   policy=TimingPolicy(min_pairs=10, max_pairs=40, target_relative_ci=0.0, budget=30.0, warmup=2,
                                       submission_budget=240.0, review_speedup=1.5))
    assert result.stop_reason == "budget" and len(result.pairs) == 3
    assert result.seconds == pytest.approx(sim.now)


def test_warm_ups_can_be_skipped_for_a_slow_kernel():
    sim = SimClock()
    a, b = Timed(2200.0, sim), Timed(20.0, sim)
    pairs(a, b, clock=sim, warmup=0)
    assert a.warmups == [0] and b.warmups == [0]


def test_the_median_interval_matches_the_harness_rule():
    ci = median_ci(list(range(1, 101)))
    assert ci.median == 50.5
    assert (ci.low, ci.high) == (40, 61)  # ranks floor(50 - 9.8) = 40 and ceil(51 + 9.8) = 61
    assert median_ci([3.0, 1.0, 2.0]) .low == 1.0
    with pytest.raises(ValueError):
        median_ci([])
