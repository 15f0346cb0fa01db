"""The CPU backend beyond this machine's g++ on x86-64: the solution built for the CPU (runtime, harness and kernels)
by Debian 12's oldest and newest clang, and by its aarch64 cross compiler and run under qemu-user, with
Boost.Context's fiber switch each time (CUDACPU_FIBERS=boost: no silent fallback to ucontext). Each build runs the
same checks (LIGHT_TASKS): the student suite on the tasks whose test shapes are light (all their shapes), and the
stored reference cases of every task the CPU runs through the harness (matmul_naive and matmul_tiled at 1x1x1,
5x7x3 and 17x33x29, barriers and all); with the newest clang, as `make test TASK=...` on those tasks, so clang's
AddressSanitizer and race-checking builds run too (those builds doubled the oldest clang's time for what the newest
one's already show: its sanitizer flags are the same, and what an old compiler can break, the language and the
runtime's fibers, is in the plain build). The whole suite on the solution is test_cpu_suite.py's, with g++: one
fact, tested once. starter/cpu/NEEDS.md's list of platforms quotes these runs.

Each build has its own folder (build/on-cpu-<compiler>, runtime library included), so nothing built by one
compiler is linked into another's program. The tools come from `make deps-portable`; without them these tests
skip, unless REQUIRE_PORTABLE_TESTS is set (CI's .ci/run sets it): then a missing tool is a failure."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import DATA, NPROC, ROOT, SOLUTION_KERNELS, STARTER, summary_line
from grader.tests.conftest import sandbox_unavailable

pytestmark = pytest.mark.slow  # builds the CPU backend with clang and the aarch64 cross compiler

REQUIRED = os.environ.get("REQUIRE_PORTABLE_TESTS", "") not in ("", "0")
# Debian 12's oldest and newest clang (its default, 14, and g++ 11 passed by hand: starter/cpu/README.md).
OLDEST_CLANG, NEWEST_CLANG = "clang++-13", "clang++-19"
# What `make deps-portable` unpacks for the cross build: Boost.Context for arm64 and the header libraries' links.
AARCH64_ROOT = ROOT / ".deps" / "aarch64" / "usr"
AARCH64_SYSROOT = "/usr/aarch64-linux-gnu"  # Debian's cross C library, where qemu finds the loader
# The tasks whose student-suite shapes are light; matmul_naive's and matmul_tiled's took 170 s of the whole suite's
# 246 s under qemu, and half of each clang's test run (about 50 s of CPU each, docs/ci-time.md): their stored cases
# (below) are what another compiler's code has to get right.
LIGHT_TASKS = ["add", "dot", "fill", "transpose"]
NEEDS_GPU = "matmul_fast"


def require(*tools: str, paths: tuple[Path, ...] = ()) -> None:
    missing = [t for t in tools if not shutil.which(t)] + [str(p) for p in paths if not p.exists()]
    if missing:
        why = f"{', '.join(missing)} not installed (make deps-portable)"
        if REQUIRED:
            pytest.fail(f"{why}, and REQUIRE_PORTABLE_TESTS is set: the portability tests must run here")
        pytest.skip(f"{why}; CI sets REQUIRE_PORTABLE_TESTS=1, so there it runs")


def build_folder(cxx: str) -> Path:
    """The build folder of `cxx` (its runtime library too); the solution's programs are in its solution/."""
    return STARTER / "build" / f"on-cpu-{cxx}"


def make_suite(cxx: str, target: str, *extra: str, timeout: float = 1500) -> subprocess.CompletedProcess:
    """`make <target>` of the CPU build of the solution with `cxx`, in a build folder of its own."""
    build = build_folder(cxx)
    return subprocess.run(["make", "-C", str(STARTER), f"-j{NPROC}", target, "CPU=1", f"KERNELS={SOLUTION_KERNELS}",
                           "KTAG=solution", f"DATA={DATA}", f"BUILD={build}", f"CUDACPU_BUILD={build / 'cpu'}",
                           f"CXX={cxx}", "CUDACPU_FIBERS=boost", *extra],
                          capture_output=True, text=True, timeout=timeout)


def every_stored_case_passes(harness: Path, prefix: list[str] = ()) -> None:
    """The harness (`prefix`: an emulator) on the stored reference cases of every task the CPU runs."""
    registry = json.loads((STARTER / "harness" / "registry.json").read_text())
    tasks = [t["id"] for t in registry["tasks"] if t["id"] != NEEDS_GPU]
    cases = subprocess.run([*prefix, str(harness), "--suite", "data", f"--data-dir={DATA}", f"--task={','.join(tasks)}"],
                           capture_output=True, text=True, timeout=900, cwd=STARTER)
    assert cases.returncode == 0, cases.stdout[-4000:] + cases.stderr[-3000:]
    counted = re.search(r"^(\d+) cases: (\d+) ok,", cases.stdout, re.M)
    assert counted and counted.group(1) == counted.group(2), cases.stdout[-3000:]
    for task in tasks:  # every one of them ran
        assert re.search(rf"^{task} .* ok\b", cases.stdout, re.M), task


def the_suite_and_every_stored_case_pass(cxx: str, prefix: list[str] = (), *make_args: str) -> float:
    """The student suite and the harness built by `cxx` (no sanitizer builds), then run (under `prefix`: an
    emulator): the suite on the light tasks, the harness on every stored case. Returns the build's seconds."""
    start = time.monotonic()
    out = build_folder(cxx) / "solution"
    suite, harness = out / "student_suite", out / "harness"
    result = make_suite(cxx, str(suite), str(harness), *make_args)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-3000:]
    built = time.monotonic() - start
    run = subprocess.run([*prefix, str(suite), f"--data-dir={DATA}", f"--task={','.join(LIGHT_TASKS)}"],
                         capture_output=True, text=True, timeout=900, cwd=STARTER)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-3000:]
    n = len(LIGHT_TASKS)
    assert summary_line(run.stdout) == f"{n}/{n} tasks pass", run.stdout[-3000:]
    every_stored_case_passes(harness, prefix)
    return built


def clang_made(cxx: str, *programs: str) -> None:
    """The programs are clang's own: its compiler's mark is in them (g++'s objects carry "GCC: (Debian ...)" only)."""
    version = cxx.rsplit("-", 1)[1]
    built = build_folder(cxx) / "solution"
    for program in programs:
        assert f"clang version {version}.".encode() in (built / program).read_bytes(), program


def test_the_cpu_build_by_the_oldest_clang_passes_the_suite_and_every_stored_case():
    require(OLDEST_CLANG)
    start = time.monotonic()
    the_suite_and_every_stored_case_pass(OLDEST_CLANG)
    clang_made(OLDEST_CLANG, "student_suite", "harness")
    print(f"{OLDEST_CLANG}: built, the suite and the stored cases on the CPU in {time.monotonic() - start:.0f} s")


def test_the_cpu_build_by_the_newest_clang_passes_make_test_and_every_stored_case():
    cxx = NEWEST_CLANG
    require(cxx)
    start = time.monotonic()
    result = make_suite(cxx, "test", f"TASK={','.join(LIGHT_TASKS)}")
    out = result.stdout
    assert result.returncode == 0, out[-4000:] + result.stderr[-3000:]
    n = len(LIGHT_TASKS)
    assert summary_line(out) == f"{n}/{n} tasks pass", out[-3000:]
    clang_made(cxx, "student_suite", "harness")
    every_stored_case_passes(build_folder(cxx) / "solution" / "harness")
    print(f"{cxx}: built, make test and the stored cases on the CPU in {time.monotonic() - start:.0f} s")


def test_student_suite_passes_on_aarch64_under_qemu():
    require("aarch64-linux-gnu-g++", "qemu-aarch64",
            paths=(AARCH64_ROOT / "lib" / "aarch64-linux-gnu" / "libboost_context.a", AARCH64_ROOT / "include" / "CLI"))
    cxx = "aarch64-linux-gnu-g++"
    start = time.monotonic()
    qemu = ["qemu-aarch64", "-L", AARCH64_SYSROOT]
    built = the_suite_and_every_stored_case_pass(cxx, qemu, "AR=aarch64-linux-gnu-ar", f"BOOST_ROOT={AARCH64_ROOT}",
                                                 f"DEPS_INCLUDE={AARCH64_ROOT / 'include'}")
    for program in ("student_suite", "harness"):
        header = (build_folder(cxx) / "solution" / program).read_bytes()[:20]
        assert header[:4] == b"\x7fELF" and int.from_bytes(header[18:20], "little") == 183, f"{program}: not AArch64"
    print(f"aarch64: built in {built:.0f} s, ran under qemu in {time.monotonic() - start - built:.0f} s")


def cpu_mk(*args: str, hide_boost: Path | None = None) -> subprocess.CompletedProcess:
    """make -f starter/cpu/cpu.mk; with hide_boost=DIR, in a read-only view of this machine whose Boost headers are
    an empty folder, with a private /tmp for the compiler, DIR (the build folder) writable, and the checkout
    visible wherever it is (a clone under /tmp too)."""
    command = ["make", "-s", "--no-print-directory", "-f", str(STARTER / "cpu" / "cpu.mk"), *args]
    if hide_boost is not None:
        if not shutil.which("bwrap"):
            sandbox_unavailable("bubblewrap is not installed (make deps installs it)")
        command = ["bwrap", "--ro-bind", "/", "/", "--tmpfs", "/usr/include/boost", "--dev", "/dev", "--proc", "/proc",
                   "--tmpfs", "/tmp", "--ro-bind", str(ROOT), str(ROOT), "--bind", str(hide_boost), str(hide_boost),
                   *command]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


# Prints the switch cpu.mk chose (its compiler flags) and the note the library's build would print.
FIBERS = "--eval=fibers: ; @echo '[$(strip $(CUDACPU_FIBER_FLAGS))] $(CUDACPU_FIBER_NOTE)'"


def test_the_runtime_switches_fibers_with_boost_context_where_it_is_installed(tmp_path):
    require(paths=(Path("/usr/include/boost/context/detail/fcontext.hpp"),))
    result = cpu_mk(FIBERS, f"CUDACPU_BUILD={tmp_path}", "fibers")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[-DCUDACPU_FIBERS_BOOST]", result.stdout


def test_without_boost_context_the_build_says_in_one_line_what_to_install(tmp_path):
    require(paths=(Path("/usr/include/boost/context/detail/fcontext.hpp"),))
    install = ("install Boost.Context (Debian/Ubuntu: sudo apt-get install libboost-context-dev; macOS: brew install "
               "boost) or set BOOST_ROOT=dir")
    # By default (Linux): the ucontext switch, and the note the library's build prints.
    fallback = cpu_mk(FIBERS, f"CUDACPU_BUILD={tmp_path}", "fibers", hide_boost=tmp_path)
    assert fallback.returncode == 0, fallback.stderr
    assert fallback.stdout.strip() == ("[] cudacpu: Boost.Context was not found: CUDA threads switch with <ucontext.h> "
                                       f"and __syncthreads() is 5-8 times slower; {install}"), fallback.stdout
    # Where Boost is required (CUDACPU_FIBERS=boost; macOS always): the build stops before compiling anything.
    required = cpu_mk(f"CUDACPU_BUILD={tmp_path}", "CUDACPU_FIBERS=boost", "cudacpu-lib", hide_boost=tmp_path)
    assert required.returncode != 0
    first = required.stderr.splitlines()[0]
    assert first.startswith("cudacpu: Boost.Context was not found (") and first.endswith(f"): {install}"), \
        required.stderr
    assert not list(tmp_path.glob("obj/*.o"))
