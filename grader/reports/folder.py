"""Every report of a results folder, written from its store: grades.csv, feedback/, review.csv and the staff's
overview.html. The one call the commands make after grading, rescoring or an override (grader/cli/grading.py).

Apart from grader/reports/report.py because the overview (grader/reports/overview.py) reads report.py's tables: the tables sit
below both pages, and this module above them.
"""
from __future__ import annotations

from datetime import datetime
from pathlib import Path

from grader.reports.overview import write_overview
from grader.reports.report import grades_table, review_table, write_feedback
from grader.core import visibility
from grader.core.rubric import Rubric
from grader.reports.spreadsheet import write_csv
from grader.store.store import Store


def write_reports(results: Path, rubric: Rubric, now: datetime | None = None) -> dict[str, Path]:
    """grades.csv, feedback/, review.csv and the staff's overview.html, all from the store; feedback/ is the
    students' and shows what they may see at `now` (grader/core/visibility.py; the time it is written when not given),
    the rest is the staff's."""
    store = Store(results / "grades.sqlite")
    try:
        grades = grades_table(store, rubric)
        write_csv(grades, results / "grades.csv")
        write_feedback(store, rubric, results / "feedback", visibility.student(now) if now else None)
        write_csv(review_table(store), results / "review.csv")
    finally:
        store.close()
    return {"grades": results / "grades.csv", "feedback": results / "feedback", "review": results / "review.csv",
            "overview": write_overview(results, rubric)}
