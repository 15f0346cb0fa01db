"""The scoring chain: one order of named steps from a submission's cases to the total the store keeps.

    task_scores -> sanitizer_penalty -> overrides -> late_penalty -> totals

1. task_scores (grader/scoring/score.py): each task's points from its cases (the run's `measured` flag: a run that timed
   nothing scores correctness only), and each timed case's credit;
2. sanitizer_penalty (grader/scoring/score.py): a task whose compute-sanitizer run found errors loses the rubric's share;
3. overrides: a TA's points for a task (the student's overrides in force) replace the task's two parts;
4. late_penalty: the late policy's share (grader/core/late.py, computed when graded or rescored, then stored) of the
   raw total, the tasks' points after overrides;
5. totals: raw total, penalty, total = raw total - penalty.

Every way a score is made runs it: `grade` and `grade --student` (score_chain, from the fresh outcomes), `rescore`
(score_chain, from the stored case rows under the new rubric), `override`/`--undo` and the Slurm merge (settle:
steps 3 to 5 from the stored task scores and lateness, since neither the cases nor the rubric changed). The store
only writes what the chain returns: it calls the chain inside the transaction that writes the result (see
Store.save), so a score and the overrides it counts are always of the same moment.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pandas as pd

from grader.core.late import Lateness, lateness
from grader.outcomes.results import SanitizerOutcome, SubmissionResult, TaskScore
from grader.core.rubric import Rubric
from grader.scoring.score import ScoredCase, sanitizer_penalty, task_scores

__all__ = ["Override", "Scored", "TaskOverride", "Totals", "chain_for", "chain_for_result", "late_penalty", "overrides",
           "sanitizer_penalty", "score_chain", "settle", "settle_stored", "task_scores", "totals"]


@dataclass(frozen=True)
class Override:
    """A TA's points for one of a student's tasks, in force (a row of the store's overrides table)."""
    task: str
    points: float
    author: str
    made: str
    reason: str

    @property
    def note(self) -> str:
        return f"{self.points:g} points set by {self.author} on {self.made}: {self.reason}"

    @classmethod
    def rows(cls, frame: pd.DataFrame) -> list[Override]:
        """Overrides in force from the store's rows, oldest first."""
        return [cls(r.task, float(r.points), r.author, r.made, r.reason) for r in frame.itertuples()]


@dataclass(frozen=True)
class TaskOverride:
    points: float | None  # None: no override in force; the task's own points count
    note: str = ""


@dataclass(frozen=True)
class Totals:
    raw_total: float  # the tasks' points, overrides applied, before the late penalty
    penalty: float  # in points
    total: float


@dataclass(frozen=True)
class Scored:
    """What the chain makes of one submission: everything the store writes of its score."""
    scores: list[TaskScore]  # after the sanitizer penalty; overrides are beside them, not in them
    overrides: dict[str, TaskOverride]  # per task of `scores`
    late: Lateness
    totals: Totals
    credits: dict[int, float] = field(default_factory=dict)  # timed cases' credit, by ScoredCase.key


def overrides(scores: Sequence[TaskScore], in_force: Sequence[Override]) -> dict[str, TaskOverride]:
    """Step 3: each task's override, the latest in force for it (none: points None, note '')."""
    latest = {o.task: o for o in in_force}
    return {s.task: TaskOverride(latest[s.task].points, latest[s.task].note) if s.task in latest
            else TaskOverride(None) for s in scores}


def late_penalty(raw_total: float, late: Lateness) -> float:
    """Step 4: the points the late policy takes of the raw total."""
    return late.penalty(raw_total)


def totals(scores: Sequence[TaskScore], set_by_ta: dict[str, TaskOverride], late: Lateness) -> Totals:
    """Step 5: raw total (an override's points in place of its task's), the late penalty, and the total."""
    raw = 0.0
    for s in scores:
        points = set_by_ta[s.task].points
        raw += points if points is not None else s.correctness + s.performance
    penalty = late_penalty(raw, late)
    return Totals(raw, penalty, raw - penalty)


def settle(scores: Sequence[TaskScore], in_force: Sequence[Override], late: Lateness,
           credits: dict[int, float] | None = None) -> Scored:
    """Steps 3 to 5 on task scores already made (a stored submission's, after an override or a merge)."""
    set_by_ta = overrides(scores, in_force)
    return Scored(list(scores), set_by_ta, late, totals(scores, set_by_ta, late), dict(credits or {}))


def score_chain(rubric: Rubric, status: str, cases: Sequence[ScoredCase], sanitizer: Sequence[SanitizerOutcome],
                in_force: Sequence[Override], late: Lateness, measured: bool = True) -> Scored:
    """The whole chain for one submission: its status (graded, rejected, build_failed), its cases and
    compute-sanitizer findings, its student's overrides in force, its lateness, and whether its run timed cases."""
    scores, credits = task_scores(rubric, status, cases, measured)
    return settle(sanitizer_penalty(rubric, scores, sanitizer, cases), in_force, late, credits)


def chain_for(rubric: Rubric, status: str, cases: Sequence[ScoredCase], sanitizer: Sequence[SanitizerOutcome],
              late: Lateness, measured: bool = True) -> Callable[[pd.DataFrame], Scored]:
    """score_chain for one submission, waiting for its student's overrides in force: what Store.save and
    Store.rescore are given, to call with the store's rows inside the transaction that writes the result."""
    return lambda in_force: score_chain(rubric, status, cases, sanitizer, Override.rows(in_force), late, measured)


def chain_for_result(rubric: Rubric, result: SubmissionResult, measured: bool = True
                     ) -> Callable[[pd.DataFrame], Scored]:
    """chain_for a fresh grade (grade, grade --student): its outcomes as the chain reads them, keyed by their place
    in result.cases, and its lateness by the rubric's late policy from the time received."""
    sub = result.submission
    return chain_for(rubric, result.status, [ScoredCase.of_outcome(c, i) for i, c in enumerate(result.cases)],
                     result.sanitizer, lateness(rubric.late, sub.student, sub.received, sub.received_from), measured)


def settle_stored(submission: pd.Series, scores: pd.DataFrame, in_force: pd.DataFrame) -> Scored:
    """settle from the store's rows: a submission (its late_percent and late words), its scores, and its
    student's overrides in force. What Store.add_override, undo_override and merge_from are given to call."""
    task_rows = [TaskScore(r.task, float(r.correctness), float(r.correctness_max), float(r.performance),
                           float(r.performance_max), int(r.cases_passed), int(r.cases_total), r.note)
                 for r in scores.itertuples()]
    return settle(task_rows, Override.rows(in_force), Lateness(float(submission["late_percent"]), submission["late"]))
