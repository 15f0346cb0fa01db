"""The course system's own submission times (`grade --lms-times FILE`), for a delivery that records none.

Canvas's bulk download names each file `login[_LATE]_userid_submissionid_name` and carries no time; what
Canvas recorded is in its submissions. FILE is one of:

- Canvas's submissions as its Submissions API lists them
  (GET /api/v1/courses/:course_id/assignments/:assignment_id/submissions), as the JSON it returns or a CSV of
  its fields (Canvas Data 2's submissions table has the same names): `user_id` (Canvas's user id, the one in
  the download's file names) and `submitted_at`, optionally `assignment_id`;
- Canvas's New Analytics late-assignments report (CSV): `Student ID` (Canvas's user id) and `Submitted Date`,
  optionally `Assignment ID` or `Assignment Name`. It lists late submissions only: a student it lacks falls
  back to Canvas's LATE mark (grader/core/received.py);
- any CSV with `student` (the id the grades use: a Canvas login or the roster's id, or a plain entry's name)
  and `submitted_at`, such as a TA's row for one student read off SpeedGrader.

Times carry their UTC offset (2026-11-21T05:00:01Z, 2026-11-20 23:59:59 -05:00); a time without one is
refused rather than guessed. A file holding more than one assignment is refused (keep this assignment's
rows). A row with no time (nothing submitted) is ignored; a student listed more than once gets the latest
time (the download holds their latest attempt).
"""
from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

KEY_COLUMNS = ("student", "user_id", "Student ID")
TIME_COLUMNS = ("submitted_at", "Submitted Date")
ASSIGNMENT_COLUMNS = ("assignment_id", "Assignment ID", "Assignment Name")


class TimesError(ValueError):
    """A submission-times file that cannot be used; the message names the file and what was wrong."""


def utc_time(value, where: str, name: str = "time") -> str:
    """A time as UTC ISO 8601 ('2026-11-20 23:59:59.123 -0800', '2026-11-21T07:59:59Z', or a datetime, whose
    missing zone is UTC, as YAML gives it); `where` and `name` say where it was, for the error."""
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    else:
        text = "" if value is None else str(value).strip()
        text = re.sub(r"(\.\d+)", "", text)  # Gradescope writes nanoseconds
        text = re.sub(r"\s*([+-]\d\d):?(\d\d)$", r"\1\2", text)
        text = re.sub(r"\s*(Z|UTC)$", "+0000", text)
        for form in ("%Y-%m-%d %H:%M:%S%z", "%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%d %H:%M%z", "%Y-%m-%dT%H:%M%z"):
            try:
                moment = datetime.strptime(text, form)
                break
            except ValueError:
                continue
        else:
            raise ValueError(f"{where}: {name} '{value}' is not a time with its UTC offset (such as "
                             "2026-11-20T23:59:59-05:00 or 2026-11-21T04:59:59Z)")
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")


@dataclass
class SubmissionTimes:
    """Each student's submission time from FILE, by every id the file gives them."""
    path: Path
    times: dict[str, str] = field(default_factory=dict)  # id -> UTC ISO 8601

    def time_of(self, ids) -> str | None:
        """The latest time the file gives any of these ids (a student's id, their Canvas user id), or None."""
        found = [self.times[i] for i in ids if i in self.times]
        return max(found) if found else None


def _rows(path: Path) -> list[dict]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise TimesError(f"{path}: cannot read the submission times ({e})") from None
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise TimesError(f"{path}: not readable as JSON ({e})") from None
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise TimesError(f"{path}: expected a list of submissions, as Canvas's Submissions API returns")
        return [{k: "" if v is None else str(v) for k, v in r.items()} for r in data]
    rows = list(csv.reader(text.splitlines()))
    if not rows:
        raise TimesError(f"{path}: the submission times file is empty")
    header = [h.strip() for h in rows[0]]
    out = []
    for line, row in enumerate(rows[1:], start=2):
        if len(row) > len(header):
            raise TimesError(f"{path}: line {line} has {len(row)} fields where the header has {len(header)}")
        out.append({"#line": str(line), **dict(zip(header, (c.strip() for c in row)))})
    if not out:
        raise TimesError(f"{path}: lists no submission (only a header: {', '.join(header)[:160]})")
    return out


def read_times(path: Path) -> SubmissionTimes:
    """FILE's submission times (the module's doc says which files and columns)."""
    path = Path(path)
    if not path.is_file():
        raise TimesError(f"{path}: no such submission times file")
    rows = _rows(path)
    columns = set().union(*(r.keys() for r in rows))
    keys = [c for c in KEY_COLUMNS if c in columns]
    time = next((c for c in TIME_COLUMNS if c in columns), None)
    if not keys or time is None:
        raise TimesError(f"{path}: no submission times in it: expected the columns user_id and submitted_at "
                         "(Canvas's submissions), Student ID and Submitted Date (Canvas's late-assignments report) "
                         f"or student and submitted_at (it has: {', '.join(sorted(columns - {'#line'}))[:160]})")
    for column in ASSIGNMENT_COLUMNS:
        seen = sorted({r.get(column, "") for r in rows} - {""})
        if len(seen) > 1:
            raise TimesError(f"{path}: holds the times of {len(seen)} assignments ({column}: "
                             f"{', '.join(seen[:3])}{', ...' if len(seen) > 3 else ''}): keep this assignment's "
                             "rows only")
    found = SubmissionTimes(path)
    for n, row in enumerate(rows, start=1):
        if not row.get(time, "").strip():
            continue  # nothing submitted
        where = f"{path}: line {row['#line']}" if "#line" in row else f"{path}: submission {n}"
        try:
            when = utc_time(row[time], where, time)
        except ValueError as e:
            raise TimesError(str(e)) from None
        ids = [row[k].strip() for k in keys if row.get(k, "").strip()]
        if not ids:
            raise TimesError(f"{where}: a time ({row[time]}) with no {' or '.join(keys)}")
        for i in ids:
            found.times[i] = max(found.times.get(i, when), when)
    return found
