"""cudacpu.py, the driver: what it refuses and how it says so, what it
rewrites, and that it builds with g++ or clang++ and no CUDA toolkit.

Run by run_tests.py, or alone: python3 -m unittest -v test_driver (from tests/).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CPU = TESTS.parent
ROOT = CPU.parent.parent
DRIVER = [sys.executable, str(CPU / "cudacpu.py")]
STARTER_INCLUDE = ["-I", str(CPU.parent / "include")]

sys.path.insert(0, str(CPU))
from driver.rewrite import rewrite  # noqa: E402


def run(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*DRIVER, *args], capture_output=True, text=True, env=env, cwd=cwd)


def first_line_with(path: Path, text: str) -> int:
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if text in line:
            return n
    raise AssertionError(f"{text!r} not in {path}")


class Scratch(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="cudacpu-test-"))

    def tearDown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, name: str, text: str) -> Path:
        path = self.dir / name
        path.write_text(textwrap.dedent(text).lstrip())
        return path

    def build_and_run(self, source: Path, *flags: str, env: dict | None = None) -> subprocess.CompletedProcess:
        obj, exe = self.dir / (source.stem + ".o"), self.dir / source.stem
        done = run("compile", *flags, "-c", str(source), "-o", str(obj), env=env)
        self.assertEqual(done.returncode, 0, done.stderr)
        done = run("link", *flags, "-o", str(exe), str(obj), env=env)
        self.assertEqual(done.returncode, 0, done.stderr)
        return subprocess.run([str(exe)], capture_output=True, text=True, env=env)


class NeedsAGpu(Scratch):
    def assert_needs_gpu(self, done: subprocess.CompletedProcess, pattern: str) -> None:
        self.assertEqual(done.returncode, 3, done.stderr)
        self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)
        self.assertRegex(done.stderr.strip(), pattern)

    def test_matmul_fast_is_reported_as_inline_ptx_with_its_line(self):
        source = ROOT / "solution" / "kernels" / "matmul_fast.cu"
        line = first_line_with(source, "asm volatile")
        done = run("compile", *STARTER_INCLUDE, "-c", str(source), "-o", str(self.dir / "x.o"))
        self.assert_needs_gpu(done, rf"^needs a GPU: uses inline PTX at .*matmul_fast\.cu:{line}$")
        self.assertFalse((self.dir / "x.o").exists())

    def test_every_other_solution_kernel_and_planted_bug_is_runnable(self):
        sources = [p for p in (ROOT / "solution" / "kernels").glob("*.cu") if p.stem != "matmul_fast"]
        sources += list((ROOT / "solution" / "tests" / "planted").glob("*/*.cu"))
        done = run("scan", *STARTER_INCLUDE, *map(str, sources))
        self.assertEqual(done.returncode, 0, done.stderr)

    def test_ptx_only_in_comments_or_dead_code_is_not_reported(self):
        source = self.write("k.cu", """
            // asm("nop");  a comment
            #if 0
            __global__ void k() { asm volatile("nop;"); }
            #endif
            const char* s = "asm(";
            int main() { return 0; }
            """)
        self.assertEqual(run("scan", str(source)).returncode, 0)

    def test_ptx_behind_cuda_arch_counts_because_the_gpu_would_compile_it(self):
        source = self.write("k.cu", """
            __global__ void k(int* out) {
            #if __CUDA_ARCH__ >= 800
                asm volatile("membar.gl;");
            #endif
                out[0] = 1;
            }
            """)
        self.assert_needs_gpu(run("scan", str(source)), r"uses inline PTX at .*k\.cu:3$")

    def test_gpu_only_headers_libraries_and_functions_are_named(self):
        cases = {
            "#include <mma.h>\n": r"uses tensor cores \(<mma\.h>\) at .*h\.cu:1$",
            "// a GEMM\n\n#include <cublas_v2.h>\n": r"uses cuBLAS \(<cublas_v2\.h>\) at .*h\.cu:3$",
            "#include <cuda_fp16.h>\n": r"uses half precision \(<cuda_fp16\.h>\) at .*h\.cu:1$",
            "// a reduction\n#include <cub/cub.cuh>\n": r"uses <cub/cub\.cuh>, which the CPU backend does not provide at .*h\.cu:2$",
            "__global__ void k() { __nv_bfloat16 x; }\n": r"uses bfloat16 \(__nv_bfloat16\) at .*h\.cu:1$",
            "__global__ void k() { namespace cg = cooperative_groups; }\n": r"uses cooperative groups at .*h\.cu:1$",
        }
        for text, pattern in cases.items():
            with self.subTest(text=text):
                self.assert_needs_gpu(run("compile", "-c", str(self.write("h.cu", text)), "-o",
                                          str(self.dir / "h.o")), pattern)

    def test_ptx_hidden_in_a_macro_is_caught_when_the_assembler_cannot_read_it(self):
        source = self.write("m.cu", '#define FENCE asm volatile("membar.gl;")\n__global__ void k() { FENCE; }\n')
        done = run("compile", "-c", str(source), "-o", str(self.dir / "m.o"))
        self.assert_needs_gpu(done, r"uses inline PTX \(membar\.gl\) in .*m\.cu$")

    def test_a_kernel_launch_inside_a_kernel_is_dynamic_parallelism(self):
        source = self.write("d.cu", """
            __global__ void child() {}
            __global__ void parent() {
                child<<<1, 1>>>();
            }
            """)
        done = run("compile", "-c", str(source), "-o", str(self.dir / "d.o"))
        self.assert_needs_gpu(done, r"uses dynamic parallelism .* at .*d\.cu:3$")

    def test_a_cuda_function_the_backend_lacks_is_named_not_a_wall_of_errors(self):
        source = self.write("g.cu", """
            int main() {
                cudaGraph_t graph;
                cudaGraphCreate(&graph, 0);
            }
            """)
        done = run("compile", "-c", str(source), "-o", str(self.dir / "g.o"))
        self.assert_needs_gpu(done, r"uses cudaGraph_t, which the CPU backend does not emulate, at .*g\.cu:2$")


class CommandLine(Scratch):
    def test_bad_command_lines_get_one_line_and_exit_status_2(self):
        source = self.write("ok.cu", "int main() { return 0; }\n")
        cases = [
            ["frobnicate"],
            ["compile", "-c", str(self.dir / "missing.cu"), "-o", "x.o"],
            ["compile", "--bogus", "-c", str(source)],
            ["compile", str(source), "-o", str(self.dir / "x.o")],
            ["compile", "-c"],
            ["link", str(self.dir / "missing.o"), "-o", str(self.dir / "x")],
            ["compile", "-c", str(source), "-o"],
        ]
        for args in cases:
            with self.subTest(args=args):
                done = run(*args)
                self.assertEqual(done.returncode, 2, done.stderr)
                self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)
                self.assertNotIn("Traceback", done.stderr)

    def test_help(self):
        done = run("--help")
        self.assertEqual(done.returncode, 0)
        self.assertIn("needs a GPU", done.stdout)

    def test_a_students_syntax_error_shows_the_compilers_first_errors_and_exit_status_1(self):
        source = self.write("bad.cu", "__global__ void k(int* p) { p[0] = ; }\n" * 20)
        done = run("compile", "-c", str(source), "-o", str(self.dir / "bad.o"))
        self.assertEqual(done.returncode, 1)
        self.assertIn("bad.cu:1:", done.stderr)
        self.assertLessEqual(done.stderr.count("error:"), 6)
        self.assertIn("did not compile", done.stderr)

    def test_nvcc_flags_are_accepted(self):
        source = self.write("n.cu", "__global__ void k() {}\nint main() { k<<<1, 1>>>(); return cudaDeviceSynchronize(); }\n")
        done = run("compile", "-arch=sm_90", "-gencode", "arch=compute_90,code=[sm_90,compute_90]", "-lineinfo",
                   "-O3", "-Xcompiler", "-Wall,-Wextra", "-Xptxas=-v", "--use_fast_math", "-std=c++17", "--no-asan",
                   "-c", str(source), "-o", str(self.dir / "n.o"))
        self.assertEqual(done.returncode, 0, done.stderr)


class Rewrites(Scratch):
    def test_rewriting_keeps_every_line_where_it_was(self):
        sources = list((ROOT / "solution" / "kernels").glob("*.cu")) + list(TESTS.glob("**/*.cu"))
        sources += list((ROOT / "solution" / "tests" / "planted").glob("*/*.cu"))
        for source in sources:
            with self.subTest(source=source.name):
                text = source.read_text()
                self.assertEqual(rewrite(text).text.count("\n"), text.count("\n"))

    def test_cudas_unroll_pragma_compiles_without_a_warning_and_keeps_the_lines(self):
        """nvcc takes `#pragma unroll` silently; g++ warned "ignoring '#pragma unroll'" at each (the solution's
        transpose: four a build). Another unknown pragma still reaches the compiler, as nvcc passes it on."""
        source = self.write("u.cu", """
            __global__ void k(int* out) {
            #pragma unroll
                for (int i = 0; i < 4; ++i) out[i] = i;
              #  pragma   unroll 2
                for (int i = 4; i < 8; ++i) out[i] = i;
            #pragma not_a_cuda_pragma
            }
            int main() { int* d; cudaMalloc(&d, 8 * sizeof(int)); k<<<1, 1>>>(d);
                         int h[8]; cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
                         return h[7] == 7 ? 0 : 1; }
            """)
        obj = self.dir / "u.o"
        done = run("compile", "-Xcompiler", "-Wall", "-c", str(source), "-o", str(obj))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertNotIn("unroll", done.stderr)
        self.assertIn("not_a_cuda_pragma", done.stderr)  # -Wall's unknown-pragmas, at the student's own line
        self.assertIn("u.cu:6", done.stderr)
        text = rewrite(source.read_text()).text
        self.assertNotIn("unroll", text)
        self.assertEqual(text.count("\n"), source.read_text().count("\n"))
        self.assertEqual(self.build_and_run(source).returncode, 0)

    def test_a_shared_declaration_it_cannot_rewrite_stops_the_build_with_the_reason(self):
        source = self.write("m.cu", "#define DECL __shared__ float s[4]\n__global__ void k(float* o) { DECL; }\n")
        done = run("compile", "-c", str(source), "-o", str(self.dir / "m.o"))
        self.assertEqual(done.returncode, 1)
        self.assertRegex(done.stderr, r"m\.cu:2:\d+: error: cudacpu: this __shared__ declaration was not rewritten")

    def test_cuda_arch_code_takes_its_portable_branch(self):
        source = self.write("arch.cu", """
            #include <cstdio>
            __global__ void k(int* out) {
            #ifdef __CUDA_ARCH__
                out[0] = 1;
            #else
                out[0] = 2;
            #endif
            }
            int main() {
                int* d; cudaMalloc(&d, sizeof(int));
                k<<<1, 1>>>(d);
                int h = 0; cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
                std::printf("%d\\n", h);
            }
            """)
        self.assertEqual(self.build_and_run(source, "--no-asan").stdout.strip(), "2")

    def test_text_the_preprocessor_always_removes_need_not_balance(self):
        # An #if 0 group (nested #ifs in it too) and the #else of an #if 1 are gone on every configuration:
        # an unclosed ( or { there must not stop the build. A group behind a macro is kept (either may be taken).
        source = self.write("dead.cu", """
            #include <cstdio>
            #if 0
            asm(asm( {
            #ifdef X
            ] )
            #endif
            #else
            __global__ void k(int* out) { out[0] = 3; }
            #endif
            #if 1
            static int twice(int v) { return 2 * v; }
            #elif 0
            int broken( {
            #else
            int broken( {
            #endif
            int main() {
                int* d; cudaMalloc(&d, sizeof(int));
                k<<<1, 1>>>(d);
                int h = 0; cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
                std::printf("%d\\n", twice(h));
            }
            """)
        self.assertEqual(self.build_and_run(source, "--no-asan").stdout.strip(), "6")
        kept = self.write("kept.cu", "#ifdef X\nint f( {\n#endif\nint main() { return 0; }\n")
        done = run("compile", "-c", str(kept), "-o", str(self.dir / "kept.o"))
        self.assertEqual(done.returncode, 1)
        self.assertIn("is never closed", done.stderr)

    def test_namespace_scope_extern_shared_and_multi_declarator_shared(self):
        source = self.write("ns.cu", """
            #include <cstdio>
            extern __shared__ float dynamic_part[];
            __global__ void k(float* out) {
                __shared__ int a[4], b[4];
                a[threadIdx.x] = threadIdx.x; b[threadIdx.x] = 10 * threadIdx.x;
                dynamic_part[threadIdx.x] = 0.5f;
                __syncthreads();
                out[threadIdx.x] = a[3 - threadIdx.x] + b[threadIdx.x] + dynamic_part[3 - threadIdx.x];
            }
            int main() {
                float* d; cudaMalloc(&d, 4 * sizeof(float));
                k<<<1, 4, 4 * sizeof(float)>>>(d);
                float h[4]; cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
                std::printf("%g %g %g %g\\n", h[0], h[1], h[2], h[3]);
            }
            """)
        self.assertEqual(self.build_and_run(source, "--no-asan").stdout.split(), ["3.5", "12.5", "21.5", "30.5"])


class Toolchains(Scratch):
    PROGRAM = """
        #include <cstdio>
        __global__ void square(float* x, int n) {
            __shared__ float s[64];
            s[threadIdx.x] = x[threadIdx.x];
            __syncthreads();
            if (threadIdx.x < n) x[threadIdx.x] = s[threadIdx.x] * s[threadIdx.x];
        }
        int main() {
            float h[64]; for (int i = 0; i < 64; ++i) h[i] = i;
            float* d; cudaMalloc(&d, sizeof h);
            cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
            square<<<1, 64>>>(d, 64);
            cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
            std::printf("%g %s\\n", h[9], cudaGetErrorName(cudaGetLastError()));
        }
        """

    def test_builds_and_runs_with_clang(self):
        if not shutil.which("clang++"):
            self.skipTest("clang++ is not installed")
        env = dict(os.environ, CXX="clang++")
        done = self.build_and_run(self.write("c.cu", self.PROGRAM), env=env)
        self.assertEqual(done.stdout.strip(), "81 cudaSuccess", done.stderr)

    def test_builds_and_runs_where_no_cuda_toolkit_exists(self):
        """Every CUDA toolkit folder hidden by an empty one, and no nvcc on PATH."""
        if not shutil.which("bwrap"):
            self.skipTest("bubblewrap is not installed")
        hide = []
        for toolkit in sorted(Path("/usr/local").glob("cuda*")):
            hide += ["--tmpfs", str(toolkit.resolve())]
        source = self.write("t.cu", self.PROGRAM)
        runtime = CPU.parent / "build" / "cpu" / "libcudacpu.a"
        script = (f"! command -v nvcc && ! test -e /usr/local/cuda/include/cuda_runtime.h && "
                  f"{sys.executable} {CPU / 'cudacpu.py'} compile -c {source} -o {self.dir / 't.o'} && "
                  f"{sys.executable} {CPU / 'cudacpu.py'} link --runtime={runtime} -o {self.dir / 't'} "
                  f"{self.dir / 't.o'} && {self.dir / 't'}")
        done = subprocess.run(["bwrap", "--dev-bind", "/", "/", *hide, "--setenv", "PATH", "/usr/bin:/bin", "sh", "-c",
                               script], capture_output=True, text=True)
        if done.returncode != 0 and "bwrap:" in done.stderr:
            self.skipTest(f"bubblewrap cannot run here: {done.stderr.strip()}")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.strip().splitlines()[-1], "81 cudaSuccess")


class LaunchLimitOnABusyMachine(Scratch):
    """The launch time limit counts what the launch computed, not the wall clock: a correct kernel that a busy
    machine starves (make test beside two busy loops on its core) finishes, and one that never ends is still
    stopped, within three times the limit."""
    PROGRAM = """
        #include <cstdio>
        #include <cstdlib>
        __global__ void work(long long n, float* out) {
            float x = 0.5f;
            for (long long i = 0; i < n; ++i) x = x * 0.999f + 0.001f;
            volatile float spin = x;  // (a loop with no side effect may be removed)
            while (n < 0) spin = spin * 0.999f + 0.001f;           // n < 0: never done
            *out = x;
        }
        int main(int argc, char** argv) {
            float* out; cudaMalloc(&out, sizeof(float));
            work<<<1, 1>>>(std::atoll(argv[1]), out);
            std::printf("%s\\n", cudaGetErrorName(cudaDeviceSynchronize()));
        }
        """

    def test_a_starved_kernel_finishes_and_a_spinning_one_is_stopped(self):
        if not shutil.which("taskset"):
            self.skipTest("taskset is not installed")
        exe = self.dir / "work"
        obj = self.dir / "work.o"
        for step in (run("compile", "--no-asan", "-c", str(self.write("work.cu", self.PROGRAM)), "-o", str(obj)),
                     run("link", "--no-asan", "-o", str(exe), str(obj))):
            self.assertEqual(step.returncode, 0, step.stderr)

        def timed(steps: int, env: dict) -> tuple[str, float, float]:
            """(what the program printed, its CPU seconds, its wall seconds), on core 0."""
            import resource
            import time
            before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
            done = subprocess.run(["taskset", "-c", "0", str(exe), str(steps)], capture_output=True, text=True,
                                  env=env, timeout=120)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            return (done.stdout.strip() + done.stderr[-300:], after.ru_utime - before.ru_utime,
                    time.monotonic() - start)

        alone = dict(os.environ, CUDA_CPU_LAUNCH_TIMEOUT="60", CUDA_CPU_WORKERS="1")
        said, cpu, _ = timed(10**8, alone)
        self.assertEqual(said, "cudaSuccess")
        steps = int(10**8 * 0.4 / max(cpu, 0.01))  # about 0.4 s of computing: 1.2 s of wall on a third of a core
        limited = dict(alone, CUDA_CPU_LAUNCH_TIMEOUT="1")
        busy = [subprocess.Popen(["taskset", "-c", "0", sys.executable, "-c", "while True: pass"]) for _ in range(2)]
        try:
            said, cpu, wall = timed(steps, limited)
            self.assertEqual(said, "cudaSuccess", f"{cpu:.2f} s of CPU in {wall:.2f} s")
            self.assertGreater(wall, 1.0, "the busy loops did not slow it: this test shows nothing")
            said, cpu, wall = timed(-1, limited)
            self.assertIn("cudaErrorLaunchTimeout", said)
            self.assertLess(wall, 3.0 + 2.0)
        finally:
            for loop in busy:
                loop.kill()
                loop.wait()


class ChecksSeeTheGradedCode(Scratch):
    """The graded build (AddressSanitizer), the race checker's (ThreadSanitizer's instrumentation) and a build
    without either compile a task file to the same code: nothing the file reads tells them apart."""
    TELLS = """
        #if defined(__SANITIZE_THREAD__)
        int in_the_race_checker;
        #endif
        #if defined(__SANITIZE_ADDRESS__)
        int in_the_graded_build;
        #endif
        int every_build;
        """
    ENTRY = ROOT / "grader" / "tests" / "hostile" / "checker-build-told"

    def preprocessed(self, source: Path, *flags: str, env: dict | None = None) -> str:
        out = self.dir / "out.ii"
        done = run("compile", "-E", *flags, *STARTER_INCLUDE, "-c", str(source), "-o", str(out), env=env)
        self.assertEqual(done.returncode, 0, done.stderr)
        return out.read_text()

    def test_the_sanitizers_macros_are_undefined_in_every_build(self):
        source = self.write("tells.cu", self.TELLS)
        for flags in ((), ("--racecheck",), ("--no-asan",)):
            code = self.preprocessed(source, *flags)
            self.assertIn("every_build", code)
            self.assertNotIn("in_the_race_checker", code, flags)
            self.assertNotIn("in_the_graded_build", code, flags)
        # and in what the compiler itself is given: the objects define the same names
        names = []
        for flags in ((), ("--racecheck",)):
            obj = self.dir / f"tells{len(names)}.o"
            done = run("compile", *flags, *STARTER_INCLUDE, "-c", str(source), "-o", str(obj))
            self.assertEqual(done.returncode, 0, done.stderr)
            listed = subprocess.run(["nm", "--defined-only", str(obj)], capture_output=True, text=True).stdout
            names.append(sorted(n for n in re.findall(r" [BDC] (\w+)$", listed, re.M)))
        self.assertEqual(names[0], names[1])
        self.assertEqual(names[0], ["every_build"])

    def test_a_compiler_that_answers_has_feature_refuses_a_file_that_asks_it_and_names_the_line(self):
        for cxx in ("clang++", "clang++-19", "clang++-13"):
            if shutil.which(cxx):
                break
        else:
            self.skipTest("no clang++ here: GCC before 14 does not answer __has_feature")
        env = dict(os.environ, CXX=cxx)
        harness = ["-I", str(CPU.parent / "harness")]
        for flags in ((), ("--racecheck",)):
            done = run("compile", *flags, *STARTER_INCLUDE, *harness, "-c", str(self.ENTRY / "dot.cu"),
                       "-o", str(self.dir / "dot.o"), env=env)
            self.assertEqual(done.returncode, 1, done.stderr)
            line = first_line_with(self.ENTRY / "dot.cu", "*result += partial[0]")
            self.assertIn(f"dot.cu:{line}: error: this code is not the same in the race checker's build as in the "
                          f"graded one", done.stderr)
            self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)
            control = run("compile", *flags, *STARTER_INCLUDE, *harness, "-c", str(self.ENTRY / "honest" / "dot.cu"),
                          "-o", str(self.dir / "control.o"), env=env)
            self.assertEqual(control.returncode, 0, control.stderr)


if __name__ == "__main__":
    unittest.main()
