"""Without a GPU: the harness built for the CPU backend places compute-sanitizer's runs as on a GPU
(placement.h, exact placement: `--fixed-placement`, the grader's `fixed_placement`), every input and the output
alone in an allocation of exactly its size, so the smallest overrun, one element past an end, is reported by
AddressSanitizer with the array's name and the index, where memcheck reports it on a GPU
(test_exact_placement_gpu.py). In the graded runs' fresh placement the CPU backend still reports the read (it
poisons an input's room), and the write lands in the poisoned guard region after the output, which the harness
reports. CPU-only and part of make check; the planted kernels are in planted/."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import STARTER
from test_cpu_suite import CPU_BUILD, cpu_build_with, cpu_solution_objects, make_cpu  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow  # builds the harness for the CPU backend (make, g++)

PLANTED = Path(__file__).parent / "planted"
SEED = 5


@pytest.fixture(scope="module")
def harness(tmp_path_factory, cpu_solution_objects) -> dict[str, Path]:
    """The CPU harness with each planted kernel in place of the solution's, by folder name."""
    root = tmp_path_factory.mktemp("exact")
    built = {}
    for name in ("read_one_past_input", "write_one_past_output"):
        kernels = cpu_build_with(root, name, next((PLANTED / name).glob("*.cu")), cpu_solution_objects)
        target = f"build/on-cpu/planted_{name}/harness"
        result = make_cpu(kernels, f"planted_{name}", target)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        built[name] = CPU_BUILD / f"planted_{name}" / "harness"
    built["solution"] = CPU_BUILD / "solution" / "harness"
    return built


def check(harness: Path, task: str, dtype: str, shape: str, exact: bool) -> dict:
    """The one case's record: check runs only, the sanitizer's placement when `exact`."""
    result = subprocess.run([str(harness), "--task", task, "--dtype", dtype, "--shape", shape, "--seed", str(SEED),
                             "--check-only", "--no-limits", "--json", "-", *(["--fixed-placement"] if exact else [])],
                            cwd=STARTER, capture_output=True, text=True, timeout=300)
    (record,) = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return record


# 1024 floats end right where a GPU's next allocation may start (a multiple of its allocation steps).
@pytest.mark.parametrize("exact", [True, False], ids=["exact", "fresh"])
@pytest.mark.parametrize("n", [1025, 1024])
def test_a_read_one_past_an_input_is_reported_with_the_array_and_index(harness, n, exact):
    record = check(harness["read_one_past_input"], "dot", "float32", str(n), exact)
    assert record["status"] == "error", record
    assert "the CPU backend saw: kernel dot_kernel (launched at dot.cu:" in record["message"], record["message"]
    assert f"read x[{n}] but x has {n} elements" in record["message"], record["message"]


@pytest.mark.parametrize("shape", ["37x211", "64x64"])
def test_in_the_sanitizers_placement_a_write_one_past_the_output_is_reported_with_the_index(harness, shape):
    record = check(harness["write_one_past_output"], "fill", "int32", shape, exact=True)
    rows, cols = map(int, shape.split("x"))
    n = rows * cols
    assert record["status"] == "error", record
    assert f"wrote output[{n}] but output has {n} elements" in record["message"], record["message"]


def test_in_fresh_placement_the_write_lands_in_the_guard_region_and_the_harness_reports_it(harness):
    record = check(harness["write_one_past_output"], "fill", "int32", "37x211", exact=False)
    assert record["status"] == "wrong" and record["check"]["written_past_end"] == 1, record
    assert record["message"] == "every element is right, but the call also wrote 1 element past the end of the output"


@pytest.mark.parametrize("task, dtype, shape", [("dot", "float32", "1024"), ("fill", "int32", "64x64"),
                                                ("add", "float32", "37x211"), ("transpose", "int32", "37x211"),
                                                ("matmul_tiled", "float64", "37x41x43")])
def test_the_solution_passes_in_the_sanitizers_placement(harness, task, dtype, shape):
    record = check(harness["solution"], task, dtype, shape, exact=True)
    assert record["status"] == "ok", record
    assert record["check"]["written_past_end"] == 0 and record["check"]["inputs_unchanged"], record
