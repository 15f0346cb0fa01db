"""A synthetic benchmark record for the handout's and the tarball's tests.

The handout quotes handout/figures/bench.json, which only a real GPU run
produces. Tests must not depend on one (CI has no GPU) and must never pass a
made-up number off as measured, so this writes a record that says what it
is in its label and its device name, into a temporary folder, with tiny
placeholder PNGs. Nothing here is ever copied into the repository.
"""
from __future__ import annotations

import json
import struct
import tomllib
import zlib
from pathlib import Path

LABEL = "SYNTHETIC TEST FIXTURE - not a measurement"
DEVICE = "Synthetic H200 (test fixture, not a measurement)"  # must contain handout/gpu.toml's `match`
COPY_GBPS = 1234.5
CUBLAS_GFLOPS = 43210.0


def tiny_png(rgb: tuple[int, int, int]) -> bytes:
    """A valid 2x2 PNG of one colour: enough for pandoc to embed."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"".join(b"\x00" + bytes(rgb) * 2 for _ in range(2))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def write_synthetic_figures(folder: Path, registry: dict, rubric_path: Path) -> Path:
    """bench.json (every task's solution at its benchmark and timed shapes, one inverted naive row,
    pageable and pinned transfers) and the three plots; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    rubric = tomllib.loads(Path(rubric_path).read_text())
    rows = []
    for i, task in enumerate(registry["tasks"]):
        timed = rubric["tasks"].get(task["id"], {}).get("timed", [])
        for dtype in task["dtypes"]:
            for j, shape in enumerate(dict.fromkeys(task["shape_sets"]["timed"] + timed)):
                rows.append({"task": task["id"], "impl": "solution", "dtype": dtype, "shape": shape,
                             "size": j, "ms": 1.0 + i + j / 10, "throughput": 100.0 * (i + 1) + j,
                             "unit": task["metric"], "note": LABEL})
    naive = next(t for t in registry["tasks"] if t["id"] == "matmul_naive")
    coalesced = next(r for r in rows if r["task"] == naive["id"] and r["dtype"] == "float32")
    rows.append({**coalesced, "impl": "naive-inverted", "ms": coalesced["ms"] * 7.25,
                 "throughput": coalesced["throughput"] / 7.25})
    transfers = [{"memory": m, "direction": d, "bytes": b, "gbps": g * (1 if d == "host-to-device" else 0.9)}
                 for m, g in (("pageable", 11.5), ("pinned", 46.0))
                 for d in ("host-to-device", "device-to-host") for b in (1 << 20, 1 << 28)]
    record = {"device": {"name": DEVICE, "sm_clock_mhz": 1980, "copy_gbps": COPY_GBPS,
                         "cublas_fp32_gflops": CUBLAS_GFLOPS},
              "date": "1970-01-01", "label": LABEL, "rows": rows, "transfers": transfers}
    (folder / "bench.json").write_text(json.dumps(record, indent=1))
    for name, colour in (("matmul.png", (200, 30, 30)), ("memory.png", (30, 200, 30)),
                         ("transfers.png", (30, 30, 200))):
        (folder / name).write_bytes(tiny_png(colour))
    return folder
