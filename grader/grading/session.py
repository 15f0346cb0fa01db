"""One grading session: a grading run's record in the store (seed, versions, devices, measured limits, isolation),
the solution's process on each GPU with its measured times and the GPU's free memory, and one submission's way
through it: intake → build → run (grader/grading/cases.py) → the one scoring chain → the store.

The drivers are thin: `grade` (grader/grading/grade.py: a pool of builds feeding one thread per GPU), the single
submission's path (`grade_single`, the same file), the service's worker (grader/service/worker.py) and a Slurm
shard (grader/slurm/shard.py, through `grade`) hand it submissions and decide only where and when;
grader/tests/test_layers.py fails when a driver calls the build, run or scoring layers itself.
"""
from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Callable

from grader.backends.base import Backend
from grader.core.registry import Registry
from grader.core.rubric import Rubric
from grader.core.status import CaseStatus, ProfileStatus, SubmissionStatus
from grader.grading.caps import human_bytes
from grader.grading.cases import grade_submission
from grader.intake.submission import Entry, IntakeLimits, Submission, read_submission
from grader.run import ncu
from grader.run.budget import SolutionTimes
from grader.outcomes.build_result import BuildResult
from grader.outcomes.results import SubmissionResult
from grader.run.runner import HarnessFailure
from grader.run.server import Server
from grader.scoring.chain import chain_for_result
from grader.store.store import Store


def _warn(line: str):
    print(f"grader: warning: {line}", file=sys.stderr)


class GradingSession:
    """Opened on a store for one grading run on `gpus` (None: the backend's one device); closed once (the run's end
    recorded, the solution's processes ended). `say` receives the warnings a driver shows (a submission that kept
    GPU memory taken)."""

    def __init__(self, store: Store, rubric: Rubric, registry: Registry, backend: Backend, gpus: list[str | None],
                 seed: int | None, command: str, folder: Path, source: str, say: Callable[[str], None] = _warn):
        self.store, self.rubric, self.registry, self.backend, self.say = store, rubric, registry, backend, say
        self.seed = seed if seed is not None else random.getrandbits(53)
        self.solutions: dict[str | None, Server] = {}
        self._times: dict[str | None, SolutionTimes] = {}
        self._solution_profiles: dict[tuple[str | None, str], object] = {}  # (gpu, task) -> the solution's counts
        backend.set_limits(rubric.limits)
        try:
            for gpu in gpus:
                self.solutions[gpu] = backend.solution_server(gpu)
            self.run_id, self.free_at_start = start_run(store, self.solutions, self.seed, rubric, registry, backend,
                                                        command, folder, source)
        except BaseException:
            self._end_solutions()
            raise

    # --- one submission's way -----------------------------------------------------------------------------------

    def read(self, entry: Path | Entry) -> Submission:
        """Intake, within the rubric's limits."""
        return self.read_alone(entry, self.rubric, self.registry)

    @staticmethod
    def read_alone(entry: Path | Entry, rubric: Rubric, registry: Registry) -> Submission:
        """Intake before a session is open (one submission's run is named after where it came from)."""
        return read_submission(entry, [t.file for t in registry.tasks], IntakeLimits.from_rubric(rubric.limits))

    def build(self, sub: Submission) -> tuple[SubmissionResult | None, BuildResult | None]:
        """A submission rejected at intake or whose build failed, finished (the chain gives it zero); else its build."""
        return intake_and_build(sub, self.backend, self.rubric)

    def times(self, gpu: str | None) -> SolutionTimes:
        """The solution's measured times on `gpu`, measured once for every submission this session runs there."""
        if gpu not in self._times:
            self._times[gpu] = SolutionTimes(self.solutions[gpu], self.rubric.limits.case, self.backend.clock)
        return self._times[gpu]

    def run(self, sub: Submission, build: BuildResult, gpu: str | None,
            progress: Callable[[int, int], None] | None = None) -> SubmissionResult:
        """The built submission's cases and tools on `gpu`; then the GPU's memory must come back before the next
        (a submission that kept it taken gets a note, and the driver a warning)."""
        solution = self.solutions[gpu]
        result = grade_submission(sub, build, self.backend, gpu, solution, self.rubric, self.registry, self.seed,
                                  self.times(gpu), progress=progress)
        held = await_gpu_memory(solution, self.free_at_start.get(gpu), self.rubric.limits, sub.student)
        if held:
            sub.notes.append(held)
            self.say(held)
        return result

    def grade(self, sub: Submission, gpu: str | None,
              progress: Callable[[int, int], None] | None = None) -> SubmissionResult:
        """Build, then run: the whole of one submission's grading before it is stored."""
        result, build = self.build(sub)
        return result if result is not None else self.run(sub, build, gpu, progress)

    def save(self, result: SubmissionResult, then: Callable[[int], None] | None = None,
             store: Store | None = None) -> int:
        """Stores the result through the one scoring chain, in one transaction (`then(submission_id)` inside it);
        through `store` where given (a thread's own connection to the session's store: a service's build stage)."""
        return (store or self.store).save(self.run_id, result, self.backend.harness_version, self.rubric.sha256,
                               self.rubric.max_points, chain_for_result(self.rubric, result, self.backend.timed),
                               then=then)

    # --- what a worker asks between submissions -------------------------------------------------------------------

    def health(self, gpu: str | None) -> str:
        """"" when the GPU still runs the solution right on the first task's smallest graded case; else why not."""
        return health_check(self.solutions[gpu], self.rubric)

    def gpu_profile(self, sub: Submission, build: BuildResult, task_id: str, gpu: str | None) -> tuple[dict, str, bool]:
        """make profile GPU=1: Nsight Compute on the task's profile case (its type and shape, as the CPU's counters
        take them), the solution's numbers beside it (measured once per task and GPU). Returns the result kept on
        the job, its status, and whether it counts against the hourly limit (only a counted profile does)."""
        task = self.rubric.task(task_id)
        dtype, shape = task.timed_dtype, task.profile
        timeout = min(self.rubric.limits.submission, 6 * self.rubric.limits.case)
        mine = self.backend.gpu_profile(sub, build, task.id, dtype, shape, gpu, self.seed, timeout)
        if mine is None:
            return ({"status": str(ProfileStatus.SKIPPED), "task": task.id,
                     "message": "this worker runs no GPU profiler"}, str(ProfileStatus.SKIPPED), False)
        theirs = self._solution_profiles.get((gpu, task.id))
        if theirs is None:
            theirs = self.backend.gpu_profile(None, None, task.id, dtype, shape, gpu, 1, timeout)
            if theirs is not None and theirs.status == ProfileStatus.COUNTED:
                self._solution_profiles[gpu, task.id] = theirs
        numbers, reference = mine.numbers or {}, (theirs.numbers if theirs is not None else None) or {}
        result = {"status": str(mine.status), "task": task.id, "dtype": dtype, "shape": shape, "gpu": gpu,
                  "message": mine.message, "numbers": numbers, "solution": reference,
                  "rows": ncu.rows(numbers, reference) if numbers else [],
                  "findings": ncu.findings(numbers, reference, task.id) if numbers and reference else [],
                  "seconds": round(mine.seconds, 1)}
        return result, str(mine.status), mine.status == ProfileStatus.COUNTED

    def close(self, finish: bool = True):
        """Ends the solution's processes and, with `finish`, records the run's end."""
        self._end_solutions()
        if finish:
            self.store.finish_run(self.run_id)

    def _end_solutions(self):
        for server in self.solutions.values():
            server.close()
        self.solutions = {}


def start_run(store: Store, solutions: dict, seed: int, rubric: Rubric, registry: Registry, backend: Backend,
               command: str, folder: Path, source: str) -> tuple[int, dict]:
    """The grading run's record: its seed and versions, each GPU's device (the harness's description, and where
    the backend can tell: the host, the GPU's UUID and its driver), the first GPU's measured limits, and how
    student code is isolated; with each GPU's free memory now (what every submission must give back). Every
    solution process measures its GPU's limits: its check replies then carry each timed case's plausibility floor."""
    devices, limits, free_at_start = [], {}, {}
    for gpu, server in solutions.items():
        device = server.request({"op": "hello"}, 120).get("device", {})
        devices.append({"gpu": gpu, **device, **backend.identify(gpu, device)})
        if not backend.timed:  # nothing is timed (and the CPU's harness measures no limits), no GPU memory to watch
            free_at_start[gpu] = None
            continue
        measured = server.request({"op": "limits"}, 600)
        limits = limits or measured
        free_at_start[gpu] = free_gpu_memory(server)
    run_id = store.start_run(seed, backend.harness_version, rubric.sha256, registry.raw, devices, limits,
                             backend.sandbox, command, timed=backend.timed,
                             untimed_reason=backend.untimed_reason,
                             folder=str(Path(folder).resolve()), source=source)
    return run_id, free_at_start


def intake_and_build(sub: Submission, backend: Backend, rubric: Rubric) -> tuple[SubmissionResult | None,
                                                                                  BuildResult | None]:
    """A submission rejected at intake, or whose build failed, is finished here (the scoring chain gives it zero);
    otherwise its build, ready to run."""
    if sub.rejected:
        return SubmissionResult(sub, SubmissionStatus.REJECTED), None
    build = backend.build(sub, rubric.limits.build, rubric.gate)
    if not build.ok:
        return SubmissionResult(sub, SubmissionStatus.BUILD_FAILED, build), None
    return None, build


def free_gpu_memory(solution: Server) -> int | None:
    """The GPU's free memory as the solution's process sees it (its `memory` op), or None if it cannot say."""
    try:
        reply = solution.request({"op": "memory"}, 60)
    except HarnessFailure:
        return None
    return reply.get("free_bytes") if reply.get("op") == "memory" else None


def await_gpu_memory(solution: Server, baseline: int | None, limits, student: str,
                     clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> str:
    """After a submission's processes are gone, waits (at most [limits] gpu_memory_wait seconds) until the
    GPU's free memory is back within gpu_memory_slack_mib of what it was when grading began. Returns "" when
    it came back, else a note naming the submission that held it (the next one is graded all the same)."""
    if baseline is None:
        return ""
    slack = int(limits.gpu_memory_slack_mib * 2**20)
    deadline = clock() + limits.gpu_memory_wait
    free = free_gpu_memory(solution)
    while free is not None and free < baseline - slack and clock() < deadline:
        sleep(0.25)
        free = free_gpu_memory(solution)
    if free is None or free >= baseline - slack:
        return ""
    held = human_bytes(baseline - free)
    return (f"after this submission's processes were ended, {held} of the GPU's memory stayed taken for "
            f"{limits.gpu_memory_wait:g} s (a process it left behind, or a context it did not let go): {student}")


def health_check(solution: Server, rubric: Rubric) -> str:
    """"" when the GPU still runs the solution right on the first task's smallest graded case; else why not."""
    policy = rubric.tasks[0]
    shape = rubric.sanitizer.shape(policy.id) or policy.shapes[0]
    message = {"op": "check", "task": policy.id, "dtype": policy.dtypes[0], "shape": shape, "seed": 1,
               "check_runs": 1}
    try:
        reply = solution.request(message, rubric.limits.case)
    except HarnessFailure as e:
        return f"the solution's process failed its health check ({policy.id} {shape}): {e}"
    if reply.get("status") != CaseStatus.OK:
        return (f"the solution failed its health check ({policy.id} {policy.dtypes[0]} {shape}): "
                f"{reply.get('status')}: {reply.get('message') or reply.get('error', '')}")
    return ""
