"""On a GPU: solution/tests/test_repeated_runs.py's three kernels (right on their first call, wrong on their second
in the output, an input, or the element past the output) and the solution, each as one graded add case, with
`make harness` alone (the test's fixture builds the student suite too: minutes of nvcc a build).

  usage (on the device machine, from the repository root):
    DEPS_INCLUDE=$PWD/.deps/root/usr/include python3 docs/gpu-runs/repeated_runs_probe.py OUT.json
Prints one line per harness and writes the records; exits 1 where a kernel passes or the solution fails."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "solution" / "tests"), str(REPO)]  # (its conftest, not the top one)

from test_repeated_runs import BREAKS, KERNEL, case  # noqa: E402

STARTER, SOLUTION = REPO / "starter", REPO / "solution" / "kernels"
JOBS = f"-j{os.cpu_count() or 2}"


def make_harness(kernels: Path, tag: str) -> Path:
    done = subprocess.run(["make", "-C", str(STARTER), JOBS, "CPU=0", "harness", f"KERNELS={kernels}", f"KTAG={tag}"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"make harness ({tag}) failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return STARTER / "build" / tag / "harness"


def main() -> int:
    start = time.monotonic()
    built = {"solution": make_harness(SOLUTION, "solution")}
    print(f"solution's harness built in {time.monotonic() - start:.0f} s", flush=True)
    for name, breaks in BREAKS.items():
        kernels = Path(f"/tmp/repeated-{name}")
        kernels.mkdir(exist_ok=True)
        for source in SOLUTION.iterdir():
            if source.name != "add.cu" and not (kernels / source.name).exists():
                (kernels / source.name).symlink_to(source)
        (kernels / "add.cu").write_text(KERNEL.replace("BREAKS", str(breaks)))
        built[name] = make_harness(kernels, f"repeated_{name}")
    records, wrong = {}, False
    for name, harness in built.items():
        once, twice = case(str(harness), runs=1), case(str(harness))
        records[name] = {"one_run": once, "two_runs": twice}
        check = twice["check"]
        print(f"{name}: one run {once['status']}; two runs {twice['status']} (runs_wrong {check['runs_wrong']}, "
              f"runs_differ {check['runs_differ']}, modified_inputs {check['modified_inputs']}, written_past_end "
              f"{check['written_past_end']}): {twice['message'][:120]!r}", flush=True)
        expected_ok = name == "solution"
        wrong |= (twice["status"] == "ok") != expected_ok or once["status"] != "ok"
        wrong |= not expected_ok and "run 2 of 2" not in twice["message"]
    Path(sys.argv[1]).write_text(json.dumps(records, indent=1))
    print(f"{'FAILED' if wrong else 'as on the CPU'} in {time.monotonic() - start:.0f} s")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
