"""What racecheck costs when it checks only the student's kernels (issue 43, item 3: GPU seconds spent only on
the GPU work that needs them).

A check request launches the harness's own kernels too (inputs drawn on the device, poison, the float64
references, the comparison): racecheck patches and watches each of them as it does the student's. This times
racecheck over the tasks grading sends it (transpose, matmul_tiled, matmul_fast, dot: the files whose compiled code
touches shared memory), in one `harness --serve` as grading runs it, sent grading's requests up to each task's
small case:
  - as grading runs it now;
  - with every kernel the harness defines excluded by its exact name (compute-sanitizer's --kernel-name-exclude
    kne=NAME, one option per kernel; the names read from the harness's device code with cuobjdump);
and, for a harness whose matmul_tiled races (the sample class's s04-race file in the solution's place), that
racecheck still reports the race with the harness's kernels excluded.

It paid, and grading now leaves out only the names the program defines no more often than the harness library
does (Workspace.harness_only_kernels), so a kernel a task file defines under a harness kernel's mangled name is
still checked.

Run on 2026-12-05: docs/gpu-runs/2026-12-05-h200-issue-43-racecheck.md (grading now leaves them out).

  usage (on the GPU machine; it prints compute-sanitizer's filter options first, to check their spelling):
    make -C starter -j16 CPU=0 all KERNELS=../solution/kernels
    mkdir -p /tmp/racing && cp solution/kernels/*.cu /tmp/racing/ \
      && cp data/sample-submissions/s04-race/matmul_tiled.cu /tmp/racing/ \
      && make -C starter -j16 CPU=0 harness KERNELS=/tmp/racing KTAG=racing
    python3 docs/gpu-runs/racecheck_filter_probe.py OUT.json starter/build/solution/harness \
      starter/build/racing/harness [--rounds 2]
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]

from grader.core.registry import Registry  # noqa: E402
from grader.core.rubric import load_rubric  # noqa: E402
from grader.gate.objects import find_cuobjdump, kernel_entries  # noqa: E402
from grader.shared import sanitizer as tool_runs  # noqa: E402
from grader.run.runner import HarnessServer  # noqa: E402
from sanitizer_cost_probe import plan  # noqa: E402  (this folder's probe: grading's requests, cut at the small case)

SHARED_MEMORY_TASKS = ("transpose", "matmul_tiled", "matmul_fast", "dot")


def entries(path: Path) -> list[str]:
    """The kernels in the device code of a program or library, by their mangled names (as grading reads them)."""
    return sorted(kernel_entries(path, find_cuobjdump() or "cuobjdump"))


def one_process(harness: Path, extra: list[str], work, scratch: Path) -> tuple[float, int | None, list[float]]:
    log = scratch / "tool.log"
    log.unlink(missing_ok=True)
    prefix = tool_runs.new_prefix()
    cmd = tool_runs.serve_command(tool_runs.find_tool(), "racecheck", str(log), prefix) + extra
    start = time.monotonic()
    server = HarnessServer(harness, "0", cwd=ROOT / "data", tool=cmd)
    each = []
    try:
        for task, dtype, shapes in work:
            t0 = time.monotonic()
            for message in tool_runs.requests("racecheck", task, dtype, shapes, 1):
                try:
                    server.request(message, 300)
                except Exception as e:  # noqa: BLE001 (a probe: say what the harness said)
                    print(f"{task} {message}: {e}\n{getattr(e, 'stderr', '')[-3000:]}", flush=True)
                    raise
            each.append(round(time.monotonic() - t0, 3))
        server.finish(120)
    finally:
        server.close()
    took = time.monotonic() - start
    errors = tool_runs.parse(log.read_text(errors="replace"), prefix).errors if log.is_file() else None
    return took, errors, each


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("solution", type=Path)
    ap.add_argument("racing", type=Path)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    args.solution, args.racing = args.solution.resolve(), args.racing.resolve()  # the harness runs in data/
    found = tool_runs.find_tool()
    helptext = subprocess.run([found, "--help"], capture_output=True, text=True).stdout
    print("\n".join(line for line in helptext.splitlines() if re.search(r"kernel|exclude|filter", line, re.I)))
    rubric = load_rubric(ROOT / "grader" / "rubric.toml", Registry.from_file())
    work = [w for w in plan(rubric) if w[0] in SHARED_MEMORY_TASKS]
    own = entries(args.solution.resolve().parents[1] / "lib" / "libharness.a")  # the harness's own objects
    every = entries(args.solution)
    print(f"{len(own)} harness kernels of {len(every)} in the program:", *own, sep="\n  ")
    exclude = [a for name in own for a in ("--kernel-name-exclude", f"kne={name}")]
    try:  # the option given once per kernel; where the tool takes one only, one regular expression of every name
        one_process(args.solution, exclude, work[:1], Path(tempfile.mkdtemp()))
    except Exception as e:  # noqa: BLE001 (a probe: print why and try the other spelling)
        print(f"one --kernel-name-exclude per kernel refused ({e}); trying one regex", flush=True)
        exclude = ["--kernel-name-exclude", "regex=^(" + "|".join(re.escape(n) for n in own) + ")$"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        one_process(args.solution, [], work[:1], scratch)  # warm
        for r in range(args.rounds):
            for label, extra in (("as graded", []), ("harness kernels excluded", exclude)):
                took, errors, each = one_process(args.solution, extra, work, scratch)
                rows.append({"round": r, "variant": label, "seconds": round(took, 3), "errors": errors,
                             "per_task_s": dict(zip([w[0] for w in work], each))})
                print(f"round {r} {label}: {took:.2f} s, errors {errors}, per task {each}", flush=True)
        racing = [w for w in work if w[0] == "matmul_tiled"]
        for label, extra in (("racing, as graded", []), ("racing, harness kernels excluded", exclude)):
            took, errors, each = one_process(args.racing, extra, racing, scratch)
            rows.append({"variant": label, "seconds": round(took, 3), "errors": errors})
            print(f"{label}: {took:.2f} s, errors {errors}", flush=True)
    Path(args.out).write_text(json.dumps({"work": work, "harness_kernels": own, "program_kernels": every,
                                          "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
