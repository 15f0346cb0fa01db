"""What one k-slab of matmul_fast costs in instructions, read from the compiled SASS (no GPU needed).

Each configuration (solution/kernels/matmul_fast.cu, VariantConfig) is compiled for sm_90 and
disassembled; the innermost loop that holds the block barrier is one slab. A slab's FFMAs are the
work; everything else issued in the slab (shared loads, copies, address arithmetic, branches) takes
issue slots from them. Static counts, not timings: a candidate still has to be timed on a GPU. A
math loop left rolled inside the slab is counted once per trip; a copy loop (no FFMA) only once,
so the looped copies (UNROLLED_COPIES false) are undercounted by their repeated trips.

    python3 solution/tools/slab_mix.py 17 19 20     # needs nvcc and cuobjdump on PATH
"""
from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "solution" / "kernels" / "matmul_fast.cu"
INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,6})\*/\s+(?:@!?U?P[0-9T] )?([A-Z0-9_.]+)([^;]*);")


def sass(variant: int, arch: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        subprocess.run(["nvcc", "-std=c++17", "-O3", f"-arch={arch}", "-cubin", f"-DMATMUL_FAST_VARIANT={variant}",
                        f"-I{ROOT / 'starter' / 'include'}", f"-I{ROOT / 'starter' / 'harness'}", "-o", str(cubin),
                        str(KERNEL)], check=True)
        return subprocess.run(["cuobjdump", "-sass", str(cubin)], check=True, capture_output=True, text=True).stdout


def loops_within(instructions, lo: int, hi: int) -> list[tuple[int, int]]:
    """Backward branches inside [lo, hi]: the loops there, as (start, end) addresses."""
    loops = []
    for addr, op, rest in instructions:
        target = re.search(r"0x([0-9a-f]+)", rest) if op.startswith("BRA") else None
        if target and lo <= int(target.group(1), 16) < addr <= hi:
            loops.append((int(target.group(1), 16), addr))
    return loops


def slab(function: str, ffma_per_slab: int) -> dict[str, float]:
    """The slab loop of one disassembled kernel: instructions issued per slab, FFMAs and the others."""
    instructions = [(int(m.group(1), 16), m.group(2), m.group(3)) for m in INSTRUCTION.finditer(function)]
    barriers = [a for a, op, _ in instructions if op.startswith("BAR.SYNC")]
    loops = loops_within(instructions, 0, 1 << 30)
    slab_loops = [l for l in loops if any(l[0] <= b <= l[1] for b in barriers)]
    if not slab_loops:
        raise ValueError("no loop in this kernel holds a block barrier: it has no k-slab loop to count")
    outer = min(slab_loops, key=lambda l: l[1] - l[0])
    body = [(a, op) for a, op, _ in instructions if outer[0] <= a <= outer[1]]
    ffma = sum(op.startswith("FFMA") for _, op in body)
    # A math loop left rolled inside the slab runs (FFMAs a slab needs) / (FFMAs in its body) times.
    inner = [l for l in loops_within(instructions, outer[0] + 1, outer[1] - 1)
             if any(op.startswith("FFMA") for a, op in body if l[0] <= a <= l[1])]
    issued = len(body)
    counts = collections.Counter(op.split(".")[0] for _, op in body)
    if inner:
        lo, hi = max(inner, key=lambda l: l[1] - l[0])
        inner_body = [op for a, op in body if lo <= a <= hi]
        inner_ffma = sum(op.startswith("FFMA") for op in inner_body)
        outside_ffma = ffma - inner_ffma
        needed = ffma_per_slab - outside_ffma
        trips = needed // inner_ffma
        issued = len(body) + (trips - 1) * len(inner_body)
        for op in inner_body:
            counts[op.split(".")[0]] += trips - 1
        ffma = ffma_per_slab
    return {"ffma": ffma, "issued": issued, "lds": counts["LDS"], "copies": counts["LDGSTS"], "bra": counts["BRA"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("variants", nargs="+", type=int, help="VariantConfig numbers")
    parser.add_argument("--arch", default="sm_90")
    args = parser.parse_args()
    for tool in ("nvcc", "cuobjdump"):
        if not shutil.which(tool):
            sys.exit(f"slab_mix: {tool} is not on PATH (cuobjdump comes with the CUDA toolkit, "
                     "or from PyPI's nvidia-cuda-cuobjdump wheel)")
    config = re.compile(r"template <> struct VariantConfig<(\d+)> \{ using type = (KMajorA<)?Config<([^>]*)>")
    # VariantConfig number -> (what it is, in words; its first six Config numbers: BM, BN, BK, WARPS_M, WARPS_N, TN)
    configs = {int(v): (("k-major a, " if kmajor else "") + params, [int(x) for x in params.split(",")[:6]])
               for v, kmajor, params in config.findall(KERNEL.read_text())}
    print("variant  config                                               instructions/slab  FFMA share  LDS  copies  branches")
    for v in args.variants:
        if v not in configs:
            sys.exit(f"slab_mix: no VariantConfig<{v}> in {KERNEL.relative_to(ROOT)}")
        label, numbers = configs[v]
        bk, tn = numbers[2], numbers[5]
        functions = re.split(r"\n\s+Function : ", sass(v, args.arch))[1:]
        # The 16-byte path (Vec16 = true) is the one large products take.
        vec16 = next(f for f in functions if re.search(r"matmul_fast(_kmajor)?_kernel.*Lb1EEEvPKfS\d+_Pfiiiiiib$",
                                                        f.split("\n", 1)[0].rstrip()))
        s = slab(vec16, ffma_per_slab=bk * 8 * tn)  # a thread's 8 x TN FFMAs per k-step
        print(f"{v:>7}  {label:<52} {s['issued']:>17}  {100 * s['ffma'] / s['issued']:>9.1f}%"
              f"  {s['lds']:>3}  {s['copies']:>6}  {s['bra']:>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
