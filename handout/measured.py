"""The measured numbers the handout quotes, each picked out of one benchmark run.

The background sections need a few comparisons that only a measurement can
give (coalesced against inverted indexing, pageable against pinned copies,
the solution against the copy bandwidth and cuBLAS). Each comes with the rows
it was computed from, so the text can name the shape and type. A comparison
the text cannot do without raises BenchError naming the rows it looked for;
the per-task figures are optional and come back as None when the run did not
measure that shape.
"""
from __future__ import annotations

from dataclasses import dataclass

from handout.bench import BenchError, BenchRun, Row, Transfer


@dataclass(frozen=True)
class Coalescing:
    coalesced: Row
    inverted: Row

    @property
    def slowdown(self) -> float:
        return self.inverted.ms / self.coalesced.ms


@dataclass(frozen=True)
class TransferPair:
    direction: str
    pageable: Transfer
    pinned: Transfer

    @property
    def ratio(self) -> float:
        return self.pinned.gbps / self.pageable.gbps


@dataclass(frozen=True)
class SolutionFigure:
    row: Row
    limit_name: str  # "copy bandwidth" or "cuBLAS FP32"
    limit: float

    @property
    def percent(self) -> float:
        return 100.0 * self.row.throughput / self.limit


def _largest(rows: list[Row]) -> Row:
    # float32 first (the type the timing and the plots centre on), then the largest shape.
    return max(rows, key=lambda r: (r.dtype == "float32", r.elements))


def coalescing(run: BenchRun) -> Coalescing:
    pairs = []
    for inverted in (r for r in run.rows if r.impl == "naive-inverted"):
        for coalesced in run.rows:
            if (coalesced.impl == "solution" and coalesced.task == inverted.task
                    and coalesced.dtype == inverted.dtype and coalesced.shape == inverted.shape):
                pairs.append(Coalescing(coalesced, inverted))
    if not pairs:
        raise BenchError(f"{run.path}: no 'naive-inverted' row with a 'solution' row of the same task, type and "
                         f"shape: the handout's coalescing section compares the two")
    return max(pairs, key=lambda p: (p.inverted.dtype == "float32", p.inverted.elements))


def transfers(run: BenchRun) -> list[TransferPair]:
    """Pageable against pinned, per direction, at the largest size measured in both; host-to-device first."""
    pairs = []
    for direction in ("host-to-device", "device-to-host"):
        by_memory = {m: {t.bytes: t for t in run.transfers if t.memory == m and t.direction == direction}
                     for m in ("pageable", "pinned")}
        common = set(by_memory["pageable"]) & set(by_memory["pinned"])
        if common:
            size = max(common)
            pairs.append(TransferPair(direction, by_memory["pageable"][size], by_memory["pinned"][size]))
    if not pairs or pairs[0].direction != "host-to-device":
        raise BenchError(f"{run.path}: no host-to-device transfer measured with both pageable and pinned memory "
                         f"at the same size: the handout's transfer section compares the two")
    return pairs


def limit_for(run: BenchRun, unit: str) -> tuple[str, float]:
    if unit == "GB/s":
        return "copy bandwidth", run.device.copy_gbps
    if unit == "GFLOP/s":
        return "cuBLAS FP32", run.device.cublas_fp32_gflops
    raise BenchError(f"{run.path}: unknown throughput unit {unit!r} (expected GB/s or GFLOP/s)")


def solution_figures(run: BenchRun, task_ids: list[str]) -> list[SolutionFigure]:
    """Each task's solution at its largest measured shape, against the device's limit, in registry order."""
    figures = []
    for task in task_ids:
        rows = [r for r in run.rows if r.impl == "solution" and r.task == task]
        if not rows:
            raise BenchError(f"{run.path}: no 'solution' row for task {task!r}: the handout compares every "
                             f"task's solution with the device's limits")
        row = _largest(rows)
        name, limit = limit_for(run, row.unit)
        figures.append(SolutionFigure(row, name, limit))
    return figures


def solution_at(run: BenchRun, task: str, dtype: str, shape: str) -> Row | None:
    """The solution's row at exactly this type and shape, if the run measured it."""
    return next((r for r in run.rows if r.impl == "solution" and r.task == task and r.dtype == dtype
                 and r.shape == shape), None)


def cpu_comparison(run: BenchRun) -> tuple[list[Row], Row] | None:
    """The CPU versions and the GPU solution of the same task at the largest shape measured for all of them."""
    cpu = [r for r in run.rows if r.impl.startswith("cpu-")]
    best = None
    for gpu in (r for r in run.rows if r.impl == "solution"):
        same = [r for r in cpu if (r.task, r.dtype, r.shape) == (gpu.task, gpu.dtype, gpu.shape)]
        if same and (best is None or gpu.elements > best[1].elements):
            best = (sorted(same, key=lambda r: r.throughput), gpu)
    return best
