"""The tools a submission's grading runs beside its cases: compute-sanitizer (or the CPU backend's own checks in
its place) on each task's small case, and the performance counters (feedback only) on its profile case. Both run
in what is left of the submission's time.

Hidden shapes (grader/core/visibility.py): a tool's run whose findings are shown before the date (its small case
is not hidden) is sent only visible shapes and judged on the visible cases; one whose small case is hidden runs
with the hidden cases (cases.py), sent hidden shapes. The counters run on the visible cases' verdicts alone."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from grader.backends.base import Backend, ToolTask
from grader.core.rubric import Rubric
from grader.core.status import NOT_RUN, CaseStatus, SanitizerStatus
from grader.intake.submission import Submission
from grader.run.budget import TimeBudget
from grader.outcomes.build_result import BuildResult
from grader.outcomes.results import CaseOutcome, ProfileOutcome, SanitizerOutcome

# A task's case statuses its build decides before anything runs (cases.py's _decided_by_build), at every shape.
DECIDED_BY_BUILD = frozenset({CaseStatus.MISSING, CaseStatus.FORBIDDEN, CaseStatus.NEEDS_GPU, CaseStatus.BUILD_ERROR})


# A task with a case that ended so gets its tools' verdicts "skipped", in these words (the first that applies).
SKIPPED_AFTER = {CaseStatus.TIMEOUT: "not run: a case of this task did not finish within its time limit",
                 CaseStatus.PROTOCOL: "not run: this task's results were forged on the harness's reply channel"}


def skips_tools(judged: list[CaseOutcome]) -> str:
    """Why the tools skip a task with these cases ("" where nothing in them does)."""
    return next((why for status, why in SKIPPED_AFTER.items() if any(c.status == status for c in judged)), "")


def reaches_tools(judged: list[CaseOutcome]) -> bool:
    """Whether the tools run on a task with these cases: some ran, and none made them skip it."""
    return any(c.status not in NOT_RUN for c in judged) and not skips_tools(judged)


RACECHECK = "racecheck"
NO_SHARED_MEMORY = ("not run: racecheck looks for races on shared memory, and this task's compiled code has no "
                    "shared memory access and no atomics")


def sanitize(sub: Submission, build: BuildResult, backend: Backend, gpu: str | None, rubric: Rubric,
              cases: list[CaseOutcome], seed: int, deadline: float,
              budget: TimeBudget | None = None, hidden: bool = False,
              files: dict[str, str] | None = None) -> list[SanitizerOutcome]:
    """compute-sanitizer's tools on each task's small case, unless the task never ran or hung, or the submission's
    time ran out: each tool over all such tasks at once where the backend can (LocalBackend.sanitize_tasks), the
    outcomes in the rubric's order of tasks, then tools. hidden=False: the tasks whose small case is not hidden,
    sent their visible shapes and judged on their visible cases; True: those whose small case is hidden, sent
    their hidden shapes (the hidden cases' process's requests) and judged on every case. `files`: each task's
    file, where racecheck is not run on a file whose compiled code has no shared memory access (the build
    gate's reading, GateReport.no_shared_memory). The tools' runs go at once where the backend allows."""
    runs: list[ToolTask] = []
    not_run: dict[str, str] = {}  # task: why its tools do not run
    graded: dict[str, float] = {}  # task: its graded cases' seconds for the shapes its tools are sent
    for policy in rubric.tasks:
        shape = rubric.sanitizer.shape(policy.id)
        if not rubric.sanitizer.tools or shape is None or (shape in policy.hidden) != hidden:
            continue
        own = [c for c in cases if c.task == policy.id and c.kind == "correctness"]
        # What the run is judged on: the cases its reader may see (with hidden=False, a hidden case's verdict
        # would show in whether the tool ran); a task whose every graded shape is hidden, on its build.
        judged = [c for c in own if hidden or c.shape not in policy.hidden or c.status in DECIDED_BY_BUILD]
        if (hidden and not own) or (judged and all(c.status in NOT_RUN for c in judged)):
            continue  # (with hidden=False, none judged: every graded shape hidden, and the file runs)
        # The tool's run gets the task's graded shapes from the first, as a graded run does (up to a random
        # cut at or after its small case): the code under the tool cannot tell it from a graded run by what
        # it is asked. Visible and hidden shapes are never sent to one process, as in grading.
        sent = tuple(s for s in policy.shapes if (s in policy.hidden) == hidden)
        graded[policy.id] = sum(c.seconds for c in judged if c.shape in sent)
        runs.append(ToolTask(policy.id, policy.timed_dtype, shape, sent, checker_limit(rubric, graded[policy.id])))
        if why := skips_tools(judged):
            not_run[policy.id] = why

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
    plain = build.gate.no_shared_memory if build.gate is not None else frozenset()
    needless = {t.task for t in going if (files or {}).get(t.task) in plain}  # racecheck's: no shared memory

    def run_tool(tool: str) -> dict[tuple[str, str], SanitizerOutcome]:
        found = {(t.task, tool): skipped(t, tool, not_run[t.task]) for t in runs if t.task in not_run}
        these = [t for t in going if not (tool == RACECHECK and t.task in needless)]
        found.update({(t.task, tool): skipped(t, tool, NO_SHARED_MEMORY) for t in going if t not in these})

        def out_of_time(t: ToolTask) -> SanitizerOutcome | None:
            why = time_left()
            return skipped(t, tool, why) if why else None
        for t, outcome in zip(these, backend.sanitize_tasks(sub, build, gpu, tool, these, seed,
                                                            rubric.limits.sanitizer, out_of_time) if these else []):
            found[outcome.task, tool] = too_slow(outcome, t, graded[t.task], rubric) or outcome
        return found

    found: dict[tuple[str, str], SanitizerOutcome] = {}
    tools = list(rubric.sanitizer.tools)
    if backend.tools_at_once and len(tools) > 1:
        with ThreadPoolExecutor(max_workers=len(tools)) as pool:
            for part in pool.map(run_tool, tools):
                found.update(part)
    else:
        for tool in tools:
            found.update(run_tool(tool))
    return [found[t.task, tool] for t in runs for tool in tools]


def checker_limit(rubric: Rubric, graded: float) -> float | None:
    """The seconds a tool's run on the task may take: [limits] checker_multiple x what its graded correctness cases
    of the same shapes took (`graded`), plus checker_extra; None where that is not less than the tool's own limit.
    Code that runs far longer under a checker than graded (it found the tool, and spins there) is stopped at it."""
    limit = rubric.limits.checker_multiple * graded + rubric.limits.checker_extra
    return limit if limit < rubric.limits.sanitizer else None


def too_slow(outcome: SanitizerOutcome, t: ToolTask, graded: float, rubric: Rubric) -> SanitizerOutcome | None:
    """A run stopped at the task's checker_limit: a finding, charged as the tool's (a run cut by the tool's own
    limit, or by the submission's time, stays a timeout: no verdict)."""
    if outcome.status != SanitizerStatus.TIMEOUT or t.limit is None:
        return None
    outcome.status, outcome.errors = SanitizerStatus.TOO_SLOW, 1
    outcome.message = (f"still running after {t.limit:.0f} s, where the graded run of the same cases took "
                       f"{graded:.1f} s: code that runs far longer under a checker than when graded is charged as "
                       f"the checker's finding ([limits] checker_multiple = {rubric.limits.checker_multiple:g}, "
                       f"checker_extra = {rubric.limits.checker_extra:g} s)")
    return outcome


def profile_task(sub: Submission, build: BuildResult, backend: Backend, rubric: Rubric, policy, cases: list[CaseOutcome],
                  seed: int, deadline: float, budget: TimeBudget | None = None) -> list[ProfileOutcome]:
    """make profile's counters on the task's profile case, where the backend counts (the CPU's) and every visible
    correctness case of the task that it ran passed (the counts of a wrong kernel would mislead; a shape it left to
    a GPU says nothing either way, and the course's rubric has such a shape in every task but one); feedback only.
    A hidden case's verdict never decides it: whether counters are shown would tell that verdict before the date,
    and they are shown whatever the date (a task whose every shape is hidden gets none). Run after every visible
    scored case and before the hidden ones (cases.py), in what is left of the submission's time."""
    ran = [c for c in cases if c.task == policy.id and c.kind == "correctness" and c.status != CaseStatus.GPU_ONLY
           and c.shape not in policy.hidden]
    if not policy.profile or not ran or not all(c.passed for c in ran):
        return []
    if (budget is not None and budget.ran_out) or time.monotonic() > deadline:
        return []
    outcome = backend.profile(sub, build, policy.id, policy.timed_dtype, policy.profile, seed,
                              min(rubric.limits.sanitizer, max(1.0, deadline - time.monotonic())))
    return [outcome] if outcome is not None else []
