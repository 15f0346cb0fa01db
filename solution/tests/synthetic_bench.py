"""A synthetic measured record for the handout's and the tarball's tests.

The handout quotes starter/bench/reference.json, which only a GPU run of the
solution produces (make bench && make bench-reference). Tests must not depend
on one (CI has no GPU; the committed record may be stale until it is measured
again) and must never pass a made-up number off as measured, so this writes a
record that says what it is in its device name and in every row's note, into
a temporary folder. It has bench.schema.json's layout, so plot_bench.py draws
its plots as it would a real one. Nothing here is ever copied into the
repository.
"""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

from conftest import SOLUTION_KERNELS

from handout.record import Provenance, combined_sha256, solution_files

LABEL = "SYNTHETIC TEST FIXTURE - not a measurement"
# Must contain starter/tools/gpu.toml's `match`; "SYNTHETIC" keeps it out of the repository (test_bench_plot.py).
DEVICE = "SYNTHETIC NVIDIA H100 80GB HBM3 (test fixture, not a measurement)"
DATE = "1970-01-01T00:00:00Z"
COPY_GBPS = 1234.5
CUBLAS_GFLOPS = 43210.0
HARNESS_VERSION = "0.0.0-synthetic"


def side(shape: str) -> int:
    """The size a bench row carries: the side of a cube (or square) holding as many elements as the shape."""
    dims = [int(p) for p in shape.split("x")]
    product = 1
    for d in dims:
        product *= d
    return max(1, round(product ** (1 / len(dims))))


def synthetic_bench(registry: dict, rubric_path: Path) -> dict:
    """bench.json as the top-level make bench writes it (label "solution"): every task's solution at its
    timed shapes and the rubric's, one inverted naive row, pageable and pinned transfers."""
    rubric = tomllib.loads(Path(rubric_path).read_text())
    rows = []
    for i, task in enumerate(registry["tasks"]):
        timed = rubric["tasks"].get(task["id"], {}).get("timed", [])
        for dtype in task["dtypes"]:
            for j, shape in enumerate(dict.fromkeys(task["shape_sets"]["timed"] + timed)):
                rows.append({"task": task["id"], "impl": "solution", "dtype": dtype, "shape": shape,
                             "size": side(shape), "ms": 1.0 + i + j / 10, "throughput": 100.0 * (i + 1) + j,
                             "unit": task["metric"], "note": LABEL})
    naive = next(t for t in registry["tasks"] if t["id"] == "matmul_naive")
    coalesced = next(r for r in rows if r["task"] == naive["id"] and r["dtype"] == "float32")
    rows.append({**coalesced, "impl": "naive-inverted", "ms": coalesced["ms"] * 7.25,
                 "throughput": coalesced["throughput"] / 7.25})
    transfers = [{"memory": m, "direction": d, "bytes": b, "gbps": g * (1 if d == "host-to-device" else 0.9)}
                 for m, g in (("pageable", 11.5), ("pinned", 46.0))
                 for d in ("host-to-device", "device-to-host") for b in (1 << 20, 1 << 28)]
    return {"device": {"name": DEVICE, "sm_clock_mhz": 1980, "copy_gbps": COPY_GBPS,
                       "cublas_fp32_gflops": CUBLAS_GFLOPS},
            "date": DATE, "label": "solution", "rows": rows, "transfers": transfers}


def provenance(kernels: Path = SOLUTION_KERNELS) -> Provenance:
    files = solution_files(kernels)
    return Provenance(combined_sha256(files), files, HARNESS_VERSION)


def write_synthetic_bench(folder: Path, registry: dict, rubric_path: Path) -> Path:
    """folder/bench.json, as make bench leaves it (no provenance: make bench-reference adds it)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bench.json").write_text(json.dumps(synthetic_bench(registry, rubric_path), indent=1))
    return folder / "bench.json"


def write_synthetic_record(path: Path, registry: dict, rubric_path: Path, kernels: Path = SOLUTION_KERNELS) -> Path:
    """A record stamped as having measured `kernels` (default: today's solution), written to `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {**synthetic_bench(registry, rubric_path), "provenance": provenance(kernels).as_json()}
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path
