"""The scoring chain (grader/scoring/chain.py): each step alone, their order, and the store writing what it is given."""
from __future__ import annotations

import dataclasses
from dataclasses import replace

import pandas as pd
import pytest

from grader.core.late import ON_TIME, Lateness
from grader.outcomes.paired import Pair, PairedResult
from grader.outcomes.results import CaseOutcome, SanitizerOutcome, TaskScore
from grader.scoring.score import ScoredCase
from grader.scoring.chain import (Override, Scored, TaskOverride, Totals, late_penalty, overrides, sanitizer_penalty,
                                score_chain, settle, settle_stored, task_scores, totals)
from grader.store.store import Store, StoreError
from grader.tests.leaderboard_class import Entry, fill


def all_passed(rubric, timed_high: float | None = None) -> list[ScoredCase]:
    """Every correctness case of the rubric passed; with `timed_high`, every timed case ran with that interval top."""
    cases = [ScoredCase(p.id, "correctness", "ok", s) for p in rubric.tasks for _ in p.dtypes for s in p.shapes]
    if timed_high is not None:
        cases += [ScoredCase(p.id, "timed", "ok", s, pairs=10, speedup_high=timed_high) for p in rubric.tasks
                  for s in p.timed]
    return [dataclasses.replace(c, key=100 + i) for i, c in enumerate(cases)]


def test_task_scores_reads_records_and_returns_each_timed_cases_credit_by_its_key(rubric):
    cases = all_passed(rubric, timed_high=1.0)
    scores, credits = task_scores(rubric, "graded", cases)
    assert [s.task for s in scores] == [p.id for p in rubric.tasks]
    assert all(s.total == pytest.approx(rubric.task(s.task).max_points) for s in scores)
    timed = [c for c in cases if c.kind == "timed"]
    assert set(credits) == {c.key for c in timed}
    assert all(credits[c.key] == rubric.task(c.task).performance_credit(1.0) for c in timed)


def test_task_scores_gives_a_submission_that_never_ran_zero_with_the_reason(rubric):
    scores, credits = task_scores(rubric, "build_failed", all_passed(rubric, 1.0))
    assert credits == {} and all(s.total == 0 and s.note == "does not compile" for s in scores)


def test_a_stored_case_row_and_the_fresh_outcome_it_was_saved_from_score_alike(rubric):
    paired = PairedResult(pairs=[Pair(1.0 / s, 1.0, 1980, 1980, False) for s in (1.1, 1.2, 1.3, 1.25, 1.15)])
    fresh = CaseOutcome("dot", "float32", rubric.task("dot").timed[0], "timed", "ok", "m", paired=paired)
    row = pd.DataFrame([{"id": 7, "task": "dot", "kind": "timed", "status": "ok", "shape": fresh.shape,
                         "message": "m", "pairs": 5, "speedup_high": paired.speedup.high, "dtype": "float32"}])
    assert ScoredCase.of_outcome(fresh, 7) == ScoredCase.of_row(next(row.itertuples()))
    untimed = pd.DataFrame([{"id": 8, "task": "dot", "kind": "correctness", "status": "ok", "shape": "8",
                             "message": "", "pairs": None, "speedup_high": None, "dtype": "float64"}])
    assert ScoredCase.of_row(next(untimed.itertuples())) == ScoredCase("dot", "correctness", "ok", "8", key=8,
                                                                       dtype="float64")


def test_sanitizer_penalty_takes_the_rubric_share_of_the_tasks_correctness_and_leaves_its_input_alone(rubric):
    scores, _ = task_scores(rubric, "graded", all_passed(rubric))
    found = [SanitizerOutcome("dot", "memcheck", "float32", "8", "errors", 3)]
    after = sanitizer_penalty(rubric, scores, found)
    dot = rubric.task("dot")
    lost = rubric.sanitizer.penalty * dot.correctness_points
    assert next(s for s in after if s.task == "dot").correctness == pytest.approx(dot.correctness_points - lost)
    assert "memcheck 3" in next(s for s in after if s.task == "dot").note
    assert next(s for s in scores if s.task == "dot").correctness == dot.correctness_points  # not changed in place
    assert [s for s in after if s.task != "dot"] == [s for s in scores if s.task != "dot"]


def test_a_finding_where_the_tasks_case_already_failed_costs_nothing_more_and_one_where_it_passed_does(rubric):
    """Two public transposes (a grid rounded down) failed their degenerate cases with a launch error, then were
    charged memcheck's penalty for the same launches: 2/18 of correctness became 0. A tool's finding at a shape
    whose case failed is what that case already cost; at a shape whose case passed, the tool saw what the cases
    did not, and the penalty holds."""
    transpose = rubric.task("transpose")
    cases = [replace(c, dtype="float32") for c in all_passed(rubric)]
    failed_shape, passed_shape = transpose.shapes[0], transpose.shapes[-1]
    cases = [replace(c, status="error") if c.task == "transpose" and c.shape == failed_shape else c for c in cases]
    scores, _ = task_scores(rubric, "graded", cases)
    earned = next(s for s in scores if s.task == "transpose").correctness
    assert 0 < earned < transpose.correctness_points

    at_failed = [SanitizerOutcome("transpose", "memcheck", "float32", failed_shape, "errors", 4)]
    after = next(s for s in sanitizer_penalty(rubric, scores, at_failed, cases) if s.task == "transpose")
    assert after.correctness == earned
    assert "(memcheck) are where a case already failed: no further penalty" in after.note
    assert failed_shape not in after.note  # a note is read before the hidden cases' date

    at_passed = [SanitizerOutcome("transpose", "memcheck", "float32", passed_shape, "errors", 4)]
    after = next(s for s in sanitizer_penalty(rubric, scores, at_passed, cases) if s.task == "transpose")
    assert after.correctness == pytest.approx(max(0.0, earned - rubric.sanitizer.penalty
                                                  * transpose.correctness_points))
    assert "compute-sanitizer found errors (memcheck 4)" in after.note


def test_overrides_takes_the_latest_in_force_per_task_and_leaves_the_others_without():
    scores = [TaskScore("fill", 4, 4, 2, 2, 3, 3), TaskScore("dot", 1, 4, 0, 2, 1, 3)]
    in_force = [Override("dot", 2.0, "TA Kim", "2026-11-21", "first"), Override("dot", 5.0, "Prof", "2026-11-22", "r")]
    got = overrides(scores, in_force)
    assert got == {"fill": TaskOverride(None), "dot": TaskOverride(5.0, "5 points set by Prof on 2026-11-22: r")}


def test_late_penalty_is_the_policys_share_of_the_raw_total():
    assert late_penalty(80.0, Lateness(25.0, "late")) == 20.0
    assert late_penalty(80.0, ON_TIME) == 0.0


def test_totals_count_an_override_in_place_of_its_tasks_points_then_take_the_late_penalty():
    scores = [TaskScore("fill", 4, 4, 2, 2, 3, 3), TaskScore("dot", 1, 4, 0, 2, 1, 3)]
    got = totals(scores, {"fill": TaskOverride(None), "dot": TaskOverride(5.0, "n")}, Lateness(10.0, "late"))
    assert got == Totals(11.0, 1.1, pytest.approx(9.9))


def test_the_chain_runs_task_scores_then_sanitizer_then_overrides_then_late(rubric):
    """Each order-sensitive pair: the sanitizer cuts the computed score, not an override's points; the late
    penalty is taken of the total with the override in it."""
    found = [SanitizerOutcome("dot", "memcheck", "float32", "8", "errors", 1),
             SanitizerOutcome("fill", "memcheck", "float32", "8", "errors", 1)]
    dot = rubric.task("dot")
    in_force = [Override("dot", dot.max_points, "TA", "today", "the checker was wrong")]
    scored = score_chain(rubric, "graded", all_passed(rubric, 1.0), found, in_force, Lateness(50.0, "late"))
    fill_policy = rubric.task("fill")
    lost = rubric.sanitizer.penalty * fill_policy.correctness_points
    raw = rubric.max_points - lost  # dot's sanitizer loss is replaced by the override; fill's stays
    assert scored.overrides["dot"].points == dot.max_points
    assert next(s for s in scored.scores if s.task == "dot").correctness < dot.correctness_points  # kept beside
    assert scored.totals == Totals(pytest.approx(raw), pytest.approx(raw / 2), pytest.approx(raw / 2))
    assert scored.late == Lateness(50.0, "late") and scored.credits


def test_settle_stored_reads_the_stores_rows_as_the_chain_does():
    submission = pd.Series({"student": "amy", "late_percent": 10.0, "late": "1 started day late"})
    rows = pd.DataFrame([{"task": "fill", "correctness": 4.0, "correctness_max": 4.0, "performance": 2.0,
                          "performance_max": 2.0, "cases_passed": 3, "cases_total": 3, "note": ""}])
    in_force = pd.DataFrame([{"task": "fill", "points": 1.0, "author": "TA", "made": "now", "reason": "r"}])
    got = settle_stored(submission, rows, in_force)
    assert got == settle([TaskScore("fill", 4.0, 4.0, 2.0, 2.0, 3, 3, "")],
                         [Override("fill", 1.0, "TA", "now", "r")], Lateness(10.0, "1 started day late"))
    assert got.totals == Totals(1.0, 0.1, 0.9)


@pytest.fixture
def one_student(tmp_path, rubric, registry):
    return fill(tmp_path / "grades.sqlite", [Entry("amy")], rubric, registry)


def test_the_store_writes_the_numbers_it_is_given_and_computes_none(one_student):
    """Totals that do not add up on purpose: the store keeps them as given."""
    def made_up(submission, scores, in_force):
        rows = [TaskScore(r.task, 1.0, r.correctness_max, 0.0, r.performance_max, 0, int(r.cases_total), "x")
                for r in scores.itertuples()]
        return Scored(rows, {s.task: TaskOverride(9.0, "set") for s in rows}, Lateness(3.0, "w"), Totals(7.0, 2.0, 1.0))
    store = Store(one_student)
    try:
        store.add_override("amy", "dot", 2.0, "r", "TA", made_up)
        sub = store.submissions().iloc[0]
        scores = store.scores([int(sub.id)])
    finally:
        store.close()
    assert (sub.raw_total, sub.penalty, sub.total, sub.late_percent, sub.late) == (7.0, 2.0, 1.0, 3.0, "w")
    assert (scores["correctness"] == 1.0).all() and (scores["override"] == 9.0).all()


def test_an_override_whose_totals_cannot_be_made_is_not_stored(one_student):
    def broken(submission, scores, in_force):
        raise StoreError("the chain failed")
    store = Store(one_student)
    try:
        before = store.submissions()[["raw_total", "penalty", "total"]]
        with pytest.raises(StoreError, match="the chain failed"):
            store.add_override("amy", "dot", 2.0, "r", "TA", broken)
        assert store.overrides().empty
        pd.testing.assert_frame_equal(store.submissions()[["raw_total", "penalty", "total"]], before)
        store.add_override("amy", "dot", 2.0, "r", "TA", settle_stored)
        with pytest.raises(StoreError):
            store.undo_override("amy", "dot", "Prof", broken)
        assert store.overrides()["undone"].isna().all()  # the undo rolled back with its totals
    finally:
        store.close()
