"""The Backend contract: what grading relies on from every backend, asserted once and run against each of the three
(grader/backends/base.py's interface): the fake (fakes.py: the sample class as markers, demo_class.py, graded in
a second), the CPU backend (a real `grade --device cpu`, cpu_class.py, shared with test_grade_cpu.py) and the GPU
(the GPU suite's graded corpus, fast run: on a GPU only).

Each grades the sample class of data/sample-submissions/ (data/README.md's table of verdicts) into a store, and the
tests read what it stored. What differs between backends by design is left to each backend's own tests: the CPU
names an out-of-bounds read where a GPU sees wrong numbers, leaves shapes over its budget to a GPU and times nothing
(test_grade_cpu.py); a GPU times and sanitizes (solution/tests/test_grader_gpu.py). So a case that fails may be
`wrong` or `error` here, and a `gpu_only` case is one the backend did not run.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from grader.core.rubric import load_rubric
from grader.tests.conftest import REPO, narrowed, opened, texts_a_student_reads
from grader.tests.demo_class import grade_demo

SAMPLE_CLASS = sorted(p.name for p in (REPO / "data" / "sample-submissions").iterdir() if p.is_dir())
FAILED = {"wrong", "error"}  # a case that ran and gave a wrong answer, or ended in a fault


@dataclass
class Graded:
    """The sample class as one backend graded it."""
    backend: str
    results: Path
    policy: object  # the rubric it was graded with
    work: Path | None  # the grader's work folder (its paths must not reach a student)

    def cases(self, student: str, **where) -> pd.DataFrame:
        with opened(self.results) as store:
            subs = store.submissions(student)
            cases = store.cases_for(subs["id"].tolist())
        return narrowed(cases[cases["kind"] == "correctness"], **where)

    def statuses(self, student: str, task: str) -> dict[str, str]:
        """shape -> status of the task's cases the backend ran (not those it left to a GPU)."""
        rows = self.cases(student, task=task)
        return {r.shape: r.status for r in rows.itertuples() if r.status != "gpu_only"}

    def points(self, student: str) -> pd.Series:
        """task -> correctness points of the student's latest submission."""
        with opened(self.results) as store:
            sid = int(store.submissions(student)["id"].iloc[-1])
            return store.scores([sid]).set_index("task")["correctness"]

    def full(self, task: str) -> float:
        return self.policy.task(task).correctness_points

    def submission(self, student: str) -> pd.Series:
        with opened(self.results) as store:
            return store.submissions(student).iloc[-1]


@pytest.fixture(scope="module", params=["fake", pytest.param("cpu", marks=pytest.mark.slow),
                                        pytest.param("gpu", marks=pytest.mark.gpu)])
def sample(request, tmp_path_factory, rubric, registry) -> Graded:
    if request.param == "fake":
        results = grade_demo(tmp_path_factory.mktemp("fake-sample"), rubric, registry)
        return Graded("fake", results, rubric, None)
    if request.param == "cpu":
        graded = request.getfixturevalue("cpu_sample_class")
        return Graded("cpu", graded.results, graded.policy, graded.work)
    corpus = request.getfixturevalue("graded_corpus")
    return Graded("gpu", corpus.fast.results, load_rubric(corpus.fast.rubric, registry),
                  request.getfixturevalue("gpu_work"))


def k_of(shape: str) -> int:
    return int(shape.split("x")[2])  # a matmul's shape is MxNxK


def test_untouched_stubs_are_not_implemented_everywhere_and_score_nothing(sample):
    rows = sample.cases("s01-stubs")
    assert set(rows["status"]) - {"gpu_only"} == {"not_implemented"}
    assert set(rows["task"]) == {t.id for t in sample.policy.tasks}
    assert sample.points("s01-stubs").sum() == 0


def test_one_file_handed_in_passes_its_task_and_the_other_files_are_missing(sample):
    assert set(sample.statuses("s02-naive-only", "matmul_naive").values()) == {"ok"}
    assert sample.points("s02-naive-only")["matmul_naive"] == sample.full("matmul_naive")
    rows = sample.cases("s02-naive-only")
    others = rows[rows["task"] != "matmul_naive"]
    assert set(others["status"]) == {"missing"}
    assert others["message"].str.endswith(".cu was not in the submission").all()


def test_the_k_guard_off_by_one_fails_only_where_k_leaves_a_partial_tile(sample):
    """`<=` in the k guard reads one element past the row where k is not a multiple of the tile (32): those cases
    fail (as wrong numbers, or as the read the CPU backend names); whole tiles pass."""
    tiled = sample.statuses("s03-tiled-off-by-one", "matmul_tiled")
    failed = {shape for shape, status in tiled.items() if status != "ok"}
    assert failed and {tiled[s] for s in failed} <= FAILED, tiled
    assert all(k_of(s) % 32 for s in failed), tiled
    assert any(k_of(s) % 32 == 0 for s in tiled) and all(tiled[s] == "ok" for s in tiled if k_of(s) % 32 == 0)
    assert 0 <= sample.points("s03-tiled-off-by-one")["matmul_tiled"] < sample.full("matmul_tiled")
    assert set(sample.statuses("s03-tiled-off-by-one", "matmul_naive").values()) == {"ok"}


def test_the_missing_barrier_fails_the_tiled_kernel_and_leaves_the_naive_one_right(sample):
    tiled = sample.statuses("s04-race", "matmul_tiled")
    assert "wrong" in tiled.values() and set(tiled.values()) <= {"ok", "wrong"}, tiled
    assert sample.points("s04-race")["matmul_tiled"] < sample.full("matmul_tiled")
    assert set(sample.statuses("s04-race", "matmul_naive").values()) == {"ok"}


def test_a_hang_times_out_once_skips_the_rest_of_its_task_and_the_other_task_is_graded(sample):
    rows = sample.cases("s05-hang", task="fill")
    assert rows["status"].iloc[0] == "timeout" and "never finishes" in rows["message"].iloc[0]
    assert set(rows["status"].iloc[1:]) == {"skipped"}  # no second wait
    assert set(sample.statuses("s05-hang", "add").values()) == {"ok"}
    assert sample.points("s05-hang")["add"] == sample.full("add")
    with opened(sample.results) as store:
        subs = store.submissions()
        cases = store.cases_for(subs[subs["student"].isin(SAMPLE_CLASS)]["id"].tolist())
    timed_out = cases[cases["status"] == "timeout"]["submission_id"]
    assert list(subs.set_index("id").loc[timed_out, "student"]) == ["s05-hang"]  # one wait, in the class of eight


def test_a_hang_and_a_fault_leave_the_submissions_graded_after_them_untouched(sample):
    after = sample.submission("s08-fast")
    assert after["id"] > sample.submission("s05-hang")["id"] and after["id"] > sample.submission("s06-crash")["id"]
    rows = sample.cases("s08-fast")
    assert set(rows["status"]) - {"gpu_only"} == {"ok"}


def test_a_far_out_of_bounds_write_ends_its_task_in_an_error_and_the_other_task_is_graded(sample):
    add = sample.statuses("s06-crash", "add")
    assert "error" in add.values() and "ok" not in add.values(), add
    assert sample.points("s06-crash")["add"] == 0
    assert set(sample.statuses("s06-crash", "fill").values()) == {"ok"}
    assert sample.points("s06-crash")["fill"] == sample.full("fill")


def test_a_syntax_error_costs_only_its_own_task_and_quotes_the_compiler(sample):
    assert sample.submission("s07-compile-error")["status"] == "graded"
    rows = sample.cases("s07-compile-error", task="transpose")
    assert set(rows["status"]) == {"build_error"}
    assert rows["message"].str.match(r"transpose\.cu does not compile: transpose\.cu[(:]\d+\)?:.*error").all(), \
        rows["message"].iloc[0]
    assert sample.points("s07-compile-error").sum() == 0


def test_the_good_submission_is_correct_everywhere_and_earns_every_correctness_point(sample):
    rows = sample.cases("s08-fast")
    assert set(rows["status"]) - {"gpu_only"} == {"ok"} and set(rows["task"]) == {t.id for t in sample.policy.tasks}
    points = sample.points("s08-fast")
    assert points.sum() == sum(t.correctness_points for t in sample.policy.tasks)


def test_no_text_a_student_reads_names_the_graders_folders(sample):
    """The harness ran the student's files from the grader's work folder: what is stored (and written) names
    their files as their own checkout does."""
    texts = texts_a_student_reads(sample.results)
    assert texts
    folders = [] if sample.work is None else [str(sample.work), str(Path(sample.work).resolve())]
    leaked = [text for text in texts if any(folder in text for folder in folders)]
    assert not leaked, leaked[:3]
