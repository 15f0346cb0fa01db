#!/usr/bin/env python3
"""Times the solution's kernels on the CPU backend, with and without
AddressSanitizer (bench_kernels.cpp lists the shapes), or what one
__syncthreads() costs each CUDA thread (bench_barrier.cu).

    python3 starter/cpu/tests/bench.py [kernel]                  e.g. bench.py matmul_tiled
    python3 starter/cpu/tests/bench.py barrier                   the cost of a barrier
    python3 starter/cpu/tests/bench.py --fibers=ucontext barrier with the C library's fiber switch

--fibers=boost (the default) or ucontext builds the runtime with that fiber
switch (cpu.mk's CUDACPU_FIBERS) in a folder of its own.
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


def runtime(fibers: str) -> Path:
    out = BUILD / f"runtime-{fibers}"
    subprocess.run(["make", "-s", "--no-print-directory", "-f", str(CPU / "cpu.mk"), f"CUDACPU_BUILD={out}",
                    f"CUDACPU_FIBERS={fibers}", "-j2", "cudacpu-lib"], check=True)
    return out / "libcudacpu.a"


def build(asan: bool, lib: Path, barrier: bool) -> Path:
    flavor = "asan" if asan else "fast"
    out = BUILD / flavor
    out.mkdir(parents=True, exist_ok=True)
    flags = [] if asan else ["--no-asan"]
    objects = []
    sources = [TESTS / "bench_barrier.cu"] if barrier else \
        [ROOT / "solution" / "kernels" / f"{k}.cu" for k in KERNELS] + [TESTS / "bench_kernels.cpp"]
    for src in sources:
        obj = out / f"{src.stem}.o"
        if not obj.exists() or obj.stat().st_mtime < src.stat().st_mtime:
            subprocess.run([*DRIVER, "compile", *flags, "-I", str(CPU.parent / "include"), "-c", str(src), "-o",
                            str(obj)], check=True)
        objects.append(str(obj))
    program = out / f"{'bench_barrier' if barrier else 'bench_kernels'}-{lib.parent.name}"
    subprocess.run([*DRIVER, "link", *flags, f"--runtime={lib}", "-o", str(program), *objects], check=True)
    return program


def main(argv: list[str]) -> int:
    fibers = next((a.split("=", 1)[1] for a in argv if a.startswith("--fibers=")), "boost")
    if fibers not in ("boost", "ucontext"):
        print(f"--fibers={fibers}: the fiber switch is boost or ucontext", file=sys.stderr)
        return 2
    args = [a for a in argv if not a.startswith("--fibers=")]
    barrier = args == ["barrier"]
    lib = runtime(fibers)
    for asan in (False, True):
        program = build(asan, lib, barrier)
        subprocess.run([str(program), *([] if barrier else args)], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
