"""The roster: everyone on it gets a row; submissions from ids it lacks are named."""
from __future__ import annotations

import pandas as pd
import pytest

from grader.grading.grade import GradeOptions, grade
from grader.reports.folder import write_reports
from grader.intake.roster import RosterError, read_roster
from grader.tests.conftest import grade_on_fakes, write_submission
from grader.tests.fakes import FakeBackend
from grader.tests.test_lms import canvas_zip

CANVAS_GRADEBOOK = """\
Student,ID,SIS User ID,SIS Login ID,Section,HW4 CUDA kernels (5123)
    Points Possible,,,,,100.00
"Doe, Jane",23456,S1002,jdoe,CS 4120-001,
"Smith, John",12345,S1001,jsmith,CS 4120-001,
"Lee, Ann",34567,S1003,alee,CS 4120-002,
"""


def test_a_canvas_gradebook_export_is_read_without_its_points_possible_row(tmp_path):
    (tmp_path / "gradebook.csv").write_text(CANVAS_GRADEBOOK)
    people = read_roster(tmp_path / "gradebook.csv")
    assert [(p.student, p.name) for p in people] == [("jdoe", "Doe, Jane"), ("jsmith", "Smith, John"),
                                                    ("alee", "Lee, Ann")]
    assert people[0].keys == ("jdoe", "S1002", "23456")


def test_a_plain_roster_needs_only_a_student_column(tmp_path):
    (tmp_path / "class.csv").write_text("student,name\nalice,Alice A\nbob,\n")
    assert [p.student for p in read_roster(tmp_path / "class.csv")] == ["alice", "bob"]


@pytest.mark.parametrize("text, message", [("", "the roster is empty"), ("student\n", "lists no student"),
                                           ("student\nalice\nalice\n", r"listed twice \(line 3\)"),
                                           ("student,name\n,Bob\n", "line 2 has an empty student id"),
                                           ("email\na@x.edu\n", "nor a 'student' column")])
def test_a_bad_roster_is_named_in_one_line(tmp_path, text, message):
    (tmp_path / "r.csv").write_text(text)
    with pytest.raises(RosterError, match=message) as caught:
        read_roster(tmp_path / "r.csv")
    assert "\n" not in str(caught.value) and "r.csv" in str(caught.value)


def test_a_canvas_class_gets_a_row_per_student_on_the_roster_and_strangers_are_named(tmp_path, registry,
                                                                                    small_rubric):
    (tmp_path / "gradebook.csv").write_text(CANVAS_GRADEBOOK)
    ok = {t.file: b"// fake: ok speed=1.0\n" for t in registry.tasks}
    subs = tmp_path / "download"
    subs.mkdir()
    canvas_zip(subs / "doejane_23456_78901_kernels.zip", ok)  # Canvas names the login and user id 23456
    canvas_zip(subs / "smithjohn_LATE_12345_67890_kernels.zip", ok)
    canvas_zip(subs / "visitor_99999_11111_kernels.zip", ok)  # enrolled after the export, or a test student
    results = tmp_path / "results"
    summary = grade(GradeOptions(subs, results, [None], jobs=1, progress=False, seed=1, source="canvas",
                                 roster=read_roster(tmp_path / "gradebook.csv")), small_rubric, registry, FakeBackend())
    assert summary.not_on_roster == ["visitor"] and summary.no_submission == ["alee"]
    write_reports(results, small_rubric)
    grades = pd.read_csv(results / "grades.csv", keep_default_na=False).set_index("student")
    assert sorted(grades.index) == ["alee", "jdoe", "jsmith", "visitor"]
    assert grades.loc["alee", "status"] == "no submission" and grades.loc["alee", "total"] == ""
    assert float(grades.loc["jdoe", "total"]) == small_rubric.max_points


def test_grade_prints_who_is_missing_and_who_is_not_on_the_roster(tmp_path, monkeypatch, registry, small_rubric,
                                                                  capsys):
    from grader import cli
    grade_on_fakes(monkeypatch, registry, small_rubric)
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    write_submission(tmp_path / "subs", "alice", files)
    write_submission(tmp_path / "subs", "mallory", files)
    (tmp_path / "class.csv").write_text("student\nalice\nbob\n")
    code = cli.main(["grade", str(tmp_path / "subs"), "--results", str(tmp_path / "r"), "--rubric",
                     str(small_rubric.path), "--gpus", "0", "--no-progress", "--roster", str(tmp_path / "class.csv")])
    out = capsys.readouterr().out
    assert code == 0
    assert f"not on the roster {tmp_path / 'class.csv'} (graded all the same): mallory" in out
    assert "on the roster with no submission (1): bob" in out
    canvas = pd.read_csv(tmp_path / "r" / "canvas.csv", keep_default_na=False)
    assert "bob" in set(canvas["SIS Login ID"])
