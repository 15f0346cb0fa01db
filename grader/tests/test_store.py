"""The store's reading API: the queries every reader (report, exports, leaderboard, tests) goes through."""
from __future__ import annotations

import pytest

from grader.store.store import Store, StoreError
from grader.store.migrations import added_columns
from grader.tests.leaderboard_class import Entry, fill
from grader.tests.old_stores import before_the_gate


@pytest.fixture
def store(tmp_path, small_rubric, registry):
    path = fill(tmp_path / "grades.sqlite", [Entry("a", 1.0), Entry("b", None), Entry("c", 0.5, status="build_failed")],
                small_rubric, registry)
    fill(path, [Entry("a", 1.2, received="2026-11-21T10:00:00+00:00")], small_rubric, registry)  # a second run
    opened = Store(path)
    yield opened
    opened.close()


def ids(store, student):
    return store.submissions(student)["id"].tolist()


def test_submissions_are_every_version_and_latest_is_each_students_newest(store):
    assert sorted(store.submissions()["student"]) == ["a", "a", "b", "c"]
    latest = store.latest_submissions().set_index("student")
    assert list(latest.index) == ["a", "b", "c"] and latest.loc["a", "received"].startswith("2026-11-21")
    assert len(store.runs()) == 2 and store.latest_run()["id"] == store.runs()["id"].max()


def test_cases_are_those_of_the_submissions_asked_for_or_all(store):
    a, b = ids(store, "a"), ids(store, "b")
    assert set(store.cases_for(a)["submission_id"]) == set(a)
    assert set(store.cases_for(a + b)["submission_id"]) == set(a + b)
    assert len(store.cases_for()) == len(store.cases_for(a + b + ids(store, "c")))
    assert store.cases_for([]).empty
    timed = store.timed_cases(a)
    assert not timed.empty and set(timed["kind"]) == {"timed"}
    assert set(store.samples_for(timed["id"].tolist())["case_id"]) == set(timed["id"])


def test_a_long_list_of_ids_is_asked_for_in_parts(store):
    every = store.cases_for()
    assert len(store.cases_for(list(range(1, 2000)))) == len(every)  # over SQLite's older 999-variable limit


def test_scores_and_sanitizer_runs_follow_the_ids(store):
    a = ids(store, "a")
    assert set(store.scores(a)["submission_id"]) == set(a) and len(store.scores()) == 4 * len(
        store.scores(a[:1]))
    assert store.sanitizer_runs_for(a).empty  # the leaderboard's fixtures run no tool


def test_a_reader_never_creates_a_store(tmp_path):
    with pytest.raises(StoreError, match="no grades store there; grade first"):
        Store.existing(tmp_path / "grades.sqlite")
    assert not (tmp_path / "grades.sqlite").exists()


def test_a_file_that_is_not_a_store_is_refused_in_one_line(tmp_path):
    path = tmp_path / "grades.sqlite"
    path.write_text("not a database, just text that happens to be here\n" * 100)
    with pytest.raises(StoreError, match="not a usable grades store") as caught:
        Store(path)
    assert "\n" not in str(caught.value)
    assert path.read_text().startswith("not a database")  # left as it was


def test_an_old_submissions_table_gains_every_added_column_with_its_default(tmp_path):
    store = Store(before_the_gate(tmp_path / "grades.sqlite"))
    try:
        row = store.submissions().iloc[0]
    finally:
        store.close()
    added = [column for table, column, _ in added_columns() if table == "submissions"]
    assert set(added) == {"gate", "build_reason", "raw_total", "late_percent", "penalty", "late", "received_from"}
    assert (row["student"], row["gate"], row["build_reason"]) == ("old", "[]", "")
    assert (row["late_percent"], row["penalty"], row["late"]) == (0, 0, "")
    assert row["received_from"] == ""  # not recorded: its time reads as before


def test_a_results_folder_that_is_a_file_is_refused_in_one_line(tmp_path):
    (tmp_path / "results").write_text("a file, not a folder\n")
    with pytest.raises(StoreError, match="cannot hold a grades store") as caught:
        Store(tmp_path / "results" / "grades.sqlite")
    assert "\n" not in str(caught.value) and (tmp_path / "results").read_text() == "a file, not a folder\n"
