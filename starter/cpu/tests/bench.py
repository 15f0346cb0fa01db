#!/usr/bin/env python3
"""Times the solution's kernels on the CPU backend, with and without
AddressSanitizer (bench_kernels.cpp lists the shapes).

    python3 starter/cpu/tests/bench.py [kernel]     e.g. bench.py matmul_tiled
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CPU = TESTS.parent
ROOT = CPU.parent.parent
BUILD = CPU.parent / "build" / "cpu-bench"
DRIVER = [sys.executable, str(CPU / "cudacpu.py")]
KERNELS = ["fill", "add", "transpose", "matmul_naive", "matmul_tiled", "dot"]


def build(asan: bool) -> Path:
    flavor = "asan" if asan else "fast"
    out = BUILD / flavor
    out.mkdir(parents=True, exist_ok=True)
    flags = [] if asan else ["--no-asan"]
    objects = []
    sources = [ROOT / "solution" / "kernels" / f"{k}.cu" for k in KERNELS] + [TESTS / "bench_kernels.cpp"]
    for src in sources:
        obj = out / f"{src.stem}.o"
        if not obj.exists() or obj.stat().st_mtime < src.stat().st_mtime:
            subprocess.run([*DRIVER, "compile", *flags, "-I", str(CPU.parent / "include"), "-c", str(src), "-o",
                            str(obj)], check=True)
        objects.append(str(obj))
    program = out / "bench_kernels"
    subprocess.run([*DRIVER, "link", *flags, "-o", str(program), *objects], check=True)
    return program


def main(argv: list[str]) -> int:
    for asan in (False, True):
        program = build(asan)
        subprocess.run([str(program), *argv], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
