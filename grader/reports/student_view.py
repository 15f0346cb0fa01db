"""One stored submission's result as its student sees it: the `result` of the grading service's job replies.

The service (grader/service/) calls student_result for a job that is done; every number and sentence comes from the
same readers as the feedback page (report.task_feedback, task_markdown, performance_markdown), in the students'
view at `now` (grader/core/visibility.py: before the rubric's [hidden] until, hidden cases are counted, not shown, and
a task that has some has its points withheld: None here).
"""
from __future__ import annotations

from datetime import datetime

from grader.core import visibility
from grader.core.errors import GraderError
from grader.core.rubric import Rubric
from grader.core.status import SubmissionStatus
from grader.reports.report import (UNKNOWN_RUN, performance_markdown, run_of, run_views, student_score, task_feedback,
                                   task_markdown, task_points)
from grader.store.store import Store


def student_result(store: Store, rubric: Rubric, submission_id: int, now: datetime,
                   view: visibility.View | None = None) -> dict:
    """{"status", "total", "max_total", "late", "timed", "tasks": [{"task", "points", "max", "note"}], "feedback",
    "hidden": {"cases", "until"} or None}, as the student reads it at `now` (aware); `view`: another reader's (the
    staff's, who see everything), in the same shape."""
    found = store.submissions_by_id([submission_id])
    if found.empty:
        raise GraderError(f"{store.path} holds no submission #{submission_id}")
    sub = found.iloc[0].to_dict()
    run = run_of(store, sub["run_id"])
    tasks = task_feedback(store, rubric, sub["id"], run["limits"], run["untimed"], view or visibility.student(now))
    shown = dict(sub)
    hidden = student_score(shown, tasks, rubric)
    result = _result(shown, hidden, tasks, run, rubric)
    result["feedback"] = feedback_text(sub, shown, tasks, hidden, run["untimed"])
    return result


def result_summaries(store: Store, rubric: Rubric, submission_ids: list[int], now: datetime,
                     view: visibility.View | None = None) -> dict[int, dict]:
    """Each of these submissions' result as student_result has it, without the feedback and the tasks' notes:
    the status, totals and each task's points, read in a few queries however many there are (a listing of a
    class's uploads). Ids the store does not hold are left out."""
    view = view or visibility.student(now)
    subs = store.submissions_by_id(submission_ids)
    if subs.empty:
        return {}
    ids = [int(i) for i in subs["id"]]
    scores = {(int(r["submission_id"]), r["task"]): r for r in store.scores(ids).to_dict("records")}
    hidden: dict[tuple[int, str], int] = {}
    if view.hides(rubric):
        shapes = store.case_shapes(ids)
        if not shapes.empty:
            at_hidden = shapes[visibility.hidden_rows(rubric, shapes)]
            hidden = {(int(i), t): int(n) for (i, t), n in at_hidden.groupby(["submission_id", "task"]).size().items()}
    runs = run_views(store)
    out = {}
    for sub in subs.to_dict("records"):
        sid = int(sub["id"])
        tasks = []
        for policy in rubric.tasks:
            count = hidden.get((sid, policy.id), 0)
            tasks.append({"task": policy.id, "hidden": count, "withheld": bool(count),
                          "points": None if count else task_points(scores.get((sid, policy.id))),
                          "max_points": policy.max_points})
        shown = dict(sub)
        out[sid] = _result(shown, student_score(shown, tasks, rubric), tasks, runs.get(sub["run_id"], UNKNOWN_RUN),
                           rubric)
    return out


def _result(shown: dict, hidden: dict | None, tasks: list[dict], run: dict, rubric: Rubric) -> dict:
    """The result's numbers from a submission's row as shown (student_score has put the score of the tasks not
    withheld in it, and said what is `hidden`) and its tasks (task_feedback's, or result_summaries' without
    notes)."""
    return {"status": shown["status"], "total": round(float(shown["total"]), 3),
            "max_total": round(float(shown["max_total"]), 3), "late": shown["late"] or "",
            "timed": not run["untimed"] and shown["status"] == SubmissionStatus.GRADED,
            "tasks": [{"task": t["task"], "points": None if t["withheld"] else round(float(t["points"]), 3),
                       "max": t["max_points"], **({"note": t["note"]} if "note" in t else {})} for t in tasks],
            "hidden": {"cases": hidden["count"], "until": rubric.hidden_until.isoformat()} if hidden else None}


def feedback_text(sub: dict, shown: dict, tasks: list[dict], hidden: dict | None, untimed: str) -> str:
    """The condensed feedback in Markdown: the score, why a submission was not graded or did not build, the hidden
    cases' line, then each task's verdict and what failed (and its timed cases), as the feedback page has them."""
    lines = [f"**Score: {shown['total']:.1f} / {shown['max_total']:.0f}**"
             + (" (the tasks without hidden cases)" if hidden else "")]
    if sub["status"] == SubmissionStatus.REJECTED:
        lines.append(f"Your submission was not graded: {sub['rejected']}")
    elif sub["status"] == SubmissionStatus.BUILD_FAILED:
        lines.append(f"Your code did not build: {sub['build_reason'] or 'see the compiler messages'}.")
    if hidden:
        lines.append(f"**Hidden cases**: {hidden['line']}. Until then {hidden['withheld']}.")
    if sub["late"]:
        lines.append(f"**Late policy**: {sub['late']}")
    for t in tasks:
        points = "withheld" if t["withheld"] else f"{t['points']:.1f}"
        lines.append(f"## {t['task']}: {points} / {t['max_points']:.0f}\n\n{task_markdown(t)}")
        if t["performance_max"] and not untimed and t["timed"]:
            lines.append(performance_markdown(t))
    return "\n\n".join(lines) + "\n"
