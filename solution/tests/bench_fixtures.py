"""A SYNTHETIC bench.json for the plotting tests: every number here is made up
by a formula, never measured, and is never written into the repository."""
from __future__ import annotations

import importlib.util
import sys

from conftest import STARTER

BENCH_DIR = STARTER / "bench"
SYNTHETIC_DEVICE = "SYNTHETIC test device (not a measurement)"
MATRIX_SIZES = [256, 512, 1024]
DOT_SIZES = [1 << 16, 1 << 18, 1 << 20]


def load_plot_bench():
    """bench/plot_bench.py as a module (it ships with the starter code, outside any package)."""
    spec = importlib.util.spec_from_file_location("plot_bench", BENCH_DIR / "plot_bench.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["plot_bench"] = module
    spec.loader.exec_module(module)
    return module


def row(task, impl, dtype, shape, size, throughput, unit, note=""):
    ms = None if throughput is None else 1000.0 / throughput
    return {"task": task, "impl": impl, "dtype": dtype, "shape": shape, "size": size, "ms": ms,
            "throughput": throughput, "unit": unit, "note": note}


def synthetic_bench(label: str = "solution", groups=("matmul", "memory", "transfers"), own_missing: bool = False,
                    date: str = "2000-01-01T00:00:00Z") -> dict:
    """label's kernels beside every baseline. own_missing: the label's kernels
    are stubs ("not implemented yet" rows without numbers)."""
    rows = []

    def own(task, dtype, shape, size, value, unit):
        rows.append(row(task, label, dtype, shape, size, None if own_missing else value, unit,
                        "not implemented yet" if own_missing else ""))

    if "matmul" in groups:
        for n in MATRIX_SIZES:
            shape = f"{n}x{n}x{n}"
            rows.append(row("matmul", "cublas", "float32", shape, n, 100.0 * n, "GFLOP/s"))
            rows.append(row("matmul_naive", "naive-inverted", "float32", shape, n, 1.0 * n, "GFLOP/s"))
            for i, impl in enumerate(["cpu-simple", "cpu-pretransposed", "cpu-blocked"]):
                skipped = impl == "cpu-simple" and n == MATRIX_SIZES[-1]
                rows.append(row("matmul", impl, "float32", shape, n, None if skipped else 0.5 + i, "GFLOP/s",
                                "skipped: one run would take about 3 s" if skipped else "1 thread of a synthetic CPU"))
            for i, task in enumerate(["matmul_naive", "matmul_tiled", "matmul_fast"]):
                own(task, "float32", shape, n, (10.0 + 20 * i) * n, "GFLOP/s")
    if "memory" in groups:
        for task, dtype in (("fill", "int32"), ("add", "float32"), ("transpose", "float32")):
            for n in MATRIX_SIZES:
                rows.append(row(task, "copy", dtype, f"{n}x{n}", n, 2.0 * n, "GB/s"))
                own(task, dtype, f"{n}x{n}", n, 1.8 * n, "GB/s")
        for n in DOT_SIZES:
            rows.append(row("dot", "copy", "float32", str(n), n, n / 256, "GB/s"))
            own("dot", "float32", str(n), n, n / 300, "GB/s")
    transfers = []
    if "transfers" in groups:
        for memory, speed in (("pageable", 5.0), ("pinned", 20.0)):
            for direction in ("host-to-device", "device-to-host"):
                for size in (1 << 20, 1 << 22):
                    transfers.append({"memory": memory, "direction": direction, "bytes": size, "gbps": speed})
    return {"device": {"name": SYNTHETIC_DEVICE, "sm_clock_mhz": 1000, "copy_gbps": 1000.0,
                       "cublas_fp32_gflops": 50000.0},
            "date": date, "label": label, "rows": rows, "transfers": transfers}
