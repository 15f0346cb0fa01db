"""Autolab's autoresult, from the store: one score per task, and the scoreboard (the leaderboard's metric, total).

Autolab reads the last line of the autograder's output as the autoresult; the lines before it say each
task's score, for the student's own view of the output.
"""
from __future__ import annotations

import json

from grader.exports.common import Export, latest_submission
from grader.leaderboard.board import submission_metric
from grader.rubric import Rubric
from grader.store import Store


def autoresult(store: Store, rubric: Rubric, student: str | None = None) -> dict:
    sub = latest_submission(store, student)
    scores = store.scores([sub["id"]]).set_index("task")
    value, _ = submission_metric(store, rubric, sub["id"])
    return {"scores": {t.id: round(float(scores.loc[t.id, "correctness"] + scores.loc[t.id, "performance"]), 3)
                       if t.id in scores.index else 0.0 for t in rubric.tasks},
            "scoreboard": [value if value is not None else 0.0, round(float(sub["total"]), 3)]}


def score_lines(store: Store, rubric: Rubric, student: str | None = None) -> list[str]:
    """'task: got / worth note', per task."""
    sub = latest_submission(store, student)
    scores = store.scores([sub["id"]]).set_index("task")
    lines = []
    for t in rubric.tasks:
        s = scores.loc[t.id] if t.id in scores.index else None
        got = float(s.correctness + s.performance) if s is not None else 0.0
        lines.append(f"{t.id}: {got:.1f} / {t.max_points:.0f} {s.note if s is not None else ''}".rstrip())
    return lines


def export(store: Store, rubric: Rubric, student: str | None = None) -> Export:
    """The score lines, then the autoresult as the last line."""
    return Export("\n".join(score_lines(store, rubric, student) + [json.dumps(autoresult(store, rubric, student))])
                  + "\n")
