"""The tools a submission's grading runs beside its cases: compute-sanitizer (or the CPU backend's own checks in
its place) on each task's small case, and the performance counters (feedback only) on its profile case. Both run
in what is left of the submission's time."""
from __future__ import annotations

import time

from grader.backends.base import Backend, ToolTask
from grader.core.rubric import Rubric
from grader.core.status import NOT_RUN, CaseStatus, SanitizerStatus
from grader.intake.submission import Submission
from grader.run.budget import TimeBudget
from grader.outcomes.build_result import BuildResult
from grader.outcomes.results import CaseOutcome, ProfileOutcome, SanitizerOutcome


def sanitize(sub: Submission, build: BuildResult, backend: Backend, gpu: str | None, rubric: Rubric,
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


def profile_task(sub: Submission, build: BuildResult, backend: Backend, rubric: Rubric, policy, cases: list[CaseOutcome],
                  seed: int, deadline: float, budget: TimeBudget | None = None) -> list[ProfileOutcome]:
    """make profile's counters on the task's profile case, where the backend counts (the CPU's) and every correctness
    case of the task that it ran passed (the counts of a wrong kernel would mislead; a shape it left to a GPU says
    nothing either way, and the course's rubric has such a shape in every task but one); feedback only. Run after
    every scored case, in what is left of the submission's time."""
    ran = [c for c in cases if c.task == policy.id and c.kind == "correctness" and c.status != CaseStatus.GPU_ONLY]
    if not policy.profile or not ran or not all(c.passed for c in ran):
        return []
    if (budget is not None and budget.ran_out) or time.monotonic() > deadline:
        return []
    outcome = backend.profile(sub, build, policy.id, policy.timed_dtype, policy.profile, seed,
                              min(rubric.limits.sanitizer, max(1.0, deadline - time.monotonic())))
    return [outcome] if outcome is not None else []
