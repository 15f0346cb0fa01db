"""Can Nsight Compute read a GPU's counters from inside the grader's sandbox? (issue 31, `make profile GPU=1`)

    python3 docs/gpu-runs/ncu_sandbox_probe.py HARNESS OUT_DIR

Profiles one task of HARNESS (a built `harness`) with `ncu --csv --page raw` four ways, from the most to the
least privileged, and writes each one's exit status, output and whether the CSV holds counts into
OUT_DIR/probe.json (and a line each on stdout):
  root              ncu as this user (root on the device machines);
  setpriv           ncu as a fresh unprivileged uid (NVreg_RestrictProfilingToAdminUsers decides it);
  sandbox-tool      the sandbox as compute-sanitizer runs in it: ncu under the tool profile, the harness under run;
  sandbox-tool-open the same, the harness under no filter of its own.
The run recorded in docs/gpu-runs/2026-11-28-h200-issue-31-profile-gpu.md also tried a seccomp profile that let
ncu and the harness open sockets on the sandbox's loopback; the tool profile sufficed, and that one was dropped.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from grader.run import ncu as ncu_tool  # noqa: E402
from grader.run import sandbox as sb  # noqa: E402



def ncu_argv(ncu: str, harness: Path) -> list[str]:
    return ncu_tool.command(Path(ncu), harness, "transpose", "float32", 1)


def counted(text: str) -> bool:
    return any(line.startswith('"') and "transpose" in line for line in text.splitlines())


def main() -> int:
    harness, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    ncu = str(ncu_tool.find_ncu() or "")
    if not ncu:
        print("no ncu on PATH")
        return 1
    params = Path("/proc/driver/nvidia/params")
    facts = {"ncu": ncu, "ncu_real": os.path.realpath(ncu), "uid": os.geteuid(),
             "driver_params": [line for line in (params.read_text().splitlines() if params.exists() else [])
                               if "rofil" in line]}
    # a copy every uid can read and run, away from the checkout's permissions
    shared = Path("/tmp/ncu-probe")
    shutil.rmtree(shared, ignore_errors=True)
    shared.mkdir(mode=0o755)
    copy = shared / "harness"
    shutil.copy2(harness, copy)
    copy.chmod(0o755)
    results = {}

    def record(name: str, rc, stdout: str, stderr: str, seconds: float):
        results[name] = {"rc": rc, "counted": counted(stdout), "seconds": round(seconds, 1),
                         "numbers": ncu_tool.task_numbers(ncu_tool.launches(stdout)),
                         "stdout_tail": stdout[-3000:], "stderr_tail": stderr[-3000:]}
        print(f"{name}: exit {rc}, counts {'yes' if counted(stdout) else 'NO'}, {seconds:.1f} s "
              f"{json.dumps(results[name]['numbers'])}", flush=True)

    def plain(name: str, prefix: list[str]):
        start = time.monotonic()
        done = subprocess.run(prefix + ncu_argv(ncu, copy), capture_output=True, text=True, timeout=300,
                              cwd=shared, env={**os.environ, "HOME": str(shared)})
        record(name, done.returncode, done.stdout, done.stderr, time.monotonic() - start)

    plain("root", [])
    uid = random.randint(1 << 30, (1 << 31) - 2)
    shared.chmod(0o777)  # the unprivileged ncu keeps its settings under HOME
    plain("setpriv", ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"])

    box = sb.Sandbox(sb.find_bwrap(), sb.ResourceLimits(cpu_seconds=300, file_size=2**30, processes=512))
    extra = [Path(ncu).parent]  # Nsight Compute's own folder (a link out of the toolkit, on the device machines)
    for name, profile, confine in (("sandbox-tool", "tool", copy), ("sandbox-tool-open", "tool", None)):
        scratch = out / f"scratch-{name}"
        shutil.rmtree(scratch, ignore_errors=True)
        start = time.monotonic()
        done = sb.run(box, ncu_argv(ncu, copy), timeout=300, read_only=[shared, *extra], writable=[scratch],
                      gpu="0", profile=profile, confine_exe=confine)
        record(name, done.status, done.stdout, done.stderr, time.monotonic() - start)
    (out / "probe.json").write_text(json.dumps({"facts": facts, "results": results}, indent=1))
    print(json.dumps(facts, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
