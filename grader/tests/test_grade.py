"""Grading a class end to end on the fake backend: verdicts, outputs, resume, regrade, and kill -9."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import tarfile
import time

import pandas as pd
import pytest

from grader.exports import canvas_csv
from grader.grade import GradeOptions, grade
from grader.report import summary_table, write_reports
from grader.store import Store
from grader.tests.conftest import REPO, small_rubric_text, write_submission
from grader.tests.fakes import FakeBackend


def make_class(root, registry):
    """Submissions with every behaviour the grader must handle, keyed by the verdict expected."""
    files = {t.file: f"// fake: ok speed=1.0\n" for t in registry.tasks}
    write_submission(root, "alice", files)  # matches the solution: full marks
    write_submission(root, "bob", {**files, "matmul_fast.cu": "// fake: ok speed=0.2\n", "README.md": "hi"})
    write_submission(root, "carol", {**files, "transpose.cu": "// fake: wrong-large\n"})
    write_submission(root, "dave", {**files, "dot.cu": "// fake: hang\n"})
    write_submission(root, "erin", {**files, "add.cu": "#error nope\n"})
    write_submission(root, "frank", files)
    os.symlink("/etc/passwd", root / "frank" / "evil.cu")  # rejected at intake
    write_submission(root, "grace", {"fill.cu": "// fake: ok\n", "nickname.txt": "Gracie\n"})
    write_submission(root, "heidi", {**files, "add.cu": "// fake: wrong-when-timed\n", "fill.cu": "// fake: crash\n"})
    with tarfile.open(root / "ivan.tar.gz", "w:gz") as tar:  # an archive, graded like a folder
        tar.add(root / "alice", arcname="ivan")
    return root


@pytest.fixture
def graded(tmp_path, registry, small_rubric):
    subs = make_class(tmp_path / "submissions", registry)
    results = tmp_path / "results"
    backend = FakeBackend()
    summary = grade(GradeOptions(subs, results, [None], jobs=2, progress=False, seed=7), small_rubric, registry,
                    backend)
    write_reports(results, small_rubric)
    return summary, results, backend


def totals(results) -> dict[str, float]:
    grades = pd.read_csv(results / "grades.csv")
    return dict(zip(grades["student"], grades["total"]))


def test_every_submission_gets_the_verdict_its_code_earns(graded, small_rubric):
    _, results, _ = graded
    t = totals(results)
    full = small_rubric.max_points
    assert t["alice"] == full and t["ivan"] == full
    fast = small_rubric.task("matmul_fast")  # bob's is 0.2x the solution: partial credit on the curve
    assert t["bob"] == pytest.approx(full - fast.performance_points * (1 - fast.performance_credit(0.2)), abs=1e-3)
    assert t["erin"] == full - small_rubric.task("add").max_points and t["frank"] == 0  # add.cu did not compile
    assert t["grace"] == small_rubric.task("fill").max_points
    assert t["carol"] < full and t["dave"] < full and t["heidi"] < full


def test_statuses_and_reasons_are_stored_per_case(graded):
    _, results, _ = graded
    db = sqlite3.connect(results / "grades.sqlite")
    status = dict(db.execute("SELECT student, status FROM submissions"))
    assert status["erin"] == "graded" and status["frank"] == "rejected" and status["alice"] == "graded"
    erin = set(r[0] for r in db.execute("SELECT c.status || ':' || c.message FROM cases c JOIN submissions s ON s.id = c.submission_id "
                          "WHERE s.student = 'erin' AND c.task = 'add' AND c.kind = 'correctness'"))
    assert erin == {"build_error:add.cu does not compile: add.cu(3): error: this does not compile"}
    dave = db.execute("SELECT c.status, c.message FROM cases c JOIN submissions s ON s.id = c.submission_id "
                      "WHERE s.student = 'dave' AND c.task = 'dot'").fetchall()
    assert dave[0][0] == "timeout" and "never finishes" in dave[0][1]
    assert all(st == "skipped" and "did not finish" in msg for st, msg in dave[1:-1])  # no second wait
    heidi = dict(db.execute("SELECT c.task || ':' || c.kind, c.status FROM cases c JOIN submissions s "
                            "ON s.id = c.submission_id WHERE s.student = 'heidi'"))
    assert heidi["fill:correctness"] == "crashed" and heidi["add:timed"] == "wrong"
    assert heidi["dot:timed"] == "ok"  # the crash and the wrong timed run ended only their own cases
    pairs = db.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    assert pairs > 0


def test_a_hang_or_crash_leaves_the_next_submission_untouched(graded, small_rubric):
    _, results, _ = graded
    t = totals(results)
    assert t["ivan"] == small_rubric.max_points  # graded after dave (hang) and heidi (crash)


def test_feedback_names_what_went_wrong(graded):
    _, results, _ = graded
    fb = results / "feedback"
    assert "add.cu does not compile: add.cu(3): error" in (fb / "erin.md").read_text()
    assert "symbolic link" in (fb / "frank.md").read_text()
    assert "3 of 561 elements are wrong" in (fb / "carol.md").read_text()
    assert "matmul_fast.cu is missing" in (fb / "grace.md").read_text()
    alice = (fb / "alice.md").read_text()
    assert "speedup 1 (95% interval 1 to 1)" in alice and "paired runs" in alice
    assert "README.md" in (fb / "bob.md").read_text()  # extra files are listed
    html = (fb / "alice.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "data:image/png;base64," in html
    assert (fb / "alice.png").read_bytes().startswith(b"\x89PNG")


def test_grades_csv_has_a_row_per_student_and_two_columns_per_task(graded, small_rubric):
    _, results, _ = graded
    grades = pd.read_csv(results / "grades.csv")
    assert sorted(grades["student"]) == ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan"]
    for t in small_rubric.tasks:
        assert f"{t.id}_correctness" in grades.columns and f"{t.id}_performance" in grades.columns
    assert grades.set_index("student").loc["grace", "nickname"] == "Gracie"


def test_summary_counts_failures_and_timeouts(graded, small_rubric):
    _, results, _ = graded
    store = Store(results / "grades.sqlite")
    row = summary_table(store, small_rubric).iloc[0]
    store.close()
    assert row["submissions"] == 9 and row["build failures"] == 0 and row["rejected"] == 1
    assert row["with files that do not build"] == 1
    assert row["with timeouts"] == 1


def test_canvas_csv_has_canvas_columns_and_points_possible(graded, small_rubric, tmp_path):
    _, results, _ = graded
    store = Store(results / "grades.sqlite")
    out, warnings = canvas_csv(store, small_rubric, tmp_path / "canvas.csv")
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section\n    Points Possible,,,,\n"
                      "Alice A,101,u101,alice,S1\nNobody N,102,u102,nobody,S1\n")
    mapped, warnings = canvas_csv(store, small_rubric, tmp_path / "mapped.csv", roster)
    store.close()
    table = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert list(table.columns) == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", small_rubric.title]
    assert table.iloc[0]["Student"] == "Points Possible"
    assert float(table.iloc[0][small_rubric.title]) == small_rubric.max_points
    mapped_table = pd.read_csv(mapped, dtype=str, keep_default_na=False).set_index("Student")
    assert mapped_table.loc["Alice A", "SIS User ID"] == "u101"
    assert float(mapped_table.loc["Alice A", small_rubric.title]) == small_rubric.max_points
    assert mapped_table.loc["Nobody N", small_rubric.title] == ""
    assert any(w.startswith("bob is graded but not in the roster") for w in warnings)


def test_a_second_run_skips_unchanged_submissions_and_regrade_does_not(graded, registry, small_rubric):
    summary, results, _ = graded
    subs = results.parent / "submissions"
    again = FakeBackend()
    second = grade(GradeOptions(subs, results, [None], progress=False), small_rubric, registry, again)
    assert not second.graded and again.builds == [] and len(second.skipped_same) == 9
    (subs / "alice" / "fill.cu").write_text("// fake: wrong\n")
    third = grade(GradeOptions(subs, results, [None], progress=False), small_rubric, registry, FakeBackend())
    assert [r.submission.student for r in third.graded] == ["alice"]
    fourth = grade(GradeOptions(subs, results, [None], regrade=True, progress=False), small_rubric, registry,
                   FakeBackend())
    assert len(fourth.graded) == 9
    db = sqlite3.connect(results / "grades.sqlite")
    assert db.execute("SELECT COUNT(*) FROM submissions WHERE student = 'alice'").fetchone()[0] == 2  # two versions
    write_reports(results, small_rubric)
    assert totals(results)["alice"] < small_rubric.max_points  # the latest version counts


KILL_SCRIPT = """
import json, sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from grader.grade import GradeOptions, grade
from grader.registry import Registry
from grader.rubric import load_rubric
from grader.tests.fakes import FakeBackend
registry = Registry.from_json(json.loads(Path({registry!r}).read_text()))
rubric = load_rubric(Path({rubric!r}), registry)
grade(GradeOptions(Path({subs!r}), Path({results!r}), [None], jobs=1, progress=False, seed=3), rubric, registry,
      FakeBackend(delay=0.01))
"""


def test_kill_minus_9_midway_loses_only_the_submission_in_flight(tmp_path, registry, rubric):
    subs = tmp_path / "submissions"
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    for i in range(8):
        write_submission(subs, f"student{i:02d}", files)
    (tmp_path / "registry.json").write_text(json.dumps(registry.raw))
    (tmp_path / "rubric.toml").write_text(small_rubric_text(rubric, min_pairs=5))
    results = tmp_path / "results"
    script = KILL_SCRIPT.format(repo=str(REPO), registry=str(tmp_path / "registry.json"),
                                rubric=str(tmp_path / "rubric.toml"), subs=str(subs), results=str(results))
    proc = subprocess.Popen([sys.executable, "-c", script])
    db_path = results / "grades.sqlite"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if db_path.exists():
            try:
                if sqlite3.connect(db_path).execute("SELECT COUNT(*) FROM submissions").fetchone()[0] >= 2:
                    break
            except sqlite3.OperationalError:
                pass
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    db = sqlite3.connect(db_path)
    stored = db.execute("SELECT COUNT(*) FROM submissions").fetchone()[0]
    assert 2 <= stored < 8, "the kill should land midway"
    tasks = len(registry.tasks)
    per_sub = db.execute("SELECT s.student, (SELECT COUNT(*) FROM scores WHERE submission_id = s.id),"
                         " (SELECT COUNT(*) FROM cases WHERE submission_id = s.id) FROM submissions s").fetchall()
    assert all(n_scores == tasks and n_cases == 3 * tasks for _, n_scores, n_cases in per_sub)  # whole, never partial
    assert db.execute("SELECT COUNT(*) FROM cases WHERE submission_id NOT IN (SELECT id FROM submissions)"
                      ).fetchone()[0] == 0
    db.close()

    from grader.registry import Registry
    from grader.rubric import load_rubric
    small = load_rubric(tmp_path / "rubric.toml", Registry.from_json(registry.raw))
    backend = FakeBackend()
    resumed = grade(GradeOptions(subs, results, [None], progress=False), small, registry, backend)
    assert len(resumed.skipped_same) == stored
    assert len(backend.builds) == 8 - stored
    db = sqlite3.connect(db_path)
    assert sorted(r[0] for r in db.execute("SELECT student FROM submissions")) == [f"student{i:02d}" for i in range(8)]


def test_two_gpus_get_a_worker_each_and_share_the_class(tmp_path, registry, small_rubric):
    subs = make_class(tmp_path / "submissions", registry)
    results = tmp_path / "results"

    class Recording(FakeBackend):
        def __init__(self):
            super().__init__(delay=0.002)
            self.gpus = []

        def student_server(self, build, gpu):
            self.gpus.append(gpu)
            return super().student_server(build, gpu)

    backend = Recording()
    summary = grade(GradeOptions(subs, results, ["0", "1"], jobs=4, progress=False), small_rubric, registry, backend)
    assert len(summary.graded) == 9
    assert set(backend.gpus) == {"0", "1"}
    write_reports(results, small_rubric)
    assert totals(results)["alice"] == small_rubric.max_points


def test_a_folder_and_an_archive_of_one_id_are_graded_once_the_newest_with_a_note(tmp_path, registry, small_rubric):
    """Both used to be accepted, graded twice and built at once in one folder: now the one received last counts."""
    subs = tmp_path / "subs"
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    write_submission(subs, "judy", {t.file: "// fake: wrong\n" for t in registry.tasks})
    write_submission(tmp_path / "newer", "judy", files)
    with tarfile.open(subs / "judy.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / "newer" / "judy", arcname="judy")
    os.utime(subs / "judy", (1_700_000_000, 1_700_000_000))
    os.utime(subs / "judy.tar.gz", (1_700_000_500, 1_700_000_500))
    backend = FakeBackend()
    summary = grade(GradeOptions(subs, tmp_path / "results", [None], jobs=2, progress=False), small_rubric, registry,
                    backend)
    assert backend.builds == ["judy"]
    [result] = summary.graded
    assert result.submission.source.name == "judy.tar.gz" and all(c.status == "ok" for c in result.cases
                                                                     if c.kind == "correctness")
    assert any("judy/ (received 2023-11-14T22:13:20+00:00) has the same student id" in n
               for n in result.submission.notes)
    assert any(s.startswith("judy/: another entry with the id judy") for s in summary.skipped_entries)
