"""Grading a directory of submissions.

Builds run in parallel on the CPU (--jobs); each GPU gets one worker
(--gpus), which grades one submission at a time: the rubric's correctness
cases, then, for tasks whose correctness is complete, the timed cases paired
with the solution. Student code runs in a `harness --serve` process that is
replaced after any hang, crash or GPU fault, so one bad case ends only
itself. Every submission's results are stored in one transaction as soon as
it is done.
"""
from __future__ import annotations

import queue
import random
import shlex
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from tqdm import tqdm

from grader.build import BuildResult, GraderError
from grader.gate.policy import GatePolicy
from grader.intake import Submission, list_entries, read_submission
from grader.paired import time_pairs
from grader.registry import Registry
from grader.results import CaseOutcome, SubmissionResult
from grader.rubric import Rubric
from grader.runner import HarnessFailure
from grader.score import score_submission, zero_scores
from grader.store import Store


class Server(Protocol):
    def request(self, message: dict, timeout: float) -> dict: ...

    def close(self) -> None: ...


class Backend(Protocol):
    """Where builds and harness processes come from (build.LocalBackend; the tests
    bring their own). It is prepared (solution built) before grading starts."""
    harness_version: str
    sandbox: str

    def build(self, sub: Submission, timeout: float, gate: GatePolicy | None = None) -> BuildResult: ...

    def student_server(self, build: BuildResult, gpu: str | None) -> Server: ...

    def solution_server(self, gpu: str | None) -> Server: ...


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


@dataclass
class GradeSummary:
    graded: list[SubmissionResult]
    skipped_same: list[str]  # students whose identical submission was already graded
    skipped_entries: list[str]  # directory entries that are not submissions
    run_id: int


class _StudentProcess:
    """The student's harness process for one submission, restarted after every failure."""

    def __init__(self, backend: Backend, build: BuildResult, gpu: str | None):
        self.backend, self.build, self.gpu = backend, build, gpu
        self.server: Server | None = None

    def request(self, message: dict, timeout: float) -> dict:
        if self.server is None:
            self.server = self.backend.student_server(self.build, self.gpu)
        try:
            reply = self.server.request(message, timeout)
        except HarnessFailure:
            self.close()
            raise
        if reply.get("context_lost"):
            self.close()  # the process exits after such a fault; the next case gets a new one
        return reply

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
            self.server = None


def _outcome_from_reply(task: str, dtype: str, shape: str, kind: str, seed: int, reply: dict) -> CaseOutcome:
    if reply.get("op") == "error":  # the harness refused the request itself
        return CaseOutcome(task, dtype, shape, kind, "error", message=reply.get("error", ""), seed=seed)
    work = reply.get("work") or {}
    return CaseOutcome(task, dtype, shape, kind, reply.get("status", "error"), message=reply.get("message", ""),
                       hint=reply.get("hint", ""), seed=seed, record=reply, unit=work.get("unit", ""),
                       work=work.get("flops") if work.get("unit") == "GFLOP/s" else work.get("bytes", 0.0))


def _failure_outcome(task: str, dtype: str, shape: str, kind: str, seed: int, failure: HarnessFailure) -> CaseOutcome:
    return CaseOutcome(task, dtype, shape, kind, failure.kind, str(failure), seed=seed,
                       output=failure.stderr.strip()[-2000:])


def grade_submission(sub: Submission, build: BuildResult, backend: Backend, gpu: str | None, solution: Server,
                     rubric: Rubric, registry: Registry, seed: int) -> SubmissionResult:
    result = SubmissionResult(sub, "graded", build)
    start = time.monotonic()
    deadline = start + rubric.limits.submission
    student = _StudentProcess(backend, build, gpu)
    case_limit = rubric.limits.case
    try:
        for policy in rubric.tasks:
            spec = registry.task(policy.id)
            if spec.file not in sub.files:
                for dtype in policy.dtypes:
                    for shape in policy.shapes:
                        result.cases.append(CaseOutcome(policy.id, dtype, shape, "correctness", "missing",
                                                        f"{spec.file} was not in the submission", seed=seed))
                continue
            if build.gate is not None and build.gate.enforced(spec.file):  # not linked: its stub stood in
                message = build.gate.case_message(spec.file)
                result.cases += [CaseOutcome(policy.id, dtype, shape, "correctness", "forbidden", message, seed=seed)
                                 for dtype in policy.dtypes for shape in policy.shapes]
                continue
            stop = ""
            for dtype in policy.dtypes:
                for shape in policy.shapes:
                    if not stop and time.monotonic() > deadline:
                        stop = f"skipped: the submission's time limit of {rubric.limits.submission:.0f} s ran out"
                    if stop:
                        status = "not_implemented" if stop == "not implemented yet" else "skipped"
                        result.cases.append(CaseOutcome(policy.id, dtype, shape, "correctness", status, stop,
                                                        seed=seed))
                        continue
                    message = {"op": "check", "task": policy.id, "dtype": dtype, "shape": shape, "seed": seed,
                               "check_runs": 2}
                    try:
                        case = _outcome_from_reply(policy.id, dtype, shape, "correctness", seed,
                                                   student.request(message, case_limit))
                    except HarnessFailure as f:
                        case = _failure_outcome(policy.id, dtype, shape, "correctness", seed, f)
                    result.cases.append(case)
                    if case.status == "not_implemented":
                        stop = "not implemented yet"
                    elif case.status == "timeout":  # the next case would most likely hang just the same
                        stop = "skipped: an earlier case of this task did not finish within its time limit"
            correct = all(c.passed for c in result.cases if c.task == policy.id and c.kind == "correctness")
            if correct:
                for shape in policy.timed:
                    if time.monotonic() > deadline:
                        result.cases.append(CaseOutcome(policy.id, policy.timed_dtype, shape, "timed", "skipped",
                                                        "skipped: the submission's time limit ran out", seed=seed))
                        continue
                    result.cases.append(_timed_case(policy.id, policy.timed_dtype, shape, seed, student, solution,
                                                    rubric))
    finally:
        student.close()
    result.scores = score_submission(rubric, result.cases)
    result.seconds = time.monotonic() - start
    return result


def _timed_case(task: str, dtype: str, shape: str, seed: int, student: _StudentProcess, solution: Server,
                rubric: Rubric) -> CaseOutcome:
    message = {"op": "check", "task": task, "dtype": dtype, "shape": shape, "seed": seed, "check_runs": 1}
    try:
        case = _outcome_from_reply(task, dtype, shape, "timed", seed, student.request(message, rubric.limits.case))
        if case.status != "ok":
            return case
        reference = solution.request(message, rubric.limits.case)
        if reference.get("status") != "ok":
            raise GraderError(f"the solution failed its own check at {task} {dtype} {shape}: {reference}")
        case.paired = time_pairs(student, solution, rubric.timing, rubric.limits.case)
        if case.paired.status != "ok":
            case.status, case.message = case.paired.status, case.paired.message
            if case.paired.record:
                case.hint = case.paired.record.get("hint", "")
        return case
    except HarnessFailure as f:
        return _failure_outcome(task, dtype, shape, "timed", seed, f)
    finally:
        student.release(rubric.limits.case)
        solution.request({"op": "release"}, rubric.limits.case)


def grade(options: GradeOptions, rubric: Rubric, registry: Registry, backend: Backend) -> GradeSummary:
    entries, skipped_entries = list_entries(options.submissions)
    task_files = [t.file for t in registry.tasks]
    subs = [read_submission(e, task_files) for e in entries]
    store = Store(options.results / "grades.sqlite")
    skipped_same = [s.student for s in subs if not options.regrade and store.already_graded(
        s.student, s.sha256, backend.harness_version, rubric.sha256)]
    todo = [s for s in subs if s.student not in skipped_same]
    seed = options.seed if options.seed is not None else random.getrandbits(53)

    solutions = {gpu: backend.solution_server(gpu) for gpu in options.gpus}
    devices, limits = [], {}
    for gpu, server in solutions.items():
        devices.append({"gpu": gpu, **server.request({"op": "hello"}, 120).get("device", {})})
        if not limits:
            limits = server.request({"op": "limits"}, 600)
    run_id = store.start_run(seed, backend.harness_version, rubric.sha256, registry.raw, devices, limits,
                             backend.sandbox, options.command)

    lock = threading.Lock()
    graded: list[SubmissionResult] = []
    bar = tqdm(total=len(todo), unit="submission", disable=not options.progress or not todo, file=sys.stderr)

    def finish(result: SubmissionResult):
        with lock:
            store.save(run_id, result, backend.harness_version, rubric.sha256, rubric.max_points)
            graded.append(result)
            bar.set_postfix_str(result.submission.student)
            bar.update()

    def build_one(sub: Submission) -> tuple[Submission, BuildResult | None]:
        if sub.rejected:
            finish(SubmissionResult(sub, "rejected", scores=zero_scores(rubric, "not graded: rejected at intake")))
            return sub, None
        build = backend.build(sub, rubric.limits.build, rubric.gate)
        if not build.ok:
            finish(SubmissionResult(sub, "build_failed", build, scores=zero_scores(rubric, "does not compile")))
            return sub, None
        return sub, build

    ready: queue.Queue = queue.Queue()
    errors: list[BaseException] = []

    def gpu_worker(gpu: str | None):
        solution = solutions[gpu]
        while (item := ready.get()) is not None:
            sub, build = item
            try:
                finish(grade_submission(sub, build, backend, gpu, solution, rubric, registry, seed))
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
    return GradeSummary(graded, skipped_same, skipped_entries, run_id)


def grade_single(entry: Path, rubric: Rubric, registry: Registry, backend: Backend, gpu: str | None,
                 seed: int | None = None) -> SubmissionResult:
    """Grades one submission on its own (Gradescope, Autolab): nothing is stored."""
    sub = read_submission(entry, [t.file for t in registry.tasks])
    if sub.rejected:
        return SubmissionResult(sub, "rejected", scores=zero_scores(rubric, "not graded: rejected at intake"))
    build = backend.build(sub, rubric.limits.build, rubric.gate)
    if not build.ok:
        return SubmissionResult(sub, "build_failed", build, scores=zero_scores(rubric, "does not compile"))
    solution = backend.solution_server(gpu)
    try:
        return grade_submission(sub, build, backend, gpu, solution, rubric, registry,
                                seed if seed is not None else random.getrandbits(53))
    finally:
        solution.close()
