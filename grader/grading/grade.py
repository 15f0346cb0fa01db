"""Grading a directory of submissions.

Builds run in parallel on the CPU (--jobs); each GPU gets one worker
(--gpus), which grades one submission at a time: every task's correctness
cases; then compute-sanitizer over each task's small case (one run of each tool
for all the tasks, each task alone again where that run was not clean); then,
for tasks whose correctness is complete, the timed cases paired with the
solution. Student code runs in a `harness --serve` process that is replaced
after any hang, crash or GPU fault, so one bad case ends only itself. Every
submission's results are stored in one transaction as soon as it is done.

A backend whose `timed` is False (the CPU backend, grader/backends/cpu.py) runs the correctness cases only: no
timed case, no measured limits and no GPU memory to watch; its own checks (AddressSanitizer, its race checker)
run in compute-sanitizer's place, with the same penalty; its scores are correctness points, each task's note
saying that performance was not measured. A task file it cannot run ("needs a GPU") gets that verdict on each
of its cases; the other tasks are graded as always.
"""
from __future__ import annotations

import json
import queue
import random
import shlex
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tqdm import tqdm

from grader.backends.base import Backend, ToolTask
from grader.run.server import Server
from grader.run.budget import Credited, SolutionTimes, TimeBudget, case_words
from grader.run.build_result import BuildResult
from grader.core.errors import GraderError
from grader.intake.submission import Entry, IntakeLimits, Submission, read_submission
from grader.grading.plan import NoSubmissions, plan_intake
from grader.intake.roster import Person
from grader.run.paired import time_pairs
from grader.core.registry import Registry
from grader.run.results import REVIEW_FLAG, CaseOutcome, ProfileOutcome, SanitizerOutcome, SubmissionResult
from grader.core.rubric import Rubric, TaskPolicy
from grader.run.runner import HarnessFailure
from grader.scoring.chain import chain_for_result
from grader.core.status import NOT_RUN, CaseStatus, SanitizerStatus, SubmissionStatus
from grader.store.store import Store


@dataclass
class GradeOptions:
    submissions: Path
    results: Path
    gpus: list[str | None]
    jobs: int = 2
    regrade: bool = False
    seed: int | None = None
    progress: bool = True
    command: str = field(default_factory=lambda: shlex.join(sys.argv))
    source: str = "plain"  # how the submissions were delivered: plain, canvas, gradescope (grader/intake/layouts.py)
    student: str | None = None  # grade this student only (again), leaving everyone else's grades as stored
    roster: list[Person] | None = None  # the class list (grader/intake/roster.py), stored; ids are mapped through it
    entries: list[Entry] | None = None  # these entries of `submissions` only (a Slurm shard's); None: all of them
    lms_times: Path | None = None  # the course system's submission times (--lms-times; grader/intake/lms_times.py)


# A grading run's source (grading_runs.source) when it graded one submission on its own (grade_single); a class's
# run stores its --from (grader/intake/layouts.py's SOURCES).
SINGLE = "single"


@dataclass
class SingleGrade:
    """One submission graded on its own (Gradescope, Autolab), as stored."""
    store: Path  # the grades.sqlite it is in
    student: str
    submission_id: int
    result: SubmissionResult


@dataclass
class GradeSummary:
    graded: list[SubmissionResult]
    skipped_same: list[str]  # students whose identical submission was already graded
    skipped_entries: list[str]  # directory entries that are not submissions
    run_id: int
    not_on_roster: list[str] = field(default_factory=list)  # ids submitted that the roster lacks
    no_submission: list[str] = field(default_factory=list)  # roster ids with no submission


class _StudentProcess(Server):
    """The student's harness process for one submission, restarted after every failure.

    A reply forged on the harness's channel is found at the latest when the process ends (the
    harness's own reply follows it); then no reply that process gave can be trusted, and every case
    it answered becomes a protocol failure.

    Every request that runs the student's code (check, time) is held to the submission's time budget
    (grader/run/budget.py): its limit is what is left of the budget when that is less than the case's, and a
    request stopped there fails as `out_of_budget`. A new process answers `hello` first, uncounted."""

    RUNS_CODE = ("check", "time")

    def __init__(self, backend: Backend, build: BuildResult, gpu: str | None, budget: TimeBudget | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.backend, self.build, self.gpu, self.budget, self.clock = backend, build, gpu, budget, clock
        self.server: Server | None = None
        self.answered: list[CaseOutcome] = []  # cases decided by the current process's replies
        self.case = ""  # the case the last check asked for, in words

    def request(self, message: dict, timeout: float) -> dict:
        counted = self.budget is not None and message.get("op") in self.RUNS_CODE
        if message.get("op") == "check":
            self.case = case_words(message)
        limit = self.budget.limit(timeout, self.pause, self.close) if counted else timeout
        if counted and limit <= 0:
            self.budget.charge(0.0)
            self.close()
            raise HarnessFailure(self.budget.run_out(self.case), CaseStatus.OUT_OF_BUDGET)
        charged = False
        try:
            if self.server is None:
                self.server = self.backend.student_server(self.build, self.gpu)
                self.server.request({"op": "hello"}, timeout)  # the process starting: no student code runs yet
            started = self.clock()
            try:
                reply = self.server.request(message, limit)
            finally:
                if counted:
                    self.budget.charge(self.clock() - started)
                    charged = True
        except HarnessFailure as failure:
            if counted and not charged:
                self.budget.charge(0.0)
            if failure.kind == CaseStatus.PROTOCOL:
                self._distrust(str(failure))
            self.close()
            if counted and failure.kind == CaseStatus.TIMEOUT and limit < timeout:  # the budget's limit, not the case's
                raise HarnessFailure(self.budget.run_out(self.case), CaseStatus.OUT_OF_BUDGET, failure.stderr) from None
            raise
        if reply.get("context_lost"):
            self.close()  # the process exits after such a fault; the next case gets a new one
        return reply

    def pause(self):
        """Stops the student's processes until the next request (paired.py: while the solution runs)."""
        if self.server is not None:
            self.server.pause()

    def answered_by(self, case: CaseOutcome) -> CaseOutcome:
        self.answered.append(case)
        return case

    def _distrust(self, reason: str):
        for case in self.answered:
            if case.status != CaseStatus.PROTOCOL:
                case.status, case.message, case.hint = CaseStatus.PROTOCOL, reason, ""
                if case.paired is not None:
                    case.paired = None
        self.answered = []

    def release(self, timeout: float):
        """Frees the case's GPU memory, if the process is still there to hold it."""
        if self.server is not None:
            try:
                self.request({"op": "release"}, timeout)
            except HarnessFailure:
                pass

    def close(self):
        if self.server is not None:
            self.server.close()
            violation = self.server.violation
            self.server = None
            if violation:
                self._distrust(violation)
        self.answered = []


def human_bytes(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def cap_text(text: str, limit: int) -> str:
    """At most `limit` bytes of text (UTF-8), the cut marked with how much was left out."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore") + f"… [cut: {human_bytes(len(data) - limit)} more]"


def _each_string(value, change: Callable[[str], str]):
    """A harness record with `change` applied to every string in it."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {k: _each_string(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [_each_string(v, change) for v in value]
    return value


def _cap_record(value, limit: int):
    """Every string in a harness record capped (a message a task file threw can be megabytes)."""
    return _each_string(value, lambda text: cap_text(text, limit))


def name_folders_as_the_student_does(result: SubmissionResult, build: BuildResult) -> None:
    """The harness ran the student's files from the grader's folders, so `__FILE__` in a CUDA_CHECK message,
    a crash's output or a record names them there: every stored text names them as the student's checkout
    does (kernels/add.cu:31)."""
    for c in result.cases:
        c.message, c.hint, c.output = build.readable(c.message), build.readable(c.hint), build.readable(c.output)
        if c.record is not None:
            c.record = _each_string(c.record, build.readable)
    for f in result.sanitizer:
        f.report, f.message = build.readable(f.report), build.readable(f.message)


def _strings(value) -> int:
    if isinstance(value, str):
        return 1
    if isinstance(value, dict):
        return sum(_strings(v) for v in value.values())
    if isinstance(value, list):
        return sum(_strings(v) for v in value)
    return 0


def cap_stored(result: SubmissionResult, message_bytes: int, submission_bytes: int) -> None:
    """What is stored of one submission stays bounded: each message, hint, output and record string at most
    `message_bytes`, and all of them together about `submission_bytes` (past that, each is cut shorter)."""
    def size() -> int:
        return sum(len(c.message) + len(c.hint) + len(c.output) + (len(json.dumps(c.record)) if c.record else 0)
                   for c in result.cases) + sum(len(f.report) + len(f.message) for f in result.sanitizer)

    fields = sum(3 + _strings(c.record) for c in result.cases) + 2 * len(result.sanitizer)
    cases = [(c, c.message, c.hint, c.output, c.record) for c in result.cases]  # every pass cuts the originals
    found = [(f, f.report, f.message) for f in result.sanitizer]
    limit = message_bytes
    while True:
        for c, message, hint, output, record in cases:
            c.message, c.hint, c.output = cap_text(message, limit), cap_text(hint, limit), cap_text(output, limit)
            if record is not None:
                c.record = _cap_record(record, limit)
        for f, report, message in found:
            f.report, f.message = cap_text(report, limit), cap_text(message, limit)
        if size() <= submission_bytes or limit <= 64:
            return
        limit = max(64, min(limit // 2, submission_bytes // max(1, fields) - 40))  # 40: the cut's own note


def _outcome_from_reply(task: str, dtype: str, shape: str, kind: str, seed: int, reply: dict) -> CaseOutcome:
    if reply.get("op") == "error":  # the harness refused the request itself
        return CaseOutcome(task, dtype, shape, kind, CaseStatus.ERROR, message=reply.get("error", ""), seed=seed)
    work = reply.get("work") or {}
    return CaseOutcome(task, dtype, shape, kind, reply.get("status", CaseStatus.ERROR),
                       message=reply.get("message", ""),
                       hint=reply.get("hint", ""), seed=seed, record=reply, unit=work.get("unit", ""),
                       work=work.get("flops") if work.get("unit") == "GFLOP/s" else work.get("bytes", 0.0))


def _failure_outcome(task: str, dtype: str, shape: str, kind: str, seed: int, failure: HarnessFailure) -> CaseOutcome:
    return CaseOutcome(task, dtype, shape, kind, failure.kind, str(failure), seed=seed,
                       output=failure.stderr.strip()[-2000:])


def grade_submission(sub: Submission, build: BuildResult, backend: Backend, gpu: str | None, solution: Server,
                     rubric: Rubric, registry: Registry, seed: int,
                     solution_times: SolutionTimes | None = None,
                     progress: Callable[[int, int], None] | None = None) -> SubmissionResult:
    """solution_times: the solution's measured times of this grading run on this worker (grader/run/budget.py),
    shared by its submissions; by default measured for this one alone. progress(cases decided, cases planned)
    after each case (the grading service shows it)."""
    result = SubmissionResult(sub, SubmissionStatus.GRADED, build)
    planned = sum(len(p.dtypes) * len(p.shapes) + (len(p.timed) if backend.timed else 0) for p in rubric.tasks)
    told = [-1]

    def tell():
        if progress is not None and len(result.cases) != told[0]:
            told[0] = len(result.cases)
            progress(min(told[0], planned), planned)
    start = time.monotonic()
    deadline = start + rubric.limits.submission
    case_limit = rubric.limits.case
    clock = backend.clock
    budget = result.budget = TimeBudget.from_rubric(
        rubric.limits, solution_times or SolutionTimes(solution, case_limit, clock))
    student = _StudentProcess(backend, build, gpu, budget, clock)
    timed = backend.timed
    try:
        for policy in rubric.tasks:
            tell()
            spec = registry.task(policy.id)
            if spec.file not in sub.files:
                for dtype in policy.dtypes:
                    for shape in policy.shapes:
                        result.cases.append(CaseOutcome(policy.id, dtype, shape, "correctness", CaseStatus.MISSING,
                                                        f"{spec.file} was not in the submission", seed=seed))
                continue
            if build.gate is not None and build.gate.enforced(spec.file):  # not linked: its stub stood in
                message = build.gate.case_message(spec.file)
                result.cases += [CaseOutcome(policy.id, dtype, shape, "correctness", CaseStatus.FORBIDDEN, message,
                                             seed=seed)
                                 for dtype in policy.dtypes for shape in policy.shapes]
                continue
            if spec.file in build.needs_gpu:  # the CPU backend cannot run it: not the student's fault, not run here
                result.cases += [CaseOutcome(policy.id, dtype, shape, "correctness", CaseStatus.NEEDS_GPU,
                                             build.needs_gpu[spec.file], seed=seed)
                                 for dtype in policy.dtypes for shape in policy.shapes]
                continue
            if spec.file in build.unbuilt:  # did not compile or link: a marker stood in, every case would say so
                result.cases += [CaseOutcome(policy.id, dtype, shape, "correctness", CaseStatus.BUILD_ERROR,
                                             build.unbuilt[spec.file], seed=seed)
                                 for dtype in policy.dtypes for shape in policy.shapes]
                continue
            stop = ""
            for dtype in policy.dtypes:
                unbuilt_type = ""  # this element type's launcher is not defined: its other shapes would say the same
                for shape in policy.shapes:
                    if unbuilt_type:
                        result.cases.append(CaseOutcome(policy.id, dtype, shape, "correctness", CaseStatus.BUILD_ERROR,
                                                        unbuilt_type, seed=seed))
                        continue
                    if not stop and budget.ran_out:
                        result.cases.append(CaseOutcome(policy.id, dtype, shape, "correctness",
                                                        CaseStatus.OUT_OF_BUDGET, budget.not_run(), seed=seed))
                        continue
                    if not stop and time.monotonic() > deadline:
                        stop = f"skipped: the submission's time limit of {rubric.limits.submission:.0f} s ran out"
                    if stop:
                        status = CaseStatus.NOT_IMPLEMENTED if stop == "not implemented yet" else CaseStatus.SKIPPED
                        result.cases.append(CaseOutcome(policy.id, dtype, shape, "correctness", status, stop,
                                                        seed=seed))
                        continue
                    message = {"op": "check", "task": policy.id, "dtype": dtype, "shape": shape, "seed": seed,
                               "check_runs": 2}
                    budget.same_as_solution(message)
                    try:
                        case = student.answered_by(_outcome_from_reply(policy.id, dtype, shape, "correctness", seed,
                                                                       student.request(message, case_limit)))
                    except HarnessFailure as f:
                        case = _failure_outcome(policy.id, dtype, shape, "correctness", seed, f)
                    # Only the CPU backend's harness leaves a case to a GPU.
                    if case.status == CaseStatus.GPU_ONLY and timed:
                        case.status = CaseStatus.PROTOCOL
                        case.message = f"a GPU run's harness answered {CaseStatus.GPU_ONLY} for {shape}"
                    result.cases.append(case)
                    tell()
                    if case.status == CaseStatus.BUILD_ERROR:
                        unbuilt_type = case.message
                    if case.status == CaseStatus.NOT_IMPLEMENTED:
                        stop = "not implemented yet"
                    elif case.status == CaseStatus.TIMEOUT:  # the next case would most likely hang just the same
                        stop = "skipped: an earlier case of this task did not finish within its time limit"
        if rubric.sanitizer.tools:
            student.close()  # the tool's runs get a GPU that no process of this student still holds
        # Every task's correctness first, then the tools, then the timed cases: the tools' runs come before any
        # timed case could use up the submission's time. On the CPU backend its own checks run in
        # compute-sanitizer's place (CpuBackend.sanitize).
        result.sanitizer += _sanitize(sub, build, backend, gpu, rubric, result.cases, seed, deadline, budget)
        for policy in rubric.tasks if timed else []:  # correctness only on a backend that does not time
            tell()
            correct = all(c.passed for c in result.cases if c.task == policy.id and c.kind == "correctness")
            if correct and policy.timed and budget.pending:
                # A timed case keeps its case in the solution's process from the check to the last pair: the solution's
                # correctness times the budget may need are measured now, not in the middle of it.
                student.pause()
                budget.settle(student.close)
            if correct:
                for shape in policy.timed:
                    if budget.ran_out:
                        result.cases.append(CaseOutcome(policy.id, policy.timed_dtype, shape, "timed",
                                                        CaseStatus.OUT_OF_BUDGET, budget.not_run(), seed=seed))
                        continue
                    if time.monotonic() > deadline:
                        result.cases.append(CaseOutcome(policy.id, policy.timed_dtype, shape, "timed",
                                                        CaseStatus.SKIPPED,
                                                        "skipped: the submission's time limit ran out", seed=seed))
                        continue
                    result.cases.append(_timed_case(policy, shape, seed, student, Credited(solution, budget, clock),
                                                    rubric, clock))
                    tell()
    finally:
        student.close()
    # The performance counters (feedback only) after every scored case: the time they take is never a case's.
    for policy in rubric.tasks:
        result.profiles += _profile_task(sub, build, backend, rubric, policy, result.cases, seed, deadline, budget)
    tell()
    name_folders_as_the_student_does(result, build)
    cap_stored(result, int(rubric.limits.message_kib * 1024), int(rubric.limits.stored_kib * 1024))
    result.seconds = time.monotonic() - start
    return result


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


# The student's check run took more than this share of the case's budget:
# the run needs no warming up, and warm-ups would eat the budget.
SLOW_CHECK_SHARE = 0.1


def _sanitize(sub: Submission, build: BuildResult, backend: Backend, gpu: str | None, rubric: Rubric,
              cases: list[CaseOutcome], seed: int, deadline: float,
              budget: TimeBudget | None = None) -> list[SanitizerOutcome]:
    """compute-sanitizer's tools on each task's small case, unless the task never ran or hung, or the submission's
    time ran out: each tool over all such tasks at once where the backend can (LocalBackend.sanitize_tasks), the
    outcomes in the rubric's order of tasks, then tools."""
    runs: list[ToolTask] = []
    not_run: dict[str, str] = {}  # task: why its tools do not run
    for policy in rubric.tasks:
        shape = rubric.sanitizer.shape(policy.id)
        own = [c for c in cases if c.task == policy.id and c.kind == "correctness"]
        if not rubric.sanitizer.tools or shape is None or not own or all(c.status in NOT_RUN for c in own):
            continue
        # The tool's run gets the task's graded shapes from the first, as a graded run does (up to a random
        # cut at or after its small case): the code under the tool cannot tell it from a graded run by what
        # it is asked.
        runs.append(ToolTask(policy.id, policy.timed_dtype, shape, tuple(policy.shapes)))
        if any(c.status == CaseStatus.TIMEOUT for c in own):
            not_run[policy.id] = "not run: a case of this task did not finish within its time limit"
        elif any(c.status == CaseStatus.PROTOCOL for c in own):
            not_run[policy.id] = "not run: this task's results were forged on the harness's reply channel"

    def time_left() -> str:
        if budget is not None and budget.ran_out:
            return f"not run: this submission's time budget ran out at {budget.ran_out_at}"
        if time.monotonic() > deadline:
            return f"not run: the submission's time limit of {rubric.limits.submission:.0f} s ran out"
        return ""

    def skipped(t: ToolTask, tool: str, why: str) -> SanitizerOutcome:
        return SanitizerOutcome(t.task, tool, t.dtype, t.shape, SanitizerStatus.SKIPPED, message=why,
                                checker=backend.checker)

    going = [t for t in runs if t.task not in not_run]
    found: dict[tuple[str, str], SanitizerOutcome] = {}
    for tool in rubric.sanitizer.tools:
        for t in runs:
            if t.task in not_run:
                found[t.task, tool] = skipped(t, tool, not_run[t.task])

        def out_of_time(t: ToolTask, tool: str = tool) -> SanitizerOutcome | None:
            why = time_left()
            return skipped(t, tool, why) if why else None
        for outcome in backend.sanitize_tasks(sub, build, gpu, tool, going, seed, rubric.limits.sanitizer,
                                              out_of_time) if going else []:
            found[outcome.task, tool] = outcome
    return [found[t.task, tool] for t in runs for tool in rubric.sanitizer.tools]


def _profile_task(sub: Submission, build: BuildResult, backend: Backend, rubric: Rubric, policy, cases: list[CaseOutcome],
                  seed: int, deadline: float, budget: TimeBudget | None = None) -> list[ProfileOutcome]:
    """make profile's counters on the task's profile case, where the backend counts (the CPU's) and every correctness
    case of the task passed (the counts of a wrong kernel would mislead); feedback only. Run after every scored
    case, in what is left of the submission's time."""
    own = [c for c in cases if c.task == policy.id and c.kind == "correctness"]
    if not policy.profile or not own or not all(c.passed for c in own):
        return []
    if (budget is not None and budget.ran_out) or time.monotonic() > deadline:
        return []
    outcome = backend.profile(sub, build, policy.id, policy.timed_dtype, policy.profile, seed,
                              min(rubric.limits.sanitizer, max(1.0, deadline - time.monotonic())))
    return [outcome] if outcome is not None else []


def _timed_case(policy: TaskPolicy, shape: str, seed: int, student: _StudentProcess, solution: Server,
                rubric: Rubric, clock: Callable[[], float] = time.monotonic) -> CaseOutcome:
    task, dtype = policy.id, policy.timed_dtype
    message = {"op": "check", "task": task, "dtype": dtype, "shape": shape, "seed": seed, "check_runs": 1}
    started = clock()
    try:
        case = student.answered_by(_outcome_from_reply(task, dtype, shape, "timed", seed,
                                                       student.request(message, rubric.limits.case)))
        if case.status != CaseStatus.OK:
            return case
        student_check = clock() - started
        student.pause()  # nothing of the student's runs beside the solution (resumed by its next request)
        reference = solution.request(message, rubric.limits.case)
        if reference.get("status") != CaseStatus.OK:
            # The GPU is shared with the student's process: if that process holds its memory, the solution
            # cannot run beside it. Free it and try once more; only a second failure is the grader's.
            student.close()
            reference = solution.request(message, rubric.limits.case)
            if reference.get("status") != CaseStatus.OK:
                raise GraderError(f"the solution failed its own check at {task} {dtype} {shape}: {reference}")
            if case.status == CaseStatus.OK:  # (closing may have found a forged reply: that verdict stands)
                case.status = CaseStatus.ERROR
                case.message = ("not timed: while your code's process was running, the solution could not run "
                                "beside it on the GPU (your code probably held most of the GPU's memory)")
            return case
        case.floor_ms = (reference.get("plausibility") or {}).get("floor_ms")
        warmup = 0 if student_check > SLOW_CHECK_SHARE * rubric.timing.budget else rubric.timing.warmup
        case.paired = time_pairs(student, solution, rubric.timing, rubric.limits.case, policy.s_zero, started=started,
                                 warmup=warmup, clock=clock)
        if case.paired.status != CaseStatus.OK:
            case.status, case.message = case.paired.status, case.paired.message
            if case.paired.record:
                case.hint = case.paired.record.get("hint", "")
        else:
            _flag(case, rubric)
        return case
    except HarnessFailure as f:
        return _failure_outcome(task, dtype, shape, "timed", seed, f)
    finally:
        student.release(rubric.limits.case)
        solution.request({"op": "release"}, rubric.limits.case)


def _flag(case: CaseOutcome, rubric: Rubric) -> None:
    """A time below the physical floor is implausible (no credit); a speedup above the rubric's is for review."""
    student_ms, speedup = case.paired.student.median, case.paired.speedup.median
    if case.floor_ms and student_ms < case.floor_ms:
        case.status = CaseStatus.IMPLAUSIBLE
        case.message = (f"measured time is faster than the GPU can physically do this work: your median "
                        f"{student_ms:.4g} ms, where this work takes at least {case.floor_ms:.4g} ms on this GPU; "
                        "flagged implausible, no performance credit, listed for review")
        case.hint = ("The timer saw less work than the task needs: results reused from an earlier call, work left "
                     "running outside the timed launch, or lower-precision hardware. Compute every result on every "
                     "call, on the default stream.")
    elif speedup > rubric.timing.review_speedup:
        case.flag = REVIEW_FLAG
        case.message = (f"{speedup:.2f}x as fast as the reference solution: scored as measured, and listed for a TA "
                        "to look at")


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


def grade(options: GradeOptions, rubric: Rubric, registry: Registry, backend: Backend) -> GradeSummary:
    try:
        plan = plan_intake(options.submissions, options.source, options.roster, options.student, options.regrade,
                           options.results / "grades.sqlite", rubric=rubric, registry=registry,
                           harness_version=backend.harness_version, lms_times=options.lms_times,
                           entries=options.entries)
    except NoSubmissions:  # (the command line says so before building anything: cli.check_grade_inputs)
        raise GraderError(f"{options.submissions}: no submissions in it; no grading run recorded") from None
    skipped_entries, skipped_same, todo = plan.skipped_entries, plan.skipped_same, plan.todo
    not_on_roster, no_submission = plan.not_on_roster, plan.no_submission
    store = Store(options.results / "grades.sqlite")
    if options.roster is not None:
        store.save_roster(options.roster)
    seed = options.seed if options.seed is not None else random.getrandbits(53)
    backend.set_limits(rubric.limits)

    solutions = {gpu: backend.solution_server(gpu) for gpu in options.gpus}
    run_id, free_at_start = start_run(store, solutions, seed, rubric, registry, backend, options.command,
                                       options.submissions, options.source)

    lock = threading.Lock()
    graded: list[SubmissionResult] = []
    bar = tqdm(total=len(todo), unit="submission", disable=not options.progress or not todo, file=sys.stderr)

    def finish(result: SubmissionResult):
        with lock:
            store.save(run_id, result, backend.harness_version, rubric.sha256, rubric.max_points,
                       chain_for_result(rubric, result, backend.timed))
            graded.append(result)
            bar.set_postfix_str(result.submission.student)
            bar.update()

    def build_one(sub: Submission) -> tuple[Submission, BuildResult | None]:
        done, build = intake_and_build(sub, backend, rubric)
        if done is not None:
            finish(done)
        return sub, build

    ready: queue.Queue = queue.Queue()
    errors: list[BaseException] = []

    def gpu_worker(gpu: str | None):
        solution = solutions[gpu]
        times = SolutionTimes(solution, rubric.limits.case, backend.clock)  # measured once for all its submissions
        while (item := ready.get()) is not None:
            sub, build = item
            try:
                result = grade_submission(sub, build, backend, gpu, solution, rubric, registry, seed, times)
                held = await_gpu_memory(solution, free_at_start[gpu], rubric.limits, sub.student)
                if held:
                    sub.notes.append(held)
                    print(f"grader: warning: {held}", file=sys.stderr)
                finish(result)
            except BaseException as e:  # the grader's own failure: stop, keep what is stored
                errors.append(e)
                return

    workers = [threading.Thread(target=gpu_worker, args=(gpu,), daemon=True) for gpu in options.gpus]
    for w in workers:
        w.start()
    try:
        with ThreadPoolExecutor(max_workers=options.jobs) as pool:
            for sub, build in pool.map(build_one, todo):
                if build is not None:
                    ready.put((sub, build))
        for _ in workers:
            ready.put(None)
        for w in workers:
            w.join()
    finally:
        bar.close()
        for server in solutions.values():
            server.close()
        store.finish_run(run_id)
        store.close()
    if errors:
        raise errors[0]
    return GradeSummary(graded, skipped_same, skipped_entries, run_id, not_on_roster, no_submission)


def grade_single(entry: Path | Entry, results: Path, rubric: Rubric, registry: Registry, backend: Backend, gpu: str | None,
                 seed: int | None = None, command: str | None = None) -> SingleGrade:
    """Grades one submission on its own (Gradescope, Autolab) into RESULTS/grades.sqlite, as a class run would:
    a grading run with the same record, the submission saved by the same Store.save. Its exports read it back
    from there (grader/exports/). It is graded even if the store holds it already (the new grade replaces it)."""
    sub = read_submission(entry, [t.file for t in registry.tasks], IntakeLimits.from_rubric(rubric.limits))
    seed = seed if seed is not None else random.getrandbits(53)
    backend.set_limits(rubric.limits)
    store = Store(Path(results) / "grades.sqlite")
    run_id = None
    solution = backend.solution_server(gpu)
    try:
        run_id, _ = start_run(store, {gpu: solution}, seed, rubric, registry, backend,
                               command if command is not None else shlex.join(sys.argv), sub.source, SINGLE)
        result, build = intake_and_build(sub, backend, rubric)
        if result is None:
            result = grade_submission(sub, build, backend, gpu, solution, rubric, registry, seed)
        submission_id = store.save(run_id, result, backend.harness_version, rubric.sha256, rubric.max_points,
                                   chain_for_result(rubric, result, backend.timed))
    finally:
        solution.close()
        if run_id is not None:
            store.finish_run(run_id)
        store.close()
    return SingleGrade(store.path, sub.student, submission_id, result)
