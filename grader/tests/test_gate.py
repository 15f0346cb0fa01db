"""The build gate on real nvcc objects (no GPU): what passes, what is stopped and why, and the
hostile corpus entries it decides on its own."""
from __future__ import annotations

import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from grader.backends.base import Backend
from grader.backends.local import run_limited
from grader.gate.check import check_dependencies, check_symbols
from grader.gate.objects import ObjectFacts
from grader.grading.cases import grade_submission
from grader.intake.submission import Submission, read_submission
from grader.core.rubric import load_rubric
from grader.tests.conftest import REPO, scores_of
from grader.tests.test_rubric import broken

HOSTILE = REPO / "grader" / "tests" / "hostile"
SAMPLES = REPO / "data" / "sample-submissions"
# Entries the gate decides without running GPU code (an archive bomb is intake's: test_hostile_corpus; an entry
# whose verdict is the build's sandbox, build_error, is test_build's, whose builds are sandboxed).
GATE_DECIDES = sorted(p for p in HOSTILE.iterdir()
                      if (p / "expected.toml").exists() and not tomllib.loads((p / "expected.toml").read_text())["needs_gpu"]
                      and tomllib.loads((p / "expected.toml").read_text())["status"] == "graded"
                      and tomllib.loads((p / "expected.toml").read_text())["case_status"] != "build_error")


def inspect(workspace, policy, folder: Path, files: dict[str, str | bytes]):
    """Compiles just these task files to objects (no stubs, no link) and runs the gate over them."""
    kernels = workspace.kernel_dirs / folder.name
    kernels.mkdir(parents=True, exist_ok=True)
    data = {name: text.encode() if isinstance(text, str) else text for name, text in files.items()}
    for name, content in data.items():
        (kernels / name).write_bytes(content)
    gate = workspace.gate(policy)
    screened = gate.screen(kernels, data)
    status, out = run_limited(workspace._make("objects", f"KERNELS={kernels}", f"KTAG=gate-{folder.name}"), 600)
    assert status == 0, out
    return gate.inspect(kernels, workspace.build_dir / f"gate-{folder.name}" / "kernels", data, screened)


class GateOnly(Backend):
    """A backend that builds for real and refuses to run anything: the gate must decide alone."""
    harness_version, sandbox = "test", "none"

    def __init__(self, workspace):
        self.workspace = workspace

    def build(self, sub, timeout, gate=None):
        return self.workspace.build(sub, timeout, gate)

    def set_limits(self, limits):
        pass  # it runs nothing that limits would hold

    def student_server(self, build, gpu):
        raise AssertionError("the build gate alone should decide this submission")

    def solution_server(self, gpu):
        raise AssertionError("the build gate alone should decide this submission")

    def sanitize(self, *args, **kwargs):
        raise AssertionError("the build gate alone should decide this submission")


@pytest.fixture(scope="module")
def hostile_results(workspace, rubric, registry):
    """Every entry the gate decides, built and graded (in parallel, two at a time)."""
    backend = GateOnly(workspace)
    workspace.gate(rubric.gate)

    def one(entry: Path):
        sub = read_submission(entry, [t.file for t in registry.tasks])
        build = backend.build(sub, 600, rubric.gate)
        result = grade_submission(sub, build, backend, None, None, rubric, registry, seed=1) if build.ok else None
        return entry.name, (build, result)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, GATE_DECIDES))


def test_the_corpus_has_an_entry_for_each_attack_the_gate_stops():
    names = {p.name for p in GATE_DECIDES}
    assert {"include-solution", "read-other-submission", "write-outside", "socket", "dlopen-cublas", "cublas-call",
            "private-stream", "static-constructor", "interpose-harness", "mprotect-patch", "fork-bomb",
            "raw-syscall", "replace-library-call", "split-tf32-mma", "include-splice", "include-lone-cr",
            "incbin-concat",
            # issue 27
            "reply-writer-redefined", "backend-schedule", "backend-fences", "pasted-thread", "pasted-file-io",
            "global-constructor", "dprintf-reply", "include-bom", "include-form-feed", "include-macro",
            "include-device-pass"} <= names


def test_an_untouched_stub_handed_in_is_compiled_and_missing_files_reuse_the_stubs_objects(workspace, rubric, registry):
    """The build reuses the stub's object for a file the submission lacks (one nvcc run fewer per file), but a
    file it hands in is compiled, stub or not: the gate reads the list of files its compilation read (on the
    H100, reusing the object of a handed-in stub made every task of the untouched stubs 'forbidden')."""
    stubs = {p.name: p.read_bytes() for p in (workspace.pristine / "kernels").glob("*.cu")}
    workspace.gate(rubric.gate)
    one = Submission("stub-reuse-one", Path("stub-reuse-one"), files={"fill.cu": stubs["fill.cu"]})
    build = workspace.build(one, 600, rubric.gate)
    assert build.ok and build.gate.forbidden_files == [], build.log
    objects = workspace.build_dir / f"submission-{one.key}" / "kernels"
    reference = workspace.build_dir / "stubs" / "kernels"
    assert (objects / "add.o").read_bytes() == (reference / "add.o").read_bytes()  # reused
    assert (objects / "fill.d").is_file() and not (objects / "add.d").exists()  # compiled / not compiled


@pytest.mark.parametrize("entry", GATE_DECIDES, ids=lambda p: p.name)
def test_a_hostile_submission_gets_its_expected_verdict_from_the_gate(hostile_results, entry, rubric):
    expected = tomllib.loads((entry / "expected.toml").read_text())
    build, result = hostile_results[entry.name]
    assert build.ok and build.harness.exists(), build.log  # the stub took the forbidden file's place and linked
    assert result.status == expected["status"] == "graded"
    cases = [c for c in result.cases if c.task == expected["task"]]
    assert cases and all(c.status == expected["case_status"] for c in cases)
    assert all(expected["reason"].lower() in c.message.lower() for c in cases), cases[0].message
    assert all(c.status == "missing" for c in result.cases if c.task != expected["task"])
    forbidden = [f.file for f in build.gate.findings if f.enforced]
    score = next(s for s in scores_of(result, rubric) if s.task == expected["task"])
    assert score.total == 0 and "build-gate rule" in score.note
    assert set(forbidden) == {f"{expected['task']}.cu"}


def test_a_forbidden_file_is_never_linked_its_stub_is(hostile_results, workspace):
    build, result = hostile_results["cublas-declared"]
    stub = (REPO / "starter" / "kernels" / "matmul_fast.cu").read_bytes()
    assert (workspace.kernel_dirs / result.submission.key / "matmul_fast.cu").read_bytes() == stub
    message = build.gate.case_message("matmul_fast.cu")
    assert message.startswith("not run: matmul_fast.cu calls cublasCreate_v2 (line 13), calls cublasSgemm_v2 "
                              "(line 16): library calls are not allowed")
    assert message.endswith("(rule: no-libraries)")


def test_an_include_by_path_stops_the_file_before_the_compiler_reads_it(hostile_results):
    build, _ = hostile_results["include-solution"]
    assert "solution/kernels/matmul_fast.cu" not in build.log  # never compiled: no error about a missing file
    [finding] = build.gate.findings
    assert finding.rule == "includes" and finding.line == 3


def test_a_raw_syscall_is_found_in_the_machine_code(hostile_results):
    build, _ = hostile_results["raw-syscall"]
    [finding] = [f for f in build.gate.findings if f.enforced]
    assert finding.what.startswith("contains the instruction `syscall` in host code (in void matmul_tiled<float>")


def test_the_solution_passes_the_gate(either_workspace, rubric):
    files = {p.name: p.read_bytes() for p in (REPO / "solution" / "kernels").glob("*.cu")}
    assert inspect(either_workspace, rubric.gate, Path("the-solution"), files).findings == []


def test_the_gate_reads_which_files_touch_shared_memory_where_racecheck_has_something_to_look_at(workspace, rubric):
    """Issue 43: racecheck runs only where a file's device code may touch shared memory (or uses atomics). The
    solution's tiled kernels and reduction do; its fill, add and naive matmul do not; the sample class's racing
    tiled matmul (s04) does, so its race is still looked for. On the CPU backend nothing is read: every file is checked."""
    solution = {p.name: p.read_bytes() for p in (REPO / "solution" / "kernels").glob("*.cu")}
    report = inspect(workspace, rubric.gate, Path("shared-solution"), solution)
    assert report.no_shared_memory == {"fill.cu", "add.cu", "matmul_naive.cu"}, report.no_shared_memory
    race = {p.name: p.read_bytes() for p in (SAMPLES / "s04-race").glob("*.cu")}
    assert inspect(workspace, rubric.gate, Path("shared-race"), race).no_shared_memory == {"matmul_naive.cu"}
    # a stray generic store may address shared memory: such a file is checked
    generic = LAUNCHER + """
__device__ __noinline__ void put(std::int32_t* p, int i, std::int32_t v) { p[i] = v; }
__device__ __noinline__ std::int32_t get(const std::int32_t* p, int i) { return p[i]; }
__global__ void fill_kernel(std::int32_t* out, int rows, int cols) {
    __shared__ std::int32_t tile[32];
    std::int32_t* where = rows > 1 ? tile : out;  // shared memory, reached only through generic pointers
    put(where, threadIdx.x % 32, threadIdx.x);
    if (threadIdx.x < rows * cols) out[threadIdx.x] = get(where, threadIdx.x % 32);
}
void fill(std::int32_t* out, int rows, int cols) {
    fill_kernel<<<1, 32>>>(out, rows, cols);
    CUDA_CHECK_LAUNCH();
}
"""
    assert "fill.cu" not in inspect(workspace, rubric.gate, Path("shared-generic"), {"fill.cu": generic}).no_shared_memory


@pytest.mark.parametrize("sample", sorted(p for p in SAMPLES.iterdir() if p.name != "s07-compile-error"),
                         ids=lambda p: p.name)
def test_every_sample_submission_passes_the_gate(either_workspace, rubric, sample):
    files = {p.name: p.read_bytes() for p in sample.glob("*.cu")}
    assert inspect(either_workspace, rubric.gate, Path(f"sample-{sample.name}"), files).findings == []


LAUNCHER = '#include "cuda_check.h"\n#include "tasks.h"\n'
ORDINARY = LAUNCHER + """#include <cassert>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <vector>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__constant__ float kScale[1];
__device__ int calls;

__global__ void dot_kernel(const float* x, const float* y, float* result, int n) {
    cg::thread_block block = cg::this_thread_block();
    assert(n > 0);
    if (block.thread_rank() == 0 && blockIdx.x == 0 && n == 1) printf("n=%d\\n", n);
    float* scratch = static_cast<float*>(malloc(16));
    free(scratch);
    float s = 0;
    for (int i = block.thread_rank(); i < n; i += blockDim.x) s += x[i] * y[i] * kScale[0];
    atomicAdd(result, s);
    atomicAdd(&calls, 1);
}

void dot(const float* x, const float* y, float* result, int n) {
    static std::vector<int> seen;
    seen.push_back(n);
    const float one = 1;
    CUDA_CHECK(cudaMemcpyToSymbol(kScale, &one, sizeof one));
    int device = 0, blocks = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, dot_kernel, 256, 0));
    CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(float)));
    std::ostringstream note;
    note << "blocks " << blocks;
    if (n == 1) std::cout << note.str() << std::endl;
    fprintf(stderr, "%s\\n", note.str().c_str());
    dot_kernel<<<blocks * prop.multiProcessorCount, 256>>>(x, y, result, n);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaDeviceSynchronize());
}
"""


def test_ordinary_launcher_code_passes(workspace, rubric):
    """iostream (whose static initializer is allowed), stringstreams, vectors, device printf, assert and
    malloc, constant memory, occupancy queries: what students write."""
    assert inspect(workspace, rubric.gate, Path("ordinary"), {"dot.cu": ORDINARY}).findings == []


TRICKS = {
    # a weak definition of a harness function, and a C library function defined through an alias
    "add.cu": LAUNCHER + """#include <cstddef>
__attribute__((weak)) bool equal_on_device(const void*, const void*, std::size_t) { return true; }
extern "C" int fake_clock(clockid_t, timespec*) noexcept { return 0; }
extern "C" int clock_gettime(clockid_t, timespec*) noexcept __attribute__((alias("fake_clock")));
template <typename T> void add(const T*, const T*, T*, int, int) {}
ADD_TYPES(INSTANTIATE_ADD)
""",
    # an ifunc, whose resolver the loader runs before main
    "fill.cu": LAUNCHER + """extern "C" void real_fill() {}
extern "C" void (*pick_fill())() { return real_fill; }
extern "C" void quick_fill() __attribute__((ifunc("pick_fill")));
void fill(std::int32_t*, int, int) { quick_fill(); }
""",
    # a definition in namespace std, and a destructor that runs at exit
    "transpose.cu": LAUNCHER + """namespace std { void helper_in_std() {} }
struct Goodbye { ~Goodbye(); };
Goodbye::~Goodbye() { std::helper_in_std(); }
static Goodbye goodbye;
template <typename T> void transpose(const T*, T*, int, int) {}
TRANSPOSE_TYPES(INSTANTIATE_TRANSPOSE)
""",
    # another task's launcher, which would escape that task's rules
    "dot.cu": LAUNCHER + """void dot(const float*, const float*, float*, int) {}
template <typename T> void matmul_tiled(const T*, const T*, T*, int, int, int) {}
template void matmul_tiled<float>(const float*, const float*, float*, int, int, int);
""",
    # a function registered to run at exit by attribute, and an unlisted runtime call
    "matmul_naive.cu": LAUNCHER + """#include <cstdio>
#include <cstdlib>
__attribute__((destructor)) static void last_words() { std::puts("bye"); }
template <typename T> void matmul_naive(const T*, const T*, T*, int m, int, int) {
    if (std::getenv("GRADING")) return;
}
MATMUL_TYPES(INSTANTIATE_MATMUL_NAIVE)
""",
}


@pytest.fixture(scope="module")
def tricks(workspace, rubric):
    return inspect(workspace, rubric.gate, Path("tricks"), TRICKS)


@pytest.mark.parametrize("file, rule, what", [
    ("add.cu", "no-redefinition", "defines equal_on_device(void const*, void const*, unsigned long), which the harness"),
    ("add.cu", "no-redefinition", "defines clock_gettime, which the harness or a library"),
    ("fill.cu", "no-static-constructors", "defines quick_fill as an ifunc, whose resolver runs when the program loads"),
    ("transpose.cu", "no-redefinition", "defines std::helper_in_std() in the standard library's namespace"),
    ("transpose.cu", "no-static-constructors", "runs code when the program starts"),
    ("matmul_naive.cu", "no-static-constructors", "runs code when the program ends: last_words()"),
    ("matmul_naive.cu", "only-listed-calls", "calls getenv"),
    ("dot.cu", "no-redefinition", "defines void matmul_tiled<float>(float const*, float const*, float*, int, int, int),"
                                  " which is another task's launcher"),
])
def test_tricks_a_symbol_list_alone_would_miss_are_caught(tricks, file, rule, what):
    assert any(f.file == file and f.rule == rule and f.enforced and what in f.what for f in tricks.findings), \
        [f.message for f in tricks.findings if f.file == file]


def test_a_task_allowed_a_rule_may_break_it(workspace, rubric, tmp_path, registry):
    path = broken(tmp_path, "[tasks.dot]", '[tasks.matmul_naive.gate]\nallow = ["no-streams-events"]\n\n[tasks.dot]')
    loose = load_rubric(path, registry).gate
    files = {"matmul_naive.cu": (HOSTILE / "private-stream" / "matmul_naive.cu").read_bytes()}
    assert inspect(workspace, loose, Path("allowed-streams"), files).findings == []
    report = inspect(workspace, rubric.gate, Path("allowed-streams"), files)
    assert [f.rule for f in report.findings if f.enforced] == ["no-streams-events"]


def test_device_code_is_held_to_the_same_list(rubric):
    facts = ObjectFacts(Path("dot.o"), device_undefined=["vprintf", "__assertfail", "cudaStreamCreate"])
    found = check_symbols(facts, rubric.gate.for_task("dot"))
    assert [(f.rule, f.what) for f in found] == [("no-streams-events", "uses in device code cudaStreamCreate")]


def test_the_compilers_list_of_files_read_must_stay_inside_the_allowed_places(tmp_path, rubric):
    source, header = tmp_path / "kernels" / "dot.cu", tmp_path / "include" / "tasks.h"
    dep = tmp_path / "dot.d"
    dep.write_text(f"dot.o : {source} \\\n  /usr/local/cuda/include/cuda_runtime.h \\\n  {header} \\\n"
                   f"  ../solution/kernels/dot.cu\n\n{header}:\n")
    found = check_dependencies(dep, rubric.gate.for_task("dot"), source, [header],
                               [Path("/usr/local/cuda/include")], tmp_path / "pristine")
    assert [f.what for f in found] == ["reads ../solution/kernels/dot.cu while it compiles"]


# ---------------------------------------------------------------------------
# The honest corpus (grader/tests/honest/): ordinary C++ the gate must let through.

HONEST = REPO / "grader" / "tests" / "honest"


def test_every_file_of_the_honest_corpus_passes_the_gate(workspace, rubric):
    """std::to_string (once refused), containers, lambdas, <cmath>, printing, templates of the student's own."""
    files = {p.name: p.read_bytes() for p in sorted(HONEST.glob("*/*.cu"))}
    assert len(files) == len(list(HONEST.glob("*/*.cu"))) >= 4, "one file per task name, so one compile checks all"
    report = inspect(workspace, rubric.gate, Path("honest-corpus"), files)
    assert [f.message for f in report.findings] == []


# ---------------------------------------------------------------------------
# Device code read back from the object (cuobjdump), and copies of what the harness calls in a library.

DEVICE_TRICKS = {
    "matmul_fast.cu": (HOSTILE / "split-tf32-mma" / "matmul_fast.cu").read_bytes()
    if (HOSTILE / "split-tf32-mma" / "matmul_fast.cu").exists() else b"",
    "matmul_tiled.cu": (LAUNCHER + """#include <mma.h>
using namespace nvcuda;
__global__ void wmma_tile(const half* a, const half* b, float* c) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
template <typename T> void matmul_tiled(const T*, const T*, T*, int, int, int) {
    wmma_tile<<<1, 32>>>(nullptr, nullptr, nullptr);
}
MATMUL_TYPES(INSTANTIATE_MATMUL_TILED)
""").encode(),
    "matmul_naive.cu": (HOSTILE / "replace-library-call" / "matmul_naive.cu").read_bytes()
    if (HOSTILE / "replace-library-call" / "matmul_naive.cu").exists() else b"",
}


@pytest.fixture(scope="module")
def device_tricks(workspace, rubric):
    return inspect(workspace, rubric.gate, Path("device-tricks"), DEVICE_TRICKS)


@pytest.mark.parametrize("file, rule, what", [
    ("matmul_fast.cu", "no-tensor-cores", "uses the instruction HMMA.1688.F32.TF32 in device code (in "),
    ("matmul_fast.cu", "no-tensor-cores", "uses the instruction mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
    ("matmul_tiled.cu", "no-tensor-cores", "uses the instruction HMMA.16816.F32 in device code (in wmma_tile("),
    ("matmul_naive.cu", "no-redefinition", "defines std::chrono::_V2::steady_clock::now() (an inline or template copy),"
                                           " which the harness calls in a shared library"),
])
def test_what_only_the_compiled_code_shows_is_refused_with_its_name(device_tricks, file, rule, what):
    assert any(f.file == file and f.rule == rule and f.enforced and what in f.what for f in device_tricks.findings), \
        [f.message for f in device_tricks.findings if f.file == file]


def test_the_split_tf32_kernel_is_named_by_function(device_tricks):
    [sass] = [f for f in device_tricks.findings if f.file == "matmul_fast.cu" and "HMMA" in f.what]
    assert "split_tf32_kernel(" in sass.what


def test_a_task_the_rubric_allows_tensor_cores_may_use_them(workspace, tmp_path, registry):
    path = broken(tmp_path, "[tasks.dot]", '[tasks.matmul_fast.gate]\nallow = ["no-tensor-cores"]\n\n[tasks.dot]')
    loose = load_rubric(path, registry).gate
    files = {"matmul_fast.cu": DEVICE_TRICKS["matmul_fast.cu"]}
    assert inspect(workspace, loose, Path("tensor-cores-allowed"), files).findings == []
