"""make test's last step (starter/tools/test.py): after the suite, what the grader also checks
(compute-sanitizer on the passing tasks, the source rules) and the one line that counts it.
The suite and compute-sanitizer are stand-in scripts here, so no GPU is needed; the real ones
run in the GPU suite (test_gpu_suite.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import SOLUTION_KERNELS, STARTER

TEST_PY = STARTER / "tools" / "test.py"


def script(path: Path, body: str) -> Path:
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return path


@pytest.fixture
def fakes(tmp_path):
    """A suite that reports the outcomes in OUTCOMES, and a compute-sanitizer that finds a race in the
    task named in RACE_IN (writing its log the way the real tool does, under the prefix it was given)."""
    suite = script(tmp_path / "suite", """
        import json, os, sys
        out = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--outcomes="))
        tasks = [{"id": t, "outcome": o} for t, o in json.loads(os.environ["OUTCOMES"]).items()]
        json.dump({"seed": 7, "device": "fake", "tasks": tasks, "lost_context_in": ""}, open(out, "w"))
        sys.exit(0 if all(t["outcome"] == "pass" for t in tasks) else 1)
    """)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script(bin_dir / "compute-sanitizer", """
        import os, sys
        args = sys.argv[1:]
        prefix, log, tool = (args[args.index(k) + 1] for k in ("--prefix", "--log-file", "--tool"))
        task = args[args.index("--task") + 1]
        with open(log, "w") as f:
            if tool == "racecheck" and task == os.environ.get("RACE_IN"):
                f.write(f"{prefix}Error: Race reported between Write access at k()+0x10 in matmul_tiled.cu:20\\n")
                f.write(f"{prefix}    and Read access at k()+0x30 in matmul_tiled.cu:22 [8 hazards]\\n")
                f.write(f"{prefix}RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\\n")
                sys.exit(9)
            f.write(f"{prefix}{'RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)' if tool == 'racecheck' else 'ERROR SUMMARY: 0 errors'}\\n")
    """)
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    for source in SOLUTION_KERNELS.glob("*.cu"):
        (kernels / source.name).write_bytes(source.read_bytes())
    return {"suite": suite, "bin": bin_dir, "kernels": kernels, "tmp": tmp_path}


def run(fakes, outcomes: dict, *extra: str, race_in: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "OUTCOMES": json.dumps(outcomes), "RACE_IN": race_in,
           "PATH": f"{fakes['bin']}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run([sys.executable, str(TEST_PY), "--suite", str(fakes["suite"]), "--harness", "harness",
                           "--kernels", str(fakes["kernels"]), *extra], capture_output=True, text=True, env=env,
                          cwd=fakes["tmp"])


ALL_PASS = {t: "pass" for t in ("fill", "add", "transpose", "matmul_naive", "matmul_tiled", "matmul_fast", "dot")}


def test_every_task_clean_ends_in_seven_of_seven_and_exit_0(fakes):
    result = run(fakes, ALL_PASS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().splitlines()[-1] == "7/7 tasks pass"


def test_a_race_only_the_sanitizer_sees_is_counted_with_what_the_grader_deducts(fakes):
    result = run(fakes, ALL_PASS, race_in="matmul_tiled")
    assert result.returncode == 1
    last = result.stdout.rstrip().splitlines()[-1]
    assert last == ("6/7 tasks pass; matmul_tiled: racecheck finds a race on shared memory at matmul_tiled.cu:20 "
                    "(make racecheck TASK=matmul_tiled shows it) (the grader deducts 25% of its correctness points)")
    assert "two threads of a block used the same shared-memory location" in result.stdout  # the meaning, in words


def test_sanitize_0_skips_the_sanitizer(fakes):
    result = run(fakes, ALL_PASS, "--no-sanitizer", race_in="matmul_tiled")
    assert result.returncode == 0 and result.stdout.rstrip().endswith("7/7 tasks pass")


def test_a_forbidden_call_is_named_with_its_cost_before_submitting(fakes):
    fast = fakes["kernels"] / "matmul_fast.cu"
    fast.write_text("#include <cublas_v2.h>\n" + fast.read_text())
    result = run(fakes, ALL_PASS, "--no-sanitizer")
    assert result.returncode == 1
    last = result.stdout.rstrip().splitlines()[-1]
    assert last.startswith("6/7 tasks pass; matmul_fast: matmul_fast.cu #includes <cublas_v2.h> (line 1; rule: no-libraries)")
    assert last.endswith("the grader does not run this file, so the task scores 0")


def test_failing_and_unstarted_tasks_are_listed(fakes):
    outcomes = {**ALL_PASS, "add": "fail", "dot": "not_implemented"}
    result = run(fakes, outcomes, "--no-sanitizer")
    assert result.returncode == 1
    assert result.stdout.rstrip().splitlines()[-1] == "5/7 tasks pass; failing: add; not implemented yet: dot"


def test_a_suite_that_cannot_run_passes_its_status_and_message_on(fakes, tmp_path):
    broken = script(tmp_path / "nogpu", "import sys\nprint('No CUDA device found', file=sys.stderr)\nsys.exit(4)\n")
    result = subprocess.run([sys.executable, str(TEST_PY), "--suite", str(broken), "--harness", "h", "--kernels",
                             str(fakes["kernels"])], capture_output=True, text=True)
    assert result.returncode == 4 and "No CUDA device found" in result.stderr


# --- On the CPU: the backend's own checks stand in for compute-sanitizer ---------------------------------

CPU_RACE = ("kernel dot_kernel (launched at dot.cu:28): data race on output[0] (global memory): thread (0,0,0) of block "
            "(1,0,0) read it at dot.cu:20, and thread (0,0,0) of block (0,0,0) wrote it at dot.cu:20, with nothing "
            "ordering the two. Blocks run in no fixed order, and on a GPU at the same time: where several blocks "
            "update one location, use atomicAdd (or another atomic operation), not a plain += or =.")


@pytest.fixture
def cpu_fakes(fakes):
    """Two harnesses as make test builds them on the CPU: the AddressSanitizer one (memcheck, clean here) and the
    --racecheck one, which stops the case of the task named in RACE_IN with the race checker's report. Each writes
    the record the real harness writes (--json), and logs its task to CALLS."""
    body = """
        import json, os, sys
        args = sys.argv[1:]
        task, out = args[args.index("--task") + 1], args[args.index("--json") + 1]
        with open(os.environ["CALLS"], "a") as calls:
            calls.write(f"{TOOL} {task}\\n")
        record = {"record": "case", "task": task, "status": "ok", "message": ""}
        if TOOL == "racecheck" and task == os.environ.get("RACE_IN"):
            record.update(status="error", message="dot.cu:29: cudaGetLastError() failed\\n  the CPU backend saw: " + REPORT)
        with open(out, "w") as f:
            f.write(json.dumps(record) + "\\n")
        sys.exit(0 if record["status"] == "ok" else 3)
    """
    for tool in ("memcheck", "racecheck"):
        script(fakes["tmp"] / f"harness-{tool}", f"TOOL = {tool!r}\nREPORT = {CPU_RACE!r}\n" + textwrap.dedent(body))
    return {**fakes, "calls": fakes["tmp"] / "calls.log"}


def run_cpu(fakes, outcomes: dict, race_in: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "OUTCOMES": json.dumps(outcomes), "RACE_IN": race_in, "CALLS": str(fakes["calls"])}
    return subprocess.run([sys.executable, str(TEST_PY), "--on-cpu", "nvcc, the CUDA compiler, is not installed",
                           "--suite", str(fakes["suite"]), "--harness", str(fakes["tmp"] / "harness-memcheck"),
                           "--race-harness", str(fakes["tmp"] / "harness-racecheck"), "--kernels",
                           str(fakes["kernels"])], capture_output=True, text=True, env=env, cwd=fakes["tmp"])


def test_on_the_cpu_a_race_between_blocks_is_counted_and_says_use_atomic_add(cpu_fakes):
    result = run_cpu(cpu_fakes, ALL_PASS, race_in="dot")
    assert result.returncode == 1
    assert result.stdout.rstrip().splitlines()[-2] == (
        "6/7 tasks pass; dot: racecheck finds a race between blocks on output[0] (global memory) at dot.cu:20: use "
        "atomicAdd (make racecheck TASK=dot shows it) (the grader deducts 25% of its correctness points)")
    assert CPU_RACE in result.stdout  # the whole report, naming both blocks and lines


def test_on_the_cpu_both_checks_run_on_each_passing_task_and_only_the_race_checker_on_a_failing_one(cpu_fakes):
    result = run_cpu(cpu_fakes, {**ALL_PASS, "dot": "fail", "add": "not_implemented"}, race_in="dot")
    assert result.returncode == 1
    assert result.stdout.rstrip().splitlines()[-2] == (
        "5/7 tasks pass; failing: dot; not implemented yet: add; dot: racecheck finds a race between blocks on "
        "output[0] (global memory) at dot.cu:20: use atomicAdd (make racecheck TASK=dot shows it)")
    calls = cpu_fakes["calls"].read_text().split("\n")
    assert "memcheck dot" not in calls and "racecheck dot" in calls
    assert "memcheck add" not in calls and "racecheck add" not in calls
    assert "memcheck fill" in calls and "racecheck fill" in calls
