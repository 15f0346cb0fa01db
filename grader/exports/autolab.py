"""Autolab's autoresult, from the store: one score per task, and the scoreboard (the leaderboard's metric, total).

Autolab reads the last line of the autograder's output as the autoresult; the lines before it say each
task's score, for the student's own view of the output.
"""
from __future__ import annotations

import json

from grader.exports.common import Export, latest_submission
from grader.reports.leaderboard.board import submission_metric
from grader.reports.report import run_of, task_feedback
from grader.core.rubric import Rubric
from grader.store.store import Store


def autoresult(store: Store, rubric: Rubric, student: str | None = None) -> dict:
    sub = latest_submission(store, student)
    run = run_of(store, sub["run_id"])
    tasks = task_feedback(store, rubric, sub["id"], run["limits"], run["untimed"])  # overrides applied
    value, _ = submission_metric(store, rubric, sub["id"])
    return {"scores": {t["task"]: round(float(t["points"]), 3) for t in tasks},
            "scoreboard": [value if value is not None else 0.0, round(float(sub["total"]), 3)]}


def score_lines(store: Store, rubric: Rubric, student: str | None = None) -> list[str]:
    """'task: got / worth: verdict', per task: the verdict line of the student's feedback (report.task_feedback)."""
    sub = latest_submission(store, student)
    run = run_of(store, sub["run_id"])
    tasks = task_feedback(store, rubric, sub["id"], run["limits"], run["untimed"])  # ("performance not timed ...")
    return [f"{t['task']}: {t['points']:.1f} / {t['max_points']:.0f}: {t['verdict']}"
            + (f" ({t['note']})" if t["note"] else "") for t in tasks]


def export(store: Store, rubric: Rubric, student: str | None = None) -> Export:
    """The score lines, then the autoresult as the last line."""
    return Export("\n".join(score_lines(store, rubric, student) + [json.dumps(autoresult(store, rubric, student))])
                  + "\n")
