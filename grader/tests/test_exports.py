"""Gradescope's results.json and Autolab's autoresult, checked against their published field lists."""
from __future__ import annotations

import json

import pytest

from grader.exports import autolab_result, gradescope_results
from grader.grade import grade_single
from grader.tests.conftest import write_submission
from grader.tests.fakes import FakeBackend

# Gradescope's autograder specification: the fields a results.json and each test may carry.
GRADESCOPE_TOP = {"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format",
                  "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
GRADESCOPE_TEST = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format",
                   "tags", "visibility", "extra_data"}
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}


@pytest.fixture
def results(tmp_path, registry, small_rubric):
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    good = grade_single(write_submission(tmp_path, "submission", {**files, "dot.cu": "// fake: wrong\n"}),
                        small_rubric, registry, FakeBackend(), None, seed=1)
    broken = grade_single(write_submission(tmp_path / "b", "handin", {**files, "fill.cu": "// fake: build-fails\n"}),
                          small_rubric, registry, FakeBackend(), None, seed=1)
    return good, broken


def test_gradescope_results_use_only_published_fields(results, small_rubric):
    for result in results:
        doc = json.loads(json.dumps(gradescope_results(result, small_rubric)))
        assert set(doc) <= GRADESCOPE_TOP
        for test in doc["tests"]:
            assert set(test) <= GRADESCOPE_TEST
            assert {"score", "max_score", "status", "name", "output", "visibility"} <= set(test)
            assert test["status"] in {"passed", "failed"} and test["visibility"] in VISIBILITIES
            assert 0 <= test["score"] <= test["max_score"]
        for row in doc["leaderboard"]:
            assert set(row) <= {"name", "value", "order"} and row["order"] in {"asc", "desc"}


def test_gradescope_score_is_the_sum_of_its_tests(results, small_rubric):
    good, broken = results
    doc = gradescope_results(good, small_rubric)
    assert doc["score"] == pytest.approx(sum(t["score"] for t in doc["tests"]))
    dot = next(t for t in doc["tests"] if t["name"] == "dot: correctness")
    assert dot["status"] == "failed" and "3 of 561 elements are wrong" in dot["output"]
    assert doc["leaderboard"][0]["value"] > 0
    failed = gradescope_results(broken, small_rubric)
    assert failed["score"] == 0 and "the build took longer than its limit" in failed["output"]


def test_autolab_autoresult_has_scores_per_task_and_a_scoreboard(results, small_rubric):
    good, _ = results
    doc = autolab_result(good, small_rubric)
    assert set(doc) == {"scores", "scoreboard"}
    assert set(doc["scores"]) == {t.id for t in small_rubric.tasks}
    assert doc["scores"]["dot"] == 0 and doc["scoreboard"][1] == pytest.approx(sum(doc["scores"].values()))
