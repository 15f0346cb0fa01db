"""Throughput, speedup and the share of a device limit: the one place these formulas are written.

A case's work is what the harness reports for one run (FLOPs for a GFLOP/s
task, bytes for a GB/s one); times are in milliseconds. Every function takes
plain numbers or pandas Series alike, so the feedback, the exports and the
leaderboard compute their columns with the same arithmetic.
"""
from __future__ import annotations

# The device limit each unit is rated against, as the solution's harness measures it (its `limits` reply).
LIMIT_KEYS = {"GFLOP/s": "sgemm_fp32_gflops", "GB/s": "copy_bandwidth_gbps"}
LIMIT_NAMES = {"GFLOP/s": "cuBLAS FP32", "GB/s": "copy bandwidth"}  # as a column header says it

_MS_PER_S = 1e3
_PER_GIGA = 1e9


def throughput(work, ms):
    """GFLOP/s or GB/s of one run that did `work` (FLOPs or bytes) in `ms` milliseconds."""
    return work / (ms / _MS_PER_S) / _PER_GIGA


def milliseconds(work, rate):
    """The time `work` takes at `rate` GFLOP/s or GB/s: throughput's inverse (for simulated runs)."""
    return work / (rate * _PER_GIGA) * _MS_PER_S


def speedup(solution_ms, student_ms):
    """How many times as fast as the solution: above 1 is faster."""
    return solution_ms / student_ms


def percent_of_limit(value, limit):
    """`value` as a percentage of the device limit `limit` (same unit); None when there is no limit."""
    if limit is None:
        return None
    return 100 * value / limit


def device_limit(limits: dict, unit: str) -> float | None:
    """The measured limit a throughput in `unit` is rated against, from a grading run's limits; None if absent."""
    value = limits.get(LIMIT_KEYS.get(unit, ""))
    return float(value) if value else None


def limit_name(unit: str) -> str:
    """What a throughput in `unit` is rated against, in words ("cuBLAS FP32", "copy bandwidth")."""
    return LIMIT_NAMES.get(unit, "the device limit")
