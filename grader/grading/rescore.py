"""`bin/grader rescore RESULTS --rubric R`: every stored submission's scores under an edited rubric.

Nothing runs again: the stored cases (their statuses, each timed case's speedup interval) and
compute-sanitizer's findings are scored by the same chain as grading (grader/scoring/chain.py), with the
late policy's share from the stored time received. What can change this way: points, the performance
curve (s_zero, s_full), the sanitizer penalty, the late policy. A rubric that changes what is run (tasks, element types, shapes,
timed shapes) is refused for the submissions it would need cases for: those need `grade --regrade`.
A submission graded in a run that timed nothing (the CPU backend) is scored for correctness only, as it was;
its missing timed cases are not held against the rubric.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from grader.core.late import lateness
from grader.outcomes.results import SanitizerOutcome
from grader.core.rubric import Rubric
from grader.core.status import SubmissionStatus
from grader.scoring.score import ScoredCase
from grader.scoring.chain import chain_for
from grader.store.store import Store


class RescoreError(ValueError):
    """The rubric asks for cases the store does not hold; the message names the first."""


@dataclass
class RescoreSummary:
    rescored: int = 0
    changed: list[tuple[str, float, float]] = field(default_factory=list)  # (student, before, after), latest only


def _check_cases(rubric: Rubric, student: str, cases: pd.DataFrame, timed: bool = True) -> None:
    for policy in rubric.tasks:
        own = cases[cases["task"] == policy.id]
        have = set(zip(own[own["kind"] == "correctness"]["dtype"], own[own["kind"] == "correctness"]["shape"]))
        want = {(d, s) for d in policy.dtypes for s in policy.shapes}
        if have != want:
            odd = sorted(want ^ have)[0]
            raise RescoreError(f"{rubric.path}: {policy.id} {odd[0]} {odd[1]} is {'not ' if odd in want else ''}"
                               f"graded there, but {student}'s stored cases {'lack' if odd in want else 'have'} it: "
                               "a rubric that changes what runs needs `grade --regrade`, not rescore")
        if not timed:  # graded on the CPU backend: no timed case was ever run
            continue
        timed_shapes = set(own[own["kind"] == "timed"]["shape"])
        if timed_shapes - set(policy.timed) or (timed_shapes and set(policy.timed) - timed_shapes):
            raise RescoreError(f"{rubric.path}: {policy.id}'s timed shapes ({', '.join(policy.timed)}) differ from "
                               f"{student}'s stored timed cases ({', '.join(sorted(timed_shapes))}): that needs "
                               "`grade --regrade`, not rescore")


def rescore(store: Store, rubric: Rubric) -> RescoreSummary:
    """Every submission in the store scored under `rubric`, each in its own transaction. Every submission is
    checked before any is changed, so a refused rubric changes nothing."""
    subs = store.submissions()
    cases = store.cases_for(None)
    tools = store.sanitizer_runs_for(None)
    untimed = {int(r.id): not r.timed for r in store.runs().itertuples()}
    for sub in subs.itertuples():
        if sub.status == SubmissionStatus.GRADED:
            _check_cases(rubric, sub.student, cases[cases["submission_id"] == sub.id],
                         not untimed.get(int(sub.run_id), False))
    before = dict(zip(store.latest_submissions()["student"], store.latest_submissions()["total"]))
    summary = RescoreSummary()
    for sub in subs.itertuples():
        own = [ScoredCase.of_row(r) for r in cases[cases["submission_id"] == sub.id].itertuples()]
        found = [SanitizerOutcome(r.task, r.tool, r.dtype, r.shape, r.status, int(r.errors))
                 for r in tools[tools["submission_id"] == sub.id].itertuples()]
        late = lateness(rubric.late, sub.student, sub.received, sub.received_from)
        measured = not untimed.get(int(sub.run_id), False)
        store.rescore(int(sub.id), rubric.sha256, rubric.max_points,
                      chain_for(rubric, sub.status, own, found, late, measured))
        summary.rescored += 1
    after = dict(zip(store.latest_submissions()["student"], store.latest_submissions()["total"]))
    summary.changed = [(s, before[s], after[s]) for s in sorted(after)
                       if s in before and not math.isclose(before[s], after[s])]
    return summary
