"""The store's numbered steps: a store of every earlier version opens with everything it held, and reads like a
new one; a store from a newer grader, another program's file, or an upgrade that fails is left as it was."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from grader.store import migrations as migrations
from grader.grading.grade import GradeOptions, grade
from grader.outcomes.isolation import Isolation
from grader.reports.folder import write_reports
from grader.core.rubric import load_rubric
from grader.core.status import NOT_TIMED_ON_CPU
from grader.store.store import Store, StoreError
from grader.tests.conftest import small_rubric_text, write_submission
from grader.tests.fakes import FakeBackend
from grader.tests.old_stores import (CPU_RUN, OLD_WORDS, UNVERSIONED, as_of_version, contents, foreign_database,
                                     stamp, store_of_version, table_shapes)

OLD_VERSIONS = range(1, UNVERSIONED + 1)
REPO = Path(__file__).resolve().parents[2]


def new_store(path):
    Store(path).close()
    return path


def test_the_steps_are_numbered_one_by_one_from_the_first_release():
    assert [step.version for step in migrations.MIGRATIONS] == list(range(1, migrations.LATEST + 1))
    assert migrations.LATEST > UNVERSIONED  # the run facts came after the last store without a version


def test_a_new_store_records_the_newest_version(tmp_path):
    assert contents(new_store(tmp_path / "grades.sqlite"))[0] == migrations.LATEST


@pytest.mark.parametrize("stamped", [False, True], ids=["unversioned", "versioned"])
@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_a_store_of_every_earlier_version_is_brought_up_to_the_shape_of_a_new_one(tmp_path, version, stamped):
    old = store_of_version(tmp_path / "old.sqlite", version, stamped)
    Store(old).close()
    assert contents(old)[0] == migrations.LATEST
    assert table_shapes(old) == table_shapes(new_store(tmp_path / "new.sqlite"))


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_what_an_older_grader_stored_is_still_there_after_the_upgrade(tmp_path, version):
    store = Store(store_of_version(tmp_path / "grades.sqlite", version))
    try:
        runs = store.runs()
        [sub] = store.submissions().to_dict("records")
        [case] = store.cases_for().to_dict("records")
        [sample] = store.samples_for().to_dict("records")
        [score] = store.scores().to_dict("records")
        tools, roster, overrides = store.sanitizer_runs(1), store.roster(), store.overrides()
        merged, isolations, devices = store.merged_origins(), store.isolations(), store.submission_devices()
    finally:
        store.close()
    first = runs.iloc[0]
    assert (first["seed"], first["command"], first["sandbox"]) == (7, "python3 -m grader grade subs", OLD_WORDS)
    assert json.loads(first["limits"]) == {"dram_gbs": 900.0} and devices["gpu_name"].tolist() == ["Old GPU"]
    assert isolations[1].kind == "bubblewrap" and isinstance(isolations[1], Isolation)
    assert (sub["student"], sub["total"], sub["nickname"], sub["notes"]) == ("ann", 7.5, "annie", '["a note"]')
    assert (case["task"], case["speedup"], case["pairs"], case["stop_reason"]) == ("dot", 1.0, 10, "converged")
    assert (sample["student_sm_mhz"], score["correctness"], score["performance"]) == (1400, 5.0, 2.5)
    # each later column: what the older grader wrote, or, before it came, its default
    assert (case["floor_ms"] == 0.25) if version >= 2 else pd.isna(case["floor_ms"])
    assert case["flag"] == ("review" if version >= 2 else "")
    assert len(tools) == (version >= 3) and sub["gate"] == "[]" and sub["build_reason"] == ""
    assert sub["raw_total"] == 7.5  # stored, or before the late policy its total, which nothing was taken from
    assert sub["late"] == ("on time" if version >= 7 else "") and (sub["late_percent"], sub["penalty"]) == (0, 0)
    assert roster["name"].tolist() == (["Ann Archer"] if version >= 7 else [])
    assert overrides["reason"].tolist() == (["regraded by hand"] if version >= 7 else [])
    assert merged["origin"].tolist() == (["b1/0/run/1"] if version >= 8 else [])
    assert sub["received_from"] == ("file" if version >= 9 else "")
    assert tools["checker"].tolist() == (["compute-sanitizer"] if version >= 3 else [])


@pytest.mark.parametrize("version", [1, 5, UNVERSIONED])
def test_an_older_run_gets_its_facts_from_its_device_records_once(tmp_path, version):
    store = Store(store_of_version(tmp_path / "grades.sqlite", version))
    try:
        runs = store.runs().set_index("id")
    finally:
        store.close()
    assert (runs.loc[1, "timed"], runs.loc[1, "untimed_reason"]) == (1, "")  # a GPU run
    assert (runs.loc[1, "folder"], runs.loc[1, "source"]) == ("", "")  # never recorded apart from its command
    if version >= 10:  # the CPU backend's run
        assert (runs.loc[CPU_RUN["id"], "timed"], runs.loc[CPU_RUN["id"], "untimed_reason"]) == (0, NOT_TIMED_ON_CPU)


def test_a_run_records_its_facts_as_given(tmp_path, registry, small_rubric):
    store = Store(tmp_path / "grades.sqlite")
    try:
        gpu = store.start_run(1, "h", small_rubric.sha256, registry.raw, [{"backend": "cpu"}], {},
                              Isolation("none", note="test"), "grade subs", timed=True, folder="/class/subs",
                              source="canvas")
        cpu = store.start_run(1, "h", small_rubric.sha256, registry.raw, [], {}, Isolation("none", note="test"),
                              "grade subs", timed=False, untimed_reason=NOT_TIMED_ON_CPU)
        runs = store.runs().set_index("id")
        with pytest.raises(ValueError):
            store.start_run(1, "h", small_rubric.sha256, registry.raw, [], {}, Isolation("none"), "x", timed=False)
    finally:
        store.close()
    # read as stored: the device record naming the CPU backend does not make the first run untimed
    assert runs.loc[gpu, ["timed", "untimed_reason", "folder", "source"]].tolist() == [1, "", "/class/subs", "canvas"]
    assert runs.loc[cpu, ["timed", "untimed_reason"]].tolist() == [0, NOT_TIMED_ON_CPU]


def test_opening_a_store_twice_changes_nothing_the_second_time(tmp_path):
    path = store_of_version(tmp_path / "grades.sqlite", 4)
    Store(path).close()
    once = contents(path)
    Store(path).close()
    assert contents(path) == once


def test_a_store_from_a_newer_grader_is_refused_in_one_line_and_left_as_it_was(tmp_path):
    path = stamp(new_store(tmp_path / "grades.sqlite"), migrations.LATEST + 1)
    before, data = contents(path), path.read_bytes()
    with pytest.raises(StoreError) as caught:
        Store(path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    assert f"version {migrations.LATEST + 1}" in message and f"up to {migrations.LATEST}" in message
    assert contents(path) == before and path.read_bytes() == data


def test_another_programs_database_is_refused_in_one_line_and_left_as_it_was(tmp_path):
    path = foreign_database(tmp_path / "grades.sqlite")
    before = contents(path)
    with pytest.raises(StoreError, match="not a usable grades store") as caught:
        Store(path)
    assert "\n" not in str(caught.value) and "notes" in str(caught.value)
    assert contents(path) == before


@pytest.mark.parametrize("stamped", [False, True], ids=["unversioned", "versioned"])
def test_an_upgrade_that_fails_midway_leaves_the_store_at_its_old_version_unchanged(tmp_path, monkeypatch, stamped):
    path = store_of_version(tmp_path / "grades.sqlite", 6, stamped)
    before = contents(path)

    def crash(db):
        raise RuntimeError("the machine went down here")

    # the last step adds its columns, then fails while filling them: every earlier step ran in the same transaction
    last = migrations.MIGRATIONS[-1]
    broken = migrations.Migration(last.version, last.name, last.tables, last.columns, fill=crash)
    monkeypatch.setattr(migrations, "MIGRATIONS", (*migrations.MIGRATIONS[:-1], broken))
    with pytest.raises(RuntimeError, match="went down"):
        Store(path)
    assert contents(path) == before
    monkeypatch.undo()
    Store(path).close()  # the next grader upgrades it
    assert contents(path)[0] == migrations.LATEST


def test_a_grader_killed_during_an_upgrade_leaves_the_store_as_it_was(tmp_path):
    path = store_of_version(tmp_path / "grades.sqlite", 6, stamped=True)
    before = contents(path)
    # the process dies (no exception, no rollback of its own) while the last step fills its columns
    killed = textwrap.dedent("""
        import os, sys
        from grader.store import migrations as m
        from grader.store.store import Store
        last = m.MIGRATIONS[-1]
        dies = m.Migration(last.version, last.name, last.tables, last.columns, fill=lambda db: os._exit(9))
        m.MIGRATIONS = (*m.MIGRATIONS[:-1], dies)
        Store(sys.argv[1])
    """)
    done = subprocess.run([sys.executable, "-c", killed, str(path)], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 9, done.stderr
    assert contents(path) == before


@pytest.fixture(scope="module")
def graded_now(tmp_path_factory, registry, rubric):
    """A small class graded, and reported, by today's grader."""
    root = tmp_path_factory.mktemp("now")
    (root / "rubric.toml").write_text(small_rubric_text(rubric))
    small = load_rubric(root / "rubric.toml", registry)
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    write_submission(root / "subs", "amy", files)
    write_submission(root / "subs", "bo", {**files, "dot.cu": "// fake: wrong-large\n"})
    grade(GradeOptions(root / "subs", root / "results", [None], jobs=1, progress=False, seed=3), small, registry,
          FakeBackend())
    write_reports(root / "results", small)
    return root / "results", small


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_a_class_stored_by_an_older_grader_reports_as_it_does_today(tmp_path, graded_now, version):
    results, small = graded_now
    old = tmp_path / "results"
    old.mkdir()
    db = as_of_version(results / "grades.sqlite", old / "grades.sqlite", version)
    db.commit()
    db.close()
    write_reports(old, small)
    today, then = pd.read_csv(results / "grades.csv"), pd.read_csv(old / "grades.csv")
    recorded = version >= 9  # where its time came from: before, "not recorded" (the feedback then says nothing)
    assert [c for c in today.columns if not today[c].equals(then[c])] == ([] if recorded else ["received_from"])
    assert set(then["received_from"]) == (set(today["received_from"]) if recorded else {"not recorded"})
    for student in ("amy", "bo"):
        page, old_page = ((r / "feedback" / f"{student}.md").read_text() for r in (results, old))
        if not recorded:
            page = page.replace(" (the entry's file time on the grading machine)", "")
        assert old_page == page
