"""A stand-in for builds and `harness --serve`, so the grader's flow runs without nvcc or a GPU.

A fake submission's task file says how its kernel behaves in a marker line:
    // fake: ok speed=1.5        correct, 1.5x as fast as the solution
    // fake: ok speed=1 noise=0.3   correct, each timed run off by up to 30% either way
    // fake: ok sleep=4          correct, and each run of its kernel takes 4 s longer (a sleeping kernel)
    // fake: sleeps-when-timed sleep=2   correct at the solution's speed when checked, 2 s longer a timed run
    // fake: sleeps-when-large sleep=2   2 s longer a run (checked or timed) at a shape with a dimension over 1000
    // fake: wrong               every case wrong
    // fake: wrong-large         wrong only at shapes with a dimension over 1000
    // fake: not_implemented
    // fake: hang                never answers (the runner's timeout)
    // fake: crash               the process dies
    // fake: kills-grader        the grader's own process dies (SIGKILL) when a case of it is checked: the
                                 service's poison job, that takes its worker down each time it is graded (never
                                 use it where the fake runs inside pytest's own process)
    // fake: wrong-when-timed    passes its checks, fails a timed run
    // fake: forbidden           breaks a build-gate rule (when the rubric's gate is passed to build)
A line `// fake-at: SHAPE wrong` (or `hang`) makes the kernel wrong (or never finish) at that shape only,
whatever its marker says elsewhere (a kernel that fails one case, a hidden one say); `hang-once` never finishes
there the first time any process of the submission is asked, and passes after (a correct kernel a busy machine
pushed past the case limit once); `// fake-at: SHAPE tells`
makes its process crash there, its output naming every shape that process was asked before (a task file that
remembers what it was asked and tells a later case).
A file holding `#error` does not compile: its task's cases fail (build_error), the others
run, as with the real build; `// fake: build-fails` fails the whole build (as when it
outlives its limit); `// fake-build: sleep=S` makes the build take S seconds more (real ones);
`// fake-gate: no-shared-memory` makes the build gate read the file's device code as touching no shared memory
(GateReport.no_shared_memory: racecheck is not run on it). A second marker line says what
compute-sanitizer finds in it (nothing, when absent), or how long a tool's run of it takes (slow=SECONDS: past
the limit it is given, the run times out):
    // fake-sanitizer: memcheck=2 racecheck=1
A file may instead hold `// fake-harness: NAME`, a planted bug of solution/tests/planted/ or the
sample class (planted.py): its cases then get the statuses, messages and hints the real harness
gives that bug (the strings of starter/harness/diagnose.cpp), and compute-sanitizer its findings.

`--device simulated` (grader/backends/__init__.py) is this backend behind the backends' one interface
(SimulatedKind), for the tests of the command line and of Slurm batches: only with
GRADER_TEST_BACKENDS=1 in the environment, which only tests set. GRADER_SIMULATED_DELAY=s
makes each of its requests take s seconds (a class that takes a while to grade).

The fake GPU can keep simulated time (SimClock): every request advances it by
what the work would take, so tests can check the grader's timing arithmetic
without waiting. The fake solution runs at half the fake device's physical
limit, so its plausibility floor is half the solution's time.
"""
from __future__ import annotations

import os
import random
import re
import signal
import socket
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from grader.backends.base import Backend, Kind
from grader.run.server import Server
from grader.backends.gpu import gpu_list
from grader.outcomes.build_result import BuildResult
from grader.outcomes.isolation import Isolation
from grader.outcomes.results import ProfileOutcome, SanitizerOutcome
from grader.gate.check import Finding
from grader.gate.report import GateReport
from grader.core.registry import Registry
from grader.core.rubric import load_rubric
from grader.core.status import CaseStatus, ProfileStatus
from grader.run.runner import HarnessFailure
from grader.tests import planted

SOLUTION_MS = 2.0
REQUEST_SECONDS = 0.004  # a request's round trip and bookkeeping (inputs, reference, JSON)
RUN_OVERHEAD_SECONDS = 0.001  # per run: placing the inputs, the L2 flush, verifying the output


def behavior(source: bytes) -> tuple[str, float, float, float]:
    """(kind, speed, noise, seconds each run sleeps) from a fake task file's marker."""
    m = re.search(rb"// fake: ([a-z_-]+)(?: speed=([0-9.]+))?(?: noise=([0-9.]+))?(?: sleep=([0-9.]+))?", source)
    if not m:
        return "ok", 1.0, 0.0, 0.0
    return m.group(1).decode(), float(m.group(2) or 1.0), float(m.group(3) or 0.0), float(m.group(4) or 0.0)


class SimClock:
    """Simulated seconds, advanced by the fake servers' work."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float):
        self.now += seconds


class FakeServer(Server):
    def __init__(self, files: dict[str, bytes] | None, delay: float = 0.0, sim: SimClock | None = None,
                 solution_ms: Callable[[str, str], float] | None = None, name: str = "solution",
                 hung: set | None = None):
        self.files = files  # None: the solution
        self.hung = hung if hung is not None else set()  # (task, shape) a `hang-once` hung at, in any process
        self.delay = delay
        self.sim = sim
        self.solution_ms = solution_ms or (lambda task, shape: SOLUTION_MS)
        self.case = None
        self.closed = False
        self.limits_measured = False
        self.noise = random.Random(name)
        self.seen: list[str] = []  # the shapes this process was asked to check (`// fake-at: SHAPE tells`)

    def _planted(self, task: str) -> str | None:
        source = (self.files or {}).get(f"{task}.cu")
        return planted.marker(source) if source is not None else None

    def _kind(self, task: str) -> tuple[str, float, float, float]:
        if self.files is None:
            return "ok", 1.0, 0.0, 0.0
        source = self.files.get(f"{task}.cu")
        return behavior(source) if source is not None else ("not_implemented", 1.0, 0.0, 0.0)

    def _spend(self, seconds: float):
        if self.sim is not None:
            self.sim.advance(seconds)

    def _work(self, seconds: float, timeout: float):
        """Spends a request's work, or, past its time limit, the limit, and fails as the runner would."""
        if seconds > timeout:
            self._spend(timeout)
            raise HarnessFailure(f"no result after {timeout:.0f} s: the kernel probably never finishes", "timeout")
        self._spend(seconds)

    def request(self, message: dict, timeout: float) -> dict:
        time.sleep(self.delay)
        op = message["op"]
        if op == "hello":
            return {"op": "hello", "device": {"name": "Fake GPU", "sm_count": 1}}
        if op == "limits":
            self.limits_measured = True
            self._spend(3.0)
            return {"op": "limits", "copy_bandwidth_gbps": 1000.0, "sgemm_fp32_gflops": 5000.0}
        if op == "release":
            self.case = None
            return {"op": "release"}
        if op == "check" and self._planted(message["task"]):
            reply = planted.check_reply(self._planted(message["task"]), message)
            if reply is not None:
                self._spend(REQUEST_SECONDS)
                return {"op": "check", "seed": message["seed"], "ready_to_time": False, "plausibility": None,
                        "context_lost": False, **reply}
        if op == "check":
            kind, speed, noise, sleep = self._kind(message["task"])
            big = any(int(d) > 1000 for d in message["shape"].split("x"))
            at = re.search(rb"(?m)^// fake-at: " + re.escape(message["shape"].encode())
                           + rb" (wrong|hang|hang-once|tells)$", (self.files or {}).get(f"{message['task']}.cu", b""))
            seen, self.seen = self.seen, self.seen + [message["shape"]]
            if at:
                kind = at.group(1).decode()
            if kind == "hang-once":
                first = (message["task"], message["shape"]) not in self.hung
                self.hung.add((message["task"], message["shape"]))
                kind = "hang" if first else "ok"
            if kind == "tells":
                raise HarnessFailure("the harness aborted (SIGABRT) while running your code", "crashed",
                                     "shapes this process was asked before: " + ", ".join(seen))
            if kind == "hang":
                self._spend(timeout)
                raise HarnessFailure(f"no result after {timeout:.0f} s: the kernel probably never finishes", "timeout")
            if kind == "kills-grader":  # the fake runs in the grader's process: as the OOM killer would end it
                os.kill(os.getpid(), signal.SIGKILL)
            if kind == "crash":
                raise HarnessFailure("the harness crashed with a segmentation fault (SIGSEGV) while running your code",
                                     "crashed", "Segmentation fault")
            status = {"wrong": "wrong", "not_implemented": "not_implemented", "gpu-only": "gpu_only"}.get(kind, "ok")
            if kind == "wrong-large" and big:
                status = "wrong"
            kernel_ms = self.solution_ms(message["task"], message["shape"]) / speed
            if kind == "sleeps-when-large" and not big:
                sleep = 0.0
            check_ms = kernel_ms + (0.0 if kind == "sleeps-when-timed" else sleep * 1e3)
            self.case = (kind, kernel_ms + sleep * 1e3, noise)  # what a timed run takes
            self._work(REQUEST_SECONDS + message.get("check_runs", 2) * (check_ms / 1e3 + RUN_OVERHEAD_SECONDS),
                       timeout)
            reply = {"op": "check", "status": status, "seed": message["seed"],
                     "message": "3 of 561 elements are wrong" if status == "wrong" else
                     ("not implemented yet" if status == "not_implemented" else ""),
                     "hint": "check the bounds" if status == "wrong" else "",
                     "work": {"flops": 2e9, "bytes": 1e9,
                              "unit": "GFLOP/s" if "matmul" in message["task"] else "GB/s"},
                     "ready_to_time": status == "ok", "context_lost": False, "plausibility": None}
            if self.limits_measured:
                reply["plausibility"] = {"floor_ms": kernel_ms / 2, "bound": "bandwidth", "implausible": False}
            return reply
        if op == "time":
            if self.case is None:  # as the harness answers (serve.cpp)
                return {"op": "error", "error": "no checked, passing case to time: send check first"}
            kind, run_ms, noise = self.case
            runs = message.get("warmup", 0) + message.get("samples", 1)
            self._work(REQUEST_SECONDS + runs * (run_ms / 1e3 + RUN_OVERHEAD_SECONDS), timeout)
            if kind == "wrong-when-timed":
                return {"op": "time", "status": "wrong", "message": "a timed run gave a wrong result",
                        "hint": "race", "samples_ms": [], "record": {"hint": "race"}}
            sample = run_ms * (1 + self.noise.uniform(-noise, noise))
            return {"op": "time", "status": "ok", "samples_ms": [sample], "samples_sm_mhz": [1980],
                    "samples_throttled": [False], "sm_mhz": 1980, "clock_limit_reasons": "none",
                    "context_lost": False}
        return {"op": "error", "error": f"unknown op {op}"}

    def close(self):
        self.closed = True


class FakeBackend(Backend):
    harness_version = "fake-1"
    sandbox = Isolation("none", note="fake backend for tests")
    checker = "compute-sanitizer"

    def __init__(self, delay: float = 0.0, sim: SimClock | None = None,
                 solution_ms: Callable[[str, str], float] | None = None):
        self.delay = delay
        self.sim = sim
        self.solution_ms = solution_ms
        self.clock = sim if sim is not None else time.monotonic
        self.builds: list[str] = []
        self.tool_limits: list[tuple[str, str, float]] = []  # (task, tool, the limit its run was given)
        self._files: dict[Path, dict[str, bytes]] = {}  # fake harness -> the submission's files
        self._hung: dict[Path, set] = {}  # fake harness -> where its `hang-once` cases hung

    def build(self, sub, timeout: float, gate=None) -> BuildResult:
        self.builds.append(sub.student)
        started = time.monotonic()
        for data in sub.files.values():  # a build that takes a while (real seconds: the service's build stage)
            slow = re.search(rb"// fake-build: sleep=([0-9.]+)", data)
            if slow:
                time.sleep(float(slow.group(1)))
        unbuilt = {}
        for name, data in sub.files.items():
            if b"// fake: build-fails" in data:
                return BuildResult(False, None, 0.1, "make: *** [harness] Killed",
                                   "the build took longer than its limit of 1 s")
            if b"#error" in data:
                unbuilt[name] = f"{name} does not compile: {name}(3): error: this does not compile"
        report = None
        if gate is not None:
            report = GateReport([Finding(name, "no-libraries", "calls cublasSgemm_v2",
                                         gate.rules["no-libraries"].description)
                                 for name, data in sorted(sub.files.items()) if behavior(data)[0] == "forbidden"],
                                frozenset(name for name, data in sub.files.items()
                                          if b"// fake-gate: no-shared-memory" in data))
        harness = Path("fake-harness") / sub.student
        self._files[harness] = sub.files
        log = "".join(f"kernels/{name}(3): error: this does not compile\n" for name in unbuilt)
        return BuildResult(True, harness, max(0.1, time.monotonic() - started), log, gate=report, unbuilt=unbuilt)

    def set_limits(self, limits):
        self.limits = limits

    def sanitize(self, sub, build, gpu, tool, task, dtype, shape, seed, timeout, shapes=None) -> SanitizerOutcome:
        source = self._files[build.harness].get(f"{task}.cu", b"")
        self.tool_limits.append((task, tool, timeout))
        if planted.marker(source):
            return planted.sanitizer_outcome(planted.marker(source), tool, task, dtype, shape)
        slow = re.search(rb"// fake-sanitizer:.*\bslow=([0-9.]+)", source)  # seconds the tool's run would take
        if slow and float(slow.group(1)) > timeout:
            return SanitizerOutcome(task, tool, dtype, shape, "timeout", message="the check did not finish within "
                                    "its limit", seconds=timeout)
        found = re.search(rb"// fake-sanitizer:.*\b" + tool.encode() + rb"=(\d+)", source)
        errors = int(found.group(1)) if found else 0
        if not errors:
            return SanitizerOutcome(task, tool, dtype, shape, "clean", seconds=0.1)
        first = ("Invalid __global__ write of size 4 bytes\n    at add_kernel+0x70 in kernels/" + task + ".cu:12"
                 if tool == "memcheck" else
                 "Error: Race reported between Write access at tile_kernel+0x50 in kernels/" + task + ".cu:20\n"
                 "    and Read access at tile_kernel+0x90 in kernels/" + task + ".cu:23 [64 hazards]")
        return SanitizerOutcome(task, tool, dtype, shape, "errors", errors, first, seconds=0.1)

    def gpu_profile(self, sub, build, task, dtype, shape, gpu, seed, timeout) -> ProfileOutcome:
        """Nsight Compute's numbers as a fake kernel's marker says (`// fake-ncu: store=8 lanes=0.5`, or
        `// fake-ncu: fails`); the solution's (build None) and an unmarked kernel's are the ideal ones."""
        source = self._files[build.harness].get(f"{task}.cu", b"") if build is not None else b""
        if self.delay:
            time.sleep(self.delay)
        if b"// fake-ncu: fails" in source:
            return ProfileOutcome(task, dtype, shape, ProfileStatus.FAILED, seconds=0.01,
                                  message="Nsight Compute saw no kernel of yours run in the profile case")
        numbers = {"global_load_sectors_per_needed": 1.0, "global_store_sectors_per_needed": 1.0,
                   "shared_passes_per_needed": 1.0, "active_lanes": 1.0, "occupancy_percent": 100.0,
                   "achieved_occupancy_percent": 90.0, "registers": 32.0, "kernels": [f"{task}_kernel"], "launches": 1}
        for key, name in (("store", "global_store_sectors_per_needed"), ("load", "global_load_sectors_per_needed"),
                          ("lanes", "active_lanes")):
            found = re.search(rb"// fake-ncu:.*\b" + key.encode() + rb"=([0-9.]+)", source)
            if found:
                numbers[name] = float(found.group(1))
        return ProfileOutcome(task, dtype, shape, ProfileStatus.COUNTED, numbers=numbers, seconds=0.01)

    def student_server(self, build: BuildResult, gpu) -> FakeServer:
        return FakeServer(self._files[build.harness], self.delay, self.sim, self.solution_ms,
                          name=str(build.harness), hung=self._hung.setdefault(build.harness, set()))

    def solution_server(self, gpu) -> FakeServer:
        return FakeServer(None, self.delay, self.sim, self.solution_ms)


SIMULATED_DELAY_ENV = "GRADER_SIMULATED_DELAY"
# A folder: the simulated GPU named by a file in it has failed (its solution's process fails every request from
# then on), as a GPU that falls off the bus does; the grading service's tests break one GPU of several so.
SIMULATED_BROKEN_ENV = "GRADER_SIMULATED_BROKEN"


class _FailingGpu(Server):
    """The solution's process on a simulated GPU that fails once its file appears (SIMULATED_BROKEN_ENV)."""

    def __init__(self, server: Server, flag: Path):
        self.server, self.flag = server, flag

    def request(self, message: dict, timeout: float) -> dict:
        if self.flag.exists():
            raise HarnessFailure("the process ended: CUDA error: unspecified launch failure (simulated: the GPU "
                                 "fell off the bus)", CaseStatus.CRASHED)
        return self.server.request(message, timeout)

    def close(self):
        self.server.close()


class SimulatedBackend(FakeBackend):
    """FakeBackend as `--device simulated` runs it: it names its host and a made-up UUID per device."""

    def identify(self, gpu, device: dict) -> dict:
        return {"host": socket.gethostname(), "uuid": f"GPU-simulated-{gpu}", "nvidia_driver": "simulated"}

    def solution_server(self, gpu) -> Server:
        server = super().solution_server(gpu)
        broken = os.environ.get(SIMULATED_BROKEN_ENV)
        return _FailingGpu(server, Path(broken) / str(gpu)) if broken else server


class SimulatedKind(Kind):
    """`--device simulated`: the fake backend behind grader/backends/base.py's Kind. Its devices are
    CUDA_VISIBLE_DEVICES where set (as Slurm sets it for a job's GPUs), else one; its build cache
    holds no build, only what a real one records, and a line in builds.log each time it is built."""
    name = "simulated"
    sandboxed = False  # it runs no student code
    uses_gpus = True  # it stands in for the GPU's kind: its Slurm tasks ask for one (--gres)

    def devices(self, spec: str) -> list[str]:
        if spec != "all":
            return gpu_list(spec)
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        return [d for d in visible.split(",") if d] if visible else ["0"]

    def arch(self, given: str | None) -> str:
        return given or "simulated"

    def profiler(self) -> str:
        return ""

    def toolchain(self) -> dict:
        return {"simulated": FakeBackend.harness_version}

    def build_cache(self, folder: Path, arch: str, jobs: int, rubric: Path) -> dict:
        registry = Registry.from_file()
        load_rubric(rubric, registry)  # as the real build checks the rubric against its harness
        with open(Path(folder) / "builds.log", "a") as log:
            log.write(f"{datetime.now(timezone.utc).isoformat()} pid {os.getpid()}\n")
        return {"registry": registry.raw, "harness_version": FakeBackend.harness_version, "arch": arch}

    def open(self, folder: Path, cached: dict, work: Path, sandbox, arch: str | None):
        return SimulatedBackend(delay=_delay()), Registry.from_json(cached["registry"])


def _delay() -> float:
    return float(os.environ.get(SIMULATED_DELAY_ENV) or 0.0)
