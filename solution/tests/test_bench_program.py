"""make bench's program (starter/bench/): it builds, its command line, the
Makefile's recipe around it, and, on a GPU, quick benches of the solution, the
stubs, a kernel that crashes and one that never returns."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from bench_fixtures import BENCH_DIR, load_plot_bench, synthetic_bench
from conftest import SOLUTION_KERNELS, STARTER, build_with, make_starter

pytestmark = pytest.mark.slow  # builds the bench program (make, nvcc)

SCHEMA = json.loads((BENCH_DIR / "bench.schema.json").read_text())
PLANTED = Path(__file__).parent / "planted"
TASKS = ["fill", "add", "transpose", "matmul_naive", "matmul_tiled", "matmul_fast", "dot"]
QUICK_SQUARES = [256, 512, 1024]
QUICK_VECTORS = [1 << 16, 1 << 18, 1 << 20]
PLOTS = ("bench.md", "matmul.png", "memory.png", "transfers.png")


SOLUTION_BENCH = SOLUTION_KERNELS.parent / "bench"  # the inverted-indexing kernel: the solution's bench only


def bench_binary(kernels: Path, tag: str, extra: Path | None = None) -> Path:
    make_starter("bench-bin", f"KERNELS={kernels}", f"KTAG={tag}", *([f"BENCH_EXTRA={extra}"] if extra else []))
    return STARTER / "build" / tag / "bench"


@pytest.fixture(scope="session")
def starter_bench() -> Path:
    return bench_binary(STARTER / "kernels", "starter")


def run(binary: Path, *args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), *args], cwd=STARTER, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def quick_sizes(task: str) -> list:
    return QUICK_VECTORS if task == "dot" else QUICK_SQUARES


# ---------------------------------------------------------------------------
# No GPU needed
# ---------------------------------------------------------------------------
def test_help_names_every_option_and_what_it_writes(starter_bench):
    result = run(starter_bench, "--help")
    assert result.returncode == 0
    for option in ("--task", "--label", "--out", "--quick", "--budget", "--max-run-ms", "--cpu-seconds", "--no-cpu",
                   "--no-transfers", "--seed", "--case-timeout", "--device"):
        assert option in result.stdout, option
    assert "bench.json" in result.stdout and "cuBLAS FP32" in result.stdout


@pytest.mark.parametrize("args, complaint", [
    (["--bogus"], "--bogus"),
    (["--label", "teacher"], "--label: teacher not in {student,solution}"),
    (["--task", "gemm"], "unknown task 'gemm' (tasks: fill, add, transpose, matmul_naive, matmul_tiled, "
                         "matmul_fast, dot)"),
    (["--budget", "0"], "--budget"),
    (["--max-run-ms", "-5"], "--max-run-ms"),
    (["--cpu-seconds", "x"], "--cpu-seconds"),
])
def test_bad_arguments_print_usage_and_exit_2(starter_bench, args, complaint):
    result = run(starter_bench, *args)
    assert result.returncode == 2
    assert complaint in result.stderr
    assert "Usage: bench" in result.stderr


def test_an_output_folder_that_cannot_be_written_is_named_before_the_gpu_is_touched(starter_bench, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = run(starter_bench, "--out", str(blocker / "bench"), env={"CUDA_VISIBLE_DEVICES": ""})
    assert result.returncode == 4
    assert f"cannot write to the output folder {blocker / 'bench'}" in result.stderr


def test_without_a_gpu_it_says_so_and_writes_nothing(starter_bench, tmp_path):
    result = run(starter_bench, "--out", str(tmp_path), env={"CUDA_VISIBLE_DEVICES": ""})
    assert result.returncode == 4
    assert result.stderr.startswith("No CUDA device")
    assert list(tmp_path.iterdir()) == []


def fake_bench(tmp_path: Path, exit_status: int) -> Path:
    """A stand-in for the bench program: writes a SYNTHETIC bench.json into --out, exits as told."""
    data = tmp_path / "synthetic.json"
    data.write_text(json.dumps(synthetic_bench("student")))
    script = tmp_path / "fake-bench"
    script.write_text(f"#!{sys.executable}\n"
                      "import shutil, sys\n"
                      "out = [a.split('=', 1)[1] for a in sys.argv if a.startswith('--out=')][0]\n"
                      f"shutil.copy({str(data)!r}, out + '/bench.json')\n"
                      f"sys.exit({exit_status})\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


@pytest.mark.parametrize("status, plotted", [(0, True), (3, True), (2, False), (4, False)])
def test_make_bench_plots_after_a_measured_or_crashed_run_and_passes_the_status_on(starter_bench, tmp_path, status,
                                                                                  plotted):
    out = tmp_path / "out"
    out.mkdir()
    result = subprocess.run(["make", "-C", str(STARTER), "bench", "CPU=0", f"BENCH_BIN={fake_bench(tmp_path, status)}",
                             f"BENCH_OUT={out}", f"BENCH_REFERENCE={tmp_path / 'absent.json'}",
                             f"PYTHON3={sys.executable}"], capture_output=True, text=True, timeout=600)
    assert (result.returncode == 0) == (status == 0), result.stdout + result.stderr
    assert (out / "bench.md").exists() == plotted
    if plotted:
        assert "no recorded solution numbers" in (out / "bench.md").read_text()
        assert (out / "matmul.png").exists()


# ---------------------------------------------------------------------------
# On a GPU
# ---------------------------------------------------------------------------
def rows_of(doc: dict, impl: str, task: str | None = None) -> list:
    return [r for r in doc["rows"] if r["impl"] == impl and (task is None or r["task"] == task)]


def check_plots(bench_json: Path) -> None:
    plot_bench = load_plot_bench()
    assert plot_bench.main([str(bench_json)]) == 0
    for name in PLOTS:
        assert (bench_json.parent / name).stat().st_size > 0, name


@pytest.mark.gpu
def test_a_quick_bench_of_the_solution_measures_every_row_and_plots_them(solution_build, tmp_path):
    result = run(bench_binary(SOLUTION_KERNELS, "solution", SOLUTION_BENCH), "--quick", "--label", "solution", "--out",
                 str(tmp_path))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    doc = json.loads((tmp_path / "bench.json").read_text())
    jsonschema.validate(doc, SCHEMA)
    assert doc["label"] == "solution" and doc["device"]["copy_gbps"] > 0 and doc["device"]["cublas_fp32_gflops"] > 0
    for task in TASKS:
        solution = rows_of(doc, "solution", task)
        assert [r["size"] for r in solution] == quick_sizes(task), task
        assert all(r["throughput"] > 0 and r["ms"] > 0 for r in solution), solution
        assert {r["unit"] for r in solution} == {"GFLOP/s" if task.startswith("matmul") else "GB/s"}
        if not task.startswith("matmul"):
            copies = rows_of(doc, "copy", task)
            assert [r["shape"] for r in copies] == [r["shape"] for r in solution]
            assert all(r["throughput"] > 0 for r in copies)
    cublas = rows_of(doc, "cublas", "matmul")
    assert [r["size"] for r in cublas] == QUICK_SQUARES and all(r["throughput"] > 0 for r in cublas)
    # The inverted-indexing experiment: correct, and slower than the coalesced naive kernel.
    inverted = {r["size"]: r["throughput"] for r in rows_of(doc, "naive-inverted", "matmul_naive")}
    naive = {r["size"]: r["throughput"] for r in rows_of(doc, "solution", "matmul_naive")}
    assert inverted[1024] < naive[1024], (inverted, naive)
    for impl in ("cpu-simple", "cpu-pretransposed", "cpu-blocked"):
        cpu = rows_of(doc, impl, "matmul")
        assert [r["size"] for r in cpu] == QUICK_SQUARES
        assert cpu[0]["throughput"] > 0 and cpu[0]["note"].startswith("1 thread")
        assert all(r["throughput"] is not None or r["note"].startswith("skipped: ") for r in cpu)
    assert {(t["memory"], t["direction"]) for t in doc["transfers"]} == {
        (m, d) for m in ("pageable", "pinned") for d in ("host-to-device", "device-to-host")}
    assert len(doc["transfers"]) == 8 and all(t["gbps"] > 0 for t in doc["transfers"])
    check_plots(tmp_path / "bench.json")


@pytest.mark.gpu
def test_make_bench_on_the_stubs_reports_not_implemented_rows_beside_measured_baselines(starter_build, tmp_path):
    result = subprocess.run(["make", "-C", str(STARTER), "bench", "CPU=0", "BENCH_ARGS=--quick", f"BENCH_OUT={tmp_path}",
                             f"BENCH_REFERENCE={tmp_path / 'absent.json'}", f"PYTHON3={sys.executable}"],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    doc = json.loads((tmp_path / "bench.json").read_text())
    jsonschema.validate(doc, SCHEMA)
    for task in TASKS:
        student = rows_of(doc, "student", task)
        assert [r["size"] for r in student] == quick_sizes(task)
        assert all(r["ms"] is None and r["throughput"] is None and r["note"] == "not implemented yet"
                   for r in student), student
    assert all(r["throughput"] > 0 for r in rows_of(doc, "cublas"))
    assert not rows_of(doc, "naive-inverted"), "the students' bench has no inverted kernel: it would give naive away"
    md = (tmp_path / "bench.md").read_text()
    assert "no recorded solution numbers" in md
    assert "| matmul_fast (student) | not implemented | not implemented | not implemented |" in md
    for name in PLOTS:
        assert (tmp_path / name).stat().st_size > 0, name


@pytest.mark.gpu
def test_a_kernel_that_crashes_the_gpu_leaves_the_rest_not_run_and_the_file_written(solution_build, tmp_path):
    build = build_with(tmp_path, "bench_illegal_address", PLANTED / "illegal_address" / "add.cu")
    result = run(bench_binary(build.kernels, build.tag), "--quick", "--task", "add,dot", "--no-cpu",
                 "--no-transfers", "--out", str(tmp_path / "out"))
    assert result.returncode == 3, result.stdout[-3000:] + result.stderr[-3000:]
    doc = json.loads((tmp_path / "out" / "bench.json").read_text())
    jsonschema.validate(doc, SCHEMA)
    assert all(r["throughput"] > 0 for r in rows_of(doc, "copy"))  # measured before the kernels
    add = rows_of(doc, "student", "add")
    assert add[0]["note"].startswith("error: your kernel failed while running")
    assert all(r["note"].startswith("not run: the earlier fault in add (student) at 256x256")
               for r in add[1:] + rows_of(doc, "student", "dot"))


@pytest.mark.gpu
def test_a_kernel_that_never_returns_is_stopped_and_the_file_written(solution_build, tmp_path):
    build = build_with(tmp_path, "bench_never_returns", PLANTED / "never_returns" / "fill.cu")
    result = run(bench_binary(build.kernels, build.tag), "--quick", "--task", "fill", "--no-cpu", "--no-transfers",
                 "--case-timeout", "5", "--out", str(tmp_path / "out"), timeout=300)
    assert result.returncode == 3
    assert "no result after 5 s" in result.stdout
    doc = json.loads((tmp_path / "out" / "bench.json").read_text())
    jsonschema.validate(doc, SCHEMA)
    (hung,) = rows_of(doc, "student", "fill")
    assert hung["size"] == 256 and "never finishes" in hung["note"] and hung["ms"] is None
    assert len(rows_of(doc, "copy", "fill")) == 3


@pytest.mark.gpu
def test_a_wrong_kernel_is_not_timed_and_its_larger_sizes_not_run(solution_build, tmp_path):
    build = build_with(tmp_path, "bench_swapped_indices", PLANTED / "swapped_indices" / "matmul_naive.cu")
    result = run(bench_binary(build.kernels, build.tag), "--quick", "--task", "matmul_naive", "--no-cpu",
                 "--no-transfers", "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    doc = json.loads((tmp_path / "out" / "bench.json").read_text())
    first, *rest = rows_of(doc, "student", "matmul_naive")
    assert first["note"].startswith("wrong result, not timed: ") and first["throughput"] is None
    assert [r["note"] for r in rest] == ["not run: the result was wrong at 256x256x256 (make test "
                                         "TASK=matmul_naive shows why)"] * 2
    assert all(r["throughput"] > 0 for r in rows_of(doc, "cublas"))
