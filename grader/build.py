"""Building a submission against a pristine copy of the harness.

Once per grading run the grader copies starter/ (the harness, the contract
headers, the stubs and the Makefile, never a student's) into its work
directory, builds the harness library there, and builds the solution. Each
submission then gets a fresh kernels folder holding only its recognized task
files (the stubs stand in for missing ones), which is compiled and linked
against that library with a wall-clock limit. With the rubric's gate policy,
the files are first compiled to objects and inspected (grader/gate/): a file
that breaks a rule is replaced by its stub before the link.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from grader.gate.build_gate import BuildGate, GateError, GateSetup
from grader.gate.policy import GatePolicy
from grader.gate.report import GateReport
from grader.intake import Submission
from grader.registry import Registry
from grader.runner import HarnessServer

REPO = Path(__file__).resolve().parents[1]
BUILD_LOG_CAP = 20000  # characters of compiler output kept for feedback


@dataclass
class BuildResult:
    ok: bool
    harness: Path | None
    seconds: float
    log: str = ""
    reason: str = ""  # one line, when not ok
    gate: GateReport | None = None  # the build gate's findings, when it ran


class GraderError(RuntimeError):
    """The grader itself cannot go on (not a student's fault)."""


def run_limited(cmd: list[str], timeout: float, cwd: Path | None = None) -> tuple[int | None, str]:
    """Runs cmd in its own process group; returns (exit status or None on timeout, combined output)."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out


class Workspace:
    """The grader's private build tree for one grading run."""

    def __init__(self, work: Path, arch: str | None = None, repo: Path = REPO):
        self.repo = repo
        self.work = Path(work).resolve()
        self.pristine = self.work / "pristine"
        self.build_dir = self.work / "build"
        self.kernel_dirs = self.work / "kernels"
        self.arch = arch
        self._gate = GateSetup()

    def _make(self, *args: str) -> list[str]:
        cmd = ["make", "-s", "-C", str(self.pristine), f"BUILD={self.build_dir}", *args]
        return cmd + ([f"ARCH={self.arch}"] if self.arch else [])

    def prepare(self, jobs: int, solution: bool = True) -> Path:
        """Copies the harness, builds its library and (unless told not to) the solution; returns
        the solution's harness."""
        if self.pristine.exists():
            shutil.rmtree(self.pristine)
        shutil.copytree(self.repo / "starter", self.pristine, ignore=shutil.ignore_patterns("build", "__pycache__"))
        self.kernel_dirs.mkdir(parents=True, exist_ok=True)
        status, out = run_limited(self._make(f"-j{jobs}", "lib"), timeout=1800)
        if status != 0:
            raise GraderError(f"building the pristine harness failed:\n{out[-4000:]}")
        if not solution:
            return self.build_dir / "solution" / "harness"
        solution = self.repo / "solution" / "kernels"
        status, out = run_limited(self._make(f"-j{jobs}", "harness", f"KERNELS={solution}", "KTAG=solution"),
                                  timeout=1800)
        if status != 0:
            raise GraderError(f"building the solution failed:\n{out[-4000:]}")
        return self.build_dir / "solution" / "harness"

    def stub_files(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in (self.pristine / "kernels").glob("*.cu")}

    def build(self, sub: Submission, timeout: float, gate: GatePolicy | None = None) -> BuildResult:
        kernels = self.kernel_dirs / sub.student
        if kernels.exists():
            shutil.rmtree(kernels)
        kernels.mkdir(parents=True)
        for name, data in {**self.stub_files(), **sub.files}.items():
            (kernels / name).write_bytes(data)
        tag = f"submission-{sub.student}"
        start = time.monotonic()
        report, status, out = self._gated_objects(sub, kernels, tag, timeout, gate) if gate else (None, 0, "")
        if status == 0:
            status, linked = run_limited(self._make("harness", f"KERNELS={kernels}", f"KTAG={tag}"),
                                         timeout=max(1.0, timeout - (time.monotonic() - start)))
            out += linked
        seconds = time.monotonic() - start
        log = self._readable(out, kernels)
        if status is None:
            return BuildResult(False, None, seconds, log, f"the build took longer than its limit of {timeout:g} s",
                               report)
        if status != 0:
            return BuildResult(False, None, seconds, log, "your code does not compile (the compiler's messages follow)",
                               report)
        return BuildResult(True, self.build_dir / tag / "harness", seconds, log, gate=report)

    def _gated_objects(self, sub: Submission, kernels: Path, tag: str, timeout: float,
                       gate: GatePolicy) -> tuple[GateReport, int | None, str]:
        """Compiles the task files to objects and runs the build gate, which swaps in the stubs of files
        that break a rule; returns its report and the compile's (status, output)."""
        checker = self.gate(gate)
        screened = checker.screen(kernels, sub.files)
        status, out = run_limited(self._make("objects", f"KERNELS={kernels}", f"KTAG={tag}"), timeout=timeout)
        if status != 0:
            return GateReport(screened), status, out
        return checker.inspect(kernels, self.build_dir / tag / "kernels", sub.files, screened), status, out

    def gate(self, policy: GatePolicy) -> BuildGate:
        """The build gate for this workspace and policy, set up on first use."""
        def compile_objects(kernels: Path, tag: str):
            status, out = run_limited(self._make(f"-j{os.cpu_count() or 2}", "objects", f"KERNELS={kernels}",
                                                 f"KTAG={tag}"), timeout=1800)
            if status != 0:
                raise GraderError(f"building the gate's reference objects ({tag}) failed:\n{out[-4000:]}")
        try:
            return self._gate.get(policy, lambda: BuildGate(self.pristine, self.build_dir, policy, compile_objects))
        except GateError as e:
            raise GraderError(f"the build gate cannot run: {e}") from e

    def _readable(self, out: str, kernels: Path) -> str:
        """The compiler's output with the grader's paths taken out, capped for feedback."""
        lines = [line for line in out.splitlines() if not line.startswith(("make:", "make["))]
        text = "\n".join(lines).replace(str(kernels) + "/", "kernels/").replace(str(self.pristine) + "/", "")
        text = text.replace(str(self.build_dir) + "/", "build/")
        return text[-BUILD_LOG_CAP:]


class LocalBackend:
    """Builds with nvcc in a private workspace and runs harnesses on this machine's GPUs."""

    sandbox = "none: student code runs as the grader's user, without isolation"

    def __init__(self, work: Path, arch: str | None = None):
        self.workspace = Workspace(work, arch)
        self.solution: Path | None = None
        self.registry: Registry | None = None

    def prepare(self, jobs: int) -> Registry:
        """Builds the pristine harness and the solution; returns the harness's task registry."""
        self.solution = self.workspace.prepare(jobs)
        self.registry = Registry.from_harness(self.solution)
        return self.registry

    @property
    def harness_version(self) -> str:
        return self.registry.harness_version

    def build(self, sub: Submission, timeout: float, gate: GatePolicy | None = None) -> BuildResult:
        return self.workspace.build(sub, timeout, gate)

    def student_server(self, build: BuildResult, gpu: str | None) -> HarnessServer:
        return HarnessServer(build.harness, gpu)

    def solution_server(self, gpu: str | None) -> HarnessServer:
        return HarnessServer(self.solution, gpu)
