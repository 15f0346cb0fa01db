"""Autolab's autoresult, from the store: one score per task, and the scoreboard (the leaderboard's metric, total).

Autolab reads the last line of the autograder's output as the autoresult; the lines before it say each
task's score, for the student's own view of the output.

Autolab shows every score it is given, so before the rubric's [hidden] until (grader/core/visibility.py) a task
with hidden cases is left out of the autoresult (that problem stays ungraded until a regrade after the date), its
line says its points are withheld, and the scoreboard's total counts the other tasks.
"""
from __future__ import annotations

import json
from datetime import datetime

from grader.core import visibility
from grader.exports.common import Export, latest_submission
from grader.reports.leaderboard.board import submission_metric
from grader.reports.report import run_of, students_now, task_feedback
from grader.core.rubric import Rubric
from grader.store.store import Store


def _tasks(store: Store, rubric: Rubric, student: str | None, now: datetime | None) -> tuple[dict, list[dict]]:
    """The student's latest submission and its tasks as the student sees them at `now` (overrides applied)."""
    sub = latest_submission(store, student)
    run = run_of(store, sub["run_id"])
    view = visibility.student(now) if now else students_now()
    return sub, task_feedback(store, rubric, sub["id"], run["limits"], run["untimed"], view)


def autoresult(store: Store, rubric: Rubric, student: str | None = None, now: datetime | None = None) -> dict:
    sub, tasks = _tasks(store, rubric, student, now)
    value, _ = submission_metric(store, rubric, sub["id"])
    withheld = any(t["withheld"] for t in tasks)
    total = sum(t["points"] for t in tasks if not t["withheld"]) if withheld else sub["total"]
    return {"scores": {t["task"]: round(float(t["points"]), 3) for t in tasks if not t["withheld"]},
            "scoreboard": [value if value is not None else 0.0, round(float(total), 3)]}


def score_lines(store: Store, rubric: Rubric, student: str | None = None, now: datetime | None = None) -> list[str]:
    """'task: got / worth: verdict', per task: the verdict line of the student's feedback (report.task_feedback)."""
    _, tasks = _tasks(store, rubric, student, now)  # ("performance not timed ...")
    return [f"{t['task']}: {'withheld' if t['withheld'] else format(t['points'], '.1f')} / {t['max_points']:.0f}: "
            f"{t['verdict']}" + (f" ({t['note']})" if t["note"] else "") for t in tasks]


def export(store: Store, rubric: Rubric, student: str | None = None, now: datetime | None = None) -> Export:
    """The score lines (and, before the rubric's date, how many cases are hidden), then the autoresult as the last
    line."""
    _, tasks = _tasks(store, rubric, student, now)
    hidden = sum(t["hidden"] for t in tasks)
    counted = [f"{visibility.count_line(hidden, rubric)}; until then the scoreboard's total counts the tasks without "
               "hidden cases"] if hidden else []
    return Export("\n".join(score_lines(store, rubric, student, now) + counted
                            + [json.dumps(autoresult(store, rubric, student, now))]) + "\n")
