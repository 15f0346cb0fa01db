"""Scores from case outcomes, following the rubric: the scoring chain's first two steps (task_scores,
sanitizer_penalty; the chain is grader/scoring/chain.py).

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

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from grader.outcomes.results import CaseOutcome, SanitizerOutcome, TaskScore
from grader.core.rubric import Rubric, TaskPolicy
from grader.core.status import NOT_TIMED_ON_CPU, CaseStatus, SanitizerStatus, SubmissionStatus

NOT_MEASURED = "performance not measured: " + NOT_TIMED_ON_CPU.split(": ", 1)[1]


@dataclass(frozen=True)
class ScoredCase:
    """What scoring reads of one case, the same from a fresh grade's CaseOutcome and from a stored case row:
    its status, and for a timed case how many pairs ran and the upper end of the speedup's interval. `key`
    names the case in the credits a step returns (its place in a fresh grade's list, its id in the store)."""
    task: str
    kind: str  # "correctness" or "timed"
    status: str
    shape: str = ""
    message: str = ""
    pairs: int = 0
    speedup_high: float | None = None
    key: int = 0
    dtype: str = ""

    @property
    def passed(self) -> bool:
        return self.status == CaseStatus.OK

    @classmethod
    def of_outcome(cls, case: CaseOutcome, key: int) -> ScoredCase:
        paired = case.paired
        timed = paired is not None and bool(paired.pairs)
        return cls(case.task, case.kind, case.status, case.shape, case.message,
                   len(paired.pairs) if timed else 0, paired.speedup.high if timed else None, key, case.dtype)

    @classmethod
    def of_row(cls, row) -> ScoredCase:
        """A row of Store.cases_for (a pandas itertuples row)."""
        pairs = 0 if row.pairs is None or math.isnan(row.pairs) else int(row.pairs)
        high = None if row.speedup_high is None or math.isnan(row.speedup_high) else float(row.speedup_high)
        return cls(row.task, row.kind, row.status, row.shape, row.message, pairs, high, int(row.id), row.dtype)


def timed_credit(policy: TaskPolicy, case: ScoredCase) -> float:
    if case.status != CaseStatus.OK or not case.pairs or case.speedup_high is None:
        return 0.0
    return policy.performance_credit(case.speedup_high)


def task_score(policy: TaskPolicy, cases: Sequence[ScoredCase], measured: bool = True
               ) -> tuple[TaskScore, dict[int, float]]:
    """One task's score and the credit of each of its timed cases scored for performance (by case key).
    measured=False: the run timed nothing (the CPU backend); correctness only (module doc)."""
    own = [c for c in cases if c.task == policy.id and c.kind == "correctness"]
    correctness = [c for c in own if c.status != CaseStatus.GPU_ONLY]
    gpu_only = len(own) - len(correctness)
    timed = [c for c in cases if c.task == policy.id and c.kind == "timed"]
    total = len(policy.dtypes) * len(policy.shapes) - gpu_only
    passed = sum(c.passed for c in correctness)
    credits: dict[int, float] = {}
    score = TaskScore(policy.id, policy.correctness_points * passed / total if total else 0.0,
                      policy.correctness_points, 0.0, policy.performance_points, passed, total)
    if not total:
        score.note = "not graded on the CPU: every case is over its per-case budget; grade it on a GPU"
    elif any(c.status == CaseStatus.MISSING for c in correctness):
        score.note = "file missing"
    elif any(c.status == CaseStatus.FORBIDDEN for c in correctness):
        score.note = "not run: the file breaks a build-gate rule"
    elif correctness and all(c.status == CaseStatus.NEEDS_GPU for c in correctness):
        score.note = f"not graded on the CPU: {correctness[0].message}; grade it on a GPU"
    elif correctness and all(c.status == CaseStatus.BUILD_ERROR for c in correctness):
        score.note = "does not build (the build's messages say why)"
    elif any(c.status == CaseStatus.NOT_IMPLEMENTED for c in correctness):
        score.note = "not implemented"
    elif passed < total:
        score.note = f"{total - passed} of {total} correctness cases failed: no performance points"
    elif not measured:
        score.note = NOT_MEASURED if policy.performance_points else ""
    elif policy.timed:
        credits = {c.key: timed_credit(policy, c) for c in timed}
        implausible = [c.shape for c in timed if c.status == CaseStatus.IMPLAUSIBLE]
        if implausible:
            score.note = (f"timed case(s) {', '.join(implausible)} measured faster than the GPU can physically run "
                          "them: flagged implausible, no performance points, listed for review")
        else:
            score.performance = policy.performance_points * sum(credits[c.key] for c in timed) / len(policy.timed)
            failed = [f"{c.shape} ({c.status})" for c in timed if c.status != CaseStatus.OK]
            if failed:
                score.note = f"no performance credit for timed case(s) {', '.join(failed)}"
    if gpu_only:
        left = f"{gpu_only} of {len(own)} cases GPU only (over the CPU's per-case budget)"
        score.note = f"{score.note}; {left}" if score.note else left
    return score, credits



def already_charged(finding: SanitizerOutcome, cases: Sequence[ScoredCase]) -> bool:
    """Whether the tool's finding happened where the task's own correctness case failed (the shape its first
    finding came at: a launch error at a degenerate shape, an out-of-bounds write that made the case wrong): that
    case already cost its points, and the tool charges only what the cases did not."""
    at = [c for c in cases if c.task == finding.task and c.kind == "correctness" and c.shape == finding.shape
          and c.dtype in ("", finding.dtype)]
    return finding.status == SanitizerStatus.ERRORS and bool(at) and not all(c.passed for c in at)


def apply_sanitizer_penalty(score: TaskScore, policy: TaskPolicy, penalty: float,
                            findings: Sequence[SanitizerOutcome], cases: Sequence[ScoredCase] = ()) -> TaskScore:
    """The task's score less the sanitizer penalty (a new TaskScore; the one given is left as it was), unless each
    finding is where a case of the task already failed (already_charged)."""
    found = [f for f in findings if f.task == policy.id and f.found_errors]
    charged = [f for f in found if not already_charged(f, cases)]
    if found and not charged:
        # (the tools, not the shape: a note is read before the hidden cases' date, and the shape may be hidden)
        tools = " and ".join(dict.fromkeys(f.tool for f in found))
        note = f"compute-sanitizer's findings ({tools}) are where a case already failed: no further penalty"
        return replace(score, note=f"{score.note}; {note}" if score.note else note)
    if not charged or penalty <= 0:
        return score
    lost = min(score.correctness, penalty * policy.correctness_points)
    errors = [f"{f.tool} {f.errors}" for f in charged if f.status == SanitizerStatus.ERRORS]
    slow = [f.tool for f in charged if f.status == SanitizerStatus.TOO_SLOW]
    said = ([f"compute-sanitizer found errors ({', '.join(errors)})"] if errors else []) + \
        ([f"{' and '.join(slow)} ran far longer than the graded cases"] if slow else [])
    note = f"{'; '.join(said)}: -{lost:.3g} points"
    return replace(score, correctness=score.correctness - lost, note=f"{score.note}; {note}" if score.note else note)


def task_scores(rubric: Rubric, status: str, cases: Sequence[ScoredCase], measured: bool = True
                ) -> tuple[list[TaskScore], dict[int, float]]:
    """The chain's first step (grader/scoring/chain.py): every task's score from its cases, and the timed cases'
    credits by key; a submission that never ran (status rejected or build_failed) scores 0 with the reason."""
    if status in ZERO_NOTES:
        return zero_scores(rubric, ZERO_NOTES[status]), {}
    scores, credits = [], {}
    for policy in rubric.tasks:
        score, own = task_score(policy, cases, measured)
        scores.append(score)
        credits.update(own)
    return scores, credits


def sanitizer_penalty(rubric: Rubric, scores: Sequence[TaskScore], findings: Sequence[SanitizerOutcome],
                      cases: Sequence[ScoredCase] = ()) -> list[TaskScore]:
    """The chain's second step: each task whose compute-sanitizer run found errors the cases did not already charge
    loses the rubric's penalty."""
    policies = {p.id: p for p in rubric.tasks}
    return [apply_sanitizer_penalty(s, policies[s.task], rubric.sanitizer.penalty, findings, cases)
            if s.task in policies else s for s in scores]



# The note on every task of a submission that never ran, by its status (task_scores, the chain's first step).
ZERO_NOTES = {SubmissionStatus.REJECTED: "not graded: rejected at intake",
              SubmissionStatus.BUILD_FAILED: "does not compile"}


def zero_scores(rubric: Rubric, note: str) -> list[TaskScore]:
    """Scores of a submission that never ran (rejected at intake, or did not compile)."""
    return [TaskScore(p.id, 0.0, p.correctness_points, 0.0, p.performance_points, 0,
                      len(p.dtypes) * len(p.shapes), note) for p in rubric.tasks]
