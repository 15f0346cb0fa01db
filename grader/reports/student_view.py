"""One stored submission's result as its student sees it (the grading service's reply, grader/service/views.py)."""
from __future__ import annotations

from datetime import datetime

from grader.core.rubric import Rubric
from grader.reports.report import run_of, task_feedback, task_markdown
from grader.store.store import Store


def student_result(store: Store, rubric: Rubric, submission_id: int, now: datetime) -> dict | None:
    """status, total, max_total, late, timed, tasks [{task, points, max, note}], feedback (the condensed
    feedback in Markdown, as Gradescope shows it), hidden (None: nothing hidden); None when not stored."""
    rows = store.submissions()
    rows = rows[rows["id"] == int(submission_id)]
    if rows.empty:
        return None
    sub = rows.iloc[0]
    run = run_of(store, int(sub["run_id"]))
    tasks = task_feedback(store, rubric, int(sub["id"]), run["limits"], run["untimed"])
    return {"status": sub["status"], "total": round(float(sub["total"]), 3), "max_total": float(sub["max_total"]),
            "late": sub["late"] or "", "timed": not run["untimed"],
            "tasks": [{"task": t["task"], "points": round(float(t["points"]), 3), "max": float(t["max_points"]),
                       "note": t["note"]} for t in tasks],
            "feedback": "\n\n".join(task_markdown(t) for t in tasks), "hidden": None}
