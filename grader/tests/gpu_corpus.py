"""The GPU suite's graded corpus (issue 14): every submission a GPU test of solution/tests or grader/tests
asks about, gathered under distinct student names and graded once per session (the `graded_corpus` fixture of
the top conftest.py); the tests are queries on the stores, through grader.store.store.Store.

Two grading runs, each one `python3 -m grader grade` with the sandbox on, one after the other, on the session's
one build tree (`gpu_work`: the pristine harness, the solution and the build gate's objects are built once):

  the fast run, with the fast rubric (fast_rubric_text: the real one with [limits] case = 5, [timing] exactly
  3 pairs after 1 warm-up within 1 s, [sanitizer] tools = []):
    s01-stubs ... s08-fast         the sample class (data/sample-submissions/), under its own names: its verdicts,
                                   feedback, exports and leaderboard (test_grader_gpu.py reads them from a store
                                   of the class alone, merged out of this one); s05-hang's hang and the
                                   submissions graded after it
    s09-float-only-naive-and-add   the solution's add.cu and a matmul_naive.cu that instantiates only float
    s10-grid-y-fill                a planted bug whose own CUDA_CHECK_LAUNCH fails (70000 rows in grid.y): a stored
                                   message quoting the student's file by its name in their checkout
    hNN-<entry>                    the hostile batch (hostile_batch.py): every entry of the hostile corpus
                                   (grader/tests/hostile/), in folder order: each one's expected verdict on a GPU
                                   (test_hostile_corpus.py), the run-time checks' records
                                   (test_runtime_checks_gpu.py)
    hNN-zz-normal                  the solution's fill.cu and add.cu, graded right after each entry whose code
                                   runs on the GPU (hostile_batch.runs_code): what an entry leaves behind would
                                   show in it
  the real run, with grader/rubric.toml itself:
    racy, wild-write               planted bugs only compute-sanitizer names (a race, a wild write)
    grid-rounded-down              a transpose refused at launch at its degenerate shapes, which memcheck also
                                   reports: charged once, by its cases
    <entry>                        the hostile entries whose verdict is compute-sanitizer's (sanitizer-detect,
                                   read-past-input)
    solution-as-student            the solution's own files, graded as a student's

Which rubric, and why. The fast rubric's points, tasks, shapes, types and gate are the real ones; only how long
a case may take, how many pairs time it and whether compute-sanitizer runs differ. Every assertion on the fast
run is about verdicts, statuses, messages, hints, points per task (a task's correctness points do not depend on
timing) and a performance credit being there at all, which do not change with those numbers: a hang is still a
timeout (after 5 s, not 20), a timed case still gets its median and interval (from 3 pairs, not 10 to 200).
The case limit is 5 s, not 2 or 3: printf-flood's first case must push a GiB of output through the capped pipe
within it, and the first request of every process also starts it in the sandbox and makes its CUDA context.

The real run holds what depends on the real rubric's numbers or on compute-sanitizer:
  - the solution against itself ties within 3% on every timed case (test_grader_gpu.py): a promise of the real
    timing policy (at least 10 pairs, to a 1% interval), which the median of 3 pairs does not keep;
  - the sanitizer's findings (racy, wild-write, the hostile entries a tool must report) and the solution's 14
    clean tool runs: with tools on, the fast run would run two tools on every task that ran, of every submission
    (well over a hundred runs of about a second each); in the real run it is five submissions.
The two runs keep two stores (results folders): the commands that read a store (report, export, leaderboard)
refuse one whose scores come from two rubrics.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from grader.tests.conftest import narrowed, opened
from grader.tests.hostile_batch import gather, gather_sanitized

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data" / "sample-submissions"
SOLUTION = REPO / "solution" / "kernels"
PLANTED = REPO / "solution" / "tests" / "planted"
REAL_RUBRIC = REPO / "grader" / "rubric.toml"

SAMPLE_CLASS = sorted(p.name for p in SAMPLES.iterdir() if p.is_dir())
FLOAT_ONLY = "s09-float-only-naive-and-add"
# A launch the GPU refuses (70000 rows in grid.y): the student's own CUDA_CHECK_LAUNCH fails, so a stored message
# quotes its __FILE__, which must read kernels/fill.cu as in the student's checkout.
GRID_Y = "s10-grid-y-fill"
SOLUTION_AS_STUDENT = "solution-as-student"
RACY, WILD_WRITE = "racy", "wild-write"
# A transpose whose grid is rounded down: its degenerate cases fail at launch, and memcheck reports those launches
# (issue 44: the tool must not charge what the cases already did).
ROUNDED_DOWN = "grid-rounded-down"

# What the fast rubric changes in the real one: (table, key) -> value.
FAST = {("limits", "case"): 5, ("timing", "min_pairs"): 3, ("timing", "max_pairs"): 3, ("timing", "budget"): 1.0,
        ("timing", "warmup"): 1, ("sanitizer", "tools"): []}

# Grading runs of this session, each "name: N submissions in S s", for pytest's terminal summary.
TIMES: list[str] = []


def fast_rubric_text() -> str:
    """The real rubric with FAST's values, every other line as it is (points, thresholds, the gate's rules)."""
    lines = REAL_RUBRIC.read_text().splitlines(keepends=True)
    for (table, key), value in FAST.items():
        start = lines.index(f"[{table}]\n") if f"[{table}]\n" in lines else \
            next(i for i, line in enumerate(lines) if line.startswith(f"[{table}]"))
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("[")), len(lines))
        (at,) = [i for i in range(start, end) if lines[i].split("=")[0].strip() == key]
        shown = "[" + ", ".join(f'"{v}"' for v in value) + "]" if isinstance(value, list) else repr(value)
        comment = lines[at].split("#", 1)[1] if "#" in lines[at] else ""
        lines[at] = f"{key} = {shown}" + (f"  # (fast rubric) {comment.strip()}\n" if comment else "\n")
    text = "".join(lines)
    data = tomllib.loads(text)
    for (table, key), value in FAST.items():
        assert data[table][key] == value, (table, key, data[table][key])
    return text


def write_fast_rubric(folder: Path) -> Path:
    path = Path(folder) / "fast-rubric.toml"
    path.write_text(fast_rubric_text())
    return path


def gather_fast(submissions: Path) -> list[str]:
    """The fast run's submissions, written into `submissions`; returns their student ids in grading order."""
    submissions.mkdir(parents=True)
    students = []
    for name in SAMPLE_CLASS:
        shutil.copytree(SAMPLES / name, submissions / name)
        students.append(name)
    float_only = submissions / FLOAT_ONLY
    float_only.mkdir()
    shutil.copy(SOLUTION / "add.cu", float_only)
    shutil.copy(PLANTED / "float_only_instantiation" / "matmul_naive.cu", float_only)
    students.append(FLOAT_ONLY)
    shutil.copytree(PLANTED / "block_row_per_matrix_row", submissions / GRID_Y)
    students.append(GRID_Y)
    students += gather(submissions, "gpu")  # the hostile batch (hostile_batch.py)
    return sorted(students)


def gather_real(submissions: Path) -> list[str]:
    """The real run's submissions, written into `submissions`; returns their student ids in grading order."""
    submissions.mkdir(parents=True)
    shutil.copytree(SOLUTION, submissions / SOLUTION_AS_STUDENT, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(PLANTED / "missing_syncthreads", submissions / RACY)
    shutil.copytree(PLANTED / "illegal_address", submissions / WILD_WRITE)
    shutil.copytree(PLANTED / "grid_rounded_down", submissions / ROUNDED_DOWN)
    students = [SOLUTION_AS_STUDENT, RACY, WILD_WRITE, ROUNDED_DOWN]
    students += gather_sanitized(submissions, "gpu")  # the batch's entries a tool must report
    return sorted(students)


@dataclass
class GradingRun:
    name: str
    submissions: Path
    results: Path
    rubric: Path
    students: list[str]
    stdout: str
    seconds: float

    def opened(self):
        return opened(self.results)


def grade(name: str, root: Path, gather, work: Path, rubric: Path, extra: tuple[str, ...] = (),
          timeout: float = 3000) -> GradingRun:
    """Gathers one run's submissions under `root` and grades them in one `grade` run (the sandbox on; `extra`:
    more options, such as the CPU tests' --device simulated)."""
    submissions, results = root / "submissions", root / "results"
    students = gather(submissions)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(submissions), "--results", str(results),
                           "--work", str(work), "--rubric", str(rubric), "--no-progress", *extra], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)
    seconds = time.monotonic() - started
    TIMES.append(f"{name} run: {len(students)} submissions graded in {seconds:.0f} s ({rubric.name})")
    keep = os.environ.get("GPU_SUITE_KEEP")  # a device run's $OUT/...: the store and the grader's output, to study
    if keep:
        kept = Path(keep) / name
        kept.mkdir(parents=True, exist_ok=True)
        (kept / "grade.out").write_text(done.stdout + done.stderr)
        if (results / "grades.sqlite").is_file():
            shutil.copy(results / "grades.sqlite", kept / "grades.sqlite")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return GradingRun(name, submissions, results, rubric, students, done.stdout, seconds)


@dataclass
class GradedCorpus:
    fast: GradingRun
    real: GradingRun

    def run_of(self, student: str) -> GradingRun:
        for run in (self.fast, self.real):
            if student in run.students:
                return run
        raise KeyError(f"{student} was handed in to neither grading run of the corpus")

    def results(self, student: str) -> Path:
        return self.run_of(student).results

    def submission(self, student: str) -> pd.Series:
        """The student's stored submission (the latest)."""
        with self.run_of(student).opened() as store:
            rows = store.submissions(student)
        assert not rows.empty, f"{student} was not stored"
        return rows.iloc[-1]

    def cases(self, student: str, **where) -> pd.DataFrame:
        """The student's stored cases in the order they ran, narrowed by column values (task="dot", kind="timed")."""
        with self.run_of(student).opened() as store:
            return narrowed(store.cases_for(store.submissions(student)["id"].tolist()), **where)

    def statuses(self, student: str, task: str, kind: str = "correctness") -> list[str]:
        return self.cases(student, task=task, kind=kind)["status"].tolist()

    def sanitizer_runs(self, student: str, **where) -> pd.DataFrame:
        with self.run_of(student).opened() as store:
            return narrowed(store.sanitizer_runs_for(store.submissions(student)["id"].tolist()), **where)

    def samples(self, student: str) -> pd.DataFrame:
        """The timing pairs of the student's timed cases."""
        timed = self.cases(student, kind="timed")
        with self.run_of(student).opened() as store:
            return store.samples_for(timed["id"].tolist())

    def scores(self, student: str) -> pd.DataFrame:
        """The student's points per task (correctness, performance), from the store."""
        with self.run_of(student).opened() as store:
            return store.scores(store.submissions(student)["id"].tolist()).set_index("task")


def grade_corpus(root: Path, work: Path, fast_rubric: Path, extra: tuple[str, ...] = ()) -> GradedCorpus:
    fast = grade("fast", root / "fast", gather_fast, work, fast_rubric, extra)
    real = grade("real", root / "real", gather_real, work, REAL_RUBRIC, extra)
    return GradedCorpus(fast, real)
