"""The grader's real paths on an H100: sandboxed runs under the run profile, the memory op, pause/resume, and
compute-sanitizer over `harness --serve` with the run profile preloaded into the harness."""
import os, sys, time
from pathlib import Path
HERE = Path(__file__).resolve().parent
STAGE = HERE.parent
sys.path.insert(0, str(STAGE))
T0 = time.monotonic()
from grader.build import LocalBackend, BuildResult
from grader.intake import Submission, read_submission
from grader.sandbox import make_sandbox, ResourceLimits
work = HERE / "work4"
sandbox = make_sandbox(False, None, work)
sandbox.limits = ResourceLimits(1200, 256 * 2**20, 256)
backend = LocalBackend(work, arch="sm_90", isolation=sandbox)
t = time.monotonic(); backend.prepare(16); print(f"prepare {time.monotonic() - t:.0f}s", flush=True)
backend.check_gpu(None); print("check_gpu ok", flush=True)
build = BuildResult(True, backend.solution, 0.0)
sub = Submission("solution", HERE)
server = backend.student_server(build, None)
print("hello", str(server.request({"op": "hello"}, 60))[:160], flush=True)
print("filters in the harness:", server.seccomp_filters())
print("memory", server.request({"op": "memory"}, 60))
r = server.request({"op": "check", "task": "dot", "dtype": "float32", "shape": "1048577", "seed": 1, "check_runs": 2}, 60)
print("check", r.get("status"), r.get("message"))
print("time", str(server.request({"op": "time", "samples": 1, "warmup": 1}, 60))[:160])
t = time.monotonic(); n = server.pause(); print(f"paused {n} processes in {1e3 * (time.monotonic() - t):.2f} ms")
t = time.monotonic(); n = server.pause(); print(f"paused again {n} in {1e3 * (time.monotonic() - t):.3f} ms")
print("time after resume", str(server.request({"op": "time", "samples": 1, "warmup": 0}, 60))[:120])
server.close(); print("stderr tail:", server.stderr[-300:], flush=True)
def sanitize(b, s, tool, task, shapes, small):
    t = time.monotonic()
    o = backend.sanitize(s, b, None, tool, task, "float32", small, 1, 180, shapes=shapes)
    print(f"sanitize {s.student} {tool} {task}: {o.status} errors={o.errors} shape={o.shape} {time.monotonic() - t:.1f}s "
          f"msg={o.message[:300]!r} report={o.report[:300]!r}", flush=True)
DOT = (["1", "2", "1000", "1025", "1048577"], "1025")
TILED = (["1x1x1", "1x257x13", "257x1x13", "37x41x43", "96x160x96"], "37x41x43")
for tool in ("memcheck", "racecheck"):
    sanitize(build, sub, tool, "dot", *DOT)
    sanitize(build, sub, tool, "matmul_tiled", *TILED)
samples = STAGE.parent / "data" / "sample-submissions"
tasks = ["fill.cu", "add.cu", "transpose.cu", "matmul_naive.cu", "matmul_tiled.cu", "matmul_fast.cu", "dot.cu"]
for name, tool in (("s03-tiled-off-by-one", "memcheck"), ("s04-race", "racecheck")):
    s = read_submission(samples / name, tasks)
    t = time.monotonic(); b = backend.build(s, 600); print(f"build {name}: ok={b.ok} {time.monotonic() - t:.0f}s {b.reason}", flush=True)
    if b.ok:
        task = "matmul_tiled" if "matmul_tiled.cu" in s.files else sorted(s.files)[0][:-3]
        print("task", task, sorted(s.files))
        sanitize(b, s, tool, task, *(TILED if task.startswith("matmul") else DOT))
print(f"total {time.monotonic() - T0:.0f}s")
