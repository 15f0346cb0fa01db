"""Scoring: correctness in proportion, performance only when correct, credit at the interval's better side."""
from __future__ import annotations

import pytest

from grader.outcomes.paired import Pair, PairedResult
from grader.outcomes.results import CaseOutcome
from grader.scoring.score import ScoredCase, task_score


def score_task(policy, cases, measured=True):
    """The chain's first step for one task, on fresh outcomes."""
    return task_score(policy, [ScoredCase.of_outcome(c, i) for i, c in enumerate(cases)], measured)[0]


def correctness_cases(policy, status_of=lambda dtype, shape: "ok"):
    return [CaseOutcome(policy.id, d, s, "correctness", status_of(d, s)) for d in policy.dtypes for s in policy.shapes]


def timed_case(policy, shape, speedups, status="ok"):
    paired = PairedResult(pairs=[Pair(1.0 / s, 1.0, 1980, 1980, False) for s in speedups])
    return CaseOutcome(policy.id, policy.timed_dtype, shape, "timed", status, paired=paired)


def test_correctness_points_are_in_proportion_to_cases_passed(rubric):
    policy = rubric.task("transpose")
    first = (policy.dtypes[0], policy.shapes[0])
    cases = correctness_cases(policy, lambda d, s: "wrong" if (d, s) == first else "ok")
    score = score_task(policy, cases)
    total = len(policy.dtypes) * len(policy.shapes)
    assert score.correctness == pytest.approx(policy.correctness_points * (total - 1) / total)
    assert score.cases_passed == total - 1


def test_one_failing_correctness_case_forfeits_the_performance_points(rubric):
    policy = rubric.task("dot")
    cases = correctness_cases(policy, lambda d, s: "wrong" if s == policy.shapes[-1] else "ok")
    cases.append(timed_case(policy, policy.timed[0], [5.0] * 10))
    score = score_task(policy, cases)
    assert score.performance == 0
    assert "no performance points" in score.note


def test_matching_the_solution_earns_full_performance_credit(rubric):
    policy = rubric.task("dot")
    cases = correctness_cases(policy) + [timed_case(policy, policy.timed[0], [1.0] * 12)]
    score = score_task(policy, cases)
    assert score.performance == policy.performance_points
    assert score.total == policy.max_points


def test_credit_is_taken_at_the_upper_end_of_the_interval(rubric):
    policy = rubric.task("matmul_fast")
    # Speedups spread around s_zero: the median alone is below it, the interval reaches above it.
    speedups = [policy.s_zero * f for f in (0.8, 0.85, 0.9, 0.95, 0.97, 1.0, 1.3, 1.4, 1.5, 1.6)]
    case = timed_case(policy, policy.timed[0], speedups)
    assert case.paired.speedup.median <= policy.s_zero * 1.0 < case.paired.speedup.high
    cases = correctness_cases(policy) + [case, timed_case(policy, policy.timed[1], speedups)]
    score, credits = task_score(policy, [ScoredCase.of_outcome(c, i) for i, c in enumerate(cases)], True)
    assert score.performance > 0
    assert credits[cases.index(case)] == pytest.approx(policy.performance_credit(case.paired.speedup.high))


def test_a_timed_case_that_went_wrong_earns_no_credit(rubric):
    policy = rubric.task("matmul_fast")
    cases = correctness_cases(policy) + [timed_case(policy, policy.timed[0], [2.0] * 10, status="wrong"),
                                         timed_case(policy, policy.timed[1], [2.0] * 10)]
    score = score_task(policy, cases)
    assert score.performance == pytest.approx(policy.performance_points / 2)


def test_a_missing_file_scores_zero_with_a_note(rubric):
    policy = rubric.task("fill")
    score = score_task(policy, correctness_cases(policy, lambda d, s: "missing"))
    assert score.total == 0 and score.note == "file missing"


def test_not_implemented_scores_zero_with_a_note(rubric):
    policy = rubric.task("fill")
    score = score_task(policy, correctness_cases(policy, lambda d, s: "not_implemented"))
    assert score.total == 0 and score.note == "not implemented"


def test_gpu_only_cases_are_left_out_of_a_cpu_runs_score(rubric):
    """The CPU backend's harness does not run a shape over its per-case budget: the task's points are the share
    of the cases that ran, and the note counts the cases left to a GPU."""
    policy = rubric.task("transpose")
    big = policy.shapes[-1]
    status = {big: "gpu_only", policy.shapes[0]: "wrong"}
    score = score_task(policy, correctness_cases(policy, lambda d, s: status.get(s, "ok")), measured=False)
    ran = len(policy.dtypes) * (len(policy.shapes) - 1)
    assert (score.cases_total, score.cases_passed) == (ran, ran - len(policy.dtypes))
    assert score.correctness == pytest.approx(policy.correctness_points * (ran - len(policy.dtypes)) / ran)
    assert score.note == (f"{len(policy.dtypes)} of {ran} correctness cases failed: no performance points; "
                          f"{len(policy.dtypes)} of {ran + len(policy.dtypes)} cases GPU only (over the CPU's "
                          "per-case budget)")
    everything_ok = score_task(policy, correctness_cases(policy, lambda d, s: "gpu_only" if s == big else "ok"),
                               measured=False)
    assert everything_ok.correctness == policy.correctness_points


def test_a_task_whose_every_case_is_gpu_only_is_not_graded_on_the_cpu(rubric):
    policy = rubric.task("fill")
    score = score_task(policy, correctness_cases(policy, lambda d, s: "gpu_only"), measured=False)
    assert score.total == 0 and score.cases_total == 0
    assert score.note.startswith("not graded on the CPU: every case is over its per-case budget")
