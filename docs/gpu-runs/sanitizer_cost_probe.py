"""Where a grading job's 14 compute-sanitizer runs spend their seconds (issue 29: they are 18-20 s of a 42-s job).

Grading runs each tool once per task, each run a fresh `harness --serve` under the tool: 7 tasks x 2 tools.
This times, for the solution's harness (unsandboxed, so the sandbox's start is not in it):
  - per task, as grading does: one process per task and tool;
  - combined: one process per tool, sent every task's requests in turn;
  - the harness alone (no tool), per task and combined: what a process and its CUDA context cost.
The requests are grading's own (starter/tools/sanitize.py's requests), each task's shapes up to its small case.

  usage (on the GPU machine, after `make -C starter all KERNELS=../solution/kernels`):
    python3 docs/gpu-runs/sanitizer_cost_probe.py OUT.json [--rounds 2]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from grader.core.registry import Registry  # noqa: E402
from grader.core.rubric import load_rubric  # noqa: E402
from grader.shared import sanitizer as tool_runs  # noqa: E402
from grader.run.runner import HarnessServer  # noqa: E402

HARNESS = Path(os.environ.get("PROBE_HARNESS", ROOT / "starter" / "build" / "solution" / "harness")).resolve()


def plan(rubric) -> list[tuple[str, str, list[str]]]:
    """(task, element type, shapes) as grading's tool runs get them, cut at the small case."""
    out = []
    for policy in rubric.tasks:
        small = rubric.sanitizer.shape(policy.id)
        if small is not None:
            out.append((policy.id, policy.timed_dtype,
                        tool_runs.sanitized_shapes(list(policy.shapes), small, pick=lambda n: 0)))
    return out


def one_process(tool: str | None, work: list[tuple[str, str, list[str]]], scratch: Path) -> tuple[float, int | None]:
    """Seconds for one served harness (under tool when given) to answer work's requests and end; its error count."""
    log = scratch / "tool.log"
    log.unlink(missing_ok=True)
    prefix = tool_runs.new_prefix()
    found = tool_runs.find_tool() if tool else None
    start = time.monotonic()
    server = HarnessServer(HARNESS, "0", cwd=ROOT / "data", tool=(tool_runs.serve_command(found, tool, str(log), prefix)
                                                                  if tool else None))
    try:
        for task, dtype, shapes in work:
            for message in tool_runs.requests(tool or "none", task, dtype, shapes, 1):
                reply = server.request(message, 120)
                if reply.get("status") not in ("ok", None):
                    raise SystemExit(f"{task} {dtype} {message['shape']}: {reply.get('status')}")
        server.finish(60)
    finally:
        server.close()
    took = time.monotonic() - start
    errors = tool_runs.parse(log.read_text(errors="replace"), prefix).errors if tool and log.is_file() else None
    return took, errors


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    if not HARNESS.is_file():
        raise SystemExit(f"{HARNESS} is not built: make -C starter all KERNELS=../solution/kernels")
    rubric = load_rubric(ROOT / "grader" / "rubric.toml", Registry.from_file())
    work = plan(rubric)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        one_process(None, work[:1], scratch)  # warm the driver and the page cache
        for r in range(args.rounds):
            for tool in [None, *rubric.sanitizer.tools]:
                name = tool or "harness alone"
                each = [one_process(tool, [w], scratch) for w in work]
                combined = one_process(tool, work, scratch)
                rows.append({"round": r, "tool": name, "per_task_s": [round(t, 3) for t, _ in each],
                             "per_task_total_s": round(sum(t for t, _ in each), 3),
                             "per_task_errors": [e for _, e in each],
                             "combined_s": round(combined[0], 3), "combined_errors": combined[1]})
                print(f"round {r} {name}: {len(work)} processes {sum(t for t, _ in each):.2f} s "
                      f"({', '.join(f'{t:.2f}' for t, _ in each)}); one process {combined[0]:.2f} s; "
                      f"errors {[e for _, e in each]} / {combined[1]}", flush=True)
    Path(args.out).write_text(json.dumps({"tasks": [w[0] for w in work], "shapes": {w[0]: w[2] for w in work},
                                          "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
