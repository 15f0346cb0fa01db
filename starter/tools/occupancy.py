"""Occupancy on the grading GPU: how many blocks of a kernel fit on one SM, and why.

The limits come from gpu.toml beside this file (the one place they are written,
with their sources). Two readers: the handout's worked examples (handout/render.py
calls `occupancy()`, so every number in them is computed, not typed) and `make
profile` (tools/profile.py), which ships in the students' tarball with this file:
standard library only.
"""
from __future__ import annotations

import math
try:
    import tomllib
except ImportError:  # Python before 3.11: the same parser from PyPI, where installed
    try:
        import tomli as tomllib
    except ImportError:
        tomllib = None
from dataclasses import dataclass
from pathlib import Path

GPU_FILE = Path(__file__).resolve().parent / "gpu.toml"


class GpuError(ValueError):
    pass


@dataclass(frozen=True)
class SmLimits:
    warp_size: int
    max_threads: int
    max_warps: int
    max_blocks: int
    max_threads_per_block: int
    registers: int
    max_registers_per_thread: int
    register_unit: int
    shared_memory_kb: int
    max_shared_memory_per_block_kb: int
    reserved_shared_memory_per_block_kb: int


@dataclass(frozen=True)
class Gpu:
    name: str
    match: str
    compute_capability: str
    sms: int
    source: str
    sm: SmLimits


@dataclass(frozen=True)
class Occupancy:
    threads: int
    registers_per_thread: int
    shared_kb: float
    warps_per_block: int
    registers_per_block: int  # after rounding each warp's registers up to the allocation unit
    by_threads: int  # blocks per SM each limit allows on its own
    by_registers: int
    by_shared: int
    by_blocks: int
    blocks: int  # the smallest of them
    limiter: str

    @property
    def warps(self) -> int:
        return self.blocks * self.warps_per_block

    def percent(self, gpu: Gpu) -> float:
        return 100.0 * self.warps / gpu.sm.max_warps


def load_gpu(path: Path = GPU_FILE) -> Gpu:
    if tomllib is None:
        raise GpuError(f"{path}: reading it needs Python 3.11 or later (or: pip install tomli)")
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        g, sm = data["gpu"], data["sm"]
        return Gpu(str(g["name"]), str(g["match"]), str(g["compute_capability"]), int(g["sms"]), str(g["source"]),
                   SmLimits(**{k: int(v) for k, v in sm.items()}))
    except FileNotFoundError:
        raise GpuError(f"{path}: no such file") from None
    except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as e:
        raise GpuError(f"{path}: not a valid GPU description ({type(e).__name__}: {e})") from None


def occupancy(gpu: Gpu, threads: int, registers_per_thread: int, shared_kb: float) -> Occupancy:
    """Resident blocks per SM for a kernel with this block size, register count and shared memory per block."""
    sm = gpu.sm
    if not 1 <= threads <= sm.max_threads_per_block:
        raise ValueError(f"a block has 1 to {sm.max_threads_per_block} threads, not {threads}")
    if not 1 <= registers_per_thread <= sm.max_registers_per_thread:
        raise ValueError(f"a thread uses 1 to {sm.max_registers_per_thread} registers, not {registers_per_thread}")
    if shared_kb > sm.max_shared_memory_per_block_kb:
        raise ValueError(f"a block has at most {sm.max_shared_memory_per_block_kb} KB of shared memory")
    warps = math.ceil(threads / sm.warp_size)
    per_warp = math.ceil(registers_per_thread * sm.warp_size / sm.register_unit) * sm.register_unit
    per_block = per_warp * warps
    limits = {
        "threads": sm.max_threads // (warps * sm.warp_size),
        "registers": sm.registers // per_block,
        # Every block also takes the system's reserved kilobyte, even one that declares no shared memory.
        "shared memory": math.floor(sm.shared_memory_kb / (shared_kb + sm.reserved_shared_memory_per_block_kb)),
        "blocks": sm.max_blocks,
    }
    blocks = min(limits.values())
    limiter = next(name for name, n in limits.items() if n == blocks)
    return Occupancy(threads, registers_per_thread, shared_kb, warps, per_block, limits["threads"], limits["registers"],
                     limits["shared memory"], limits["blocks"], blocks, limiter)
