"""What slows one grading job when other jobs run beside it (issue 29: each job took 35% longer four at a time
on a 4-GPU host, while the host's CPUs were 84% idle).

A job's phases are one busy process at a time: nvcc (the build), compute-sanitizer over the harness (14 runs)
and the harness itself (the cases). This times one such process alone, then beside N copies of a pure-CPU
busy loop (no GPU, no files, no memory traffic), then beside N copies of itself. A slowdown beside the busy
loops is the host's: its CPUs' speed under load (shared cores, clocks), which no change to the grader removes.

  usage (on the GPU machine, after `make -C starter all KERNELS=../solution/kernels`):
    python3 docs/gpu-runs/host_contention_probe.py OUT.json [--beside 3] [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "starter" / "build" / "solution" / "harness"
BURN = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end: pass\n"
CPU_WORK = "s = 0\nfor i in range(12_000_000): s += i * i\n"  # about 1 s of one core, nothing else


def commands() -> dict[str, list[str]]:
    harness = [str(HARNESS), "--task", "transpose", "--dtype", "float32", "--shape", "256x256", "--check-only",
               "--no-limits", "--seed", "1", "--data-dir", str(ROOT / "data")]
    sanitizer = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    return {
        "python_cpu_loop": [sys.executable, "-c", CPU_WORK],
        "harness_one_case": harness,
        "memcheck_one_case": [sanitizer, "--tool", "memcheck", "--error-exitcode", "9"] + harness,
        "nvcc_one_file": ["make", "-s", "-C", str(ROOT / "starter"), "resources", "TASK=matmul_tiled",
                          "KERNELS=../solution/kernels"],
    }


def timed(cmd: list[str]) -> float:
    start = time.monotonic()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"{cmd[0]} exited {done.returncode}: {done.stderr.strip()[-400:]}")
    return took


def together(cmd: list[str], copies: int) -> list[float]:
    """copies of cmd started at once; each one's own wall seconds."""
    procs = []
    for _ in range(copies):
        procs.append((time.monotonic(), subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
    out = []
    for start, p in procs:
        if p.wait() != 0:
            raise SystemExit(f"{cmd[0]} exited {p.returncode} beside its copies")
        out.append(time.monotonic() - start)
    return out


def beside_busy_loops(cmd: list[str], loops: int, rounds: int) -> list[float]:
    burners = [subprocess.Popen([sys.executable, "-c", BURN.format(s=600)]) for _ in range(loops)]
    try:
        time.sleep(0.5)
        return [timed(cmd) for _ in range(rounds)]
    finally:
        for b in burners:
            b.kill()
            b.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--beside", type=int, nargs="+", default=[3, 15])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if not HARNESS.is_file():
        raise SystemExit(f"{HARNESS} is not built: make -C starter all KERNELS=../solution/kernels")
    result = {"cpus": os.cpu_count(), "rounds": args.rounds, "phases": {}}
    for name, cmd in commands().items():
        timed(cmd)  # the first run warms the page cache and the driver's caches
        row = {"alone": [timed(cmd) for _ in range(args.rounds)]}
        for n in args.beside:
            row[f"beside {n} busy loops"] = beside_busy_loops(cmd, n, args.rounds)
        for n in args.beside:
            if n + 1 <= 4 or name in ("python_cpu_loop", "nvcc_one_file"):
                row[f"{n + 1} copies at once"] = [t for _ in range(args.rounds) for t in together(cmd, n + 1)]
        alone = statistics.median(row["alone"])
        summary = {k: round(statistics.median(v) / alone, 3) for k, v in row.items()}
        result["phases"][name] = {"seconds": {k: [round(x, 3) for x in v] for k, v in row.items()},
                                  "median_over_alone": summary}
        print(f"{name}: alone {alone:.3f} s; " + ", ".join(f"{k} x{v}" for k, v in summary.items() if k != "alone"),
              flush=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
