"""The CPU backend (`--device cpu`): correctness only, on a machine without a GPU. The same workspace and sandbox
build every file with starter/cpu/ (cudacpu.py and g++, make CPU=1); one `harness --serve` worker runs the
correctness cases with each launch's blocks spread over the cores; nothing is timed; its own checks
(AddressSanitizer; the race checker, which also sees races between blocks) run in compute-sanitizer's place; a task
file the CPU cannot run is that task's "needs a GPU" verdict; the build gate judges its objects as it judges
nvcc's. The chooser is grader/backends/__init__.py's `get`."""
from __future__ import annotations

import os
import platform
import shutil
import socket
import stat
import subprocess
import threading
import time
from collections import OrderedDict
from pathlib import Path

from grader.shared import sanitizer as tool_runs
from grader.shared import student_tools
from grader.backends.base import Backend, Kind
from grader.backends.local import LocalBackend, Workspace
from grader.core.errors import GraderError
from grader.core.registry import Registry
from grader.run import counters
from grader.run.sandbox import run as run_sandboxed
from grader.outcomes.results import ProfileOutcome, SanitizerOutcome
from grader.run.runner import HarnessFailure, HarnessServer
from grader.core.rubric import load_rubric
from grader.core.status import NOT_TIMED_ON_CPU, CaseStatus, ProfileStatus, SanitizerStatus



def cpu_model() -> str:
    """This machine's processor, as /proc/cpuinfo names it (else the platform's word for it)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.split(":")[0].strip() in ("model name", "Model", "Hardware"):
                return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown processor"


def cpu_cores() -> int:
    """The processors this process may run on (what the CPU backend's workers spread a launch's blocks over)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def compiler_version(cxx: str = "") -> str:
    """The first line of the CPU backend's compiler's --version ($CXX, else g++, as cpu/cudacpu.py chooses)."""
    cxx = cxx or os.environ.get("CXX") or "g++"
    try:
        done = subprocess.run([*cxx.split(), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        raise GraderError(f"--device cpu: the compiler {cxx} cannot run here ({e}); the CPU backend builds with g++ "
                          "(or $CXX)") from None
    return (done.stdout.strip().splitlines() or [cxx])[0]


def nvcc_rules_checker() -> str:
    """The clang that cudacpu.py's nvcc-rules check runs (starter/cpu/driver/frontend.py), by its --version's first
    line, or "" where there is none: a file it refuses is a compile error, so an object built without it must not
    be found by a build with it."""
    clang = student_tools.load_driver("frontend").find_clang()
    return compiler_version(clang) if clang else ""


class CpuBackend(LocalBackend):
    """The CPU backend (starter/cpu/): the same build and `harness --serve` as the GPU's, with make CPU=1, in the
    same sandbox; correctness only: its harness times nothing, and its own checks stand in for compute-sanitizer."""

    timed = False
    untimed_reason = NOT_TIMED_ON_CPU
    checker = "cpu"
    device_words = "the CPU backend's runtime"
    HARNESS_SUFFIX = "+cpu"  # on its harness version: a submission graded here is graded again on a GPU

    LINE_TABLES_KEPT = 4

    def __init__(self, work: Path, isolation=None):
        super().__init__(work, None, isolation, cpu=True)
        self._line_tables: OrderedDict[tuple, str] = OrderedDict()
        self._line_tables_lock = threading.Lock()

    @property
    def harness_version(self) -> str:
        return self.registry.harness_version + self.HARNESS_SUFFIX

    def identify(self, gpu: str | None, device: dict) -> dict:
        """What the run is stored with beside the harness's own description ("CPU backend (cudacpu), emulating
        an sm_90 GPU"): the host, its processor and cores, the compiler."""
        return {"backend": "cpu", "host": socket.gethostname(), "cpu": cpu_model(), "cores": cpu_cores(),
                "compiler": compiler_version()}

    # One worker, on no GPU: the label "cpu" is what the run records, never a CUDA_VISIBLE_DEVICES.
    def student_server(self, build, gpu: str | None):
        return super().student_server(build, None)

    def solution_server(self, gpu: str | None):
        return super().solution_server(None)

    def check_gpu(self, gpu: str | None):
        super().check_gpu(None)

    def gpu_profile(self, sub, build, task, dtype, shape, gpu, seed, timeout) -> None:
        return None  # no GPU here: this backend's own counters are `profile`'s

    def prepare_checkers(self, sub, build, timeout: float) -> None:
        """The race checker's harness (racecheck's and the counters') is a build of its own: started beside the
        cases, so a first upload's checks do not wait for it (on the idle 2-core machine its compile is about 3 s
        of an s08-fast grading; docs/cpu-backend.md)."""
        if build.ok and build.harness is not None and build.harness.is_file():
            self.workspace.start_race_harness(sub, timeout)

    def release_checkers(self, sub) -> None:
        self.workspace.finish_race_harness(sub)

    # Each task's check alone: its runs start no CUDA context, so one run for all would save little, and the
    # race checker's harness is a build of its own.
    sanitize_tasks = Backend.sanitize_tasks

    def sanitize(self, sub, build, gpu, tool, task, dtype, shape, seed, timeout, shapes=None) -> SanitizerOutcome:
        """The CPU backend's own check in the tool's place, over the student's `harness --serve` in the sandbox,
        sent the requests a graded run of the task gets (as compute-sanitizer's run is): memcheck is the harness
        the submission was graded with (its task files carry AddressSanitizer), each array alone in an allocation
        of exactly its size; racecheck, the harness of its task files compiled with --racecheck, which also sees
        races between blocks. A finding is a case the backend stopped with its report."""
        start = time.monotonic()
        chosen = tool_runs.sanitized_shapes(list(shapes or [shape]), shape)
        outcome = SanitizerOutcome(task, tool, dtype, chosen[-1], SanitizerStatus.CLEAN, checker="cpu")
        harness, why = (build.harness, "") if tool == "memcheck" else self.workspace.race_harness(sub, timeout)
        if harness is None:
            outcome.status, outcome.message = SanitizerStatus.FAILED, why
            return outcome
        scratch = self.workspace.scratch / build.harness.parent.name / f"{tool}-{task}"
        shutil.rmtree(scratch, ignore_errors=True)
        server = HarnessServer(harness, None, sandbox=self.isolation, scratch=scratch, clock=self.case_clock)
        replies, said = [], ""
        deadline = start + timeout
        sent = tool_runs.requests(tool, task, dtype, chosen, seed)
        try:
            for message in sent:
                replies.append(server.request(message, max(1.0, deadline - time.monotonic())))
                if replies[-1].get("context_lost"):
                    break
        except HarnessFailure as failure:
            said = ("the check did not finish within its limit" if failure.kind == CaseStatus.TIMEOUT else str(failure))
            outcome.status = (SanitizerStatus.TIMEOUT if failure.kind == CaseStatus.TIMEOUT
                              else SanitizerStatus.FAILED)
        finally:
            server.close()
            shutil.rmtree(scratch, ignore_errors=True)
        outcome.seconds = time.monotonic() - start
        findings = tool_runs.cpu_findings(replies)
        if findings.errors:
            outcome.status, outcome.errors = SanitizerStatus.ERRORS, findings.errors
            outcome.shape = sent[tool_runs.first_cpu_finding(replies)]["shape"]  # where it happened
            outcome.report = self.workspace._readable(findings.report, self.workspace.kernel_dirs / sub.key)
        elif said:
            outcome.message = f"{said}: {server.stderr.strip()[-600:]}".rstrip(": ")
        return outcome

    def profile(self, sub, build, task, dtype, shape, seed, timeout) -> ProfileOutcome:
        """make profile's counters on the task's profile case: the --racecheck harness (the race checker's build,
        reused) answers one check request in the sandbox with counting on (CUDA_CPU_PROFILE, a file in its
        scratch folder), each array alone in an allocation of exactly its size, as make profile places them."""
        start = time.monotonic()
        outcome = ProfileOutcome(task, dtype, shape, ProfileStatus.FAILED)
        harness, why = self.workspace.race_harness(sub, timeout)
        if harness is None:
            outcome.message = why
            return outcome
        scratch = self.workspace.scratch / build.harness.parent.name / f"profile-{task}"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        counts, lines = scratch / "launches.jsonl", scratch / "lines.txt"
        # The sandbox runs no other program than the harness, so no addr2line: the harness gets the line table
        # (which accesses share a line) and names code addresses, which get their lines afterwards.
        table = self._line_table(harness, scratch, timeout)
        if table:
            lines.write_text(table)
        server = HarnessServer(harness, None, sandbox=self.isolation, scratch=scratch, clock=self.case_clock,
                               env={"CUDA_CPU_PROFILE": str(counts), "CUDA_CPU_PROFILE_LINES": str(lines)})
        try:
            reply = server.request({"op": "check", "task": task, "dtype": dtype, "shape": shape, "seed": seed,
                                    "check_runs": 1, "fixed_placement": True}, timeout)
            # Each launch's line is written whole when it ends: the reply comes after the last.
            if reply.get("status") != CaseStatus.OK:
                outcome.status = ProfileStatus.SKIPPED
                outcome.message = f"not counted: its profile case ({shape}) ended {reply.get('status')}"
            else:
                text = _read_own_file(counts, counters.MAX_BYTES + 1)
                outcome = counters.outcome(task, dtype, shape, text, self._addr2line(harness, scratch))
        except HarnessFailure as failure:
            outcome.message = ("the count did not finish within its limit" if failure.kind == CaseStatus.TIMEOUT
                               else str(failure))
        finally:
            server.close()
            shutil.rmtree(scratch, ignore_errors=True)
        outcome.seconds = time.monotonic() - start
        return outcome

    def _line_table(self, harness: Path, scratch: Path, timeout: float) -> str:
        """The harness's line table for CUDA_CPU_PROFILE_LINES, read by readelf in the sandbox: once per harness
        build, as each of a submission's tasks is counted by the same harness (0.2 s a task to read again)."""
        built = harness.stat()
        key = (str(harness), built.st_ino, built.st_mtime_ns, built.st_size)
        with self._line_tables_lock:
            if key in self._line_tables:
                self._line_tables.move_to_end(key)
                return self._line_tables[key]
        done = run_sandboxed(self.isolation, ["sh", "-c", 'exec readelf --debug-dump=decodedline "$1" > "$2"', "sh",
                                              str(harness), str(scratch / "readelf.txt")],
                             timeout=min(60.0, timeout), read_only=[harness], writable=[scratch])
        if done.status != 0:
            return ""  # (read again for the next task: the line table only merges vector accesses)
        table = counters.line_table(_read_own_file(scratch / "readelf.txt", 256 << 20))
        with self._line_tables_lock:
            self._line_tables[key] = table
            while len(self._line_tables) > self.LINE_TABLES_KEPT:  # a few MB each: the submissions in flight
                self._line_tables.popitem(last=False)
        return table

    def _addr2line(self, harness: Path, scratch: Path):
        """A symbolizer for the counts' code addresses: addr2line on the submission's harness, in the sandbox."""
        def symbolize(addresses: list[str]) -> dict[str, str]:
            try:
                done = run_sandboxed(self.isolation, ["addr2line", "-a", "-i", "-e", str(harness),
                                                      *addresses[:4096]],
                                     timeout=60, read_only=[harness], writable=[scratch])
            except OSError:
                return {}
            return counters.places(done.stdout) if done.status == 0 else {}
        return symbolize


def _read_own_file(path: Path, limit: int) -> str:
    """At most `limit` bytes of a file the sandbox wrote, as text; "" unless it is a plain file there (never a
    link the code inside left, which could point at any file the grader may read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return ""
        return f.read(limit).decode(errors="replace")


class CpuKind(Kind):
    name = "cpu"
    sandboxed = True
    uses_gpus = False  # a Slurm array task asks for CPUs only (--cpus-per-task; no --gres)
    ARCH = "cpu"  # what a build cache and a Slurm batch record as its architecture

    def devices(self, spec: str) -> list[str]:
        """One worker: the harness spreads each launch's blocks over every core itself."""
        if spec != "all":
            raise GraderError(f"--gpus {spec}: --device cpu grades with one worker, which runs each kernel's blocks on "
                              "all of this machine's cores; leave --gpus out")
        return ["cpu"]

    def arch(self, given: str | None) -> str:
        if given and given != self.ARCH:
            raise GraderError(f"--arch {given} names a GPU architecture; --device cpu builds for this machine's "
                              "processor: leave --arch out")
        return self.ARCH

    def toolchain(self) -> dict:
        """The compiler cpu/cudacpu.py builds with, the python3 that runs it, and the header libraries' folder."""
        python = shutil.which("python3")
        if python is None:
            raise GraderError("--device cpu: python3 is not on PATH (the CPU backend's compiler driver runs with it)")
        return {"cxx": compiler_version(), "python3": str(Path(python).resolve()),
                "deps_include": os.environ.get("DEPS_INCLUDE", ""), "nvcc_rules": nvcc_rules_checker()}

    def build_cache(self, folder: Path, arch: str | None, jobs: int, rubric: Path) -> dict:
        """The pristine harness with the CPU runtime, and the solution, built once (trusted code: no sandbox)."""
        self.toolchain()
        old = os.umask(0o022)
        try:
            ws = Workspace(Path(folder) / "work", cpu=True)
            registry = Registry.from_harness(ws.prepare(jobs))
            load_rubric(rubric, registry)
        finally:
            os.umask(old)
        return {"registry": registry.raw, "harness_version": registry.harness_version + CpuBackend.HARNESS_SUFFIX,
                "arch": self.ARCH}

    def open(self, folder: Path, cached: dict, work: Path, sandbox, arch: str | None):
        backend = CpuBackend(work, sandbox)
        return backend, backend.use_cache(folder, cached)
