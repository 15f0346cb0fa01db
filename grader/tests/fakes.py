"""A stand-in for builds and `harness --serve`, so the grader's flow runs without nvcc or a GPU.

A fake submission's task file says how its kernel behaves in a marker line:
    // fake: ok speed=1.5        correct, 1.5x as fast as the solution
    // fake: wrong               every case wrong
    // fake: wrong-large         wrong only at shapes with a dimension over 1000
    // fake: not_implemented
    // fake: hang                never answers (the runner's timeout)
    // fake: crash               the process dies
    // fake: wrong-when-timed    passes its checks, fails a timed run
    // fake: forbidden           breaks a build-gate rule (when the rubric's gate is passed to build)
A file holding `#error` does not compile.
"""
from __future__ import annotations

import re
import time
from pathlib import Path

from grader.build import BuildResult
from grader.gate.check import Finding
from grader.gate.report import GateReport
from grader.runner import HarnessFailure

SOLUTION_MS = 2.0


def behavior(source: bytes) -> tuple[str, float]:
    m = re.search(rb"// fake: ([a-z_-]+)(?: speed=([0-9.]+))?", source)
    if not m:
        return "ok", 1.0
    return m.group(1).decode(), float(m.group(2) or 1.0)


class FakeServer:
    def __init__(self, files: dict[str, bytes] | None, delay: float = 0.0):
        self.files = files  # None: the solution
        self.delay = delay
        self.case = None
        self.closed = False

    def _kind(self, task: str) -> tuple[str, float]:
        if self.files is None:
            return "ok", 1.0
        source = self.files.get(f"{task}.cu")
        return behavior(source) if source is not None else ("not_implemented", 1.0)

    def request(self, message: dict, timeout: float) -> dict:
        time.sleep(self.delay)
        op = message["op"]
        if op == "hello":
            return {"op": "hello", "device": {"name": "Fake GPU", "sm_count": 1}}
        if op == "limits":
            return {"op": "limits", "copy_bandwidth_gbps": 1000.0, "sgemm_fp32_gflops": 5000.0}
        if op == "release":
            return {"op": "release"}
        if op == "check":
            kind, speed = self._kind(message["task"])
            big = any(int(d) > 1000 for d in message["shape"].split("x"))
            if kind == "hang":
                raise HarnessFailure(f"no result after {timeout:.0f} s: the kernel probably never finishes", "timeout")
            if kind == "crash":
                raise HarnessFailure("the harness crashed with a segmentation fault (SIGSEGV) while running your code",
                                     "crashed", "Segmentation fault")
            status = {"wrong": "wrong", "not_implemented": "not_implemented"}.get(kind, "ok")
            if kind == "wrong-large" and big:
                status = "wrong"
            self.case = (kind, speed)
            return {"op": "check", "status": status, "seed": message["seed"],
                    "message": "3 of 561 elements are wrong" if status == "wrong" else
                    ("not implemented yet" if status == "not_implemented" else ""),
                    "hint": "check the bounds" if status == "wrong" else "",
                    "work": {"flops": 2e9, "bytes": 1e9, "unit": "GFLOP/s" if "matmul" in message["task"] else "GB/s"},
                    "ready_to_time": status == "ok", "context_lost": False}
        if op == "time":
            kind, speed = self.case
            if kind == "wrong-when-timed":
                return {"op": "time", "status": "wrong", "message": "a timed run gave a wrong result",
                        "hint": "race", "samples_ms": [], "record": {"hint": "race"}}
            return {"op": "time", "status": "ok", "samples_ms": [SOLUTION_MS / speed], "sm_mhz": 1980,
                    "clock_limit_reasons": "none", "context_lost": False}
        return {"op": "error", "error": f"unknown op {op}"}

    def close(self):
        self.closed = True


class FakeBackend:
    harness_version = "fake-1"
    sandbox = "none (fake backend for tests)"

    def __init__(self, delay: float = 0.0):
        self.delay = delay
        self.builds: list[str] = []
        self._files: dict[Path, dict[str, bytes]] = {}  # fake harness -> the submission's files

    def build(self, sub, timeout: float, gate=None) -> BuildResult:
        self.builds.append(sub.student)
        for name, data in sub.files.items():
            if b"#error" in data:
                return BuildResult(False, None, 0.1, f"kernels/{name}(3): error: this does not compile",
                                   "your code does not compile (the compiler's messages follow)")
        report = None
        if gate is not None:
            report = GateReport([Finding(name, "no-libraries", "calls cublasSgemm_v2",
                                         gate.rules["no-libraries"].description)
                                 for name, data in sorted(sub.files.items()) if behavior(data)[0] == "forbidden"])
        harness = Path("fake-harness") / sub.student
        self._files[harness] = sub.files
        return BuildResult(True, harness, 0.1, gate=report)

    def student_server(self, build: BuildResult, gpu) -> FakeServer:
        return FakeServer(self._files[build.harness], self.delay)

    def solution_server(self, gpu) -> FakeServer:
        return FakeServer(None, self.delay)
