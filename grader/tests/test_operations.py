"""A grading week's operations: regrade one student, rescore under an edited rubric, overrides on record."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from grader import cli
from grader.grading.rescore import RescoreError, rescore
from grader.core.rubric import load_rubric
from grader.tests.conftest import grade_on_fakes, opened, small_rubric_text, write_submission


@pytest.fixture
def week(tmp_path, registry, small_rubric, monkeypatch):
    """alice (full marks) and bob (dot wrong) graded into results/, through the command line on the fake
    backend; returns (submissions folder, results folder, run(argv) -> exit status)."""
    grade_on_fakes(monkeypatch, registry, small_rubric)
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    subs = tmp_path / "subs"
    write_submission(subs, "alice", files)
    write_submission(subs, "bob", {**files, "dot.cu": "// fake: wrong\n"})
    results = tmp_path / "results"

    def run(*argv, rubric=small_rubric.path):
        return cli.main([*argv, "--rubric", str(rubric)])

    assert run("grade", str(subs), "--results", str(results), "--gpus", "0", "--no-progress") == 0
    return subs, results, run


def latest(results) -> pd.DataFrame:
    with opened(results) as store:
        return store.latest_submissions().set_index("student")


def test_grade_student_regrades_that_student_and_leaves_everyone_else_as_stored(week, registry):
    subs, results, run = week
    before = latest(results)
    (subs / "alice" / "dot.cu").write_text("// fake: wrong\n")
    (subs / "bob" / "dot.cu").write_text("// fake: ok speed=1.0\n")  # changed too, but not asked for
    assert run("grade", str(subs), "--results", str(results), "--gpus", "0", "--no-progress",
               "--student", "alice") == 0
    after = latest(results)
    assert after.loc["alice", "sha256"] != before.loc["alice", "sha256"]
    assert after.loc["alice", "total"] < before.loc["alice", "total"]
    assert after.loc["bob"].to_dict() == before.loc["bob"].to_dict()


def test_grade_student_regrades_even_an_unchanged_submission(week):
    subs, results, run = week
    before = latest(results)
    assert run("grade", str(subs), "--results", str(results), "--gpus", "0", "--no-progress",
               "--student", "bob") == 0
    after = latest(results)
    assert after.loc["bob", "run_id"] == 2 and after.loc["bob", "sha256"] == before.loc["bob", "sha256"]
    assert after.loc["alice", "run_id"] == before.loc["alice", "run_id"] == 1


def edited_rubric(tmp_path, rubric, old: str, new: str):
    path = tmp_path / "edited.toml"
    text = small_rubric_text(rubric)
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return path


def test_rescore_recomputes_every_score_from_the_stored_cases_without_running_anything(week, tmp_path, rubric,
                                                                                       registry, small_rubric):
    _, results, run = week
    dot = small_rubric.task("dot")
    edited = edited_rubric(tmp_path, rubric, f"[tasks.dot]\ncorrectness_points = {dot.correctness_points}",
                           f"[tasks.dot]\ncorrectness_points = {dot.correctness_points + 10}")
    new = load_rubric(edited, registry)
    before = latest(results)
    with opened(results) as store:
        cases_before = store.cases_for(None)
        done = rescore(store, new)
        cases_after = store.cases_for(None)
    after = latest(results)
    assert done.rescored == 2
    assert done.changed == [("alice", before.loc["alice", "total"], after.loc["alice", "total"])]
    assert after.loc["alice", "total"] == before.loc["alice", "total"] + 10 == new.max_points
    assert after.loc["bob", "total"] == before.loc["bob", "total"]  # dot's cases failed: 0 of more points
    assert set(after["rubric_sha256"]) == {new.sha256} and set(after["max_total"]) == {new.max_points}
    pd.testing.assert_frame_equal(cases_before.drop(columns="credit"), cases_after.drop(columns="credit"))


def test_report_refuses_a_rubric_the_scores_were_not_computed_with_and_says_to_rescore(week, tmp_path, rubric,
                                                                                       capsys):
    _, results, run = week
    edited = edited_rubric(tmp_path, rubric, "[timing]", "# the same numbers: only the file's hash differs\n[timing]")
    assert run("report", "--results", str(results), rubric=edited) == 1
    err = capsys.readouterr().err
    assert "is not the rubric the stored scores were computed with" in err
    assert f"run `bin/grader rescore {results} --rubric {edited}` first" in err
    assert run("export", "--results", str(results), rubric=edited) == 1
    assert run("rescore", str(results), rubric=edited) == 0
    assert run("report", "--results", str(results), rubric=edited) == 0


def test_rescore_refuses_a_rubric_that_changes_what_runs_and_changes_nothing(week, tmp_path, rubric, registry,
                                                                             small_rubric):
    _, results, _ = week
    dot = small_rubric.task("dot")
    shapes = 'shapes = ["' + '", "'.join(dot.shapes) + '"]'
    block = f'[tasks.dot]\ncorrectness_points = {dot.correctness_points}\nperformance_points = ' \
            f'{dot.performance_points}\ndtypes = ["{dot.dtypes[0]}"]\n'
    edited = edited_rubric(tmp_path, rubric, block + shapes, block + f'shapes = ["{dot.shapes[0]}"]')
    before = latest(results)
    with opened(results) as store, pytest.raises(RescoreError, match="needs `grade --regrade`, not rescore"):
        rescore(store, load_rubric(edited, registry))
    pd.testing.assert_frame_equal(latest(results), before)


def test_an_override_is_stored_with_its_author_and_time_and_shown_in_feedback_and_exports(week, small_rubric,
                                                                                          capsys):
    _, results, run = week
    dot = small_rubric.task("dot")
    before = latest(results).loc["bob", "total"]
    assert run("override", "bob", "dot", str(dot.max_points), "--reason", "regrade request: tolerance too tight",
               "--by", "TA Kim", "--results", str(results)) == 0
    assert f"total now {before + dot.max_points:.2f}" in capsys.readouterr().out
    with opened(results) as store:
        record = store.overrides("bob").iloc[0]
    assert (record.task, record.points, record.author, record.undone) == ("dot", dot.max_points, "TA Kim", None)
    assert record.made.startswith("20") and record.reason == "regrade request: tolerance too tight"
    grades = pd.read_csv(results / "grades.csv").set_index("student")
    assert grades.loc["bob", "total"] == before + dot.max_points
    assert "set by TA Kim" in grades.loc["bob", "overrides"]
    page = (results / "feedback" / "bob.md").read_text()
    assert "overridden:" in page and "regrade request: tolerance too tight" in page and "TA Kim" in page
    assert run("export", "--results", str(results), "--to", "gradescope", "--student", "bob") == 0
    gs = json.loads((results / "bob.results.json").read_text())
    assert gs["score"] == before + dot.max_points
    dot_tests = [t for t in gs["tests"] if t["name"].startswith("dot:")]
    assert sum(t["score"] for t in dot_tests) == dot.max_points
    assert any("TA Kim" in t["output"] for t in dot_tests)
    assert run("export", "--results", str(results)) == 0
    canvas = pd.read_csv(results / "canvas.csv").set_index("SIS Login ID")
    assert canvas.loc["bob"].iloc[-1] == before + dot.max_points


def test_an_override_is_undone_on_record_and_the_graded_points_come_back(week, small_rubric):
    _, results, run = week
    before = latest(results).loc["bob", "total"]
    assert run("override", "bob", "dot", "1", "--reason", "partial credit", "--by", "TA Kim",
               "--results", str(results)) == 0
    assert latest(results).loc["bob", "total"] == before + 1
    assert run("override", "bob", "dot", "--undo", "--by", "Prof Ng", "--results", str(results)) == 0
    assert latest(results).loc["bob", "total"] == before
    with opened(results) as store:
        record = store.overrides("bob").iloc[0]
    assert record.undone is not None and record.undone_by == "Prof Ng"
    assert "overridden" not in (results / "feedback" / "bob.md").read_text()
    assert run("override", "bob", "dot", "--undo", "--by", "Prof Ng", "--results", str(results)) == 1


def test_an_override_survives_a_regrade_of_that_student(week):
    subs, results, run = week
    assert run("override", "bob", "dot", "2", "--reason", "r", "--by", "TA", "--results", str(results)) == 0
    before = latest(results).loc["bob", "total"]
    assert run("grade", str(subs), "--results", str(results), "--gpus", "0", "--no-progress",
               "--student", "bob") == 0
    assert latest(results).loc["bob", "total"] == before


@pytest.mark.parametrize("argv, message", [(["bob", "dot", "999"], "must be between 0 and"),
                                           (["bob", "dott", "1"], "'dott' is not a graded task"),
                                           (["bob", "dot", "1"], "--reason is required"),
                                           (["zed", "dot", "1", "--reason", "x"], "no submission of 'zed'")])
def test_a_bad_override_is_refused_and_stores_nothing(week, capsys, argv, message):
    _, results, run = week
    assert run("override", *argv, "--by", "TA", "--results", str(results)) in (1, 2)
    assert message in capsys.readouterr().err
    with opened(results) as store:
        assert store.overrides().empty
