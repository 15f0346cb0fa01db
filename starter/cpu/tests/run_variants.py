#!/usr/bin/env python3
"""Runs the CPU backend's tests on the other fiber implementations:

    python3 starter/cpu/tests/run_variants.py ucontext   # <ucontext.h> instead of Boost.Context's switch
    python3 starter/cpu/tests/run_variants.py aarch64    # Boost.Context on AArch64, cross-built, under qemu

aarch64 needs Debian's g++-aarch64-linux-gnu, qemu-user and Boost.Context
for arm64 in .deps/aarch64 (all three: `make deps-portable` at the top).
Both variants build without AddressSanitizer (the tests that need it are
skipped) and leave out the race checker's program; run_tests.py is the full
run.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CPU = TESTS.parent
STARTER = CPU.parent
ROOT = STARTER.parent
DRIVER = [sys.executable, str(CPU / "cudacpu.py")]

SOURCES = [*(p for p in (ROOT / "solution" / "kernels").glob("*.cu") if p.stem != "matmul_fast"),
           TESTS / "kernels" / "textbook.cu", TESTS / "gpu_reference" / "probe.cu",
           TESTS / "test_solution_kernels.cpp", TESTS / "test_textbook.cpp", TESTS / "test_gpu_reference.cpp",
           TESTS / "test_atomics_and_schedules.cu", TESTS / "test_runtime_api.cu", TESTS / "test_diagnostics.cu",
           TESTS / "test_main.cpp"]


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("ucontext", "aarch64"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    variant = argv[0]
    build = STARTER / "build" / f"cpu-{variant}"
    env = dict(os.environ)
    make = ["make", "-s", "--no-print-directory", "-f", str(CPU / "cpu.mk"), f"CUDACPU_BUILD={build}", "-j2",
            "cudacpu-lib"]
    runner: list[str] = []
    headers: list[str] = []
    if variant == "aarch64":
        for tool in ("aarch64-linux-gnu-g++", "qemu-aarch64"):
            if not shutil.which(tool):
                print(f"{tool} is not installed (Debian: g++-aarch64-linux-gnu, qemu-user)", file=sys.stderr)
                return 2
        env["CXX"] = "aarch64-linux-gnu-g++"
        env["QEMU_LD_PREFIX"] = "/usr/aarch64-linux-gnu"
        make += ["CXX=aarch64-linux-gnu-g++", "AR=aarch64-linux-gnu-ar", "CUDACPU_FIBERS=boost",
                 f"BOOST_ROOT={ROOT / '.deps' / 'aarch64' / 'usr'}"]
        runner = ["qemu-aarch64"]
        headers = ["-isystem", str(ROOT / ".deps" / "aarch64" / "usr" / "include")]  # doctest, for the cross compiler
    else:
        make += ["CUDACPU_FIBERS=ucontext"]
    if subprocess.run(make, env=env).returncode != 0:
        return 1
    objects = build / "tests"
    objects.mkdir(parents=True, exist_ok=True)

    def compile_one(src: Path) -> str | None:
        done = subprocess.run([*DRIVER, "compile", "--no-asan", "-O1", "-I", str(STARTER / "include"), "-I",
                               str(TESTS), *headers, "-c", str(src), "-o", str(objects / f"{src.name}.o")],
                              capture_output=True, text=True, env=env)
        return None if done.returncode == 0 else done.stderr

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        errors = [e for e in pool.map(compile_one, SOURCES) if e]
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    program = build / "cpu_tests"
    link = subprocess.run([*DRIVER, "link", "--no-asan", f"--runtime={build / 'libcudacpu.a'}", "-o", str(program),
                           *(str(objects / f"{s.name}.o") for s in SOURCES)], env=env)
    if link.returncode != 0:
        return 1
    return subprocess.run([*runner, str(program)], cwd=TESTS, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
