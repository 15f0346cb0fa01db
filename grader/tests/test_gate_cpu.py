"""The build gate on the CPU backend's objects (g++ with AddressSanitizer, its runtime to link; no CUDA toolkit
needed): the same rules as on nvcc's objects, what only an object shows included, the CPU runtime's controls out of
a task file's reach, and the harness's reply path out of any task file's reach even where a rule is loosened."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from grader.backends.local import Workspace
from grader.gate import build_gate
from grader.intake.submission import Submission
from grader.core.rubric import load_rubric
from grader.run.runner import HarnessFailure, HarnessServer
from grader.tests.conftest import REPO
from grader.tests.test_gate import HOSTILE, LAUNCHER, inspect
from grader.tests.test_rubric import broken


# The solution and the sample class pass both backends' gates: test_gate.py (either_workspace).

ORDINARY = LAUNCHER + """#include <cassert>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <vector>
__constant__ float kScale[1];
__device__ int calls;
float host_table[4] = {1, 2, 3, 4};

__global__ void dot_kernel(const float* x, const float* y, float* result, int n) {
    __shared__ float partial[256];
    assert(n > 0);
    float s = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) s += x[i] * y[i];
    partial[threadIdx.x] = s * kScale[0];
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0;
        for (int k = 0; k < 256; ++k) t += partial[k];
        atomicAdd(result, t);
        atomicAdd(&calls, 1);
    }
    s = __shfl_down_sync(0xffffffffu, s, 1);
}

void dot(const float* x, const float* y, float* result, int n) {
    static std::vector<int> seen;
    seen.push_back(n);
    const float one = host_table[0];
    CUDA_CHECK(cudaMemcpyToSymbol(kScale, &one, sizeof one));
    CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(float)));
    std::ostringstream note;
    note << "n " << n;
    if (n == 1) std::cout << note.str() << std::endl;
    dot_kernel<<<4, 256>>>(x, y, result, n);
    CUDA_CHECK_LAUNCH();
}
"""


def test_ordinary_launcher_code_passes_the_cpu_gate(cpu_workspace, rubric):
    """Globals (which AddressSanitizer registers in a constructor of its own), constant memory, shared memory,
    barriers, warp functions, atomics, iostream: what students write, as the CPU backend compiles it."""
    assert inspect(cpu_workspace, rubric.gate, Path("ordinary"), {"dot.cu": ORDINARY}).findings == []


# (hostile corpus entry, task file, rule, words of the finding): what the source pre-check alone cannot see on the
# CPU (names pasted together, dprintf, a global's constructor), each an entry of the hostile corpus (graded whole
# on both backends too: test_hostile_batch.py).
OBJECT_ONLY = [
    ("backend-schedule", "dot.cu", "no-backend-controls", "calls cudacpu_set_schedule"),
    ("backend-fences", "transpose.cu", "no-backend-controls", "calls cudacpu_set_valid_range"),
    ("backend-fences", "transpose.cu", "no-backend-controls", "calls __asan_unpoison_memory_region"),
    ("pasted-thread", "dot.cu", "no-processes", "calls pthread_create"),
    ("pasted-file-io", "fill.cu", "no-file-io", "calls fopen"),
    ("dprintf-reply", "matmul_naive.cu", "only-listed-calls", "calls dprintf"),
    ("global-constructor", "transpose.cu", "no-static-constructors", "runs code when the program starts"),
]


@pytest.fixture(scope="module")
def object_only(cpu_workspace, rubric):
    """Each entry's task file compiled by the CPU backend and inspected by the gate, once per entry."""
    files = {(entry, file) for entry, file, *_ in OBJECT_ONLY}
    return {entry: inspect(cpu_workspace, rubric.gate, Path(f"object-only-{entry}"),
                           {file: (HOSTILE / entry / file).read_bytes()}) for entry, file in sorted(files)}


@pytest.mark.parametrize("entry, file, rule, words", OBJECT_ONLY,
                         ids=[f"{o[0]}-{o[3].split()[-1]}" for o in OBJECT_ONLY])
def test_what_only_the_cpu_object_shows_is_refused_with_its_rule(object_only, entry, file, rule, words):
    findings = [f for f in object_only[entry].findings if f.enforced]
    assert any(f.file == file and f.rule == rule and words in f.what for f in findings), \
        [f.message for f in object_only[entry].findings]


# --- the harness's reply path -------------------------------------------------------------------------------------

# The C library functions the harness's reply writer (starter/harness/serve.cpp) calls, each defined here to do
# nothing useful: were any to bind the harness's own calls, its replies would break.
REPLY_PATH = {
    "fwrite": "size_t fwrite(const void*, size_t, size_t, FILE*) { return 0; }",
    "fflush": "int fflush(FILE*) { return 0; }",
    "memcpy": "void* memcpy(void* d, const void*, size_t) noexcept { return d; }",
    "memmove": "void* memmove(void* d, const void*, size_t) noexcept { return d; }",
    "memset": "void* memset(void* d, int, size_t) noexcept { return d; }",
    "memcmp": "int memcmp(const void*, const void*, size_t) noexcept { return 1; }",
    "strlen": "size_t strlen(const char*) noexcept { return 0; }",
    "strcmp": "int strcmp(const char*, const char*) noexcept { return 1; }",
    "snprintf": "int snprintf(char*, size_t, const char*, ...) noexcept { return 0; }",
    "strtod": "double strtod(const char*, char**) noexcept { return 0; }",
    "strtoll": "long long strtoll(const char*, char**, int) noexcept { return 0; }",
    "strtoull": "unsigned long long strtoull(const char*, char**, int) noexcept { return 0; }",
    "localeconv": "struct lconv* localeconv() noexcept { return nullptr; }",
}
# What serve.cpp's object calls that a task file cannot define as a function (data, or the C++ runtime's own).
NOT_DEFINABLE = re.compile(r"_GLOBAL_OFFSET_TABLE_|_Unwind_Resume|__cxa_\w+|__gxx_personality_v0|__dso_handle|"
                           r"__errno_location|__assert_fail|__libc_single_threaded|__stack_chk_fail|cuda\w+|"
                           r"__asan\w*|__tsan\w*")
ADD_KERNEL = """template <typename T> __global__ void k(const T* a, const T* b, T* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }
template <typename T> void add(const T* a, const T* b, T* c, int rows, int cols) {
    int n = rows * cols; k<<<(n + 255) / 256, 256>>>(a, b, c, n); CUDA_CHECK_LAUNCH(); }
template void add<float>(const float*, const float*, float*, int, int);
template void add<std::int32_t>(const std::int32_t*, const std::int32_t*, std::int32_t*, int, int);
"""
REPLY_PATH_FILE = (LAUNCHER + "#include <cstdio>\n#include <cstdlib>\n#include <cstring>\nstruct lconv;\nextern \"C\" {\n"
                   + "\n".join(REPLY_PATH.values()) + "\n}\n" + ADD_KERNEL)


def test_the_reply_path_file_defines_every_c_function_the_reply_writer_calls(cpu_workspace):
    """If serve.cpp starts calling another C library function, this file (and so the tests below) must define it."""
    serve = cpu_workspace.build_dir / "lib" / "harness" / "serve.cpp.o"
    listed = subprocess.run(["nm", "-u", str(serve)], capture_output=True, text=True, check=True).stdout.split()
    calls = {name.split("@")[0] for name in listed if name != "U" and not name.startswith("_Z")}
    assert {"fwrite", "fflush"} <= calls, calls  # the reply writer's own
    assert {c for c in calls - set(REPLY_PATH) if not NOT_DEFINABLE.fullmatch(c)} == set()


def test_a_task_file_defining_the_reply_paths_functions_is_refused(cpu_workspace, rubric):
    report = inspect(cpu_workspace, rubric.gate, Path("reply-path"), {"add.cu": REPLY_PATH_FILE})
    named = {f.what.split()[1].rstrip(",") for f in report.findings if f.enforced and f.rule == "no-redefinition"}
    assert {"fwrite", "fflush", "snprintf", "strlen"} <= named, [f.message for f in report.findings]


def serve_add(workspace: Workspace, policy, name: str) -> dict | str:
    """Builds a submission of REPLY_PATH_FILE as add.cu under `policy`'s gate and asks its harness for one check:
    the reply, or how the harness failed to give one."""
    sub = Submission(student=name, source=Path(name), files={"add.cu": REPLY_PATH_FILE.encode()})
    build = workspace.build(sub, 600, gate=policy)
    assert build.ok, build.log[-3000:]
    with HarnessServer(build.harness) as server:
        try:
            return server.request({"op": "check", "task": "add", "dtype": "float32", "shape": "37x211", "seed": 7,
                                   "check_runs": 1}, 120)
        except HarnessFailure as f:
            return f"{f.kind}: {f}"


def test_sealed_objects_keep_the_harness_replies_even_with_no_redefinition_loosened(cpu_workspace, registry,
                                                                                   tmp_path, monkeypatch):
    """With the rule turned off for the task, only the seal stands between the file's definitions and the harness's
    calls: every global but the task's launchers is local to the object, so the harness replies (and the honest
    kernel passes). Without the seal the same file takes the reply writer over."""
    path = broken(tmp_path, "[tasks.dot]", '[tasks.add.gate]\nallow = ["no-redefinition"]\n\n[tasks.dot]')
    loose = load_rubric(path, registry).gate
    reply = serve_add(cpu_workspace, loose, "sealed")
    assert isinstance(reply, dict) and reply.get("status") == "ok", reply
    monkeypatch.setattr(build_gate.BuildGate, "seal", lambda self, obj, file, facts: True)
    unsealed = serve_add(cpu_workspace, loose, "unsealed")
    assert not (isinstance(unsealed, dict) and unsealed.get("status") == "ok"), unsealed
