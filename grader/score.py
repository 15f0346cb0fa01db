"""Scores from case outcomes, following the rubric.

Per task:
- correctness: correctness_points x (correctness cases passed / cases graded);
- performance: only when every correctness case passed; performance_points x
  the mean credit of the task's timed cases, each credit taken from the
  rubric's curve at the upper end of the speedup's 95% interval (so an
  interval that straddles a threshold counts on the student's side), and 0
  for a timed case that went wrong. A timed case measured faster than the GPU
  can physically do its work (status "implausible") costs the task all its
  performance points: the same code produced the other timings too;
- sanitizer: when compute-sanitizer reported an error on the task's small
  case, the task loses the rubric's [sanitizer] penalty x its correctness
  points (never below 0), whatever its outputs were.

A run that times nothing (the CPU backend: `measured=False`) scores correctness only: no task earns
performance points, and each says that they were not measured, rather than that they were lost. A task
whose file the CPU cannot run (status "needs_gpu") scores 0 there and says why. A case whose shape is over
the CPU backend's per-case budget (status "gpu_only") is left out: the task's correctness is the share of
the cases that ran, and its note says how many were GPU only.
"""
from __future__ import annotations

from grader.results import CaseOutcome, SanitizerOutcome, TaskScore
from grader.rubric import Rubric, TaskPolicy
from grader.status import GPU_ONLY, UNTIMED_BACKENDS

NOT_MEASURED = "performance not measured: " + UNTIMED_BACKENDS["cpu"].split(": ", 1)[1]


def timed_credit(policy: TaskPolicy, case: CaseOutcome) -> float:
    if case.status != "ok" or case.paired is None or not case.paired.pairs:
        return 0.0
    return policy.performance_credit(case.paired.speedup.high)


def score_task(policy: TaskPolicy, cases: list[CaseOutcome], measured: bool = True) -> TaskScore:
    """measured=False: the run timed nothing (the CPU backend); correctness only (module doc)."""
    own = [c for c in cases if c.task == policy.id and c.kind == "correctness"]
    correctness = [c for c in own if c.status != GPU_ONLY]
    gpu_only = len(own) - len(correctness)
    timed = [c for c in cases if c.task == policy.id and c.kind == "timed"]
    total = len(policy.dtypes) * len(policy.shapes) - gpu_only
    passed = sum(c.passed for c in correctness)
    score = TaskScore(policy.id, policy.correctness_points * passed / total if total else 0.0,
                      policy.correctness_points, 0.0, policy.performance_points, passed, total)
    if not total:
        score.note = "not graded on the CPU: every case is over its per-case budget; grade it on a GPU"
    elif any(c.status == "missing" for c in correctness):
        score.note = "file missing"
    elif any(c.status == "forbidden" for c in correctness):
        score.note = "not run: the file breaks a build-gate rule"
    elif correctness and all(c.status == "needs_gpu" for c in correctness):
        score.note = f"not graded on the CPU: {correctness[0].message}; grade it on a GPU"
    elif correctness and all(c.status == "build_error" for c in correctness):
        score.note = "does not build (the build's messages say why)"
    elif any(c.status == "not_implemented" for c in correctness):
        score.note = "not implemented"
    elif passed < total:
        score.note = f"{total - passed} of {total} correctness cases failed: no performance points"
    elif not measured:
        score.note = NOT_MEASURED if policy.performance_points else ""
    elif policy.timed:
        for case in timed:
            case.credit = timed_credit(policy, case)
        implausible = [c.shape for c in timed if c.status == "implausible"]
        if implausible:
            score.note = (f"timed case(s) {', '.join(implausible)} measured faster than the GPU can physically run "
                          "them: flagged implausible, no performance points, listed for review")
        else:
            score.performance = policy.performance_points * sum(c.credit for c in timed) / len(policy.timed)
            failed = [f"{c.shape} ({c.status})" for c in timed if c.status != "ok"]
            if failed:
                score.note = f"no performance credit for timed case(s) {', '.join(failed)}"
    if gpu_only:
        left = f"{gpu_only} of {len(own)} cases GPU only (over the CPU's per-case budget)"
        score.note = f"{score.note}; {left}" if score.note else left
    return score


def apply_sanitizer_penalty(score: TaskScore, policy: TaskPolicy, penalty: float,
                            findings: list[SanitizerOutcome]) -> TaskScore:
    found = [f for f in findings if f.task == policy.id and f.found_errors]
    if not found or penalty <= 0:
        return score
    lost = min(score.correctness, penalty * policy.correctness_points)
    score.correctness -= lost
    what = ", ".join(f"{f.tool} {f.errors}" for f in found)
    note = f"compute-sanitizer found errors ({what}): -{lost:.3g} points"
    score.note = f"{score.note}; {note}" if score.note else note
    return score


def score_submission(rubric: Rubric, cases: list[CaseOutcome],
                     sanitizer: list[SanitizerOutcome] = (), measured: bool = True) -> list[TaskScore]:
    """Every task's score; `measured=False` for a run that measures no performance (module doc)."""
    return [apply_sanitizer_penalty(score_task(policy, cases, measured), policy, rubric.sanitizer.penalty,
                                    list(sanitizer)) for policy in rubric.tasks]


# The note on every task of a submission that never ran, by its status (grade.py and rescore.py).
ZERO_NOTES = {"rejected": "not graded: rejected at intake", "build_failed": "does not compile"}


def zero_scores(rubric: Rubric, note: str) -> list[TaskScore]:
    """Scores of a submission that never ran (rejected at intake, or did not compile)."""
    return [TaskScore(p.id, 0.0, p.correctness_points, 0.0, p.performance_points, 0,
                      len(p.dtypes) * len(p.shapes), note) for p in rubric.tasks]
