"""The harness's command line: what it prints and how it exits, with and without a GPU."""
from __future__ import annotations

import json
import shutil

import jsonschema
import pytest

from conftest import DATA, load_schema

# Hides every GPU from CUDA, so machines with one show the no-device path too.
NO_GPU = {"CUDA_VISIBLE_DEVICES": ""}


def test_list_tasks_json_matches_the_published_schema(registry):
    jsonschema.validate(registry, load_schema("registry.schema.json"))


def test_list_tasks_names_the_seven_tasks_in_order(registry):
    assert [t["id"] for t in registry["tasks"]] == [
        "fill", "add", "transpose", "matmul_naive", "matmul_tiled", "matmul_fast", "dot"]


def test_list_tasks_without_json_is_a_table_for_people(starter_build):
    result = starter_build.run_harness("--list-tasks")
    assert result.returncode == 0
    assert "matmul_tiled" in result.stdout and "float32,float64,int32" in result.stdout


def test_version_prints_the_harness_version(starter_build, registry):
    result = starter_build.run_harness("--version")
    assert result.returncode == 0
    assert registry["harness_version"] in result.stdout


@pytest.mark.parametrize("args, complaint", [
    (["--bogus"], "--bogus"),
    (["--task", "matmul"], "unknown task 'matmul'"),
    (["--dtype", "float16"], "unknown element type 'float16'"),
    (["--task", "matmul_tiled", "--shape", "17x33"], "expected MxNxK"),
    (["--task", "fill", "--shape", "0x5"], "out of range"),
    (["--suite", "huge"], "--suite"),
    (["--budget", "-1"], "--budget"),
    (["--min-samples", "50", "--max-samples", "10"], "--max-samples must be at least --min-samples"),
])
def test_bad_arguments_name_the_problem_and_exit_2(starter_build, args, complaint):
    result = starter_build.run_harness(*args)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert lines[0].startswith("harness: ") and complaint in lines[0], result.stderr
    assert lines[1:] == ["Run 'harness --help' for every option."], result.stderr  # not the whole help


def test_unknown_task_lists_the_known_ones(starter_build):
    result = starter_build.run_harness("--task", "gemm")
    assert "fill, add, transpose, matmul_naive, matmul_tiled, matmul_fast, dot" in result.stderr


def test_missing_data_directory_names_the_manifest(starter_build, tmp_path):
    result = starter_build.run_harness("--suite", "data", "--data-dir", str(tmp_path / "nowhere"))
    assert result.returncode == 4
    assert f"{tmp_path / 'nowhere'}/manifest.json: cannot open" in result.stderr


def test_corrupt_data_file_is_named_before_the_gpu_is_touched(starter_build, tmp_path):
    copy = tmp_path / "data"
    shutil.copytree(DATA, copy)
    victim = copy / "cases" / "add" / "float32" / "17x33" / "b.npy"
    victim.write_bytes(victim.read_bytes()[:200])
    result = starter_build.run_harness("--suite", "data", "--data-dir", str(copy), "--task", "add")
    assert result.returncode == 4
    assert str(victim) in result.stderr
    assert "truncated or corrupt" in result.stderr


def test_malformed_manifest_is_named(starter_build, tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"cases": [{"task": "conv2d"}]}))
    result = starter_build.run_harness("--suite", "data", "--data-dir", str(tmp_path))
    assert result.returncode == 4
    assert "manifest.json: unknown task 'conv2d'" in result.stderr


def test_unwritable_json_file_is_reported(starter_build, tmp_path):
    result = starter_build.run_harness("--check-only", "--json", str(tmp_path / "no" / "such" / "dir.jsonl"))
    assert result.returncode == 4
    assert "cannot write --json file" in result.stderr


def test_harness_without_a_gpu_says_so_in_one_sentence(starter_build):
    result = starter_build.run_harness("--task", "fill", env=NO_GPU)
    assert result.returncode == 4
    assert result.stderr.startswith("No CUDA device")
    assert len(result.stderr.strip().splitlines()) == 1


def test_student_suite_without_a_gpu_says_so_and_fails(starter_build):
    result = starter_build.run_suite(env=NO_GPU)
    assert result.returncode != 0
    assert result.stderr.startswith("No CUDA device")


def test_student_suite_refuses_an_unknown_task(starter_build):
    result = starter_build.run_suite("--task=matmul")
    assert result.returncode == 2
    assert "unknown task 'matmul'" in result.stderr
