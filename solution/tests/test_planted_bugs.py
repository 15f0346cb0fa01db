"""On a GPU: bugs students really write are caught, each with the message that
points at it. The kernels are in planted/ (see planted/README.md)."""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import build_with, json_lines, summary_line

pytestmark = pytest.mark.gpu

PLANTED = Path(__file__).parent / "planted"


@pytest.fixture(scope="module")
def planted(tmp_path_factory, solution_build):
    """Builds every planted variant at once (each compiles one file)."""
    root = tmp_path_factory.mktemp("planted")
    folders = sorted(p for p in PLANTED.iterdir() if p.is_dir())
    with ThreadPoolExecutor() as pool:
        builds = dict(zip((f.name for f in folders),
                          pool.map(lambda f: build_with(root, f.name, next(f.glob("*.cu"))), folders)))
    return builds.__getitem__


# (folder, task, words the student must see from `make test TASK=task`)
CAUGHT = [
    ("missing_bounds_check", "matmul_tiled", "bounds check"),
    ("missing_syncthreads", "matmul_tiled", "race"),
    ("swapped_indices", "matmul_naive", "transpose of the right answer"),
    ("element_never_written", "fill", "never written"),
    ("race", "dot", "race"),
    ("int_through_float_add", "add", "the int32 values went through float"),
    ("int_through_float_transpose", "transpose", "the int32 values went through float"),
    ("int_through_float_tiled", "matmul_tiled", "the int32 values went through float"),
    ("float64_tiles_as_float", "matmul_tiled", "float32 arithmetic gives errors like this: a float tile"),
    ("block_row_per_matrix_row", "fill", "put the long dimension in grid.x"),
    ("load_guarded_on_k_only", "matmul_tiled", "memcheck finds an out-of-bounds or misaligned access at "
                                               "matmul_tiled.cu:"),
    ("float_only_instantiation", "matmul_naive", "matmul_naive.cu does not define matmul_naive<double>"),
    ("missing_semicolon", "transpose", "transpose.cu does not compile: transpose.cu("),
    # The suite passes (the value read is never used); memcheck's exact placement sees the read.
    ("read_one_past_input", "dot", "memcheck finds an out-of-bounds or misaligned access at dot.cu:"),
    ("write_one_past_output", "fill", "every element is right, but the call also wrote 1 element past the end of "
                                      "the output"),
]


@pytest.mark.parametrize("name, task, words", CAUGHT, ids=[c[0] for c in CAUGHT])
def test_planted_bug_fails_make_test_with_its_hint(planted, name, task, words):
    result = planted(name).make("test", f"TASK={task}")
    out = result.stdout + result.stderr
    assert result.returncode != 0, out[-3000:]
    assert words in out, out[-3000:]
    assert summary_line(out).startswith("0/1 tasks pass"), out[-3000:]


def test_a_float_only_instantiation_keeps_its_float_cases(planted):
    result = planted("float_only_instantiation").make("test", "TASK=matmul_naive", "SANITIZE=0")
    assert "matmul_naive  FAIL (2 of its element types not built)" in result.stdout, result.stdout[-3000:]


def test_a_file_that_does_not_compile_costs_only_its_task(planted):
    result = planted("missing_semicolon").make("test", "TASK=transpose,add")
    last = summary_line(result.stdout)
    assert last.startswith("1/2 tasks pass; failing: transpose"), result.stdout[-3000:]


def test_inverted_indexing_passes_but_is_much_slower(planted, solution_build):
    inverted = planted("inverted_indexing")
    assert inverted.run_suite("--task=matmul_naive").returncode == 0

    def median_ms(build) -> float:
        result = build.run_harness("--task", "matmul_naive", "--dtype", "float32", "--shape", "2048x2048x2048",
                                   "--no-limits", "--budget", "0.5", "--json", "-")
        assert result.returncode == 0, result.stderr[-2000:]
        (record,) = json_lines(result.stdout)
        return record["timing"]["median_ms"]

    assert median_ms(inverted) > 2 * median_ms(solution_build)


def test_illegal_address_is_an_error_with_cudas_message_and_a_nonzero_exit(planted, registry):
    result = planted("illegal_address").run_harness("--task", "add", "--suite", "test", "--check-only",
                                                    "--json", "-")
    assert result.returncode == 3
    records = json_lines(result.stdout)
    assert records[0]["status"] == "error"
    # Where a wild address lands decides CUDA's name for the fault (an illegal
    # address, or one outside the global address space); either is reported.
    assert re.fullmatch(r"your kernel failed while running: .+ \(cudaError(IllegalAddress|InvalidAddressSpace)\)",
                        records[0]["message"]), records[0]["message"]
    assert all(r["status"] == "error" and r["message"].startswith("not run") for r in records[1:])
    (add,) = [t for t in registry["tasks"] if t["id"] == "add"]
    assert len(records) == len(add["dtypes"]) * len(add["shape_sets"]["test"])  # every planned case is accounted for


def test_kernel_that_never_returns_is_stopped_and_reported(planted):
    result = planted("never_returns").run_harness("--task", "fill", "--suite", "test", "--check-only",
                                                  "--case-timeout", "5", "--json", "-", timeout=120)
    assert result.returncode == 3
    (record,) = json_lines(result.stdout)
    assert record["status"] == "error" and "never finishes" in record["message"]
    assert "no result after 5 s" in result.stderr


def test_racecheck_reports_the_missing_syncthreads(planted):
    result = planted("missing_syncthreads").make("racecheck", "TASK=matmul_tiled")
    assert result.returncode != 0
    summary = re.search(r"RACECHECK SUMMARY: (\d+) hazards displayed \((\d+) errors", result.stdout)
    assert summary and int(summary.group(2)) > 0, result.stdout[-3000:]


def test_memcheck_reports_the_illegal_address(planted):
    result = planted("illegal_address").make("memcheck", "TASK=add")
    assert result.returncode != 0
    assert "Invalid __global__ write" in result.stdout, result.stdout[-3000:]
