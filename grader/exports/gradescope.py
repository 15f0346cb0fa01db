"""Gradescope's results.json, from the store: a test per task and part, and one leaderboard column.

Each task's correctness test shows the task's condensed feedback (report.task_markdown: its verdict, then each
cause of failure once, with the commands that reproduce it), as the student's feedback page has it; its
performance test, the task's timed cases (report.performance_markdown), as the page's performance table; a submission
graded in a run that timed nothing (the CPU backend) has no performance tests, and its output says that the
performance points were not measured (never a failed test for what did not run). Field names follow Gradescope's
autograder specification (grader/tests/test_exports.py lists them).

Before the rubric's [hidden] until (grader/core/visibility.py, which says why), a task with hidden cases has its
tests show only its visible cases, without points, and a test of its own, "TASK: hidden cases", hold the task's
points with visibility "after_due_date" and the count line as its output; the top-level score stays whole
(Gradescope does not show a student the total while a test is hidden). After the date, the tests are as without
hidden shapes, all "visible".
"""
from __future__ import annotations

import json
from datetime import datetime

from grader.exports.common import Export, latest_submission, submission_row
from grader.reports.leaderboard.board import submission_metric
from grader.core import visibility
from grader.reports.report import performance_markdown, run_of, students_now, task_feedback, task_markdown
from grader.core.rubric import Rubric
from grader.core.status import SubmissionStatus
from grader.store.store import Store


def _output(sub: dict, isolation, untimed: str = "", performance_max: float = 0.0) -> str:
    """The top of the results page: why it was not graded or did not build, notes on the files, the gate."""
    if sub["status"] == SubmissionStatus.REJECTED:
        lines = [f"Your submission was not graded: {sub['rejected']}"]
    elif sub["status"] == SubmissionStatus.BUILD_FAILED:
        lines = [f"{sub['build_reason'] or 'your code did not build'}\n\n{sub['build_log']}"]
    else:
        lines = json.loads(sub["notes"])
    lines += [f"build gate: {f['message']}" for f in json.loads(sub["gate"]) if f["enforced"]]
    if not isolation.isolated:
        lines.append(f"Graded without a sandbox ({isolation.label}): your code ran with the grader's rights.")
    if untimed and sub["status"] == SubmissionStatus.GRADED:
        lines.append(f"Correctness only. {untimed[:1].upper()}{untimed[1:]}. The {performance_max:g} performance points "
                     "were not measured: the score counts correctness points only.")
    return "\n".join(lines).strip()


def results(store: Store, rubric: Rubric, student: str | None = None, now: datetime | None = None,
            submission_id: int | None = None) -> dict:
    """The results.json of the student's latest submission (or of `submission_id`: the grading service's job), for
    Gradescope to show them at `now` (the time it is made when not given)."""
    view = visibility.student(now) if now else students_now()
    sub = latest_submission(store, student) if submission_id is None else submission_row(store, submission_id)
    run = run_of(store, sub["run_id"])
    shown = task_feedback(store, rubric, sub["id"], run["limits"], run["untimed"], view)
    whole = task_feedback(store, rubric, sub["id"], run["limits"], run["untimed"]) if view.hides(rubric) else shown
    tests = []
    for task, points in zip(shown, whole):
        for part, detail in (("correctness", task_markdown(task)), ("performance", performance_markdown(task))):
            got, worth = task[part], task[f"{part}_max"]
            if worth == 0 or (part == "performance" and run["untimed"]):
                continue
            if task["withheld"]:  # the visible cases' feedback; the points are in the hidden cases' test
                tests.append({"name": f"{task['task']}: {part} (visible cases)", "output": detail,
                              "visibility": "visible"})
                continue
            tests.append({"name": f"{task['task']}: {part}", "score": round(float(got), 3), "max_score": worth,
                          "status": "passed" if got >= worth else "failed", "output": detail,
                          "visibility": "visible"})
        if task["withheld"]:
            tests.append({"name": f"{task['task']}: hidden cases", "score": round(float(points["points"]), 3),
                          "max_score": task["max_points"], "output": f"{task['note']}: this test holds all of "
                          f"{task['task']}'s {task['max_points']:g} points.", "visibility": "after_due_date"})
    value, metric = submission_metric(store, rubric, sub["id"])
    performance_max = sum(p.performance_points for p in rubric.tasks)
    hidden = sum(t["hidden"] for t in shown)
    output = _output(sub, run["isolation"], run["untimed"], performance_max)
    if hidden:
        output = "\n".join(filter(None, [output, f"{visibility.count_line(hidden, rubric)}; the score is shown then."]))
    return {"score": round(float(sub["total"]), 3), "visibility": "visible", "output": output,
            "test_output_format": "md", "tests": tests,
            "leaderboard": [{"name": metric.label, "value": value if value is not None else 0.0, "order": "desc"}]}


def export(store: Store, rubric: Rubric, student: str | None = None, now: datetime | None = None) -> Export:
    return Export(json.dumps(results(store, rubric, student, now), indent=2) + "\n")
