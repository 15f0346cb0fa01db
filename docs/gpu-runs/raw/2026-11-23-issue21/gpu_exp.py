"""GPU experiment for issue 21: seccomp profiles under the CUDA driver and compute-sanitizer, the detached-child
stall, and the grader's real sandboxed paths (HarnessServer run profile, memory op, serve-mode sanitizer)."""
import json, os, re, shutil, subprocess, sys, time
from pathlib import Path
HERE = Path(__file__).resolve().parent
STAGE = HERE.parent
sys.path.insert(0, str(STAGE))
OUT = Path(os.environ.get("OUT", "/tmp/out"))
T0 = time.monotonic()

def sh(cmd, timeout=120, **kw):
    t = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
        out, status = (p.stdout + p.stderr), p.returncode
    except subprocess.TimeoutExpired as e:
        out, status = ((e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")), "TIMEOUT"
    print(f"--- {' '.join(map(str, cmd))[:200]}\n    status={status} {time.monotonic() - t:.1f}s\n" +
          "\n".join("    " + l for l in out.strip().splitlines()[-12:]), flush=True)
    return status, out

def variant(name, edits):
    d = HERE / "variants" / name
    d.mkdir(parents=True, exist_ok=True)
    src = (STAGE / "grader" / "seccomp.py").read_text()
    for a, b in edits:
        assert a in src, a
        src = src.replace(a, b)
    (d / "seccomp.py").write_text(src)
    shutil.copy(STAGE / "grader" / "confine.py", d / "confine.py")
    return d / "confine.py"

TOOL = 'PROFILE_TOOL = Profile("tool", processes=True, programs=True, sessions=True, unix_sockets=True, personality=True)'
RUN = 'PROFILE_RUN = Profile("run", processes=False, programs=False, sessions=False, unix_sockets=False)'
V = {
    "prod": variant("prod", []),
    "tool_nounix": variant("tool_nounix", [(TOOL, TOOL.replace("unix_sockets=True", "unix_sockets=False"))]),
    "tool_nosess": variant("tool_nosess", [(TOOL, TOOL.replace("sessions=True", "sessions=False"))]),
    "tool_noperso": variant("tool_noperso", [(TOOL, TOOL.replace("personality=True", "personality=False"))]),
    "run_unix": variant("run_unix", [(RUN, RUN.replace("unix_sockets=False", "unix_sockets=True"))]),
}
PY = "/usr/bin/python3"
def conf(v, profile, argv):
    return [PY, "-I", "-S", str(V[v]), profile, "--", *argv]

print("env:", shutil.which("bwrap"), os.environ.get("BWRAP"), shutil.which("compute-sanitizer"), shutil.which("cuobjdump"))
sh([PY, "-c", "import ctypes, sys; print('python', sys.version)"])
sh(["nvcc", "-O2", "-std=c++17", "-o", str(HERE / "probe"), str(HERE / "cuda_probe.cu")], timeout=300)
P = str(HERE / "probe")
CS = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
print("\n== A: driver plain / under the run profile")
sh([P, "ok"]); sh(conf("prod", "run", [P, "ok"])); sh(conf("prod", "run", [P, "detach"]))
print("\n== B: compute-sanitizer memcheck on an OOB write: tool profile variants, target under run")
sh([CS, "--tool", "memcheck", P, "oob"], timeout=120)
for tv, rv in [("prod", "prod"), ("prod", "run_unix"), ("tool_nounix", "prod"), ("tool_nosess", "prod"), ("tool_noperso", "prod")]:
    print(f"[tool={tv} target={rv}]")
    sh(conf(tv, "tool", [CS, "--tool", "memcheck", *conf(rv, "run", [P, "oob"])]), timeout=120)
sh(conf("prod", "tool", [CS, "--tool", "racecheck", *conf("prod", "run", [P, "ok"])]), timeout=120)
print("\n== C: the detached-child stall under compute-sanitizer (child sleeps 30 s), plain, no seccomp")
sh([CS, "--tool", "memcheck", P, "detach"], timeout=60)
print("\n== D: the grader's own paths on the solution (bwrap sandbox, run profile, memory op, serve-mode sanitizer)")
try:
    from grader.build import LocalBackend, BuildResult
    from grader.intake import Submission
    from grader.sandbox import make_sandbox, ResourceLimits
    work = HERE / "work"
    sandbox = make_sandbox(False, None, work)
    backend = LocalBackend(work, arch="sm_90", isolation=sandbox)
    sandbox.limits = ResourceLimits(1200, 256 * 2**20, 256)
    t = time.monotonic(); backend.prepare(16); print(f"prepare {time.monotonic() - t:.0f}s", flush=True)
    backend.check_gpu(None); print("check_gpu ok", flush=True)
    build = BuildResult(True, backend.solution, 0.0)
    sub = Submission("solution", HERE)
    server = backend.student_server(build, None)
    print("hello", str(server.request({"op": "hello"}, 60))[:200])
    print("memory", server.request({"op": "memory"}, 60))
    r = server.request({"op": "check", "task": "dot", "dtype": "float32", "shape": "1048577", "seed": 1, "check_runs": 2}, 60)
    print("check", r.get("status"), r.get("message"))
    print("time", str(server.request({"op": "time", "samples": 1, "warmup": 1}, 60))[:200])
    n = server.pause(); t = time.monotonic(); time.sleep(0.2); print("paused", n, "processes")
    print("time after resume", str(server.request({"op": "time", "samples": 1, "warmup": 0}, 60))[:120])
    server.close(); print("stderr:", server.stderr[-500:])
    for tool in ("memcheck", "racecheck"):
        for task, shapes, small in [("dot", ["1", "2", "1000", "1025", "1048577"], "1025"),
                                    ("matmul_tiled", ["1x1x1", "1x257x13", "257x1x13", "37x41x43", "96x160x96"], "37x41x43")]:
            t = time.monotonic()
            o = backend.sanitize(sub, build, None, tool, task, "float32", small, 1, 180, shapes=shapes)
            print(f"sanitize {tool} {task}: {o.status} errors={o.errors} shape={o.shape} {time.monotonic() - t:.1f}s "
                  f"msg={o.message[:400]!r} report={o.report[:200]!r}", flush=True)
except Exception as e:
    import traceback; traceback.print_exc()
print(f"total {time.monotonic() - T0:.0f}s")
