"""What one k-slab of matmul_fast costs in instructions, read from the compiled SASS (no GPU needed).

Each configuration is compiled for sm_90 and disassembled; the innermost loop that holds the block
barrier is one slab. A slab's FFMAs are the work; everything else issued in the slab (shared loads,
copies, address arithmetic, branches) takes issue slots from them. Static counts, not timings: a
candidate still has to be timed on a GPU (solution/lab/sweep.sh). A math loop left rolled inside
the slab is counted once per trip; a copy loop (no FFMA) only once, so version 1's looped copies
(UNROLLED_COPIES false) are undercounted by their repeated trips.

The configurations are the lab's (solution/lab/README.md): v<n> is version 1's VariantConfig<n>
(solution/lab/matmul_fast/v1_variants.cuh); a tile class's name (large, wide, medium: the shipped
ones in solution/kernels/matmul_fast.cu; medium16, small8, ...: the lab's, in
solution/lab/matmul_fast/classes.cu) is the shipped kernel at that class's tiles.

    python3 solution/tools/slab_mix.py v17 v31 large wide medium    # needs nvcc and cuobjdump on PATH
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
SHIPPED = ROOT / "solution" / "kernels" / "matmul_fast.cu"
LAB = ROOT / "solution" / "lab" / "matmul_fast"
CLASSES, V1_VARIANT, V1_TABLE = LAB / "classes.cu", LAB / "v1_variant.cu", LAB / "v1_variants.cuh"
INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,6})\*/\s+(?:@!?U?P[0-9T] )?([A-Z0-9_.]+)([^;]*);")


def sass(source: Path, arch: str, *defines: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        subprocess.run(["nvcc", "-std=c++17", "-O3", f"-arch={arch}", "-cubin", *defines,
                        f"-I{ROOT / 'starter' / 'include'}", f"-I{ROOT / 'starter' / 'harness'}", "-o", str(cubin),
                        str(source)], check=True)
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


def functions(listing: str) -> dict[str, str]:
    """cuobjdump's listing cut into {mangled name: its instructions}."""
    return {f.split("\n", 1)[0].strip(): f for f in re.split(r"\n\s+Function : ", listing)[1:]}


def version1(variant: int, arch: str) -> tuple[str, str, int]:
    """Version 1's configuration `variant`: (what it is, its 16-byte kernel's SASS, FFMAs per slab)."""
    config = re.compile(r"template <> struct VariantConfig<(\d+)> \{ using type = (KMajorA<)?Config<([^>]*)>")
    configs = {int(v): (kmajor, params) for v, kmajor, params in config.findall(V1_TABLE.read_text())}
    if variant not in configs:
        sys.exit(f"slab_mix: no VariantConfig<{variant}> in {V1_TABLE.relative_to(ROOT)}")
    kmajor, params = configs[variant]
    bk, tn = (int(x) for x in (params.split(",")[2], params.split(",")[5]))
    # The 16-byte path (Vec16 = true) is the one large products take.
    name, code = next((n, f) for n, f in functions(sass(V1_VARIANT, arch, f"-DMATMUL_FAST_VARIANT={variant}")).items()
                      if re.search(r"matmul_fast(_kmajor)?_kernel.*Lb1EEEvPKfS\d+_Pfiiiiiib$", n))
    return ("k-major a, " if kmajor else "") + params, code, bk * 8 * tn


def tile_classes() -> dict[str, list[int]]:
    """Every tile class's name -> its Tiles numbers (BM, BN, WARPS_M, WARPS_N, TN, MIN_BLOCKS[, BK])."""
    text = SHIPPED.read_text() + CLASSES.read_text()
    tiles = {alias: [int(x) for x in params.split(",")]
             for alias, params in re.findall(r"using (\w+) = Tiles<([^>]*)>;", text)}
    return {name: tiles[alias] for alias, name in re.findall(r'tile_class<(\w+)>\("(\w+)"', text)}


def shipped_kernel(name: str, numbers: list[int], listing: dict[str, str]) -> tuple[str, str, int]:
    """The shipped kernel at tile class `name`: (what it is, its SASS when a's rows are 16-byte aligned, FFMAs per slab)."""
    bm, bn, wm, wn, tn, blocks, *rest = numbers
    bk = rest[0] if rest else 16
    mangled = "TilesILi" + "ELi".join(str(x) for x in (bm, bn, wm, wn, tn, blocks, bk)) + "EEELb1E"
    code = next(f for n, f in listing.items() if mangled in n)
    return f"{name}: {bm} x {bn}, BK {bk}, {wm} x {wn} warps, TN {tn}", code, bk * 8 * tn


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="+", help="v<n> (version 1's VariantConfig<n>) or a tile class's name")
    parser.add_argument("--arch", default="sm_90")
    args = parser.parse_args()
    for tool in ("nvcc", "cuobjdump"):
        if not shutil.which(tool):
            sys.exit(f"slab_mix: {tool} is not on PATH (cuobjdump comes with the CUDA toolkit, "
                     "or from PyPI's nvidia-cuda-cuobjdump wheel)")
    classes = tile_classes()
    listing: dict[str, str] = {}
    print("config    what                                                 instructions/slab  FFMA share  LDS  copies  branches")
    for config in args.configs:
        if re.fullmatch(r"v\d+", config):
            label, code, ffma = version1(int(config[1:]), args.arch)
        elif config in classes:
            listing = listing or functions(sass(CLASSES, args.arch))
            label, code, ffma = shipped_kernel(config, classes[config], listing)
        else:
            sys.exit(f"slab_mix: {config} is neither v<n> nor a tile class ({', '.join(classes)})")
        s = slab(code, ffma_per_slab=ffma)  # a thread's 8 x TN FFMAs per k-step
        print(f"{config:<9} {label:<52} {s['issued']:>17}  {100 * s['ffma'] / s['issued']:>9.1f}%"
              f"  {s['lds']:>3}  {s['copies']:>6}  {s['bra']:>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
