"""Without a GPU: `make test CPU=1` runs the student suite on the CPU backend
(starter/cpu/), on the solution (every task the CPU can run passes) and on the
planted bugs (each caught, with the words that point at it, or listed as needing
a GPU with the reason). The starter's stubs on the CPU (every task not implemented
yet) are test_dist.py's: the student's first make test in the tarball, without CUDA.

CPU-only and part of make check. The harness is built once (build/on-cpu/lib);
each planted variant reuses the solution's kernel objects and compiles only
its own file (see cpu_build_with), and the planted bugs' runs go two at a time
(planted_runs)."""
from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import DATA, NPROC, SOLUTION_KERNELS, STARTER, summary_line
from grader.shared import student_tools

pytestmark = pytest.mark.slow  # builds and runs the student suite on the CPU backend (g++)

PLANTED = Path(__file__).parent / "planted"
CPU_BUILD = STARTER / "build" / "on-cpu"


def make_cpu(kernels: Path, tag: str, target: str, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-C", str(STARTER), f"-j{NPROC}", target, "CPU=1", f"KERNELS={kernels}",
                           f"KTAG={tag}", f"DATA={DATA}", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def cpu_solution_objects() -> Path:
    """The harness and the solution's kernel objects, built for the CPU once per session; the build says nothing
    but its commands: no warning from the harness, the runtime or the solution (nvcc gives none for them either;
    CUDA's `#pragma unroll` among them), so that a student's first build shows only what is about their code."""
    result = make_cpu(SOLUTION_KERNELS, "solution", "all", timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    warned = [line for line in (result.stdout + result.stderr).splitlines() if "warning:" in line]
    assert not warned, "\n".join(warned[:20])  # (of what this run built: in CI, everything)
    return CPU_BUILD / "solution" / "kernels"


def cpu_build_with(tmp_root: Path, name: str, replacement: Path, objects_from: Path) -> Path:
    """A kernels folder: the solution's files with one replaced; the solution's CPU objects (and its --racecheck
    objects, where built) are copied (with their times) so that only the replaced file is compiled."""
    kernels = tmp_root / name / "kernels"
    kernels.mkdir(parents=True)
    for source in SOLUTION_KERNELS.iterdir():
        if source.name != replacement.name:
            (kernels / source.name).symlink_to(source)
    shutil.copy(replacement, kernels / replacement.name)
    for folder in ("kernels", "racecheck/kernels"):
        objects = CPU_BUILD / f"planted_{name}" / folder
        objects.mkdir(parents=True, exist_ok=True)
        for obj in (objects_from.parent / folder).glob("*.o"):
            if obj.stem != replacement.stem:
                shutil.copy2(obj, objects / obj.name)
    return kernels


def test_solution_passes_every_task_the_cpu_can_run(cpu_solution_objects):
    result = make_cpu(SOLUTION_KERNELS, "solution", "test", timeout=1200)
    out = result.stdout
    assert result.returncode == 0, out[-4000:] + result.stderr[-2000:]
    suite_lines = out[out.index("Running on the CPU"):].splitlines()
    assert suite_lines[0].startswith("Running on the CPU: CPU=1 was asked for."), suite_lines[:3]
    first = next(line for line in out.splitlines() if not line.startswith(("make:", "make[")))
    assert first.startswith("make test runs on the CPU: CPU=1 was asked for."), out[:300]
    assert summary_line(out) == "6/7 tasks pass; needs a GPU (not run on the CPU): matmul_fast", out[-3000:]
    assert "matmul_fast   needs a GPU: uses inline PTX at matmul_fast.cu:" in out
    assert re.search(r"matmul_tiled  pass \(\d+ cases; \d+ GPU only: ", out), out[-3000:]
    seconds = re.search(r"the suite ran on the CPU in (\d+) s", out)
    assert seconds, out[-2000:]
    # the nvcc-rules check's prelude, precompiled once in the build folder (where clang is, the check runs)
    if student_tools.load_driver("frontend").find_clang():
        assert len(list((STARTER / "build" / "cpu" / "nvcc-rules").glob("prelude-*.pch"))) >= 2
    print(f"student suite on the solution, on the CPU: {seconds.group(1)} s")


# (folder, task, words the student must see from `make test CPU=1 TASK=task`). Where a GPU needs
# compute-sanitizer, the CPU backend's own report (AddressSanitizer, barriers) is in the case's message.
CAUGHT_ON_CPU = [
    ("missing_bounds_check", "matmul_tiled", "a store is missing its bounds check"),
    ("missing_syncthreads", "matmul_tiled", "Results that change from run to run usually mean a race"),
    ("swapped_indices", "matmul_naive", "transpose of the right answer"),
    ("element_never_written", "fill", "never written"),
    ("int_through_float_add", "add", "the int32 values went through float"),
    ("int_through_float_transpose", "transpose", "the int32 values went through float"),
    ("int_through_float_tiled", "matmul_tiled", "the int32 values went through float"),
    ("float64_tiles_as_float", "matmul_tiled", "float32 arithmetic gives errors like this: a float tile"),
    ("block_row_per_matrix_row", "fill", "put the long dimension in grid.x"),
    ("load_guarded_on_k_only", "matmul_tiled", "the CPU backend saw: kernel matmul_tiled_kernel (launched at "
                                               "matmul_tiled.cu:36) read b[1] but b has 1 element"),
    ("float_only_instantiation", "matmul_naive", "matmul_naive.cu does not define matmul_naive<double>"),
    ("missing_semicolon", "transpose", "transpose.cu does not compile: transpose.cu:"),
    ("illegal_address", "add", "which is not device memory at add.cu:12"),
]

# Planted bugs the CPU run does not catch, with the reason (the GPU's suite catches them).
NOT_CAUGHT_ON_CPU = [
    ("inverted_indexing", "matmul_naive", "right but slow: times need a GPU"),
]

@pytest.fixture(scope="session")
def planted_runs(request, tmp_path_factory, cpu_solution_objects) -> dict[str, subprocess.CompletedProcess]:
    """`make test CPU=1 TASK=<task>` on each planted bug this session's tests ask about, by folder name."""
    tasks = {name: task for name, task, *_ in CAUGHT_ON_CPU + NOT_CAUGHT_ON_CPU}
    wanted = sorted({item.callspec.params["name"] for item in request.session.items
                     if item.path == Path(__file__) and hasattr(item, "callspec") and "name" in item.callspec.params})
    root = tmp_path_factory.mktemp("planted")

    def run(name: str) -> subprocess.CompletedProcess:
        kernels = cpu_build_with(root, name, next((PLANTED / name).glob("*.cu")), cpu_solution_objects)
        return make_cpu(kernels, f"planted_{name}", "test", f"TASK={tasks[name]}")

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(wanted, pool.map(run, wanted)))


@pytest.mark.parametrize("name, task, words", CAUGHT_ON_CPU, ids=[c[0] for c in CAUGHT_ON_CPU])
def test_planted_bug_is_caught_on_the_cpu(planted_runs, name, task, words):
    result = planted_runs[name]
    out = result.stdout + result.stderr
    assert result.returncode != 0, out[-3000:]
    assert words in out, out[-3000:]
    assert summary_line(out).startswith("0/1 tasks pass; failing: " + task), out[-3000:]


@pytest.mark.parametrize("name, task, why", NOT_CAUGHT_ON_CPU, ids=[c[0] for c in NOT_CAUGHT_ON_CPU])
def test_planted_bug_the_cpu_cannot_see_passes_there(planted_runs, name, task, why):
    """Listed, with its reason, rather than silently assumed: if the CPU starts catching it, move it up."""
    result = planted_runs[name]
    assert result.returncode == 0, result.stdout[-3000:]
    assert summary_line(result.stdout) == "1/1 tasks pass", result.stdout[-3000:]


RACE_RUNS = 20  # the bar: the classic reduction bug fails make test in every one of 20 runs
RACE_SEEDS = random.Random()  # a fresh seed for each run after the first, as make test draws one


def test_a_race_between_blocks_fails_make_test_in_every_run_and_says_use_atomic_add(tmp_path, cpu_solution_objects):
    """Each block adds its sum into the total with a plain +=. On a GPU, blocks run at once and lose updates; on the
    CPU's two workers an update is seldom lost, so the suite alone passes it now and then. The race checker
    (make test's racecheck on the CPU) sees it in every run, whatever the seed: a read and a write of the same
    global address by two blocks with nothing ordering them. The first run is make test, words and all; the
    other 19 run the check make test runs (tools/test.py's cpu_check_findings: the --racecheck harness on the
    task's sanitizer case, a fresh seed each), without make's and the suite's 3 s around it each time."""
    kernels = cpu_build_with(tmp_path, "race", PLANTED / "race" / "dot.cu", cpu_solution_objects)
    result = make_cpu(kernels, "planted_race", "test", "TASK=dot")
    out = result.stdout + result.stderr
    assert result.returncode != 0, f"make test passed:\n{out[-3000:]}"
    line = summary_line(result.stdout)
    assert line.startswith("0/1 tasks pass; "), line
    assert re.search(r"dot: racecheck finds a race between blocks on output\[0\] \(global memory\) at dot\.cu:20: "
                     r"use atomicAdd \(make racecheck TASK=dot shows it\)", line), line
    assert re.search(r"thread \(0,0,0\) of block \(\d+,0,0\) (read|wrote) it at dot\.cu:20, and thread \(0,0,0\) "
                     r"of block \(\d+,0,0\) (read|wrote) it at dot\.cu:20", out), out[-3000:]
    sanitize = student_tools.load("sanitize", STARTER / "tools" / "sanitize.py")  # what tools/test.py runs
    dot = next(t for t in json.loads((STARTER / "harness" / "registry.json").read_text())["tasks"] if t["id"] == "dot")
    race_harness = CPU_BUILD / "planted_race" / "racecheck" / "harness"
    for run in range(2, RACE_RUNS + 1):
        seed = RACE_SEEDS.randrange(1, 2**31)
        records = tmp_path / f"records-{run}.jsonl"
        subprocess.run(sanitize.cpu_command(str(race_harness), "dot", dot["dtypes"][0], dot["shape_sets"]["sanitize"][0],
                                            seed, str(records), case_timeout=60),
                       capture_output=True, text=True, timeout=120, cwd=STARTER)
        findings = sanitize.parse_cpu(records.read_text(errors="replace") if records.is_file() else "")
        assert findings.errors, f"run {run} of {RACE_RUNS} (seed {seed}): the race checker found nothing"
        what, advice = sanitize.cpu_finding_words(findings.report)
        said = f"{what} at {sanitize.cpu_location(findings.report)}: {advice}"
        assert said == "a race between blocks on output[0] (global memory) at dot.cu:20: use atomicAdd", \
            f"run {run} (seed {seed}): {said}"


def test_the_solution_s_dot_is_clean_under_the_race_checker(cpu_solution_objects):
    """The other side of the race test: atomicAdd between blocks, barriers within one: nothing to report."""
    result = make_cpu(SOLUTION_KERNELS, "solution", "racecheck", "TASK=dot,matmul_tiled,transpose")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "racecheck on the CPU backend" in result.stdout and " error " not in result.stdout


def test_kernel_that_never_returns_is_stopped_on_the_cpu(tmp_path, cpu_solution_objects):
    kernels = cpu_build_with(tmp_path, "never_returns", PLANTED / "never_returns" / "fill.cu", cpu_solution_objects)
    assert make_cpu(kernels, "planted_never_returns", "harness").returncode == 0
    harness = CPU_BUILD / "planted_never_returns" / "harness"
    result = subprocess.run([str(harness), "--task", "fill", "--suite", "test", "--check-only", "--case-timeout", "5",
                             "--json", "-"], cwd=STARTER, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "CUDA_CPU_QUIET": "1"})
    assert result.returncode == 3, result.stdout[-2000:] + result.stderr[-2000:]
    assert "no result after 5 s" in result.stderr, result.stderr[-2000:]
