"""The GPU suite's grading runs, made once per session and queried by the tests.

Every grading run of the session shares one build tree (`gpu_work`, in the top
conftest.py): the pristine harness, the solution and the build gate's reference
objects are built once. The class run grades, in one run of the real grader with
the real rubric, every submission the grader's GPU tests ask about apart from the
sample class (make demo's run, test_grader_gpu.py) and the hostile corpus (its own
fast rubric, grader/tests/test_hostile_corpus.py):

    solution-as-student              the solution's own files: every paired speedup is 1
    s09-float-only-naive-and-add     the solution's add.cu and a matmul_naive.cu that instantiates only float
    <runtime entries>                grader/tests/hostile/ entries stopped by the harness's run-time checks
    racy, wild-write                 planted bugs only compute-sanitizer names (a race, a wild write)
    a-hangs, b-after                 a kernel that never returns, then a full, correct submission
"""
from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data" / "sample-submissions"
SOLUTION = ROOT / "solution" / "kernels"
PLANTED = ROOT / "solution" / "tests" / "planted"
HOSTILE = ROOT / "grader" / "tests" / "hostile"
# The hostile entries whose verdicts come from the harness's run-time checks (the others come from the
# sandbox and the build gate, and are graded with the whole corpus).
RUNTIME_ENTRIES = ["per-thread-stream", "cache-by-pointer", "skip-after-first-call", "fast-when-timed",
                   "writes-into-input", "output-unwritten", "half-precision"]


def grade(submissions: Path, results: Path, work: Path, *extra: str, timeout: float = 3000) -> subprocess.CompletedProcess:
    """One run of the real grader (the sandbox, the real rubric unless --rubric is given)."""
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(submissions), "--results", str(results),
                           "--work", str(work), "--no-progress", *extra], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


@dataclass
class GradedClass:
    results: Path
    run: subprocess.CompletedProcess
    seconds: float

    def db(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.results / "grades.sqlite")
        con.row_factory = sqlite3.Row
        return con


@pytest.fixture(scope="session")
def class_run(tmp_path_factory, gpu_work) -> GradedClass:
    root = tmp_path_factory.mktemp("class-run")
    subs = root / "submissions"
    shutil.copytree(SOLUTION, subs / "solution-as-student")
    float_only = subs / "s09-float-only-naive-and-add"
    float_only.mkdir(parents=True)
    shutil.copy(SOLUTION / "add.cu", float_only)
    shutil.copy(PLANTED / "float_only_instantiation" / "matmul_naive.cu", float_only)
    for name in RUNTIME_ENTRIES:
        shutil.copytree(HOSTILE / name, subs / name, ignore=shutil.ignore_patterns("*.toml"))
    shutil.copytree(PLANTED / "missing_syncthreads", subs / "racy")
    shutil.copytree(PLANTED / "illegal_address", subs / "wild-write")
    shutil.copytree(SAMPLES / "s05-hang", subs / "a-hangs")
    shutil.copytree(SAMPLES / "s08-fast", subs / "b-after")
    results = root / "results"
    started = time.monotonic()
    run = grade(subs, results, gpu_work)
    return GradedClass(results, run, time.monotonic() - started)
