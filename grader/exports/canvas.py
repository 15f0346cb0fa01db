"""Canvas's gradebook import CSV, from the store: each student's latest total, by SIS Login ID or a roster.

Canvas fills an existing assignment only when the column is headed `Assignment Name (assignment_id)`, as its
own gradebook export heads it; with a bare name it makes a new assignment. The id is the number in the
assignment's URL (`export --assignment-id`)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from grader.intake import roster as roster_file
from grader.exports.common import Export, ExportError, student_of
from grader.reports.report import grades_table
from grader.intake.roster import Person, RosterError, stored_people
from grader.core.rubric import Rubric
from grader.reports.spreadsheet import csv_text
from grader.store.store import Store

CANVAS_COLUMNS = list(roster_file.CANVAS_COLUMNS)


def read_roster(path: Path) -> list[Person]:
    """A Canvas gradebook export, or any CSV with Canvas's five student columns (grader/intake/roster.py reads it, with
    the same rules as `grade --roster`)."""
    try:
        return roster_file.read_roster(path, roster_file.CANVAS_COLUMNS)
    except RosterError as e:
        raise ExportError(str(e)) from None


def roster_rows(people: list[Person]) -> pd.DataFrame:
    """Canvas's five student columns for each person: a Canvas roster's own cells; for the roster as the store
    keeps it (or a plain one), the name and the grades' id in SIS Login ID, as an export without a roster has it."""
    return pd.DataFrame([dict(p.columns) if p.columns else
                         {"Student": p.name or p.student, "ID": "", "SIS User ID": "", "SIS Login ID": p.student,
                          "Section": ""} for p in people], columns=CANVAS_COLUMNS)


def assignment_column(title: str, assignment_id: str | None) -> str:
    """The header Canvas matches to an existing assignment: 'Title (id)'."""
    if assignment_id is None:
        return title
    if not str(assignment_id).isdigit():
        raise ExportError(f"--assignment-id must be Canvas's number for the assignment (in its URL), not "
                          f"'{assignment_id}'")
    return f"{title} ({assignment_id})"


def stored_roster(store: Store) -> list[Person] | None:
    """The roster `grade --roster` stored, if any."""
    rows = store.roster()
    return None if rows.empty else stored_people(rows)


def export(store: Store, rubric: Rubric, student: str | None = None, roster: Path | None = None,
           assignment_id: str | None = None) -> Export:
    """The class's totals (or one student's) in Canvas's import format, a row per student on the roster (the file
    given, else the one `grade --roster` stored); warnings name graded students the roster lacks, who are not
    exported. Without any roster, student ids go in SIS Login ID. Totals are final: overrides applied, the late
    penalty taken."""
    grades = grades_table(store, rubric)[["student", "total"]]
    if student is not None:
        grades = grades[grades["student"] == student_of(store, student)]
    column = assignment_column(rubric.title, assignment_id)
    warnings = [] if assignment_id else [f"no --assignment-id: Canvas will make a new assignment '{column}' "
                                         "rather than fill an existing one"]
    people, named = (read_roster(roster), f"the roster {roster}") if roster is not None else (stored_roster(store),
                                                                                            "the stored roster")
    if people is None:
        rows = pd.DataFrame({"Student": grades["student"], "ID": "", "SIS User ID": "",
                             "SIS Login ID": grades["student"], "Section": "", column: grades["total"]})
    else:
        score = dict(zip(grades["student"], grades["total"]))
        matched = set()

        def find(person: Person) -> str:
            for key in person.keys:  # SIS Login ID, SIS User ID, ID: the order grade --roster names students by
                if key in score:
                    matched.add(key)
                    return score[key]
            return ""  # no submission: left blank, so Canvas keeps whatever it has

        rows = roster_rows(people).assign(**{column: [find(p) for p in people]})
        for name in sorted(set(score) - matched):
            warnings.append(f"{name} is graded but not in {named}; not exported")
    points = pd.DataFrame([{**{c: "" for c in CANVAS_COLUMNS}, "Student": "Points Possible",
                            column: rubric.max_points}])
    return Export(csv_text(pd.concat([points, rows], ignore_index=True)), warnings)
