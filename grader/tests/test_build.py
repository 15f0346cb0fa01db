"""Building submissions against the pristine harness (needs nvcc, not a GPU)."""
from __future__ import annotations

from grader.intake import read_submission
from grader.tests.conftest import REPO

SAMPLES = REPO / "data" / "sample-submissions"


def test_a_compile_error_gives_the_compilers_message_with_the_students_path(workspace, registry):
    sub = read_submission(SAMPLES / "s07-compile-error", [t.file for t in registry.tasks])
    result = workspace.build(sub, timeout=300)
    assert not result.ok and "does not compile" in result.reason
    assert 'kernels/transpose.cu(9): error: expected a ";"' in result.log
    assert str(workspace.work) not in result.log  # the grader's own paths are taken out


def test_only_the_submissions_task_files_are_compiled_the_rest_are_stubs(workspace, registry):
    sub = read_submission(SAMPLES / "s02-naive-only", [t.file for t in registry.tasks])
    result = workspace.build(sub, timeout=300)
    assert result.ok and result.harness.exists()
    built = workspace.kernel_dirs / sub.student
    assert (built / "matmul_naive.cu").read_bytes() == sub.files["matmul_naive.cu"]
    assert (built / "dot.cu").read_bytes() == (REPO / "starter" / "kernels" / "dot.cu").read_bytes()


def test_a_build_that_outlives_its_limit_is_stopped(workspace, registry):
    sub = read_submission(SAMPLES / "s08-fast", [t.file for t in registry.tasks])
    result = workspace.build(sub, timeout=0.5)
    assert not result.ok and "longer than its limit of 0.5 s" in result.reason
