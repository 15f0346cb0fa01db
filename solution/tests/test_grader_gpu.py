"""On a GPU: the grader end to end. The sample class gets its verdicts, every
output is written (the leaderboard too), the solution graded as a student ties
with itself, and a hang leaves the next submission untouched."""
from __future__ import annotations

import csv
import json
import shutil
import sqlite3
import subprocess
import sys
import tomllib

import pytest

from conftest import ROOT, SOLUTION_KERNELS

pytestmark = pytest.mark.gpu
SAMPLES = ROOT / "data" / "sample-submissions"
RUBRIC = tomllib.loads((ROOT / "grader" / "rubric.toml").read_text())
REGISTRY = {t["id"]: t for t in json.loads((ROOT / "starter" / "harness" / "registry.json").read_text())["tasks"]}


def points(task: str, part: str) -> float:
    """A task's correctness or performance points, from the rubric."""
    return RUBRIC["tasks"][task][f"{part}_points"]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """One build tree for the module: the pristine harness and the solution are built once."""
    return tmp_path_factory.mktemp("work")


def grade(submissions, results, work, *extra, timeout=1500):
    result = subprocess.run([sys.executable, "-m", "grader", "grade", str(submissions), "--results", str(results),
                             "--work", str(work), "--no-progress", *extra], cwd=ROOT, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def rows(results) -> dict[str, dict]:
    with open(results / "grades.csv") as f:
        return {r["student"]: r for r in csv.DictReader(f)}


def case_statuses(results, student: str, task: str) -> list[str]:
    db = sqlite3.connect(results / "grades.sqlite")
    return [s for (s,) in db.execute("SELECT c.status FROM cases c JOIN submissions s ON s.id = c.submission_id "
                                     "WHERE s.student = ? AND c.task = ? AND c.kind = 'correctness'", (student, task))]


@pytest.fixture(scope="module")
def demo(tmp_path_factory, work):
    results = tmp_path_factory.mktemp("demo")
    return results, grade(SAMPLES, results, work, "--regrade")


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


def test_the_solution_graded_as_a_student_ties_with_itself(tmp_path, work):
    submissions = tmp_path / "submissions"
    shutil.copytree(SOLUTION_KERNELS, submissions / "solution-as-student")
    results = tmp_path / "results"
    grade(submissions, results, work)
    db = sqlite3.connect(results / "grades.sqlite")
    timed = db.execute("SELECT task, shape, speedup, speedup_low, speedup_high, pairs FROM cases "
                       "WHERE kind = 'timed'").fetchall()
    assert len(timed) == sum(len(REGISTRY[t]["shape_sets"]["timed"]) for t in RUBRIC["tasks"])
    for task, shape, speedup, low, high, pairs in timed:
        assert 0.97 <= speedup <= 1.03, (task, shape, speedup, low, high, pairs)
    sanitized = db.execute("SELECT task, tool, status, message FROM sanitizer_runs").fetchall()
    assert len(sanitized) == 2 * len(RUBRIC["tasks"]) and all(r[2] == "clean" for r in sanitized), sanitized
    assert float(rows(results)["solution-as-student"]["total"]) == 100


def test_a_hang_leaves_the_next_submission_untouched(tmp_path, work):
    submissions = tmp_path / "submissions"
    shutil.copytree(SAMPLES / "s05-hang", submissions / "a-hangs")
    shutil.copytree(SAMPLES / "s08-fast", submissions / "b-after")
    results = tmp_path / "results"
    grade(submissions, results, work, "--jobs", "1")
    db = sqlite3.connect(results / "grades.sqlite")
    graded = dict(db.execute("SELECT student, graded FROM submissions"))
    assert graded["a-hangs"] <= graded["b-after"]
    assert case_statuses(results, "a-hangs", "fill")[0] == "timeout"
    assert set(case_statuses(results, "b-after", "fill")) == {"ok"}
    assert float(rows(results)["b-after"]["total"]) > 60


def test_gradescope_and_autolab_grade_one_submission(tmp_path, work):
    out = tmp_path / "gradescope"
    run = subprocess.run([sys.executable, "-m", "grader", "gradescope", "--submission", str(SAMPLES / "s02-naive-only"),
                          "--results-dir", str(out), "--work", str(work)], cwd=ROOT, capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    doc = json.loads((out / "results.json").read_text())
    naive = next(t for t in doc["tests"] if t["name"] == "matmul_naive: correctness")
    assert naive["status"] == "passed" and doc["score"] > 8
    autolab = subprocess.run([sys.executable, "-m", "grader", "autolab", str(SAMPLES / "s05-hang"), "--work", str(work)],
                             cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert autolab.returncode == 0, autolab.stderr[-3000:]
    last = json.loads(autolab.stdout.strip().splitlines()[-1])
    assert last["scores"]["add"] == points("add", "correctness") + points("add", "performance")
    assert last["scores"]["fill"] == 0
