"""On a GPU: the solution passes everything, the stubs report not implemented,
the JSON output follows its schema, and the two float64 references agree."""
from __future__ import annotations

import time

import jsonschema
import pytest

from conftest import DATA, json_lines, load_schema, summary_line

pytestmark = pytest.mark.gpu


def test_solution_passes_make_test_as_the_grader_would_see_it(solution_build):
    """make test: every graded and test shape, the stored cases, compute-sanitizer on every task, the rules."""
    started = time.monotonic()
    result = solution_build.make("test")
    print(f"make test on the solution took {time.monotonic() - started:.0f} s")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert summary_line(result.stdout) == "7/7 tasks pass"


def test_stubs_report_every_task_not_implemented(starter_build):
    result = starter_build.run_suite()
    assert result.returncode == 1
    assert result.stdout.count("not implemented yet") >= 7
    assert "0/7 tasks pass" in result.stdout
    assert "ERROR" not in result.stdout and "FAIL" not in result.stdout
    assert "SUCCESS" not in result.stdout  # doctest's footer would say so: nothing failed, nothing passed either


def test_suite_runs_one_task_on_request(solution_build):
    result = solution_build.run_suite("--task=transpose")
    assert result.returncode == 0
    assert "1/1 tasks pass" in result.stdout


def test_stub_records_say_not_implemented_and_follow_the_schema(starter_build):
    result = starter_build.run_harness("--suite", "test", "--json", "-")
    assert result.returncode == 1
    records = json_lines(result.stdout)
    schema = load_schema("result.schema.json")
    assert records and all(r["status"] == "not_implemented" for r in records)
    for r in records:
        jsonschema.validate(r, schema)


def test_solution_records_are_ok_and_follow_the_schema(solution_build):
    result = solution_build.run_harness("--suite", "test", "--json", "-")
    assert result.returncode == 0, result.stderr[-3000:]
    records = json_lines(result.stdout)
    schema = load_schema("result.schema.json")
    for r in records:
        jsonschema.validate(r, schema)
        assert r["status"] == "ok", r
        assert r["check"]["wrong"] == 0 and r["check"]["inputs_unchanged"]


def test_solution_passes_the_stored_cases(solution_build):
    result = solution_build.run_harness("--suite", "data", "--data-dir", str(DATA), "--json", "-")
    assert result.returncode == 0, result.stderr[-3000:]
    records = json_lines(result.stdout)
    assert len(records) == 34 and all(r["source"].startswith("data:") for r in records)


@pytest.mark.parametrize("shape_args", [
    ["--task", "fill,add,transpose", "--shape", "1000x1500"],
    ["--task", "matmul_naive,matmul_tiled,matmul_fast", "--shape", "300x200x500"],
    ["--task", "dot", "--shape", "3000000"],
])
def test_cpu_and_gpu_references_agree(solution_build, shape_args):
    for place in ("cpu", "gpu"):
        result = solution_build.run_harness(*shape_args, "--check-only", "--reference", place, "--json", "-")
        assert result.returncode == 0, (place, result.stderr[-3000:])
        assert {r["check"]["reference"] for r in json_lines(result.stdout)} == {place}


def test_timed_run_reports_limits_throughput_and_samples(solution_build):
    result = solution_build.run_harness("--task", "add,matmul_fast", "--dtype", "float32", "--budget", "0.3",
                                        "--json", "-")
    assert result.returncode == 0, result.stderr[-3000:]
    records = json_lines(result.stdout)
    schema = load_schema("result.schema.json")
    for r in records:
        jsonschema.validate(r, schema)
    limits = [r for r in records if r["record"] == "limits"]
    cases = [r for r in records if r["record"] == "case"]
    assert len(limits) == 1 and limits[0]["copy_bandwidth_gbps"] > 100 and limits[0]["sgemm_fp32_gflops"] > 1000
    for c in cases:
        assert c["timing"]["samples"] >= 3
        assert c["throughput"]["percent_of_limit"] > 0
        assert c["check"]["runs_checked"] >= c["timing"]["samples"]  # every timed run was verified
    assert "% limit" in result.stderr


def test_limits_alone_print_and_exit(solution_build):
    result = solution_build.run_harness("--limits")
    assert result.returncode == 0
    assert "copy bandwidth" in result.stdout and "cuBLAS SGEMM FP32" in result.stdout


@pytest.mark.parametrize("tool", ["memcheck", "racecheck"])
def test_sanitizers_find_nothing_in_the_solution(solution_build, tool):
    result = solution_build.make(tool)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "0 errors" in result.stdout
