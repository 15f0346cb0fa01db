"""On a GPU: the grader end to end. The sample class gets its verdicts, every
output is written (the leaderboard too), the solution graded as a student ties
with itself, one file that does not build costs one task, and a hang leaves the
next submission untouched. The grading runs are made once per session
(class_run.py) and queried here."""
from __future__ import annotations

import csv
import json
import sqlite3
import subprocess
import sys
import tomllib

import pytest

from class_run import grade
from conftest import ROOT

pytestmark = pytest.mark.gpu
SAMPLES = ROOT / "data" / "sample-submissions"
RUBRIC = tomllib.loads((ROOT / "grader" / "rubric.toml").read_text())
REGISTRY = {t["id"]: t for t in json.loads((ROOT / "starter" / "harness" / "registry.json").read_text())["tasks"]}


def points(task: str, part: str) -> float:
    """A task's correctness or performance points, from the rubric."""
    return RUBRIC["tasks"][task][f"{part}_points"]


def rows(results) -> dict[str, dict]:
    with open(results / "grades.csv") as f:
        return {r["student"]: r for r in csv.DictReader(f)}


def case_statuses(results, student: str, task: str) -> list[str]:
    db = sqlite3.connect(results / "grades.sqlite")
    return [s for (s,) in db.execute("SELECT c.status FROM cases c JOIN submissions s ON s.id = c.submission_id "
                                     "WHERE s.student = ? AND c.task = ? AND c.kind = 'correctness'", (student, task))]


@pytest.fixture(scope="module")
def demo(tmp_path_factory, gpu_work):
    results = tmp_path_factory.mktemp("demo")
    return results, grade(SAMPLES, results, gpu_work, "--regrade")


def test_each_sample_gets_its_verdict(demo):
    results, _ = demo
    g = rows(results)
    num = lambda student, col: float(g[student][col])  # noqa: E731
    assert num("s01-stubs", "total") == 0
    assert set(case_statuses(results, "s01-stubs", "fill")) == {"not_implemented"}
    assert num("s02-naive-only", "matmul_naive_correctness") == points("matmul_naive", "correctness")
    assert num("s02-naive-only", "matmul_naive_performance") > 0
    assert set(case_statuses(results, "s02-naive-only", "dot")) == {"missing"}
    assert 0 < num("s03-tiled-off-by-one", "matmul_tiled_correctness") < points("matmul_tiled", "correctness")
    assert "wrong" in case_statuses(results, "s03-tiled-off-by-one", "matmul_tiled")
    assert num("s04-race", "matmul_tiled_correctness") < points("matmul_tiled", "correctness")
    assert case_statuses(results, "s05-hang", "fill")[0] == "timeout"
    assert num("s05-hang", "add_correctness") == points("add", "correctness")
    assert "error" in case_statuses(results, "s06-crash", "add")
    assert num("s06-crash", "add_correctness") == 0
    assert num("s06-crash", "fill_correctness") == points("fill", "correctness")
    # One missing semicolon costs its own task: the submission is graded, transpose does not build.
    assert g["s07-compile-error"]["status"] == "graded" and num("s07-compile-error", "total") == 0
    assert set(case_statuses(results, "s07-compile-error", "transpose")) == {"build_error"}
    fast = g["s08-fast"]
    assert all(float(fast[f"{t}_correctness"]) > 0 for t in RUBRIC["tasks"])
    assert num("s08-fast", "total") > 60


def test_the_demo_writes_every_output(demo):
    results, run = demo
    for student in rows(results):
        for kind in ("md", "html"):
            assert (results / "feedback" / f"{student}.{kind}").stat().st_size > 500
    assert (results / "feedback" / "s08-fast.png").exists()
    s07 = (results / "feedback" / "s07-compile-error.md").read_text()
    assert 'transpose.cu does not compile: transpose.cu(9): error: expected a ";"' in s07
    assert 'kernels/transpose.cu(9): error: expected a ";"' in s07  # the compiler's own output, in full
    assert "never finishes" in (results / "feedback" / "s05-hang.md").read_text()
    assert "build failures" in run.stdout and "mean total" in run.stdout
    assert (results / "canvas.csv").read_text().startswith("Student,ID,SIS User ID")
    export = subprocess.run([sys.executable, "-m", "grader", "export", "--results", str(results)], cwd=ROOT,
                            capture_output=True, text=True)
    assert export.returncode == 0 and (results / "canvas.csv").read_text().startswith("Student,ID,SIS User ID")


def test_the_demo_publishes_its_leaderboard(demo):
    results, _ = demo
    run = subprocess.run([sys.executable, "-m", "grader", "leaderboard", "--results", str(results)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
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


def test_the_solution_graded_as_a_student_ties_with_itself(class_run):
    results = class_run.results
    db = sqlite3.connect(results / "grades.sqlite")
    timed = db.execute("SELECT c.task, c.shape, c.speedup, c.speedup_low, c.speedup_high, c.pairs FROM cases c "
                       "JOIN submissions s ON s.id = c.submission_id WHERE s.student = 'solution-as-student' "
                       "AND c.kind = 'timed'").fetchall()
    assert len(timed) == sum(len(REGISTRY[t]["shape_sets"]["timed"]) for t in RUBRIC["tasks"])
    for task, shape, speedup, low, high, pairs in timed:
        assert 0.97 <= speedup <= 1.03, (task, shape, speedup, low, high, pairs)
    sanitized = db.execute("SELECT r.task, r.tool, r.status, r.message FROM sanitizer_runs r JOIN submissions s "
                           "ON s.id = r.submission_id WHERE s.student = 'solution-as-student'").fetchall()
    assert len(sanitized) == 2 * len(RUBRIC["tasks"]) and all(r[2] == "clean" for r in sanitized), sanitized
    assert float(rows(results)["solution-as-student"]["total"]) == 100


def test_a_float_only_matmul_naive_costs_its_other_types_and_add_keeps_its_points(class_run):
    g = rows(class_run.results)["s09-float-only-naive-and-add"]
    assert float(g["add_correctness"]) == points("add", "correctness")
    assert float(g["add_performance"]) > 0
    naive = case_statuses(class_run.results, "s09-float-only-naive-and-add", "matmul_naive")
    graded_types = len(REGISTRY["matmul_naive"]["dtypes"])
    assert naive.count("ok") == len(naive) // graded_types  # every float32 case passes
    assert naive.count("build_error") == len(naive) - len(naive) // graded_types
    assert float(g["matmul_naive_correctness"]) == pytest.approx(points("matmul_naive", "correctness") / graded_types)
    assert float(g["matmul_naive_performance"]) == 0  # not every correctness case passed


def test_a_hang_leaves_the_next_submission_untouched(class_run):
    results = class_run.results
    db = sqlite3.connect(results / "grades.sqlite")
    graded = dict(db.execute("SELECT student, graded FROM submissions"))
    assert case_statuses(results, "a-hangs", "fill")[0] == "timeout"
    # Everything graded after the hang ran normally: the full, correct submission among them too.
    assert set(case_statuses(results, "b-after", "fill")) == {"ok"}
    assert float(rows(results)["b-after"]["total"]) > 60
    after = [s for s, t in graded.items() if t >= graded["a-hangs"] and s != "a-hangs"]
    assert after, "nothing was graded after the hang"


def test_gradescope_and_autolab_grade_one_submission(tmp_path, gpu_work):
    out = tmp_path / "gradescope"
    run = subprocess.run([sys.executable, "-m", "grader", "gradescope", "--submission", str(SAMPLES / "s02-naive-only"),
                          "--results-dir", str(out), "--work", str(gpu_work)], cwd=ROOT, capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    doc = json.loads((out / "results.json").read_text())
    naive = next(t for t in doc["tests"] if t["name"] == "matmul_naive: correctness")
    assert naive["status"] == "passed" and doc["score"] > 8
    autolab = subprocess.run([sys.executable, "-m", "grader", "autolab", str(SAMPLES / "s05-hang"), "--work",
                              str(gpu_work)], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert autolab.returncode == 0, autolab.stderr[-3000:]
    last = json.loads(autolab.stdout.strip().splitlines()[-1])
    assert last["scores"]["add"] == points("add", "correctness") + points("add", "performance")
    assert last["scores"]["fill"] == 0
