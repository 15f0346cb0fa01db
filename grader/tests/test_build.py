"""Building submissions against the pristine harness, inside the sandbox (needs nvcc, not a GPU)."""
from __future__ import annotations

import re
import subprocess

import pytest

from grader.backends.local import Workspace
from grader.intake.submission import Submission, read_submission
from grader.run.sandbox import ResourceLimits, Sandbox, SandboxError, find_bwrap, missing_bwrap_message
from grader.tests.conftest import REPO, over_cache, sandbox_unavailable

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
        sandbox_unavailable(f"bubblewrap cannot run here: {e}")
    return over_cache(Workspace(work, arch="sm_90", sandbox=sandbox), "gpu", "sm_90")


def test_a_compile_error_costs_its_own_task_with_the_compilers_message(workspace, registry):
    sub = read_submission(SAMPLES / "s07-compile-error", [t.file for t in registry.tasks])
    result = workspace.build(sub, timeout=300)
    assert result.ok and result.harness.exists()  # every other task still runs
    assert list(result.unbuilt) == ["transpose.cu"]
    assert result.unbuilt["transpose.cu"] == 'transpose.cu does not compile: transpose.cu(9): error: expected a ";"'
    assert 'kernels/transpose.cu(9): error: expected a ";"' in result.log
    assert str(workspace.work) not in result.log  # the grader's own paths are taken out


def _solution_files(**replacements: str) -> dict[str, bytes]:
    files = {p.name: p.read_bytes() for p in (REPO / "solution" / "kernels").glob("*.cu")}
    files.update({name: text.encode() for name, text in replacements.items()})
    return files


def test_a_float_only_instantiation_links_and_only_the_missing_types_are_stood_in_for(workspace, registry):
    naive = (REPO / "solution" / "kernels" / "matmul_naive.cu").read_text()
    float_only = naive.replace("MATMUL_TYPES(INSTANTIATE_MATMUL_NAIVE)", "INSTANTIATE_MATMUL_NAIVE(float)")
    assert float_only != naive
    sub = Submission("float-only", SAMPLES, files=_solution_files(**{"matmul_naive.cu": float_only}))
    result = workspace.build(sub, timeout=300)
    assert result.ok and result.unbuilt == {}, result.log[-2000:]
    symbols = subprocess.run(["nm", "-C", str(result.harness)], capture_output=True, text=True).stdout
    # The student's float launcher is linked (its kernel with it); double's comes from the weak stand-in,
    # which says why when called, and no marker is linked: the file itself built.
    assert "matmul_naive_kernel<float>" in symbols
    assert "matmul_naive_kernel<double>" not in symbols
    assert "kernel_file_unbuilt_matmul_naive" in symbols  # referenced (weakly), never defined here
    assert not re.search(r"^[0-9a-f]+ [RD] kernel_file_unbuilt_", symbols, re.M)


def test_a_link_error_and_a_clash_between_two_files_cost_only_those_tasks(workspace, registry):
    dot = (REPO / "solution" / "kernels" / "dot.cu").read_text()
    calls_undefined = dot.replace('#include "tasks.h"', '#include "tasks.h"\nvoid helper_never_defined(int);', 1)
    calls_undefined = re.sub(r"(void dot\([^)]*\) \{)", r"\1\n    helper_never_defined(n);", calls_undefined, count=1)
    assert "helper_never_defined(n)" in calls_undefined
    clash = "\nint shared_counter = 0;\n"
    add = (REPO / "solution" / "kernels" / "add.cu").read_text() + clash
    fill = (REPO / "solution" / "kernels" / "fill.cu").read_text() + clash
    sub = Submission("link-errors", SAMPLES, files=_solution_files(**{"dot.cu": calls_undefined, "add.cu": add,
                                                                      "fill.cu": fill}))
    result = workspace.build(sub, timeout=300)
    assert result.ok, result.log[-2000:]
    assert result.unbuilt["dot.cu"] == "dot.cu does not link: undefined reference to `helper_never_defined(int)'"
    assert result.unbuilt["fill.cu"] == "fill.cu does not link: multiple definition of `shared_counter' (add.cu defines it too)"
    assert set(result.unbuilt) == {"dot.cu", "fill.cu"}  # add.cu, defined first, keeps its task


def test_only_the_submissions_task_files_are_compiled_the_rest_are_stubs(workspace, registry):
    sub = read_submission(SAMPLES / "s02-naive-only", [t.file for t in registry.tasks])
    result = workspace.build(sub, timeout=300)
    assert result.ok and result.harness.exists()
    built = workspace.kernel_dirs / sub.key
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
    assert "add.cu: No such file or directory" in result.log, result.log[-2000:]
    assert "add.cu" in result.unbuilt


def test_a_build_sees_the_pristine_harness_but_not_other_submissions(workspace, registry):
    seen = workspace.view(workspace.kernel_dirs / "peeks", workspace.build_dir / "peeks").seen["pristine"]
    source = ('#include "cuda_check.h"\n#include "tasks.h"\n'
              f'#if __has_include("{seen}/Makefile")\n#warning pristine-visible\n#endif\n'
              + (f'#if __has_include("{workspace.pristine}/Makefile")\n#error pristine-at-its-real-path\n#endif\n'
                 if seen != workspace.pristine else '') +
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
    outputs = [p for p in workspace.build_dir.rglob("*") if p.is_file() and f"submission-{sub.key}" in str(p)]
    assert outputs and all(p.is_relative_to(workspace.build_dir / f"submission-{sub.key}") for p in outputs)


def test_nothing_outside_the_toolchain_the_harness_and_the_submission_can_be_read_while_it_builds(workspace):
    """An assembler .incbin (built from pasted tokens, which no source check sees) of the solution by its
    absolute path: the file is not in the build's sandbox, so the task file does not assemble, and its task
    alone fails."""
    source = ('#include "cuda_check.h"\n#include "tasks.h"\n#define PASTE(a, b) a##b\n#define TEXT(x) #x\n'
              '#define STRING(x) TEXT(x)\n'
              f'asm(".section .rodata\\n" STRING(PASTE(.inc, bin)) " \\"{REPO}/solution/kernels/dot.cu\\"\\n.previous");\n'
              'void dot(const float*, const float*, float*, int) {}\n')
    assert (REPO / "solution" / "kernels" / "dot.cu").exists()
    result = workspace.build(Submission("incbin-solution", SAMPLES, files={"dot.cu": source.encode()}), timeout=300)
    assert result.ok and list(result.unbuilt) == ["dot.cu"], result.log[-2000:]
    assert "Error: file not found" in result.unbuilt["dot.cu"], result.unbuilt
    assert f"file not found: {REPO}/solution/kernels/dot.cu" in result.log


def test_the_pasted_incbin_entry_fails_only_its_own_task_in_the_sandboxed_build(workspace, registry, rubric):
    """hostile/incbin-pasted: the pre-check cannot see a directive built from pasted tokens, the gate lets the
    file through, and the build's sandbox has no /etc/passwd to read, so that task file alone does not build."""
    import tomllib
    entry = REPO / "grader" / "tests" / "hostile" / "incbin-pasted"
    expected = tomllib.loads((entry / "expected.toml").read_text())
    sub = read_submission(entry, [t.file for t in registry.tasks])
    result = workspace.build(sub, timeout=600, gate=rubric.gate)
    assert result.ok, result.log[-2000:]
    assert [f.message for f in result.gate.findings if f.enforced] == []
    assert list(result.unbuilt) == [f"{expected['task']}.cu"]
    assert expected["reason"] in result.unbuilt[f"{expected['task']}.cu"], result.unbuilt


def test_a_file_that_does_not_compile_under_the_gate_is_a_build_error_not_a_rule(workspace, registry, rubric):
    """The gate judges objects; a file that left none (it did not compile) is the compiler's matter."""
    sub = read_submission(SAMPLES / "s07-compile-error", [t.file for t in registry.tasks])
    result = workspace.build(sub, timeout=300, gate=rubric.gate)
    assert result.ok and list(result.unbuilt) == ["transpose.cu"], result.log[-2000:]
    assert [f.message for f in result.gate.findings if f.enforced] == []
