#!/usr/bin/env python3
"""Builds and runs the CPU backend's tests: one command, no GPU, no CUDA toolkit.

    python3 starter/cpu/tests/run_tests.py            # everything (about a minute on 2 cores)
    python3 starter/cpu/tests/run_tests.py -- -tc="*shuffle*"   # doctest arguments after --
    CXX=clang++ python3 starter/cpu/tests/run_tests.py          # with clang

It compiles, through cudacpu.py, the solution's kernels (matmul_fast is
expected to be reported as needing a GPU), the planted bugs (each task
renamed so that they link beside the solution), the textbook kernels of
tests/kernels/ and the test files, links them into one doctest program and
runs it; then runs the driver's own tests (test_driver.py, test_messages.py).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CPU = TESTS.parent
STARTER = CPU.parent
ROOT = STARTER.parent
DRIVER = [sys.executable, str(CPU / "cudacpu.py")]
# One build folder per compiler, so that switching CXX does not rebuild everything.
_CXX = os.path.basename(os.environ.get("CXX", "g++").split()[0])
BUILD = STARTER / "build" / ("cpu-tests" if _CXX in ("g++", "c++") else f"cpu-tests-{_CXX}")
INCLUDES = ["-I", str(STARTER / "include"), "-I", str(TESTS)]

# The task each planted bug replaces, for renaming it beside the solution's.
PLANTED_TASK = {
    "element_never_written": "fill", "illegal_address": "add", "inverted_indexing": "matmul_naive",
    "missing_bounds_check": "matmul_tiled", "missing_syncthreads": "matmul_tiled", "never_returns": "fill",
    "race": "dot", "swapped_indices": "matmul_naive",
}


def jobs() -> list[tuple[Path, Path, list[str]]]:
    """(source, object, extra flags) of everything the main test program links."""
    out = []
    for src in sorted((ROOT / "solution" / "kernels").glob("*.cu")):
        if src.stem != "matmul_fast":
            out.append((src, BUILD / "solution" / f"{src.stem}.o", []))
    for folder in sorted((ROOT / "solution" / "tests" / "planted").iterdir()):
        # The planted bugs test_planted.cpp knows; the rest are run through the student suite on the
        # CPU by solution/tests/test_cpu_suite.py.
        if folder.is_dir() and folder.name in PLANTED_TASK:
            task = PLANTED_TASK[folder.name]
            src = next(folder.glob("*.cu"))
            out.append((src, BUILD / "planted" / f"{folder.name}.o", [f"-D{task}={folder.name}__{task}"]))
    for src in sorted((TESTS / "kernels").glob("*.cu")) + [TESTS / "gpu_reference" / "probe.cu"]:
        out.append((src, BUILD / "kernels" / f"{src.stem}.o", []))
    for src in sorted(TESTS.glob("test_*.cu")) + sorted(TESTS.glob("test_*.cpp")):
        if src.stem == "test_racecheck":
            continue
        # Test files are mostly doctest's macros, which take four times longer to
        # compile at -O2 than at -O0; doctest's own main needs no ASan at all.
        extra = ["--no-asan", "-O0"] if src.stem == "test_main" else ["-O0"]
        out.append((src, BUILD / "tests" / f"{src.stem}.o", extra))
    return out


def racecheck_jobs() -> list[tuple[Path, Path, list[str]]]:
    """The second program: kernels built with --racecheck (no ASan), and its tests."""
    out, rc = [], BUILD / "racecheck"
    for src in sorted((ROOT / "solution" / "kernels").glob("*.cu")):
        if src.stem != "matmul_fast":
            out.append((src, rc / f"{src.stem}.o", ["--racecheck"]))
    for folder, task in (("race", "dot"), ("missing_syncthreads", "matmul_tiled")):
        src = next((ROOT / "solution" / "tests" / "planted" / folder).glob("*.cu"))
        out.append((src, rc / f"{folder}.o", ["--racecheck", f"-D{task}={folder}__{task}"]))
    out.append((TESTS / "kernels" / "textbook.cu", rc / "textbook.o", ["--racecheck"]))
    out.append((TESTS / "test_racecheck.cpp", rc / "test_racecheck.o", ["--racecheck", "-O0"]))
    out.append((TESTS / "test_main.cpp", BUILD / "tests" / "test_main.o", ["--no-asan", "-O0"]))
    return out


def compile_one(job: tuple[Path, Path, list[str]]) -> tuple[Path, str | None]:
    src, obj, extra = job
    obj.parent.mkdir(parents=True, exist_ok=True)
    stamp = obj.with_suffix(".flags")
    flags = " ".join(extra) + " " + os.environ.get("CXX", "")
    if (obj.exists() and stamp.exists() and stamp.read_text() == flags
            and obj.stat().st_mtime > max(src.stat().st_mtime, newest_dependency())):
        return src, None
    stamp.unlink(missing_ok=True)
    done = subprocess.run([*DRIVER, "compile", *INCLUDES, *extra, "-c", str(src), "-o", str(obj)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return src, done.stderr or "failed"
    stamp.write_text(flags)
    return src, None


_NEWEST = None


def newest_dependency() -> float:
    """Objects are rebuilt when a header, the driver or a test header changed."""
    global _NEWEST
    if _NEWEST is None:
        files = [*CPU.glob("include/**/*.h"), *CPU.glob("driver/*.py"), CPU / "cudacpu.py", *TESTS.glob("*.h"),
                 *TESTS.glob("kernels/*.h"), *(STARTER / "include").glob("*.h")]
        _NEWEST = max(f.stat().st_mtime for f in files)
    return _NEWEST


def main(argv: list[str]) -> int:
    doctest_args = argv[argv.index("--") + 1:] if "--" in argv else []
    start = time.monotonic()
    lib = subprocess.run(["make", "-s", "--no-print-directory", "-f", str(CPU / "cpu.mk"), "-j2", "cudacpu-lib"],
                         cwd=STARTER)
    if lib.returncode != 0:
        return 1
    failures = []
    everything = {job[1]: job for job in jobs() + racecheck_jobs()}.values()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for src, error in pool.map(compile_one, everything):
            if error:
                failures.append(f"--- {src.relative_to(ROOT)}\n{error}")
    if failures:
        print("\n".join(failures), file=sys.stderr)
        print(f"{len(failures)} file(s) did not compile", file=sys.stderr)
        return 1
    program, racecheck = BUILD / "cpu_tests", BUILD / "cpu_tests_racecheck"
    link = subprocess.run([*DRIVER, "link", "-o", str(program), *(str(j[1]) for j in jobs())])
    link_rc = subprocess.run([*DRIVER, "link", "--racecheck", "-o", str(racecheck),
                              *(str(j[1]) for j in racecheck_jobs())])
    if link.returncode != 0 or link_rc.returncode != 0:
        return 1
    print(f"built in {time.monotonic() - start:.1f} s")
    # The driver's tests run beside the doctest programs: they mostly wait for compilers.
    driver = None
    if not doctest_args:
        driver = subprocess.Popen([sys.executable, "-m", "unittest", "-q", "test_driver", "test_messages"], cwd=TESTS,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    status = 0
    for exe in (program, racecheck):
        result = subprocess.run([str(exe), *doctest_args], cwd=TESTS).returncode
        print(f"{exe.name}: {'passed' if result == 0 else 'FAILED'} ({time.monotonic() - start:.1f} s so far)")
        status = status or result
    if driver:
        output, _ = driver.communicate()
        print(output.rstrip())
        print(f"test_driver.py, test_messages.py: {'passed' if driver.returncode == 0 else 'FAILED'}")
        status = status or driver.returncode
    print(f"total {time.monotonic() - start:.1f} s: {'all passed' if status == 0 else 'FAILURES'}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
