"""Where student code is built and run: the one interface every backend implements (Autolab Tango's VMMS is the model).

Two declared interfaces, each an abstract base class, so that no caller asks with getattr whether a backend has
an ability: every ability is declared here, abstract where each backend must say, with a default where one is
meaningful for every backend that does not say otherwise. The processes a backend starts answer grader/run/server.py's
Server interface.

    Backend  builds a submission and starts its servers and the solution's: build, student_server,
             solution_server, sanitize, set_limits, harness_version, sandbox (abstract); sanitize_tasks, checker,
             timed, clock, identify, check_gpu (defaults: a sanitize run per task, compute-sanitizer, timed,
             time.monotonic, nothing to add, nothing to check)
    Kind     a backend by name (--device): how to find its devices, build its cache and open a Backend against
             a cache entry (on one machine or in a Slurm array task); uses_gpus says whether such a task asks
             Slurm for a GPU

Implementations: grader/backends/local.py's LocalBackend (what both below share), grader/backends/gpu.py's
GpuBackend and grader/backends/cpu.py's CpuBackend with their kinds, and the tests' fakes (grader/tests/fakes.py). The harness's own server is
grader/run/runner.py's HarnessServer.

This module imports nothing of the grader at run time (the names below are for annotations only): every layer
may import it.
"""
from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from grader.outcomes.build_result import BuildResult
    from grader.core.gate_policy import GatePolicy
    from grader.intake.submission import Submission
    from grader.outcomes.isolation import Isolation
    from grader.core.registry import Registry
    from grader.outcomes.results import ProfileOutcome, SanitizerOutcome
    from grader.run.server import Server


@dataclass(frozen=True)
class ToolTask:
    """One task's part of a sanitizer run: its element type, its small case and its graded shapes."""
    task: str
    dtype: str
    shape: str
    shapes: tuple[str, ...]
    limit: float | None = None  # seconds its run may take, where less than the tool's limit (grading/tools.py)

    def within(self, timeout: float) -> float:
        return timeout if self.limit is None else min(timeout, self.limit)


class Backend(ABC):
    """Builds submissions and runs them: what grade() and grade_single() (grader/grading/grade.py) are given, prepared
    (the solution built) before grading starts."""

    # Whether grading times cases. False (the CPU backend): correctness only, no measured limits, no GPU memory
    # to watch, and each task's note says that performance was not measured.
    timed: bool = True
    # Why not, when it does not: the words every reader shows in a performance column (stored with the run).
    untimed_reason: str = ""
    # Who runs the sanitizer's tools: "compute-sanitizer", or the CPU backend's own checks ("cpu").
    checker: str = "compute-sanitizer"
    # Whether the tools' runs (one per tool) may run at once: compute-sanitizer's runs spend most of their time on
    # the host's cores, instrumenting and checking, and no verdict of theirs depends on time. Not the CPU
    # backend's, whose checks use every core each.
    tools_at_once: bool = False
    # What a case's limit counts (grader/run/runner.py): the wall clock, or ("cpu", the CPU backend's) the CPU time
    # its process got. A case past a wall-clock limit is run once more, alone, before it is called a hang
    # (grader/grading/cases.py): the machine's load can push a correct kernel past a wall clock, not past CPU time.
    case_clock: str = "wall"

    @property
    @abstractmethod
    def harness_version(self) -> str:
        """The harness's version (stored with each grade: a different one grades a submission again)."""

    @property
    @abstractmethod
    def sandbox(self) -> Isolation:
        """How student code is isolated: stored with every grading run."""

    @abstractmethod
    def set_limits(self, limits) -> None:
        """The rubric's [limits] (grader.core.rubric.Limits) for everything student code runs."""

    @abstractmethod
    def build(self, sub: Submission, timeout: float, gate: GatePolicy | None = None) -> BuildResult:
        """Builds the submission (through the build gate, when given one) within `timeout` seconds."""

    @abstractmethod
    def student_server(self, build: BuildResult, gpu: str | None) -> Server:
        """A new process of the student's harness on `gpu`, in the sandbox."""

    @abstractmethod
    def solution_server(self, gpu: str | None) -> Server:
        """A new process of the solution's harness on `gpu`."""

    @abstractmethod
    def sanitize(self, sub: Submission, build: BuildResult, gpu: str | None, tool: str, task: str, dtype: str,
                 shape: str, seed: int, timeout: float, shapes: list[str] | None = None) -> SanitizerOutcome:
        """The sanitizer's `tool` (memcheck, racecheck) over the task's graded shapes up to `shape`."""

    def sanitize_tasks(self, sub: Submission, build: BuildResult, gpu: str | None, tool: str, tasks: list[ToolTask],
                       seed: int, timeout: float,
                       skipped: Callable[[ToolTask], SanitizerOutcome | None]) -> list[SanitizerOutcome]:
        """The tool over each of these tasks, one outcome per task in their order; `timeout` is each task's limit.
        Before a task's own run, skipped(task) gives its outcome if it is not to start (the submission's time ran
        out), else None. By default one run per task (`sanitize`)."""
        return [skipped(t) or self.sanitize(sub, build, gpu, tool, t.task, t.dtype, t.shape, seed,
                                            t.within(timeout), shapes=list(t.shapes))
                for t in tasks]

    def prepare_checkers(self, sub: Submission, build: BuildResult, timeout: float) -> None:
        """Once a task of the submission has run its cases and reaches the tools (grader/grading/cases.py): start
        whatever its tools and counters will need built (within `timeout` seconds: a tool's own limit), beside the
        rest of its cases. By default nothing (compute-sanitizer runs the graded harness)."""

    def release_checkers(self, sub: Submission) -> None:
        """After the submission's grading: wait for what prepare_checkers started. By default nothing."""

    def profile(self, sub: Submission, build: BuildResult, task: str, dtype: str, shape: str, seed: int,
                timeout: float) -> ProfileOutcome | None:
        """make profile's counters for the task on its profile `shape` (feedback only), or None where this backend
        does not count: a GPU's run has real timings, and the counters are the CPU backend's."""
        return None

    def gpu_profile(self, sub: Submission | None, build: BuildResult | None, task: str, dtype: str, shape: str,
                    gpu: str | None, seed: int, timeout: float) -> ProfileOutcome | None:
        """Nsight Compute's counters for the task's profile case on `gpu` (make profile GPU=1; feedback only), of
        the student's `build` of `sub`, or with None the solution's; None where this backend has no GPU
        profiler."""
        return None

    def clock(self) -> float:
        """Seconds, as time.monotonic counts them: what timed cases and the time budget are measured against
        (the tests' simulated GPU brings its own)."""
        return time.monotonic()

    def identify(self, gpu: str | None, device: dict) -> dict:
        """What the grading run stores about `gpu` beside the harness's own description `device` (the host, the
        GPU's UUID, ...; "backend": gpu or cpu). By default nothing."""
        return {}

    def check_gpu(self, gpu: str | None) -> None:
        """Raises a GraderError if the solution's harness cannot reach its device from inside the sandbox. By
        default nothing to check (a backend that runs no student code)."""


class Kind(ABC):
    """A backend by the name --device gives it (grader/backends/__init__.py's get): where its code runs, and how a grading
    run on one machine or a Slurm array task gets a prepared Backend."""

    @property
    @abstractmethod
    def name(self) -> str:
        """Its --device name (recorded by a build cache and a Slurm batch)."""

    @property
    @abstractmethod
    def sandboxed(self) -> bool:
        """Whether it runs student code (then bubblewrap is required, and check_gpu runs before grading)."""

    @property
    @abstractmethod
    def uses_gpus(self) -> bool:
        """Whether a Slurm array task of it asks for a GPU (--gres); the CPU backend's ask for CPUs only."""

    @abstractmethod
    def devices(self, spec: str) -> list[str]:
        """The devices to grade on ("all", or indices): one grading worker each."""

    @abstractmethod
    def arch(self, given: str | None) -> str:
        """The architecture a build cache is built for (`given`, else this machine's)."""

    @abstractmethod
    def toolchain(self) -> dict:
        """What the shared build cache's key records about the compilers."""

    @abstractmethod
    def build_cache(self, folder: Path, arch: str | None, jobs: int, rubric: Path) -> dict:
        """The pristine harness and the solution built once into a cache entry's folder (grader/backends/build_cache.py);
        the record the entry keeps."""

    @abstractmethod
    def open(self, folder: Path, cached: dict, work: Path, sandbox, arch: str | None) -> tuple[Backend, Registry]:
        """A Backend that builds submissions in `work` against a cache entry, building nothing else."""

    def profiler(self) -> str:
        """"" where its workers can run Nsight Compute on this machine (make profile GPU=1), else why not."""
        return f"the {self.name} backend runs no GPU profiler"
