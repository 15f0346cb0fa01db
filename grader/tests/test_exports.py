"""One submission graded on its own goes through the store, and every export reads the store: Gradescope's
results.json and Autolab's autoresult (checked against their published field lists) and Canvas's CSV."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import pandas as pd
import pytest

from grader import cli
from grader.exports import EXPORTERS, Export, ExportError, autolab, canvas, gradescope
from grader.grading.grade import GradeOptions, grade, grade_single
from grader.reports.leaderboard import PublishOptions, publish
from grader.reports.report import run_of, task_feedback, task_markdown
from grader.reports.folder import write_reports
from grader.store.store import Store
from grader.tests.conftest import grade_on_fakes, opened, scores_of, write_submission
from grader.tests.fakes import FakeBackend
from grader.tests.leaderboard_class import Entry, fill

# Gradescope's autograder specification: the fields a results.json and each test may carry.
GRADESCOPE_TOP = {"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format",
                  "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
GRADESCOPE_TEST = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format",
                   "tags", "visibility", "extra_data"}
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}
OUTPUT_FORMATS = {"text", "html", "simple_format", "md", "ansi"}


@pytest.fixture
def files(registry):
    return {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}


@pytest.fixture
def singles(tmp_path, files, registry, small_rubric):
    """Two submissions graded on their own, each into its own store: one with a wrong task, one that does not
    build."""
    good = grade_single(write_submission(tmp_path / "in", "submission", {**files, "dot.cu": "// fake: wrong\n"}),
                        tmp_path / "good", small_rubric, registry, FakeBackend(), None, seed=1)
    broken = grade_single(write_submission(tmp_path / "in", "handin", {**files, "fill.cu": "// fake: build-fails\n"}),
                          tmp_path / "broken", small_rubric, registry, FakeBackend(), None, seed=1)
    return good, broken


def exported(single, module, rubric, **options) -> Export:
    store = Store.existing(single.store)
    try:
        return module.export(store, rubric, single.student, **options)
    finally:
        store.close()


def gradescope_doc(single, rubric) -> dict:
    return json.loads(exported(single, gradescope, rubric).text)


# --- one path: grade_single stores, as a class run does ---------------------------------------------------------


def test_grading_one_submission_stores_what_a_class_run_stores(tmp_path, files, registry, small_rubric):
    entry = write_submission(tmp_path / "class", "carol", {**files, "transpose.cu": "// fake: wrong-large\n",
                                                           "matmul_fast.cu": "// fake: ok speed=0.4\n"})
    single = grade_single(entry, tmp_path / "single", small_rubric, registry, FakeBackend(), None, seed=5)
    grade(GradeOptions(tmp_path / "class", tmp_path / "whole", [None], jobs=1, progress=False, seed=5), small_rubric,
          registry, FakeBackend())
    assert single.store == tmp_path / "single" / "grades.sqlite" and single.student == "carol"
    stored = {}
    for name in ("single", "whole"):
        with opened(tmp_path / name) as store:
            sub = store.submissions("carol")
            assert len(sub) == 1
            sid = int(sub["id"].iloc[0])
            keep = ["task", "correctness", "correctness_max", "performance", "performance_max", "cases_passed",
                    "cases_total", "note"]
            cases = store.cases(sid)[["task", "dtype", "shape", "kind", "status", "message", "speedup", "credit"]]
            cases = cases.astype(object).where(cases.notna(), None)  # (NaN is not equal to itself)
            run = store.runs().iloc[0]
            stored[name] = (sub[["status", "total", "max_total", "sha256", "rubric_sha256"]].to_dict("records"),
                            store.scores([sid])[keep].to_dict("records"), cases.to_dict("records"),
                            run[["seed", "harness_version", "rubric_sha256", "registry", "devices", "limits",
                                 "isolation"]].to_dict())
    assert stored["single"] == stored["whole"]
    assert stored["single"][0][0]["total"] < small_rubric.max_points  # a submission with something to lose


def test_a_submission_that_does_not_build_or_is_rejected_is_stored_too(tmp_path, files, registry, small_rubric):
    broken = grade_single(write_submission(tmp_path / "in", "erin", {**files, "add.cu": "// fake: build-fails\n"}),
                          tmp_path / "r", small_rubric, registry, FakeBackend(), None, seed=1)
    folder = write_submission(tmp_path / "in", "frank", files)
    (folder / "evil.cu").symlink_to("/etc/passwd")
    rejected = grade_single(folder, tmp_path / "r", small_rubric, registry, FakeBackend(), None, seed=1)
    with opened(tmp_path / "r") as store:
        subs = store.submissions().set_index("student")
        assert len(store.runs()) == 2  # a run record for each, as a class run makes
    assert subs.loc["erin", "status"] == "build_failed" and subs.loc["frank", "status"] == "rejected"
    assert "longer than its limit" in subs.loc["erin", "build_reason"] and subs.loc["erin", "total"] == 0
    assert "symbolic link" in subs.loc["frank", "rejected"] and subs.loc["frank", "total"] == 0


# --- Gradescope ------------------------------------------------------------------------------------------------


def test_gradescope_results_use_only_published_fields(singles, small_rubric):
    for single in singles:
        doc = gradescope_doc(single, small_rubric)
        assert set(doc) <= GRADESCOPE_TOP and doc["test_output_format"] in OUTPUT_FORMATS
        for test in doc["tests"]:
            assert set(test) <= GRADESCOPE_TEST
            assert {"score", "max_score", "status", "name", "output", "visibility"} <= set(test)
            assert test["status"] in {"passed", "failed"} and test["visibility"] in VISIBILITIES
            assert 0 <= test["score"] <= test["max_score"]
        for row in doc["leaderboard"]:
            assert set(row) <= {"name", "value", "order"} and row["order"] in {"asc", "desc"}


def test_gradescope_score_is_the_sum_of_its_tests(singles, small_rubric):
    good, broken = singles
    doc = gradescope_doc(good, small_rubric)
    assert doc["score"] == pytest.approx(sum(t["score"] for t in doc["tests"])) == pytest.approx(
        sum(s.total for s in scores_of(good.result, small_rubric)))
    dot = next(t for t in doc["tests"] if t["name"] == "dot: correctness")
    assert dot["status"] == "failed" and "3 of 561 elements are wrong" in dot["output"]
    assert doc["leaderboard"][0]["value"] > 0
    failed = gradescope_doc(broken, small_rubric)
    assert failed["score"] == 0 and "the build took longer than its limit" in failed["output"]
    assert "make: *** [harness] Killed" in failed["output"]  # the build log, from the store


def test_gradescope_shows_each_task_in_the_lines_of_its_feedback_page(singles, small_rubric):
    good, _ = singles
    doc = gradescope_doc(good, small_rubric)
    write_reports(good.store.parent, small_rubric)
    page = (good.store.parent / "feedback" / "submission.md").read_text()
    with opened(good.store.parent) as store:
        sub = store.submissions("submission").iloc[0]
        tasks = task_feedback(store, small_rubric, int(sub["id"]), run_of(store, int(sub["run_id"]))["limits"])
    for task in tasks:
        test = next(t for t in doc["tests"] if t["name"] == f"{task['task']}: correctness")
        assert test["output"] == task_markdown(task) and task["verdict"] in page
        if task["details"]:  # the same lines under the task's heading
            assert f"## {task['task']}: {task['verdict']}\n\n{test['output'].split(chr(10), 2)[2]}" in page
        performance = next(t for t in doc["tests"] if t["name"] == f"{task['task']}: performance")
        for row in performance["output"].splitlines()[2:]:  # the page's performance table has its rows
            assert row.replace("| ", f"| {task['task']} | ", 1) in page
    assert "| 1 (1–1) | 0.25 / 0.8 | 100% |" in doc["tests"][1]["output"]  # fill's speedup, thresholds, credit


def test_gradescopes_leaderboard_value_is_the_leaderboards_metric(tmp_path, rubric, registry):
    results = tmp_path / "results"
    fill(results / "grades.sqlite", [Entry("fast", 1.17, nickname="fast"), Entry("broken", None, nickname="broken")],
         rubric, registry)
    (results / "pseudonym-salt").write_text("ab" * 32 + "\n")
    publish(PublishOptions(results, now=datetime(2026, 1, 1, tzinfo=timezone.utc)), rubric)
    board = pd.read_csv(results / "leaderboard" / "leaderboard.csv").set_index("name")
    store = Store.existing(results / "grades.sqlite")
    try:
        fast = gradescope.results(store, rubric, "fast")["leaderboard"][0]
        broken = gradescope.results(store, rubric, "broken")["leaderboard"][0]
        scoreboard = autolab.autoresult(store, rubric, "fast")["scoreboard"]
    finally:
        store.close()
    assert fast["name"] == "matmul_fast GFLOP/s" and fast["value"] == board.loc["fast", "matmul_fast GFLOP/s"]
    assert broken["value"] == 0.0 and board.loc["broken", "status"] == "wrong results"
    assert scoreboard[0] == fast["value"]


def test_an_unsandboxed_grade_says_so_on_gradescope(tmp_path, files, registry, small_rubric):
    from grader.run.sandbox import Unsandboxed

    class Unsafe(FakeBackend):
        sandbox = Unsandboxed().description

    single = grade_single(write_submission(tmp_path / "in", "s", files), tmp_path / "r", small_rubric, registry,
                          Unsafe(), None, seed=1)
    assert "Graded without a sandbox (NONE (--unsafe-no-sandbox))" in gradescope_doc(single, small_rubric)["output"]


# --- Autolab ---------------------------------------------------------------------------------------------------


def test_autolab_autoresult_has_scores_per_task_and_a_scoreboard(singles, small_rubric):
    good, _ = singles
    store = Store.existing(good.store)
    try:
        doc = autolab.autoresult(store, small_rubric, good.student)
    finally:
        store.close()
    assert set(doc) == {"scores", "scoreboard"}
    assert set(doc["scores"]) == {t.id for t in small_rubric.tasks}
    assert doc["scores"]["dot"] == 0 and doc["scoreboard"][1] == pytest.approx(sum(doc["scores"].values()))
    lines = exported(good, autolab, small_rubric).text.splitlines()
    assert json.loads(lines[-1]) == doc  # the last line, as Autolab reads it
    assert lines[0].startswith("fill: 8.0 / 8") and len(lines) == len(small_rubric.tasks) + 1


# --- Canvas, and the exporters' common call ----------------------------------------------------------------------


def test_every_exporter_reads_a_store_it_did_not_grade(tmp_path, rubric, registry):
    path = fill(tmp_path / "grades.sqlite", [Entry("a", 1.0), Entry("b", 0.5, status="build_failed")], rubric,
                registry)
    store = Store.existing(path)
    try:
        for name, module in EXPORTERS.items():
            done = module.export(store, rubric, "a")
            assert isinstance(done, Export) and done.text, name
        with pytest.raises(ExportError, match="holds 2 students .*name one"):
            gradescope.export(store, rubric)
        with pytest.raises(ExportError, match="no submission of 'zed'"):
            autolab.export(store, rubric, "zed")
        table = pd.read_csv(pd.io.common.StringIO(canvas.export(store, rubric).text), dtype=str)
    finally:
        store.close()
    assert list(table["Student"]) == ["Points Possible", "a", "b"]


def test_canvas_reads_a_roster_and_names_who_it_lacks(tmp_path, rubric, registry):
    path = fill(tmp_path / "grades.sqlite", [Entry("alice", 1.0), Entry("bob", 1.0)], rubric, registry)
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section\n    Points Possible,,,,\n"
                      "Alice A,101,u101,alice,S1\nNobody N,102,u102,nobody,S1\n")
    store = Store.existing(path)
    try:
        done = canvas.export(store, rubric, roster=roster)
        with pytest.raises(ExportError, match="lacks the column"):
            bad = tmp_path / "bad.csv"
            bad.write_text("Name,Id\nA,1\n")
            canvas.export(store, rubric, roster=bad)
    finally:
        store.close()
    table = pd.read_csv(pd.io.common.StringIO(done.text), dtype=str, keep_default_na=False).set_index("Student")
    assert list(table.columns) == ["ID", "SIS User ID", "SIS Login ID", "Section", rubric.title]
    assert float(table.loc["Points Possible", rubric.title]) == rubric.max_points
    assert table.loc["Alice A", "SIS User ID"] == "u101" and table.loc["Nobody N", rubric.title] == ""
    assert f"bob is graded but not in the roster {roster}; not exported" in done.warnings


def test_canvas_without_roster_uses_the_roster_grade_stored(tmp_path, rubric, registry):
    """`grade --roster` stored the class list: the export lists it (names, and a blank for who submitted
    nothing), and names the graded student it lacks, as `export --roster FILE` does."""
    from grader.intake.roster import Person
    path = fill(tmp_path / "grades.sqlite", [Entry("alice", 1.0), Entry("bob", 1.0)], rubric, registry)
    store = Store.existing(path)
    try:
        store.save_roster([Person("alice", "Alice A", ("alice", "u101", "101")), Person("nobody", "", ("nobody",))])
        done = canvas.export(store, rubric)
    finally:
        store.close()
    table = pd.read_csv(pd.io.common.StringIO(done.text), dtype=str, keep_default_na=False).set_index("Student")
    assert list(table.index) == ["Points Possible", "Alice A", "nobody"]
    assert table.loc["Alice A", "SIS Login ID"] == "alice" and table.loc["Alice A", rubric.title] != ""
    assert table.loc["nobody", "SIS Login ID"] == "nobody" and table.loc["nobody", rubric.title] == ""
    assert "bob is graded but not in the stored roster; not exported" in done.warnings


def test_canvas_with_a_roster_file_reads_it_rather_than_the_stored_one(tmp_path, rubric, registry):
    from grader.intake.roster import Person
    path = fill(tmp_path / "grades.sqlite", [Entry("alice", 1.0)], rubric, registry)
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section\nPoints Possible,,,,\n"
                      "Alice A,101,u101,alice,S1\n\"Student, Test\",999,,,S1\n")
    store = Store.existing(path)
    try:
        store.save_roster([Person("alice", "Stored Name", ("alice",)), Person("carol", "Carol", ("carol",))])
        done = canvas.export(store, rubric, roster=roster)
    finally:
        store.close()
    table = pd.read_csv(pd.io.common.StringIO(done.text), dtype=str, keep_default_na=False)
    assert list(table["Student"]) == ["Points Possible", "Alice A"]  # Canvas's test student skipped, as grade does
    assert list(table.iloc[1][["ID", "SIS User ID", "SIS Login ID", "Section"]]) == ["101", "u101", "alice", "S1"]


def test_export_command_without_roster_lists_the_stored_roster(tmp_path, monkeypatch, registry, small_rubric,
                                                              capsys):
    grade_on_fakes(monkeypatch, registry, small_rubric)
    write_submission(tmp_path / "subs", "alice", {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks})
    (tmp_path / "class.csv").write_text("student,name\nalice,Alice A\nbob,Bob B\n")
    common = ["--results", str(tmp_path / "r"), "--rubric", str(small_rubric.path)]
    assert cli.main(["grade", str(tmp_path / "subs"), *common, "--gpus", "0", "--no-progress", "--roster",
                     str(tmp_path / "class.csv")]) == 0
    (tmp_path / "r" / "canvas.csv").unlink()
    assert cli.main(["export", *common]) == 0
    table = pd.read_csv(tmp_path / "r" / "canvas.csv", dtype=str, keep_default_na=False).set_index("Student")
    assert list(table.index) == ["Points Possible", "Alice A", "Bob B"]
    assert table.loc["Bob B", "SIS Login ID"] == "bob" and table.loc["Bob B", small_rubric.title] == ""
    assert float(table.loc["Alice A", small_rubric.title]) == small_rubric.max_points


def test_canvas_heads_the_column_title_and_assignment_id_so_canvas_fills_that_assignment(tmp_path, rubric,
                                                                                      registry):
    path = fill(tmp_path / "grades.sqlite", [Entry("alice", 1.0)], rubric, registry)
    store = Store.existing(path)
    try:
        done = canvas.export(store, rubric, assignment_id="5123")
        bare = canvas.export(store, rubric)
        with pytest.raises(ExportError, match="--assignment-id must be Canvas's number"):
            canvas.export(store, rubric, assignment_id="HW4")
    finally:
        store.close()
    header = done.text.splitlines()[0]
    assert header == f"Student,ID,SIS User ID,SIS Login ID,Section,{rubric.title} (5123)" and done.warnings == []
    assert bare.warnings == [f"no --assignment-id: Canvas will make a new assignment '{rubric.title}' rather than "
                             "fill an existing one"]


# --- the command line: gradescope and autolab grade into a store, then export from it ---------------------------


@pytest.fixture
def fake_cli(monkeypatch, registry, small_rubric):
    """The command line with the simulated backend standing in for the built harness."""
    grade_on_fakes(monkeypatch, registry, small_rubric)


def test_the_gradescope_command_grades_into_a_store_and_exports_from_it(tmp_path, files, fake_cli, small_rubric,
                                                                         capsys):
    entry = write_submission(tmp_path, "submission", {**files, "dot.cu": "// fake: wrong\n"})
    assert cli.main(["gradescope", "--submission", str(entry), "--results-dir", str(tmp_path / "gs"),
                     "--results", str(tmp_path / "kept"), "--work", str(tmp_path / "work")]) == 0
    doc = json.loads((tmp_path / "gs" / "results.json").read_text())
    store = Store.existing(tmp_path / "kept" / "grades.sqlite")
    try:
        assert doc == gradescope.results(store, small_rubric, "submission")  # read back from the store it kept
    finally:
        store.close()
    assert cli.main(["gradescope", "--submission", str(entry), "--results-dir", str(tmp_path / "gs2"),
                     "--work", str(tmp_path / "work")]) == 0  # into a temporary store
    assert json.loads((tmp_path / "gs2" / "results.json").read_text())["score"] == doc["score"]


def test_the_autolab_command_prints_the_autoresult_last(tmp_path, files, fake_cli, capsys):
    entry = write_submission(tmp_path, "handin", files)
    assert cli.main(["autolab", str(entry), "--work", str(tmp_path / "work")]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert set(json.loads(out[-1])["scores"]) and out[0].startswith("fill: ")
    assert cli.main(["autolab", str(tmp_path / "nothing"), "--work", str(tmp_path / "work")]) == 1
    assert "nothing: no such submission" in capsys.readouterr().err


def test_export_writes_any_target_from_a_class_store(tmp_path, files, registry, small_rubric, capsys):
    write_submission(tmp_path / "class", "alice", files)
    write_submission(tmp_path / "class", "bob", {**files, "add.cu": "// fake: wrong\n"})
    results = tmp_path / "results"
    grade(GradeOptions(tmp_path / "class", results, [None], jobs=1, progress=False, seed=2), small_rubric, registry,
          FakeBackend())
    rubric = ["--rubric", str(small_rubric.path), "--results", str(results)]
    assert cli.main(["export", *rubric]) == 0 and (results / "canvas.csv").exists()
    assert cli.main(["export", "--to", "gradescope", "--student", "bob", *rubric]) == 0
    assert json.loads((results / "bob.results.json").read_text())["score"] < small_rubric.max_points
    capsys.readouterr()
    assert cli.main(["export", "--to", "autolab", "--student", "alice", *rubric]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["scoreboard"][1] == small_rubric.max_points
    assert cli.main(["export", "--to", "autolab", *rubric]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("grader: ") and "holds 2 students (alice, bob): name one (--student)" in err
    assert len(err.splitlines()) == 1
    assert cli.main(["export", "--to", "gradescope", "--roster", "r.csv", *rubric]) == 2
    assert "--roster maps ids for Canvas only" in capsys.readouterr().err
    (results / "taken").mkdir()
    assert cli.main(["export", "--out", str(results / "taken"), *rubric]) == 1
    err = capsys.readouterr().err.strip()
    assert "taken: cannot write the export there" in err and len(err.splitlines()) == 1
