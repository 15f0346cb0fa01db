"""The class list (`grade --roster FILE`): everyone on it gets a row, with or without a submission.

Two forms are read, by `grade --roster` and `export --roster` alike (this is the only roster reader):
- a Canvas gradebook export (columns Student, ID, SIS User ID, SIS Login ID, Section, ...): a student's id is
  their SIS Login ID, else SIS User ID, else Canvas's ID; a submission matches by any of the three (a Canvas
  download names the Canvas user id, which is `ID`). Skipped: blank rows, the "Points Possible" row (and a
  row with an empty Student, such as the muted-assignments row some exports carry), and Canvas's test
  student ("Student, Test"), who never submits and whom no gradebook import needs. The row's own Canvas
  columns are kept (Person.columns), so `export --roster` writes them back as Canvas gave them; an export
  asks for all five (`required`);
- a plain CSV with a `student` column (and optionally `name`).
Every cell is read with its surrounding spaces trimmed. A student listed twice, a row with more cells than
the header and a Canvas row with none of the three ids are errors, not guesses.

The roster is stored with the grades (Store.save_roster); reports list the students on it without a
submission as "no submission", and `grade` names ids that were submitted but are not on it.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

CANVAS_KEYS = ("SIS Login ID", "SIS User ID", "ID")
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")  # what Canvas's import reads back


class RosterError(ValueError):
    """A roster file that cannot be used; the message names the file and what was wrong."""


@dataclass(frozen=True)
class Person:
    student: str  # the id the grades use
    name: str
    keys: tuple[str, ...]  # every id a submission may carry for this person
    # A Canvas roster's row: (column, cell) for each of CANVAS_COLUMNS; empty for a plain roster and for the
    # roster as the store keeps it.
    columns: tuple[tuple[str, str], ...] = field(default=(), compare=False)


def read_roster(path: Path, required: tuple[str, ...] = ()) -> list[Person]:
    """The people of a roster file; `required`: columns it must have (export --roster: CANVAS_COLUMNS)."""
    path = Path(path)
    if not path.is_file():
        raise RosterError(f"{path}: no such roster file")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise RosterError(f"{path}: cannot read the roster ({e})") from None
    rows = list(csv.reader(text.splitlines()))
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if not rows:
        raise RosterError(f"{path}: the roster is empty (expected a Canvas gradebook export or a CSV with a "
                          "'student' column)")
    header = [h.strip() for h in rows[0]]
    missing = [c for c in required if c not in header]
    if missing:
        raise RosterError(f"{path}: the roster lacks the column(s) {', '.join(missing)} "
                          f"(it needs {', '.join(required)}, as in a Canvas gradebook export)")
    canvas = "Student" in header and any(k in header for k in CANVAS_KEYS)
    if not canvas and "student" not in header:
        raise RosterError(f"{path}: the roster has neither Canvas's columns (Student, ID, SIS User ID, SIS Login "
                          f"ID) nor a 'student' column (its header: {', '.join(header)[:200]})")
    people, seen = [], set()
    for line, row in enumerate(rows[1:], start=2):
        if len(row) > len(header):
            raise RosterError(f"{path}: line {line} has {len(row)} fields where the header has {len(header)}")
        cells = dict(zip(header, (c.strip() for c in row)))
        if canvas:
            if cells.get("Student", "") in ("Points Possible", "") or cells.get("Student", "").startswith(
                    "Student, Test"):
                continue
            keys = tuple(cells.get(k, "") for k in CANVAS_KEYS if cells.get(k, ""))
            if not keys:
                raise RosterError(f"{path}: line {line} ({cells.get('Student')}) has no SIS Login ID, SIS User "
                                  "ID or ID")
            person = Person(keys[0], cells.get("Student", ""), keys,
                            tuple((c, cells.get(c, "")) for c in CANVAS_COLUMNS))
        else:
            if not cells.get("student"):
                raise RosterError(f"{path}: line {line} has an empty student id")
            person = Person(cells["student"], cells.get("name", ""), (cells["student"],))
        if person.student in seen:
            raise RosterError(f"{path}: the student '{person.student}' is listed twice (line {line})")
        seen.add(person.student)
        people.append(person)
    if not people:
        raise RosterError(f"{path}: the roster lists no student")
    return people


def stored_people(rows) -> list[Person]:
    """The class list as the store keeps it (Store.roster()'s table)."""
    return [Person(r.student, r.name, tuple(json.loads(r.keys))) for r in rows.itertuples()]


def match(people: list[Person], student: str, aliases: tuple[str, ...] = ()) -> Person | None:
    """The person a submission's id (or one of its other ids: a Canvas user id) belongs to."""
    for person in people:
        if student in person.keys or any(a in person.keys for a in aliases):
            return person
    return None


def name_by_roster(entries: list, people: list[Person]) -> tuple[list[str], list[str]]:
    """Gives each entry (grader/intake/submission.py's Entry) the roster's id of its student. Returns the ids submitted that
    the roster lacks (graded all the same, under their own id) and the roster's students with no entry."""
    not_on_roster = []
    for e in entries:
        person = match(people, e.student, e.aliases)
        if person is None:
            not_on_roster.append(e.student)
        else:
            e.student = person.student
    return sorted(set(not_on_roster)), sorted({p.student for p in people} - {e.student for e in entries})
