"""One submission's cases, in order: every task's correctness cases through the student's process; then the tools
(grader/grading/tools.py); then, for tasks whose correctness is complete, the timed cases paired with the
solution; then the performance counters; then, where the rubric hides shapes, the same steps for the hidden cases,
in a process of their own (grade_submission says why). Student code runs in a `harness --serve` process that is
replaced after any hang, crash or GPU fault, so one bad case ends only itself
(grader/grading/student_process.py).

A backend whose `timed` is False (the CPU backend) runs the correctness cases only: no timed case; its own checks
(AddressSanitizer, its race checker) run in compute-sanitizer's place, with the same penalty. A task file it
cannot run ("needs a GPU") gets that verdict on each of its cases; the other tasks are graded as always.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from grader.backends.base import Backend
from grader.core.errors import GraderError
from grader.core.registry import Registry
from grader.core.rubric import Rubric, TaskPolicy
from grader.core.status import CaseStatus, SubmissionStatus
from grader.grading.caps import cap_stored, name_folders_as_the_student_does
from grader.grading.student_process import StudentProcess
from grader.grading.tools import profile_task, reaches_tools, sanitize
from grader.intake.submission import Submission
from grader.run.budget import Credited, SolutionTimes, TimeBudget
from grader.outcomes.build_result import BuildResult
from grader.run.paired import time_pairs
from grader.outcomes.results import REVIEW_FLAG, CaseOutcome, SubmissionResult
from grader.run.runner import HarnessFailure
from grader.run.server import Server


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
    after each visible case (the grading service shows it; the hidden cases' stage reports once, at its end).

    Hidden cases (grader/core/visibility.py) come after everything a student sees before the date: every visible
    case, the tools' runs at visible shapes, the visible timed cases and the counters are decided first, then the
    hidden cases run in a process of their own (never one that served a visible case or will serve one), so
    nothing shown before the date (a case's output or message, a skip, the time budget's words, a timed case, the
    counters) can depend on what a hidden case was, printed or did. The stored order is the rubric's, as always."""
    result = SubmissionResult(sub, SubmissionStatus.GRADED, build)
    planned = sum(len(p.dtypes) * len(p.shapes) + (len(p.timed) if backend.timed else 0) for p in rubric.tasks)
    timed = backend.timed
    told = [-1]
    quiet = [False]  # the hidden stage: its progress is not reported case by case (its pace would tell)

    def tell(final: bool = False):
        if progress is not None and len(result.cases) != told[0] and (final or not quiet[0]):
            told[0] = len(result.cases)
            progress(min(told[0], planned), planned)
    start = time.monotonic()
    deadline = start + rubric.limits.submission
    case_limit = rubric.limits.case
    clock = backend.clock
    budget = result.budget = TimeBudget.from_rubric(
        rubric.limits, solution_times or SolutionTimes(solution, case_limit, clock))
    student = StudentProcess(backend, build, gpu, budget, clock)
    stops: dict[str, str] = {}  # task: why its remaining correctness cases are not run ("" or absent: they are)
    unbuilt_types: dict[tuple[str, str], str] = {}  # (task, dtype): its launcher is not defined, in the words found

    def check(policy: TaskPolicy, dtype: str, shape: str):
        """One correctness case through the student's process (or its verdict without running it)."""
        stop = stops.get(policy.id, "")
        if unbuilt_types.get((policy.id, dtype)):
            result.cases.append(CaseOutcome(policy.id, dtype, shape, "correctness", CaseStatus.BUILD_ERROR,
                                            unbuilt_types[policy.id, dtype], seed=seed))
            return
        if not stop and budget.ran_out:
            result.cases.append(CaseOutcome(policy.id, dtype, shape, "correctness", CaseStatus.OUT_OF_BUDGET,
                                            budget.not_run(), seed=seed))
            return
        if not stop and time.monotonic() > deadline:
            stop = stops[policy.id] = (f"skipped: the submission's time limit of {rubric.limits.submission:.0f} s "
                                       "ran out")
        if stop:
            status = CaseStatus.NOT_IMPLEMENTED if stop == "not implemented yet" else CaseStatus.SKIPPED
            result.cases.append(CaseOutcome(policy.id, dtype, shape, "correctness", status, stop, seed=seed))
            return
        message = {"op": "check", "task": policy.id, "dtype": dtype, "shape": shape, "seed": seed, "check_runs": 2}
        budget.same_as_solution(message)
        case = _checked(student, policy.id, dtype, shape, seed, message, case_limit)
        if (case.status == CaseStatus.TIMEOUT and backend.case_clock == "wall"
                and time.monotonic() + case_limit <= deadline):
            case = _run_again_alone(case, StudentProcess(backend, build, gpu, None, clock), message, case_limit)
        # Only the CPU backend's harness leaves a case to a GPU.
        if case.status == CaseStatus.GPU_ONLY and timed:
            case.status = CaseStatus.PROTOCOL
            case.message = f"a GPU run's harness answered {CaseStatus.GPU_ONLY} for {shape}"
        result.cases.append(case)
        tell()
        if case.status == CaseStatus.BUILD_ERROR:
            unbuilt_types[policy.id, dtype] = case.message
        if case.status == CaseStatus.NOT_IMPLEMENTED:
            stops[policy.id] = "not implemented yet"
        elif case.status == CaseStatus.TIMEOUT:  # the next case would most likely hang just the same
            stops[policy.id] = "skipped: an earlier case of this task did not finish within its time limit"

    def timed_cases(policy: TaskPolicy, shapes: list[str], correct: bool, hidden: bool = False):
        if not correct and hidden:
            # Stored all the same: how many hidden cases a task has is shown before the date, and would tell.
            result.cases += [CaseOutcome(policy.id, policy.timed_dtype, shape, "timed", CaseStatus.SKIPPED,
                                         NOT_TIMED_UNTIL_CORRECT, seed=seed) for shape in shapes]
            return
        if correct and shapes and budget.pending:
            # A timed case keeps its case in the solution's process from the check to the last pair: the
            # solution's correctness times the budget may need are measured now, not in the middle of it.
            student.pause()
            budget.settle(student.close)
        for shape in shapes if correct else []:
            if budget.ran_out:
                result.cases.append(CaseOutcome(policy.id, policy.timed_dtype, shape, "timed",
                                                CaseStatus.OUT_OF_BUDGET, budget.not_run(), seed=seed))
                continue
            if time.monotonic() > deadline:
                result.cases.append(CaseOutcome(policy.id, policy.timed_dtype, shape, "timed", CaseStatus.SKIPPED,
                                                "skipped: the submission's time limit ran out", seed=seed))
                continue
            result.cases.append(_timed_case(policy, shape, seed, student, Credited(solution, budget, clock),
                                            rubric, clock))
            tell()

    def passed(policy: TaskPolicy, hidden_too: bool) -> bool:
        return all(c.passed for c in result.cases if c.task == policy.id and c.kind == "correctness"
                   and (hidden_too or c.shape not in policy.hidden))

    # What the tools and counters run, where it is a build of its own (the CPU's race checker), starts once the
    # first task's cases have run (the tools look only at such a task), beside the rest of the cases: it reads
    # nothing they do, and a submission none of whose tasks reach the tools (stubs, hangs) builds nothing more.
    checkers_wanted = bool(rubric.sanitizer.tools or any(p.profile for p in rubric.tasks))
    try:
        running = []  # the tasks whose file runs: the others' cases are decided by the build, at every shape
        for policy in rubric.tasks:
            decided = _decided_by_build(policy, registry, sub, build, seed)
            result.cases += decided
            if not decided:
                running.append(policy)
        tell()
        # What a student sees before the date: the visible cases, the tools at visible shapes, the visible timed
        # cases, the counters. Nothing hidden has run yet, in any process.
        for policy in running:
            for dtype in policy.dtypes:
                for shape in policy.shapes:
                    if shape not in policy.hidden:
                        check(policy, dtype, shape)
            if checkers_wanted and reaches_tools([c for c in result.cases
                                                  if c.task == policy.id and c.kind == "correctness"]):
                backend.prepare_checkers(sub, build, min(rubric.limits.sanitizer, rubric.limits.submission))
                checkers_wanted = False
        if rubric.sanitizer.tools:
            student.close()  # the tool's runs get a GPU that no process of this student still holds
        # Every task's correctness first, then the tools, then the timed cases: the tools' runs come before any
        # timed case could use up the submission's time. On the CPU backend its own checks run in
        # compute-sanitizer's place (CpuBackend.sanitize).
        files = {t.id: t.file for t in registry.tasks}

        def count(visible: list[CaseOutcome]) -> list:
            """The performance counters (feedback only), judged on the visible cases and run before any hidden
            one: whether they run, and what they find, never depends on a hidden case. (Their time is no case's.)"""
            return [p for policy in rubric.tasks
                    for p in profile_task(sub, build, backend, rubric, policy, visible, seed, deadline, budget)]
        # Where nothing is timed (the CPU backend) the counters run beside the tools, whose runs leave a core
        # idle: each process's limit counts the CPU time it got, so neither's verdict depends on the other.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="counters") as beside:
            counting = None if timed else beside.submit(count, list(result.cases))
            result.sanitizer += sanitize(sub, build, backend, gpu, rubric, result.cases, seed, deadline, budget,
                                         files=files)
            for policy in running if timed else []:  # correctness only on a backend that does not time
                tell()
                timed_cases(policy, [s for s in policy.timed if s not in policy.hidden], passed(policy, False))
            student.close()
            result.profiles += counting.result() if counting is not None else count(list(result.cases))
        tell()
        # The hidden cases, in a process of their own: what they print or leave behind reaches no visible case.
        quiet[0] = True
        hiding = [p for p in running if p.hidden]
        for policy in hiding:
            for dtype in policy.dtypes:
                for shape in policy.shapes:
                    if shape in policy.hidden:
                        check(policy, dtype, shape)
        if rubric.sanitizer.tools and hiding:
            student.close()
            result.sanitizer += sanitize(sub, build, backend, gpu, rubric, result.cases, seed, deadline, budget,
                                         hidden=True, files=files)
        for policy in hiding if timed else []:
            timed_cases(policy, [s for s in policy.timed if s in policy.hidden], passed(policy, True), hidden=True)
    finally:
        student.close()
        backend.release_checkers(sub)
    result.cases.sort(key=_rubric_order(rubric))
    tools = {t: i for i, t in enumerate(rubric.sanitizer.tools)}
    tasks = {p.id: i for i, p in enumerate(rubric.tasks)}
    result.sanitizer.sort(key=lambda o: (tasks.get(o.task, len(tasks)), tools.get(o.tool, len(tools))))
    tell(final=True)
    name_folders_as_the_student_does(result, build)
    hidden = {(p.id, s) for p in rubric.tasks for s in p.hidden}
    cap_stored(result, int(rubric.limits.message_kib * 1024), int(rubric.limits.stored_kib * 1024),
               hidden=lambda task, shape: (task, shape) in hidden,
               hidden_share=sum(_planned(p, timed, True) for p in rubric.tasks) / max(1, planned))
    result.seconds = time.monotonic() - start
    return result


def _checked(student: StudentProcess, task: str, dtype: str, shape: str, seed: int, message: dict,
             limit: float) -> CaseOutcome:
    """One correctness request through `student`, as a case: its reply's verdict, or the process's failure."""
    try:
        case = student.answered_by(_outcome_from_reply(task, dtype, shape, "correctness", seed,
                                                       student.request(message, limit)))
        case.seconds = student.last_seconds
        return case
    except HarnessFailure as f:
        return _failure_outcome(task, dtype, shape, "correctness", seed, f)


AGAIN_STILL = "; run again alone, in a new process of its own, it did not finish either"
AGAIN_PASSED = ("passed when run again alone, in a new process of its own, after its first run found no result "
                "within the {limit:.0f} s limit (the machine's load, not the kernel, is the likely cause)")


def _run_again_alone(first: CaseOutcome, alone: StudentProcess, message: dict, limit: float) -> CaseOutcome:
    """A case that ran into its limit, once more before it is called a hang: on a GPU a case's limit is wall clock,
    and a busy host (the service's builds beside the GPU's cases) can push a correct kernel past it. The
    run is alone: a new process serving only this case, after the one that hung is gone; it is not charged to
    the time budget (the first run was: a hang costs the student what it did before, and the GPU one limit
    more). Its verdict stands where it finished; where it did not, the first run's does, saying so."""
    try:
        again = _checked(alone, first.task, first.dtype, first.shape, first.seed, message, limit)
    finally:
        alone.close()  # (a forged reply found as it ends makes `again` a protocol failure)
    if again.status == CaseStatus.TIMEOUT:
        first.message += AGAIN_STILL
        return first
    if again.status == CaseStatus.OK:
        again.message = AGAIN_PASSED.format(limit=limit)
    return again


def _planned(policy: TaskPolicy, timed: bool, hidden: bool) -> int:
    """How many of the task's cases the rubric plans at its hidden shapes (hidden=True) or at its visible ones."""
    return (len(policy.dtypes) * sum((s in policy.hidden) == hidden for s in policy.shapes)
            + (sum((s in policy.hidden) == hidden for s in policy.timed) if timed else 0))


def _decided_by_build(policy: TaskPolicy, registry: Registry, sub: Submission, build: BuildResult,
                      seed: int) -> list[CaseOutcome]:
    """Every correctness case of a task whose file does not run (not handed in, refused by the gate, left to a
    GPU, not built), with that verdict; [] when it runs."""
    spec = registry.task(policy.id)
    if spec.file not in sub.files:
        status, message = CaseStatus.MISSING, f"{spec.file} was not in the submission"
    elif build.gate is not None and build.gate.enforced(spec.file):  # not linked: its stub stood in
        status, message = CaseStatus.FORBIDDEN, build.gate.case_message(spec.file)
    elif spec.file in build.needs_gpu:  # the CPU backend cannot run it: not the student's fault, not run here
        status, message = CaseStatus.NEEDS_GPU, build.needs_gpu[spec.file]
    elif spec.file in build.unbuilt:  # did not compile or link: a marker stood in, every case would say so
        status, message = CaseStatus.BUILD_ERROR, build.unbuilt[spec.file]
    else:
        return []
    return [CaseOutcome(policy.id, dtype, shape, "correctness", status, message, seed=seed)
            for dtype in policy.dtypes for shape in policy.shapes]


def _rubric_order(rubric: Rubric) -> Callable[[CaseOutcome], tuple]:
    """The order cases are stored and shown in: every task's correctness cases (by type, then shape), then the
    timed cases, each in the rubric's order, wherever the hidden ones ran."""
    tasks = {p.id: p for p in rubric.tasks}
    index = {p.id: i for i, p in enumerate(rubric.tasks)}

    def key(case: CaseOutcome) -> tuple:
        policy = tasks.get(case.task)
        if policy is None:
            return (case.kind == "timed", len(index), 0, 0)
        shapes = policy.timed if case.kind == "timed" else policy.shapes
        return (case.kind == "timed", index[case.task],
                policy.dtypes.index(case.dtype) if case.dtype in policy.dtypes else len(policy.dtypes),
                shapes.index(case.shape) if case.shape in shapes else len(shapes))
    return key


NOT_TIMED_UNTIL_CORRECT = "not timed: performance counts once every correctness case of this task passes"

# The student's check run took more than this share of the case's budget:
# the run needs no warming up, and warm-ups would eat the budget.
SLOW_CHECK_SHARE = 0.1


def _timed_case(policy: TaskPolicy, shape: str, seed: int, student: StudentProcess, solution: Server,
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
