"""The facts of a grading run (timed or not, and why; the folder read and how it was delivered) are stored when
the run starts, copied by a Slurm merge, and read by every report: none works them out again from device records."""
from __future__ import annotations

from grader.grading.grade import SINGLE, GradeOptions, grade, grade_single
from grader.reports.leaderboard.board import build_board
from grader.reports.report import grades_table
from grader.core.status import NOT_TIMED, NOT_TIMED_ON_CPU
from grader.scoring.chain import settle_stored
from grader.store.store import Store
from grader.tests.conftest import opened, write_submission
from grader.tests.cpu_like import grade_cpu_like
from grader.tests.fakes import FakeBackend
from grader.tests.leaderboard_class import Entry, fill

FACTS = ["timed", "untimed_reason", "folder", "source"]


def facts(results) -> list:
    with opened(results) as store:
        return store.runs()[FACTS].values.tolist()


def test_a_class_graded_on_a_gpu_backend_records_a_timed_run_its_folder_and_delivery(tmp_path, registry, small_rubric):
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    write_submission(tmp_path / "subs", "amy", files)
    grade(GradeOptions(tmp_path / "subs", tmp_path / "results", [None], jobs=1, progress=False, seed=1,
                       source="plain"), small_rubric, registry, FakeBackend())
    assert facts(tmp_path / "results") == [[1, "", str((tmp_path / "subs").resolve()), "plain"]]


def test_a_class_graded_on_the_cpu_backend_records_why_nothing_was_timed(tmp_path, registry, small_rubric):
    files = {t.file: "// fake: ok\n" for t in registry.tasks}
    results = grade_cpu_like(tmp_path, small_rubric, registry, {"amy": files})
    assert facts(results) == [[0, NOT_TIMED_ON_CPU, str((tmp_path / "subs").resolve()), "plain"]]


def test_one_submission_graded_alone_records_its_own_entry(tmp_path, registry, small_rubric):
    entry = write_submission(tmp_path / "in", "sam", {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks})
    grade_single(entry, tmp_path / "results", small_rubric, registry, FakeBackend(), None, seed=1)
    assert facts(tmp_path / "results") == [[1, "", str(entry.resolve()), SINGLE]]


def test_a_merged_run_keeps_the_facts_its_shard_recorded(tmp_path, registry, small_rubric):
    shard = fill(tmp_path / "shard.sqlite", [Entry("amy")], small_rubric, registry, timed=False)
    store = Store(tmp_path / "class.sqlite")
    try:
        store.merge_from(shard, "batch/0", settle_stored)
        runs = store.runs()
    finally:
        store.close()
    assert runs[["timed", "untimed_reason"]].values.tolist() == [[0, NOT_TIMED_ON_CPU]]


def test_the_reports_read_the_stored_facts_not_the_device_records(tmp_path, registry, small_rubric):
    # a run on a GPU's device record that says it timed nothing: every reader believes the run
    path = fill(tmp_path / "grades.sqlite", [Entry("amy", 1.0)], small_rubric, registry, timed=False)
    store = Store(path)
    try:
        table, board = grades_table(store, small_rubric), build_board(store, small_rubric)
    finally:
        store.close()
    performance = [f"{t.id}_performance" for t in small_rubric.tasks]
    assert set(table[performance].iloc[0]) == {NOT_TIMED}
    assert board.untimed == NOT_TIMED_ON_CPU
