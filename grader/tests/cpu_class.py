"""The sample class (data/sample-submissions/, plus one file that uses inline PTX) graded for real on the CPU backend:
`python3 -m grader grade --device cpu` through the real command line, sandbox and builds (cudacpu.py, g++), once
per test run (conftest.made_once) and read by the Backend contract (test_backend_contract.py) and by the CPU
backend's own tests (test_grade_cpu.py).

The rubric is the default cut down to small shapes (the CPU runs every block of a launch itself) with a 5 s case
limit, so the hang costs seconds; fill has one shape over the CPU's per-case budget, which it leaves to a GPU.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from grader.core.rubric import load_rubric
from grader.run.sandbox import ResourceLimits, Sandbox, SandboxError, find_bwrap, missing_bwrap_message
from grader.tests.conftest import REPO, sandbox_unavailable, small_rubric_text

CASE_LIMIT = 5
MATRIX = ["1x1", "37x211"]
MATMUL = ["1x1x1", "37x41x43", "96x160x96"]  # k = 1 and 43 leave a partial tile; 96 is whole tiles of 32
# Over the CPU backend's per-case budget (starter/harness/backend_budget.h: 2,097,152 elements): GPU only, not run.
OVER_BUDGET = "2048x2048"
SHAPES = {"fill": MATRIX + [OVER_BUDGET], "add": MATRIX, "transpose": MATRIX, "matmul_naive": MATMUL,
          "matmul_tiled": MATMUL, "matmul_fast": MATMUL, "dot": ["1", "1025"]}
PTX_STUDENT = "s09-inline-ptx"
# s08-fast's matmul_fast with one inline PTX statement, as a file written for the GPU only would have it.
PTX_HELPER = """// The thread's lane, read from its PTX register (a GPU-only file).
__device__ __forceinline__ unsigned lane_id() {
    unsigned lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
}

"""


def sandbox_or_skip(rubric):
    bwrap = find_bwrap()
    if bwrap is None:
        pytest.fail(missing_bwrap_message(), pytrace=False)
    try:
        Sandbox(bwrap, ResourceLimits.from_rubric(rubric.limits)).check(Path("/tmp"))
    except SandboxError as e:
        sandbox_unavailable(f"bubblewrap cannot run here: {e}")


def _ptx_student(subs: Path) -> int:
    """Writes the inline-PTX student; returns the asm statement's line."""
    folder = subs / PTX_STUDENT
    shutil.copytree(subs / "s08-fast", folder)
    (folder / "nickname.txt").unlink()
    fast = folder / "matmul_fast.cu"
    text = fast.read_text()
    at = text.index("__global__")
    fast.write_text(text[:at] + PTX_HELPER + text[at:].replace(
        "int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;",
        "int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;\n    if (lane_id() != unsigned(tid % 32)) return;", 1))
    assert "lane_id() !=" in fast.read_text()
    return fast.read_text()[:fast.read_text().index("asm volatile")].count("\n") + 1


def grade_class(root: Path, rubric, work: Path):
    """Grades the class into ROOT (subs/, rubric.toml, results/, run.json) in WORK (a cache entry's layout, shared
    with the session's other CPU grading runs)."""
    subs = root / "subs"
    shutil.copytree(REPO / "data" / "sample-submissions", subs)
    ptx_line = _ptx_student(subs)
    (root / "rubric.toml").write_text(small_rubric_text(rubric, shapes=SHAPES,
                                                        limits={"build": 300, "case": CASE_LIMIT, "submission": 120}))
    command = [sys.executable, "-m", "grader", "grade", str(subs), "--device", "cpu", "--rubric",
               str(root / "rubric.toml"), "--results", str(root / "results"), "--work", str(work), "--seed", "7",
               "--jobs", "2", "--no-progress"]
    start = time.monotonic()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1800)
    seconds = time.monotonic() - start
    print(f"\ngrade --device cpu: {len(list(subs.iterdir()))} submissions in {seconds:.0f} s (the run's first CPU "
          "grading builds the harness, runtime, solution and stubs first)", file=sys.stderr)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (root / "run.json").write_text(json.dumps({"out": done.stdout, "err": done.stderr, "seconds": seconds,
                                               "ptx_line": ptx_line, "work": str(work)}))


def graded_class(root: Path, registry) -> SimpleNamespace:
    run = json.loads((root / "run.json").read_text())
    return SimpleNamespace(root=root, subs=root / "subs", results=root / "results", work=Path(run["work"]),
                           rubric=root / "rubric.toml", out=run["out"], err=run["err"], seconds=run["seconds"],
                           ptx_line=run["ptx_line"], policy=load_rubric(root / "rubric.toml", registry))
