"""The GPU suite's graded corpus (gpu_corpus.py), without a GPU: what it hands in, under which names and in
which order, the fast rubric it grades with, and its queries on a store (on the simulated backend)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from grader.intake.layouts import find_entries
from grader.core.rubric import load_rubric
from grader.tests import gpu_corpus
from grader.tests.gpu_corpus import FLOAT_ONLY, RACY, ROUNDED_DOWN, SAMPLE_CLASS, SOLUTION_AS_STUDENT, WILD_WRITE
from grader.tests.hostile_batch import ENTRIES, hostile_student, normal_after, runs_code, sanitized


@pytest.fixture(scope="module")
def gathered(tmp_path_factory):
    root = tmp_path_factory.mktemp("gathered")
    return {"fast": (root / "fast", gpu_corpus.gather_fast(root / "fast")),
            "real": (root / "real", gpu_corpus.gather_real(root / "real"))}


def test_the_fast_rubric_differs_from_the_real_one_only_in_case_limit_timing_and_tools(tmp_path, registry, rubric):
    fast = load_rubric(gpu_corpus.write_fast_rubric(tmp_path), registry)
    assert fast.limits == replace(rubric.limits, case=5)
    assert fast.timing == replace(rubric.timing, min_pairs=3, max_pairs=3, budget=1.0, warmup=1)
    assert fast.sanitizer == replace(rubric.sanitizer, tools=())
    assert (fast.tasks, fast.gate, fast.leaderboard_shape) == (rubric.tasks, rubric.gate, rubric.leaderboard_shape)
    assert fast.max_points == rubric.max_points == 100


@pytest.mark.parametrize("run", ["fast", "real"])
def test_each_run_hands_in_exactly_the_students_it_names(gathered, run):
    folder, students = gathered[run]
    entries, skipped = find_entries(folder)
    assert not skipped
    assert sorted({e.student for e in entries}) == students  # (duplicate-ids hands in two entries of one id)


def test_every_student_a_gpu_test_asks_about_is_handed_in_once(gathered):
    fast, real = gathered["fast"][1], gathered["real"][1]
    assert not set(fast) & set(real)
    assert set(SAMPLE_CLASS) | {FLOAT_ONLY} <= set(fast) and len(SAMPLE_CLASS) == 8
    assert {hostile_student(e.name) for e in ENTRIES} <= set(fast)
    assert {normal_after(e.name) for e in ENTRIES if runs_code(e, "gpu")} <= set(fast)
    assert not {normal_after(e.name) for e in ENTRIES if not runs_code(e, "gpu")} & set(fast)
    assert set(real) == {SOLUTION_AS_STUDENT, RACY, WILD_WRITE, ROUNDED_DOWN} | {e.name for e in ENTRIES
                                                                              if sanitized(e, "gpu")}
    assert {"sanitizer-detect", "read-past-input"} <= set(real) and "s05-hang" in fast and "s08-fast" in fast


def test_each_normal_submission_is_graded_right_after_its_entry(gathered):
    order = gathered["fast"][1]  # grading order: the entries' names, sorted
    for entry in (e for e in ENTRIES if runs_code(e, "gpu")):
        assert order[order.index(hostile_student(entry.name)) + 1] == normal_after(entry.name)
    assert order.index("s08-fast") > order.index("s05-hang")  # the hang test's submission after it


def test_the_queries_read_a_graded_run(tmp_path, monkeypatch):
    """The real run's submissions graded on the simulated backend: each one stored, found by its run."""
    monkeypatch.setenv("GRADER_TEST_BACKENDS", "1")
    run = gpu_corpus.grade("real", tmp_path / "real", gpu_corpus.gather_real, tmp_path / "work",
                           gpu_corpus.REAL_RUBRIC, ("--device", "simulated", "--jobs", "2"))
    corpus = gpu_corpus.GradedCorpus(fast=run, real=run)
    assert run.seconds > 0 and any(line.startswith("real run: 6 submissions") for line in gpu_corpus.TIMES)
    for student in run.students:
        assert corpus.submission(student)["status"] == "graded"
        assert len(corpus.cases(student)) and corpus.results(student) == run.results
    timed = corpus.cases(SOLUTION_AS_STUDENT, kind="timed")
    assert len(timed) and set(corpus.samples(SOLUTION_AS_STUDENT)["case_id"]) == set(timed["id"])
    assert set(corpus.sanitizer_runs(SOLUTION_AS_STUDENT)["tool"]) == {"memcheck", "racecheck"}
    assert corpus.scores(SOLUTION_AS_STUDENT).loc["fill", "correctness"] > 0
    with pytest.raises(KeyError):
        corpus.run_of("nobody")
