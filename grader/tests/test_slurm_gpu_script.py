"""docs/gpu-runs/slurm_gpu.py's verdict comparison: what the GPU record says "same" or "different" about.

(The whole script ran here through the unpacked debs with the simulated backend: SLURM_GPU_ARGS="--device
simulated" bash docs/gpu-runs/slurm_gpu.sh, as docs/slurm.md says; it takes the cluster test's half a minute
again, so the suite checks its comparison, on stores graded the two ways.)
"""
from __future__ import annotations

import importlib.util

import pytest

from grader import cli
from grader.tests.conftest import REPO
from grader.tests.test_slurm_resume import course, run_tasks, send, slurm  # noqa: F401 - fixtures
from grader.slurm.merge import merge_results

spec = importlib.util.spec_from_file_location("slurm_gpu", REPO / "docs" / "gpu-runs" / "slurm_gpu.py")
slurm_gpu = importlib.util.module_from_spec(spec)
spec.loader.exec_module(slurm_gpu)


@pytest.fixture
def merged(course, slurm):  # noqa: F811 - pytest fixtures by name
    send(course)
    run_tasks(course, 0, 1, 2)
    merge_results(course / "results")
    return course


def grade_here(course, results):
    status = cli.main(["grade", str(course / "subs"), "--device", "simulated", "--rubric",
                       str(course / "rubric.toml"), "--results", str(results), "--seed", "3", "--no-progress"])
    assert status == 0


def test_the_same_class_graded_through_slurm_and_here_has_no_difference(merged):
    grade_here(merged, merged / "here")
    differences, performance = slurm_gpu.compare(merged / "results", merged / "here")
    assert differences == []
    assert "performance_slurm" in performance and "performance_reference" in performance


def test_a_student_graded_differently_is_named_with_each_verdict_that_differs(merged):
    (merged / "subs" / "ann" / "add.cu").write_text("// fake: wrong-large\n")
    grade_here(merged, merged / "here")
    differences, _ = slurm_gpu.compare(merged / "results", merged / "here")
    assert differences and all("'ann'" in line for line in differences)
    assert any(line.startswith("correctness points ('ann', 'add')") for line in differences)
    assert any(line.startswith("case ('ann', 'add'") and "wrong" in line for line in differences)
