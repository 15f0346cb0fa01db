"""A graded case runs the student's kernel twice on the same inputs (`check_runs` 2): a race shows as a result that
changes between runs. The second run's output, where it is bitwise the first's, is not compared with the float64
reference again (the harness's case_runner.cpp: the same inputs and output give the same comparison; on the CPU
the reference was a tenth of a matmul case's time); what the second run may break besides its output is checked
as before. Each kernel here is right on its first call and breaks one thing on its second: all three must fail,
naming the second run. On the CPU backend (part of make check) and on a GPU (the `gpu` marker)."""
from __future__ import annotations

import json
import subprocess

import pytest

from conftest import STARTER, build_with, solution_build  # noqa: F401 (a fixture)
from test_cpu_suite import CPU_BUILD, cpu_build_with, cpu_solution_objects, make_cpu  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow  # builds harnesses (make, g++ or nvcc)

# add, right on every odd call of its launcher (a case's first run), wrong in one way on every even one
KERNEL = """#include <cstdint>
#include "cuda_check.h"
#include "tasks.h"
namespace {
constexpr int kBreaks = BREAKS;  // 1: one element of the output; 2: an input; 3: one element past the output
int calls = 0;
template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* c, std::int64_t n, bool second) {
    const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
    if (i >= n) return;
    c[i] = a[i] + b[i];
    if (second && i == 0) {
        if (kBreaks == 1) c[0] = c[0] + T(1);
        if (kBreaks == 2) const_cast<T*>(a)[0] = a[0] + T(1);
        if (kBreaks == 3) c[n] = c[0];
    }
}
}  // namespace
template <typename T>
void add(const T* a, const T* b, T* c, int rows, int cols) {
    const std::int64_t n = static_cast<std::int64_t>(rows) * cols;
    const bool second = ++calls % 2 == 0;
    add_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(a, b, c, n, second);
    CUDA_CHECK_LAUNCH();
}
ADD_TYPES(INSTANTIATE_ADD)
"""
BREAKS = {"output": 1, "input": 2, "past_end": 3}


def sources(root) -> dict:
    made = {}
    for name, breaks in BREAKS.items():
        made[name] = root / "sources" / name / "add.cu"
        made[name].parent.mkdir(parents=True)
        made[name].write_text(KERNEL.replace("BREAKS", str(breaks)))
    return made


@pytest.fixture(scope="module")
def cpu_harness(tmp_path_factory, cpu_solution_objects) -> dict[str, str]:
    root = tmp_path_factory.mktemp("repeated")
    built = {}
    for name, source in sources(root).items():
        kernels = cpu_build_with(root, f"second_run_{name}", source, cpu_solution_objects)
        done = make_cpu(kernels, f"planted_second_run_{name}", f"build/on-cpu/planted_second_run_{name}/harness")
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        built[name] = str(CPU_BUILD / f"planted_second_run_{name}" / "harness")
    built["solution"] = str(CPU_BUILD / "solution" / "harness")
    return built


@pytest.fixture(scope="module")
def gpu_harness(tmp_path_factory, solution_build) -> dict[str, str]:
    root = tmp_path_factory.mktemp("repeated-gpu")
    built = {name: str(build_with(root, f"second_run_{name}", source).harness)
             for name, source in sources(root).items()}
    built["solution"] = str(solution_build.harness)
    return built


@pytest.fixture(params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def harness(request) -> dict[str, str]:
    return request.getfixturevalue(f"{request.param}_harness")


def case(harness: str, runs: int = 2) -> dict:
    """One add case as graded: check runs only, fresh placement, its record."""
    done = subprocess.run([harness, "--task", "add", "--dtype", "float32", "--shape", "37x211", "--seed", "3",
                           "--check-only", "--check-runs", str(runs), "--no-limits", "--json", "-"],
                          cwd=STARTER, capture_output=True, text=True, timeout=300)
    (record,) = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return record


@pytest.mark.parametrize("breaks, said", [
    ("output", "run 2 of 2"),
    ("input", "run 2 of 2"),
    ("past_end", "run 2 of 2")])
def test_a_kernel_right_on_its_first_run_and_wrong_on_its_second_fails(harness, breaks, said):
    first_only = case(harness[breaks], runs=1)
    assert first_only["status"] == "ok", first_only  # the first run alone passes: the second is what is caught
    record = case(harness[breaks])
    assert record["status"] != "ok" and said in record["message"], record
    check = record["check"]
    assert check["runs_checked"] == 2 and check["runs_wrong"] == 1, check
    assert check["runs_differ"] == (breaks == "output"), check
    if breaks == "input":
        assert check["modified_inputs"] == ["a"], check
    if breaks == "past_end":
        assert check["written_past_end"] == 1, check


def test_the_solution_passes_both_runs_with_the_same_output(harness):
    check = case(harness["solution"])["check"]
    assert (check["runs_checked"], check["runs_wrong"], check["runs_differ"]) == (2, 0, False), check
