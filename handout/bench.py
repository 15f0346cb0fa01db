"""The measured record every number in the handout comes from: starter/bench/reference.json.

`make bench && make bench-reference` on the grading GPU write it (the
solution's bench.json, stamped with the solution it measured: handout/record.py,
which `make handout` asks first whether the record is today's). The handout
quotes it with the device and the date it was measured on, and draws its plots
from it. This module reads it and refuses one that lacks a field the handout
needs, naming the file and the field.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

class BenchError(ValueError):
    """A benchmark record the handout cannot use; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Device:
    name: str
    sm_clock_mhz: float
    copy_gbps: float
    cublas_fp32_gflops: float


@dataclass(frozen=True)
class Row:
    task: str
    impl: str  # student | solution | cublas | copy | cpu-simple | cpu-pretransposed | cpu-blocked | naive-inverted
    dtype: str
    shape: str
    ms: float
    throughput: float
    unit: str  # GFLOP/s or GB/s
    note: str

    @property
    def elements(self) -> int:
        """The product of the shape's sizes: how rows of one task are ordered by size."""
        product = 1
        for part in self.shape.split("x"):
            product *= int(part)
        return product


@dataclass(frozen=True)
class Transfer:
    memory: str  # pageable | pinned
    direction: str  # host-to-device | device-to-host
    bytes: int
    gbps: float


@dataclass(frozen=True)
class BenchRun:
    path: Path
    device: Device
    date: str
    label: str
    rows: tuple[Row, ...]
    transfers: tuple[Transfer, ...]


def load_bench(path: Path) -> BenchRun:
    path = Path(path)
    if not path.is_file():
        raise BenchError(f"{path} is missing: the handout quotes the solution's measured record "
                         f"(make bench && make bench-reference on the grading GPU write it)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BenchError(f"{path}: not valid JSON: {e}") from None
    return _parse(path, data)


def _parse(path: Path, data: object) -> BenchRun:
    def fail(where: str, why: str):
        raise BenchError(f"{path}: {where}: {why}")

    def field(obj: object, key: str, kind: type | tuple, where: str):
        if not isinstance(obj, dict) or key not in obj:
            fail(where, f"missing '{key}'")
        value = obj[key]
        if kind in (float, int) and isinstance(value, bool):
            fail(where, f"'{key}' must be a number, got {value!r}")
        if kind is float and isinstance(value, int):
            value = float(value)
        if not isinstance(value, kind):
            fail(where, f"'{key}' has the wrong type ({type(value).__name__})")
        return value

    device_d = field(data, "device", dict, "top level")
    device = Device(field(device_d, "name", str, "device"), field(device_d, "sm_clock_mhz", float, "device"),
                    field(device_d, "copy_gbps", float, "device"), field(device_d, "cublas_fp32_gflops", float, "device"))
    rows = []
    for i, r in enumerate(field(data, "rows", list, "top level")):
        where = f"rows[{i}]"
        if isinstance(r, dict) and r.get("ms") is None and r.get("throughput") is None:
            continue  # a size the bench skipped or did not run (its note says why): nothing measured to quote
        note = r.get("note") if isinstance(r, dict) else None
        rows.append(Row(field(r, "task", str, where), field(r, "impl", str, where), field(r, "dtype", str, where),
                        field(r, "shape", str, where), field(r, "ms", float, where),
                        field(r, "throughput", float, where), field(r, "unit", str, where),
                        note if isinstance(note, str) else ""))
        if not all(p.isdigit() and int(p) > 0 for p in rows[-1].shape.split("x")):
            fail(where, f"'shape' must look like 4096x4096x4096, got {rows[-1].shape!r}")
    transfers = []
    for i, t in enumerate(field(data, "transfers", list, "top level")):
        where = f"transfers[{i}]"
        transfers.append(Transfer(field(t, "memory", str, where), field(t, "direction", str, where),
                                  field(t, "bytes", int, where), field(t, "gbps", float, where)))
    return BenchRun(path, device, field(data, "date", str, "top level"), field(data, "label", str, "top level"),
                    tuple(rows), tuple(transfers))
