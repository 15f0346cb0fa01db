"""On a GPU: the grader end to end. The sample class earns its timed points (its
verdicts are the Backend contract's, grader/tests/test_backend_contract.py), every
output is written (the leaderboard too), the solution graded as a student ties
with itself, and one file that does not build costs one task. Every submission
is graded once per session, in the graded corpus (grader/tests/gpu_corpus.py:
which run and rubric grades which, and why); the tests query its stores."""
from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
import tomllib

import pytest

from conftest import ROOT
from grader.scoring.chain import settle_stored
from grader.grading.tools import NO_SHARED_MEMORY
from grader.store.store import Store
from grader.tests.conftest import texts_a_student_reads
from grader.tests.gpu_corpus import FLOAT_ONLY, SAMPLE_CLASS, SOLUTION_AS_STUDENT

pytestmark = pytest.mark.gpu
SAMPLES = ROOT / "data" / "sample-submissions"
RUBRIC = tomllib.loads((ROOT / "grader" / "rubric.toml").read_text())
REGISTRY = {t["id"]: t for t in json.loads((ROOT / "starter" / "harness" / "registry.json").read_text())["tasks"]}


def points(task: str, part: str) -> float:
    """A task's correctness or performance points, from the rubric (the fast rubric's are the same)."""
    return RUBRIC["tasks"][task][f"{part}_points"]


def rows(results) -> dict[str, dict]:
    with open(results / "grades.csv") as f:
        return {r["student"]: r for r in csv.DictReader(f)}


def grader(*args: str) -> subprocess.CompletedProcess:
    run = subprocess.run([sys.executable, "-m", "grader", *args], cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run


@pytest.fixture(scope="module")
def demo(tmp_path_factory, graded_corpus):
    """The sample class as `make demo` grades it, graded in the corpus's fast run amid the other submissions:
    a store of the class alone is merged out of that run's (the leaderboard, the exports and grades.csv read a
    whole store), then its reports and Canvas file are written from it, as `grade` writes them."""
    fast = graded_corpus.fast
    results = tmp_path_factory.mktemp("demo")
    store = Store(results / "grades.sqlite")
    try:
        merged, _ = store.merge_from(fast.results / "grades.sqlite", "gpu-corpus/fast", settle_stored,
                                     students=set(SAMPLE_CLASS))
    finally:
        store.close()
    assert merged == len(SAMPLE_CLASS)
    grader("report", "--results", str(results), "--rubric", str(fast.rubric))
    grader("export", "--results", str(results), "--rubric", str(fast.rubric))
    return results, fast


def test_the_samples_that_run_earn_their_timed_points(demo, graded_corpus):
    """The verdicts every backend owes the sample class are the Backend contract's (grader/tests/
    test_backend_contract.py, which reads this corpus on a GPU); here, what only a timed run gives."""
    results, _ = demo
    g = rows(results)
    num = lambda student, col: float(g[student][col])  # noqa: E731
    assert num("s01-stubs", "total") == 0 and num("s07-compile-error", "total") == 0
    assert num("s02-naive-only", "matmul_naive_performance") > 0
    # On a GPU the k guard's `<=` reads past a row as wrong numbers (the CPU backend names the read). (With the real
    # rubric memcheck also sees it, and its penalty may take what the passing cases earned; the fast rubric runs
    # no sanitizer.)
    assert "wrong" in graded_corpus.statuses("s03-tiled-off-by-one", "matmul_tiled")
    assert num("s08-fast", "total") > 60  # every correctness point (48) and performance credit


def test_the_demo_writes_every_output(demo):
    results, fast = demo
    assert sorted(rows(results)) == SAMPLE_CLASS
    for student in rows(results):
        for kind in ("md", "html"):
            assert (results / "feedback" / f"{student}.{kind}").stat().st_size > 500
    assert (results / "feedback" / "s08-fast.png").exists()
    s07 = (results / "feedback" / "s07-compile-error.md").read_text()
    assert 'transpose.cu does not compile: transpose.cu(9): error: expected a ";"' in s07
    assert 'kernels/transpose.cu(9): error: expected a ";"' in s07  # the compiler's own output, in full
    assert "never finishes" in (results / "feedback" / "s05-hang.md").read_text()
    assert "build failures" in fast.stdout and "mean total" in fast.stdout  # grade's summary
    assert (fast.results / "canvas.csv").read_text().startswith("Student,ID,SIS User ID")  # written by grade
    assert (results / "canvas.csv").read_text().startswith("Student,ID,SIS User ID")
    export = subprocess.run([sys.executable, "-m", "grader", "export", "--results", str(results), "--rubric",
                             str(fast.rubric)], cwd=ROOT, capture_output=True, text=True)
    assert export.returncode == 0 and (results / "canvas.csv").read_text().startswith("Student,ID,SIS User ID")


def test_the_demo_publishes_its_leaderboard(demo):
    results, fast = demo
    run = subprocess.run([sys.executable, "-m", "grader", "leaderboard", "--results", str(results), "--rubric",
                          str(fast.rubric)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    out = results / "leaderboard"
    with open(out / "leaderboard.csv") as f:
        table = list(csv.DictReader(f))
    task = RUBRIC["assignment"]["leaderboard_task"]
    metric = next(c for c in table[0] if c.startswith(f"{task} "))
    percent = next(c for c in table[0] if c.startswith("% of "))
    first, others = table[0], table[1:]
    assert (first["name"], first["rank"], first["status"]) == ("tile & tensor", "1", "ranked")  # s08-fast
    assert float(first[metric]) > 100 and 1 < float(first[percent]) < 150
    assert float(first["speedup_low"]) <= float(first["speedup"]) <= float(first["speedup_high"])
    reasons = sorted(r["status"] for r in others)  # s01's stub; the others did not hand in matmul_fast.cu
    assert reasons == sorted(["not implemented yet"] + [f"no {task}.cu"] * 6), reasons
    html = (out / "index.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert(1)" not in html  # s04-race's
    assert "NVIDIA" in html and not any(s in html for s in ("s01-stubs", "s04-race", "s08-fast"))
    assert len(list((out / "history").iterdir())) == 1 and (results / "pseudonym-salt").exists()


def test_the_solution_graded_as_a_student_ties_with_itself(graded_corpus):
    """In the corpus's real run: the real timing policy, memcheck on every task, racecheck on every task whose
    compiled code touches shared memory or atomics (the others: not run, and why: grader/grading/tools.py)."""
    timed = graded_corpus.cases(SOLUTION_AS_STUDENT, kind="timed")
    assert len(timed) == sum(len(REGISTRY[t]["shape_sets"]["timed"]) for t in RUBRIC["tasks"])
    for c in timed.itertuples():
        assert 0.97 <= c.speedup <= 1.03, (c.task, c.shape, c.speedup, c.speedup_low, c.speedup_high, c.pairs)
    assert set(graded_corpus.cases(SOLUTION_AS_STUDENT)["status"]) == {"ok"}
    sanitized = graded_corpus.sanitizer_runs(SOLUTION_AS_STUDENT)
    said = sanitized[["task", "tool", "status", "message"]].to_dict("records")
    assert len(sanitized) == 2 * len(RUBRIC["tasks"]), said
    statuses = {(r["task"], r["tool"]): r["status"] for r in said}
    no_shared_memory = {"fill", "add", "matmul_naive"}  # the solution's files without __shared__ or atomics
    assert statuses == {(t, tool): "skipped" if tool == "racecheck" and t in no_shared_memory else "clean"
                        for t in RUBRIC["tasks"] for tool in ("memcheck", "racecheck")}, said
    assert {r["message"] for r in said if r["status"] == "skipped"} == {NO_SHARED_MEMORY}, said
    assert float(rows(graded_corpus.results(SOLUTION_AS_STUDENT))[SOLUTION_AS_STUDENT]["total"]) == 100


def test_a_float_only_matmul_naive_costs_its_other_types_and_add_keeps_its_points(graded_corpus):
    g = rows(graded_corpus.results(FLOAT_ONLY))[FLOAT_ONLY]
    assert float(g["add_correctness"]) == points("add", "correctness")
    assert float(g["add_performance"]) > 0
    naive = graded_corpus.statuses(FLOAT_ONLY, "matmul_naive")
    graded_types = len(REGISTRY["matmul_naive"]["dtypes"])
    assert naive.count("ok") == len(naive) // graded_types  # every float32 case passes
    assert naive.count("build_error") == len(naive) - len(naive) // graded_types
    # grades.csv rounds points to 3 decimals
    assert float(g["matmul_naive_correctness"]) == pytest.approx(points("matmul_naive", "correctness") / graded_types,
                                                                 abs=5e-4)
    assert float(g["matmul_naive_performance"]) == 0  # not every correctness case passed


def test_what_a_student_reads_names_their_files_not_the_graders_folders(graded_corpus, gpu_work):
    """nvcc compiled each student's files in the grader's work folder, so a CUDA_CHECK's `__FILE__` named it
    there: every stored text and feedback page says `kernels/fill.cu:17`, as the student's `make test` does
    (s10-grid-y-fill's own CUDA_CHECK_LAUNCH fails at 70000x3)."""
    texts = texts_a_student_reads(graded_corpus.fast.results) + texts_a_student_reads(graded_corpus.real.results)
    assert any(re.search(r"(^|\s)kernels/fill\.cu:\d+: cudaGetLastError\(\) failed", text) for text in texts)
    leaked = [text for text in texts if str(gpu_work) in text or str(gpu_work.resolve()) in text]
    assert not leaked, leaked[:3]


def test_gradescope_and_autolab_grade_one_submission(tmp_path, gpu_work, fast_rubric):
    """Each command grades one submission on its own (its own grading run), with the corpus's fast rubric."""
    out = tmp_path / "gradescope"
    run = subprocess.run([sys.executable, "-m", "grader", "gradescope", "--submission", str(SAMPLES / "s02-naive-only"),
                          "--results-dir", str(out), "--work", str(gpu_work), "--rubric", str(fast_rubric)],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    doc = json.loads((out / "results.json").read_text())
    naive = next(t for t in doc["tests"] if t["name"] == "matmul_naive: correctness")
    assert naive["status"] == "passed" and doc["score"] > 8
    autolab = subprocess.run([sys.executable, "-m", "grader", "autolab", str(SAMPLES / "s05-hang"), "--work",
                              str(gpu_work), "--rubric", str(fast_rubric)], cwd=ROOT, capture_output=True, text=True,
                             timeout=900)
    assert autolab.returncode == 0, autolab.stderr[-3000:]
    last = json.loads(autolab.stdout.strip().splitlines()[-1])
    # add is right and timed: every correctness point and some of the performance ones (a plain scalar add next
    # to the solution's vectorized one: full credit on an H100, 7.94 of 8 on an H200, where one timed shape's
    # interval ends just under s_full), whatever fill's hang did
    add = points("add", "correctness") + points("add", "performance")
    assert add - points("add", "performance") / 2 < last["scores"]["add"] <= add
    assert last["scores"]["fill"] == 0
