"""The class list (`grade --roster FILE`): everyone on it gets a row, with or without a submission.

Two forms are read:
- a Canvas gradebook export (columns Student, ID, SIS User ID, SIS Login ID, Section, ...; its "Points
  Possible" row skipped): a student's id is their SIS Login ID, else SIS User ID, else Canvas's ID; a
  submission matches by any of the three (a Canvas download names the Canvas user id, which is `ID`);
- a plain CSV with a `student` column (and optionally `name`).

The roster is stored with the grades (Store.save_roster); reports list the students on it without a
submission as "no submission", and `grade` names ids that were submitted but are not on it.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

CANVAS_KEYS = ("SIS Login ID", "SIS User ID", "ID")


class RosterError(ValueError):
    """A roster file that cannot be used; the message names the file and what was wrong."""


@dataclass(frozen=True)
class Person:
    student: str  # the id the grades use
    name: str
    keys: tuple[str, ...]  # every id a submission may carry for this person


def read_roster(path: Path) -> list[Person]:
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
            person = Person(keys[0], cells.get("Student", ""), keys)
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
    """Gives each entry (grader/intake.py's Entry) the roster's id of its student. Returns the ids submitted that
    the roster lacks (graded all the same, under their own id) and the roster's students with no entry."""
    not_on_roster = []
    for e in entries:
        person = match(people, e.student, e.aliases)
        if person is None:
            not_on_roster.append(e.student)
        else:
            e.student = person.student
    return sorted(set(not_on_roster)), sorted({p.student for p in people} - {e.student for e in entries})
