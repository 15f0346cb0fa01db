"""The intake plan alone (grader/grading/plan.py): what a folder gives `grade`, `grade --slurm` and `similarity` to
do, from fake folder trees, a real SQLite store and the real registry and rubric; no build, no GPU."""
from __future__ import annotations

import os

import pytest

from grader.core.errors import GraderError
from grader.grading.grade import GradeOptions, grade
from grader.grading.plan import NoSubmissions, check_folder, plan_entries, plan_intake
from grader.intake.roster import Person
from grader.tests.conftest import write_submission
from grader.tests.fakes import FakeBackend
from grader.tests.test_lms import canvas_zip, gradescope_export

OK = "// fake: ok speed=1.0\n"


@pytest.fixture
def files(registry):
    return {t.file: OK for t in registry.tasks}


def plan(folder, small_rubric, registry, **given):
    return plan_intake(folder, rubric=small_rubric, registry=registry, harness_version=FakeBackend.harness_version,
                       **given)


def test_every_student_in_a_plain_folder_is_to_be_graded_and_strays_are_skipped_with_why(tmp_path, files,
                                                                                      small_rubric, registry):
    write_submission(tmp_path / "subs", "alice", files)
    write_submission(tmp_path / "subs", "bob", files)
    (tmp_path / "subs" / "README.pdf").write_bytes(b"%PDF")
    done = plan(tmp_path / "subs", small_rubric, registry)
    assert [s.student for s in done.todo] == ["alice", "bob"]
    assert [e.path.name for e, _ in done.work] == ["alice", "bob"]
    assert done.skipped_entries == ["README.pdf: not a folder, .tar.gz, .tgz or .zip named by a student id; skipped"]
    assert done.skipped_same == [] and done.not_on_roster == [] and done.no_submission == []


def test_of_two_entries_of_one_student_the_later_is_graded_and_the_other_skipped(tmp_path, files, small_rubric,
                                                                               registry):
    older = write_submission(tmp_path / "subs", "alice", files)
    os.utime(older, (1_700_000_000, 1_700_000_000))
    canvas_zip(tmp_path / "subs" / "alice.zip", {name: text.encode() for name, text in files.items()})
    done = plan(tmp_path / "subs", small_rubric, registry)
    assert [s.source.name for s in done.todo] == ["alice.zip"]
    assert done.skipped_entries == ["alice/: another entry with the id alice was received later (alice.zip); "
                                    "skipped"]


def test_what_the_store_holds_graded_unchanged_is_skipped_unless_regrade(tmp_path, files, small_rubric, registry):
    write_submission(tmp_path / "subs", "alice", files)
    write_submission(tmp_path / "subs", "bob", files)
    results = tmp_path / "results"
    grade(GradeOptions(tmp_path / "subs", results, [None], jobs=1, progress=False, seed=1), small_rubric, registry,
          FakeBackend())
    (tmp_path / "subs" / "bob" / next(iter(files))).write_text(OK + "// changed\n")
    store = results / "grades.sqlite"
    done = plan(tmp_path / "subs", small_rubric, registry, store=store)
    assert done.skipped_same == ["alice"] and [s.student for s in done.todo] == ["bob"]
    assert [s.student for _, s in done.latest] == ["alice", "bob"]
    again = plan(tmp_path / "subs", small_rubric, registry, store=store, regrade=True)
    assert again.skipped_same == [] and [s.student for s in again.todo] == ["alice", "bob"]
    other_harness = plan_intake(tmp_path / "subs", rubric=small_rubric, registry=registry, store=store,
                                harness_version="another-harness")
    assert other_harness.skipped_same == []


def test_a_store_that_is_not_there_is_not_created(tmp_path, files, small_rubric, registry):
    write_submission(tmp_path / "subs", "alice", files)
    done = plan(tmp_path / "subs", small_rubric, registry, store=tmp_path / "results" / "grades.sqlite")
    assert [s.student for s in done.todo] == ["alice"] and not (tmp_path / "results").exists()


def test_student_grades_that_one_again_even_when_graded_unchanged(tmp_path, files, small_rubric, registry):
    write_submission(tmp_path / "subs", "alice", files)
    write_submission(tmp_path / "subs", "bob", files)
    results = tmp_path / "results"
    grade(GradeOptions(tmp_path / "subs", results, [None], jobs=1, progress=False, seed=1), small_rubric, registry,
          FakeBackend())
    done = plan(tmp_path / "subs", small_rubric, registry, student="bob", store=results / "grades.sqlite")
    assert [s.student for s in done.todo] == ["bob"] and done.skipped_same == []


def test_a_student_with_no_entry_is_refused_in_one_line(tmp_path, files, small_rubric, registry):
    write_submission(tmp_path / "subs", "alice", files)
    with pytest.raises(GraderError, match=r"subs: no submission of 'zed' in it$"):
        plan(tmp_path / "subs", small_rubric, registry, student="zed")


def test_the_roster_names_students_and_the_gaps_both_ways(tmp_path, files, small_rubric, registry):
    write_submission(tmp_path / "subs", "alice", files)
    write_submission(tmp_path / "subs", "mallory", files)
    roster = [Person("alice", "Alice A", ("alice",)), Person("bob", "Bob B", ("bob",))]
    done = plan(tmp_path / "subs", small_rubric, registry, roster=roster)
    assert done.not_on_roster == ["mallory"] and done.no_submission == ["bob"]
    assert [s.student for s in done.todo] == ["alice", "mallory"]  # graded all the same


def test_a_canvas_download_is_named_by_the_roster_through_canvas_user_id(tmp_path, files, small_rubric, registry):
    subs = tmp_path / "download"
    subs.mkdir()
    members = {name: text.encode() for name, text in files.items()}
    canvas_zip(subs / "doejane_23456_78901_kernels.zip", members)
    canvas_zip(subs / "doejane_23456_78950_kernels.zip", members)  # a later Canvas submission id
    canvas_zip(subs / "visitor_99999_11111_kernels.zip", members)
    (subs / "notes.txt").write_text("not a download")
    roster = [Person("jdoe", "Doe, Jane", ("jdoe", "S1002", "23456"))]
    done = plan(subs, small_rubric, registry, source="canvas", roster=roster, student="jdoe")
    assert [(s.student, s.source.name) for s in done.todo] == [("jdoe", "doejane_23456_78950_kernels.zip")]
    assert done.not_on_roster == ["visitor"] and done.no_submission == []
    assert any(line.startswith("notes.txt: not named as Canvas names a download") for line in done.skipped_entries)
    assert any(line.startswith("doejane_23456_78901_kernels.zip: another entry") for line in done.skipped_entries)


def test_a_gradescope_export_gives_each_submitter_their_latest(tmp_path, small_rubric, registry):
    done = plan(gradescope_export(tmp_path / "export"), small_rubric, registry, source="gradescope")
    assert sorted((s.student, s.source.name) for s in done.todo) == [
        ("1001", "submission_201"), ("1003", "submission_202"), ("sroe@example.edu", "submission_202")]
    assert "submission_999: not listed in submission_metadata.yml; skipped" in done.skipped_entries
    assert any(line.startswith("submission_203/: another entry with the id 1001") for line in done.skipped_entries)


def test_students_reads_only_those_students_entries(tmp_path, files, small_rubric, registry):
    write_submission(tmp_path / "subs", "alice", files)
    write_submission(tmp_path / "subs", "bob", files)
    done = plan(tmp_path / "subs", small_rubric, registry, students={"bob"})
    assert [s.student for _, s in done.latest] == ["bob"]


def test_given_entries_are_planned_instead_of_the_folders(tmp_path, files, small_rubric, registry):
    write_submission(tmp_path / "subs", "alice", files)
    write_submission(tmp_path / "subs", "bob", files)
    only = plan_entries(tmp_path / "subs").entries[1:]
    done = plan(tmp_path / "subs", small_rubric, registry, entries=only)
    assert [s.student for s in done.todo] == ["bob"] and done.skipped_entries == []


@pytest.mark.parametrize("make, message", [
    (lambda p: None, "no such submissions folder"),
    (lambda p: p.write_bytes(b"x"), "not a folder; give the folder that holds the submissions"),
    (lambda p: p.mkdir(), "no submissions in it (it is empty)")])
def test_a_folder_with_nothing_to_grade_is_named_in_one_line(tmp_path, make, message):
    make(tmp_path / "subs")
    with pytest.raises(GraderError) as caught:
        plan_entries(tmp_path / "subs")
    assert str(caught.value).startswith(f"{tmp_path / 'subs'}: {message}") and "\n" not in str(caught.value)


def test_a_folder_of_strays_says_what_it_skipped(tmp_path):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "README.pdf").write_bytes(b"%PDF")
    with pytest.raises(NoSubmissions, match=r"no submissions in it \(1 entry skipped, such as README.pdf"):
        plan_entries(tmp_path / "subs")


def test_check_folder_gives_back_the_folder(tmp_path):
    assert check_folder(tmp_path) == tmp_path
