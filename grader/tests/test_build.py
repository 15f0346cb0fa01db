"""Building submissions against the pristine harness, inside the sandbox (needs nvcc, not a GPU)."""
from __future__ import annotations

import pytest

from grader.build import Workspace
from grader.intake import Submission, read_submission
from grader.sandbox import ResourceLimits, Sandbox, SandboxError, find_bwrap, missing_bwrap_message
from grader.tests.conftest import REPO

SAMPLES = REPO / "data" / "sample-submissions"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, registry, rubric):
    work = tmp_path_factory.mktemp("work")
    bwrap = find_bwrap()
    if bwrap is None:
        pytest.fail(missing_bwrap_message(), pytrace=False)
    sandbox = Sandbox(bwrap, ResourceLimits.from_rubric(rubric.limits))
    try:
        sandbox.check(work)
    except SandboxError as e:
        pytest.skip(f"bubblewrap cannot run here: {e}")
    ws = Workspace(work, arch="sm_90", sandbox=sandbox)
    ws.prepare(jobs=2, solution=False)
    return ws


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


def test_a_submission_that_includes_the_solution_by_path_does_not_compile(workspace, registry):
    """The solution is not in the build's sandbox, even for a student who knows exactly where it lives."""
    sub = Submission("includes-solution", SAMPLES,
                     files={"add.cu": f'#include "{REPO}/solution/kernels/add.cu"\n'.encode()})
    result = workspace.build(sub, timeout=300)
    assert (REPO / "solution" / "kernels" / "add.cu").exists()
    assert not result.ok and "add.cu: No such file or directory" in result.log, result.log[-2000:]


def test_a_build_sees_the_pristine_harness_but_not_other_submissions(workspace, registry):
    source = ('#include "cuda_check.h"\n#include "tasks.h"\n'
              f'#if __has_include("{workspace.pristine}/Makefile")\n#warning pristine-visible\n#endif\n'
              f'#if __has_include("{workspace.kernel_dirs}/someone/add.cu")\n#error other-submission-visible\n#endif\n'
              f'#if __has_include("{REPO}/grader/rubric.toml")\n#error repository-visible\n#endif\n'
              'template <typename T> void add(const T*, const T*, T*, int, int) { NOT_IMPLEMENTED_YET(); }\n'
              'ADD_TYPES(INSTANTIATE_ADD)\n')
    (workspace.kernel_dirs / "someone").mkdir(parents=True, exist_ok=True)
    (workspace.kernel_dirs / "someone" / "add.cu").write_text("// another student's\n")
    sub = Submission("peeks", SAMPLES, files={"add.cu": source.encode()})
    result = workspace.build(sub, timeout=300)
    assert result.ok, result.log[-2000:]
    assert "pristine-visible" in result.log  # what it builds against is there, read-only
    outputs = [p for p in workspace.build_dir.rglob("*") if p.is_file() and "submission-peeks" in str(p)]
    assert outputs and all(p.is_relative_to(workspace.build_dir / "submission-peeks") for p in outputs)
