"""A forbidden task file through grading, on the fake backend: its cases, its score, the store, the feedback."""
from __future__ import annotations

import json

from grader.exports import gradescope
from grader.grading.grade import GradeOptions, grade
from grader.reports.report import summary_table
from grader.reports.folder import write_reports
from grader.store.store import Store
from grader.core.status import case_word
from grader.tests.conftest import opened, scores_of, write_submission
from grader.tests.old_stores import before_the_gate
from grader.tests.fakes import FakeBackend


def test_a_forbidden_task_scores_zero_with_the_rule_and_the_others_grade_normally(tmp_path, registry, small_rubric):
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    write_submission(tmp_path / "subs", "mallory", {**files, "matmul_fast.cu": "// fake: forbidden\n"})
    write_submission(tmp_path / "subs", "alice", files)
    results = tmp_path / "results"
    summary = grade(GradeOptions(tmp_path / "subs", results, [None], jobs=1, progress=False, seed=3), small_rubric,
                    registry, FakeBackend())
    mallory = next(r for r in summary.graded if r.submission.student == "mallory")
    fast = [c for c in mallory.cases if c.task == "matmul_fast"]
    assert fast and all(c.status == "forbidden" and c.kind == "correctness" for c in fast)
    assert fast[0].message == ("not run: matmul_fast.cu calls cublasSgemm_v2: "
                               + small_rubric.gate.rules["no-libraries"].description + " (rule: no-libraries)")
    score = {s.task: s for s in scores_of(mallory, small_rubric)}
    assert score["matmul_fast"].total == 0 and score["matmul_fast"].note == "not run: the file breaks a build-gate rule"
    assert all(s.total == s.correctness_max + s.performance_max for t, s in score.items() if t != "matmul_fast")
    alice = next(r for r in summary.graded if r.submission.student == "alice")
    assert sum(s.total for s in scores_of(alice, small_rubric)) == small_rubric.max_points

    write_reports(results, small_rubric)
    with opened(results) as store:
        [gate] = store.submissions("mallory")["gate"]
    assert [f["rule"] for f in json.loads(gate)] == ["no-libraries"]
    feedback = (results / "feedback" / "mallory.md").read_text()
    assert "## Build gate: files that were not run" in feedback
    assert "matmul_fast.cu calls cublasSgemm_v2" in feedback and f"## matmul_fast: {case_word('forbidden')}" in feedback
    assert "Build gate" not in (results / "feedback" / "alice.md").read_text()
    store = Store(results / "grades.sqlite")
    try:
        assert summary_table(store, small_rubric).iloc[0]["with forbidden files"] == 1
    finally:
        store.close()
    with opened(results) as store:
        output = gradescope.results(store, small_rubric, "mallory")["output"]
    assert "build gate: matmul_fast.cu calls cublasSgemm_v2" in output


def test_a_store_from_before_the_gate_gets_the_column_and_keeps_its_rows(tmp_path):
    store = Store(before_the_gate(tmp_path / "grades.sqlite"))
    try:
        rows = store.submissions()[["student", "gate"]].values.tolist()
    finally:
        store.close()
    assert rows == [["old", "[]"]]
