"""Canvas's gradebook import CSV, from the store: each student's latest total, by SIS Login ID or a roster.

Canvas fills an existing assignment only when the column is headed `Assignment Name (assignment_id)`, as its
own gradebook export heads it; with a bare name it makes a new assignment. The id is the number in the
assignment's URL (`export --assignment-id`)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from grader.exports.common import Export, ExportError, student_of
from grader.report import grades_table
from grader.rubric import Rubric
from grader.spreadsheet import csv_text
from grader.store import Store

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def read_roster(path: Path) -> pd.DataFrame:
    """A Canvas gradebook export or any CSV with Canvas's five student columns."""
    try:
        roster = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise ExportError(f"{path}: cannot read the roster: {e}") from None
    missing = [c for c in CANVAS_COLUMNS if c not in roster.columns]
    if missing:
        raise ExportError(f"{path}: the roster lacks the column(s) {', '.join(missing)} "
                          f"(it needs {', '.join(CANVAS_COLUMNS)}, as in a Canvas gradebook export)")
    # Canvas exports carry a "Points Possible" row (and sometimes a muted-assignments row) under the header.
    return roster[~roster["Student"].str.strip().isin(["Points Possible", ""])][CANVAS_COLUMNS]


def assignment_column(title: str, assignment_id: str | None) -> str:
    """The header Canvas matches to an existing assignment: 'Title (id)'."""
    if assignment_id is None:
        return title
    if not str(assignment_id).isdigit():
        raise ExportError(f"--assignment-id must be Canvas's number for the assignment (in its URL), not "
                          f"'{assignment_id}'")
    return f"{title} ({assignment_id})"


def export(store: Store, rubric: Rubric, student: str | None = None, roster: Path | None = None,
           assignment_id: str | None = None) -> Export:
    """The class's totals (or one student's) in Canvas's import format; warnings name graded students the
    roster lacks. Without a roster, student ids go in SIS Login ID. Totals are final: overrides applied, the
    late penalty taken."""
    grades = grades_table(store, rubric)[["student", "total"]]
    if student is not None:
        grades = grades[grades["student"] == student_of(store, student)]
    column = assignment_column(rubric.title, assignment_id)
    warnings = [] if assignment_id else [f"no --assignment-id: Canvas will make a new assignment '{column}' "
                                         "rather than fill an existing one"]
    if roster is None:
        rows = pd.DataFrame({"Student": grades["student"], "ID": "", "SIS User ID": "",
                             "SIS Login ID": grades["student"], "Section": "", column: grades["total"]})
    else:
        people = read_roster(roster)
        score = dict(zip(grades["student"], grades["total"]))
        matched = set()

        def find(person) -> str:
            for key in ("SIS Login ID", "SIS User ID", "ID"):
                if person[key] in score:
                    matched.add(person[key])
                    return score[person[key]]
            return ""  # no submission: left blank, so Canvas keeps whatever it has

        rows = people.assign(**{column: people.apply(find, axis=1)}) if not people.empty else \
            people.assign(**{column: []})
        for name in sorted(set(score) - matched):
            warnings.append(f"{name} is graded but not in the roster {roster}; not exported")
    points = pd.DataFrame([{**{c: "" for c in CANVAS_COLUMNS}, "Student": "Points Possible",
                            column: rubric.max_points}])
    return Export(csv_text(pd.concat([points, rows], ignore_index=True)), warnings)
