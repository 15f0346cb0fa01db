"""Timed cases a TA should see: faster than the GPU can physically run them (implausible: no
performance points), or much faster than the solution (review: scored as measured)."""
from __future__ import annotations

import pandas as pd
import pytest

from grader.grading.grade import GradeOptions, grade
from grader.reports.report import summary_table
from grader.reports.folder import write_reports
from grader.store.store import Store
from grader.store.migrations import added_columns
from grader.tests.conftest import cases_of, write_submission
from grader.tests.old_stores import first_release_cases
from grader.tests.fakes import FakeBackend


@pytest.fixture(scope="module")
def flagged(tmp_path_factory, registry, small_rubric_once):
    """Graded once for the module's tests, which only read it."""
    tmp_path, small_rubric = tmp_path_factory.mktemp("flagged-class"), small_rubric_once
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    subs = tmp_path / "submissions"
    # The fake solution runs at half its GPU's limit: 3x its speed is physically impossible, 1.6x is not.
    write_submission(subs, "flash", {**files, "fill.cu": "// fake: ok speed=3\n"})
    write_submission(subs, "zoom", {**files, "dot.cu": "// fake: ok speed=1.6\n"})
    write_submission(subs, "steady", files)
    results = tmp_path / "results"
    grade(GradeOptions(subs, results, [None], jobs=1, progress=False, seed=5), small_rubric, registry, FakeBackend())
    write_reports(results, small_rubric)
    return results


def case_row(results, student, task):
    return cases_of(results, student, task=task, kind="timed").iloc[0]


def test_a_time_below_the_physical_floor_is_implausible_and_earns_no_performance_points(flagged, small_rubric):
    row = case_row(flagged, "flash", "fill")
    assert row["status"] == "implausible"
    assert row["student_ms"] < row["floor_ms"]
    assert "faster than the GPU can physically do this work" in row["message"]
    assert "no performance credit, listed for review" in row["message"]
    scores = pd.read_csv(flagged / "grades.csv").set_index("student")
    assert scores.loc["flash", "fill_performance"] == 0
    assert scores.loc["flash", "fill_correctness"] == small_rubric.task("fill").correctness_points
    assert "flagged implausible" in (flagged / "feedback" / "flash.md").read_text()


def test_a_speedup_above_the_review_threshold_is_flagged_but_scored(flagged, small_rubric):
    row = case_row(flagged, "zoom", "dot")
    assert row["status"] == "ok" and row["flag"] == "review"
    assert row["speedup"] == pytest.approx(1.6)
    assert "listed for a TA to look at" in row["message"]
    scores = pd.read_csv(flagged / "grades.csv").set_index("student")
    assert scores.loc["zoom", "dot_performance"] == small_rubric.task("dot").performance_points


def test_the_ta_gets_a_list_of_flagged_cases_and_a_count(flagged, small_rubric):
    review = pd.read_csv(flagged / "review.csv")
    assert sorted(zip(review["student"], review["task"], review["flag"])) == [
        ("flash", "fill", "implausible"), ("zoom", "dot", "review")]
    store = Store(flagged / "grades.sqlite")
    assert summary_table(store, small_rubric).iloc[0]["flagged for review"] == 2
    store.close()
    assert case_row(flagged, "steady", "dot")["flag"] == ""


def test_every_timed_case_records_its_gpu_time_and_throttled_pairs(flagged):
    row = case_row(flagged, "steady", "matmul_fast")
    assert row["seconds"] > 0 and row["throttled_pairs"] == 0 and row["floor_ms"] > 0


def test_an_older_store_gains_the_new_columns_and_keeps_its_rows(tmp_path):
    store = Store(first_release_cases(tmp_path / "grades.sqlite"))
    columns = set(store.cases_for().columns)
    assert {column for table, column, _ in added_columns() if table == "cases"} <= columns
    row = store.cases_for().iloc[0]
    assert (row["task"], row["speedup"], row["flag"]) == ("dot", 1.0, "")
    store.close()
