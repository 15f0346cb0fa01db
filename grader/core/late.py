"""The late policy (rubric.toml's [late]): a step of its own after scoring, stored with the submission.

    [late]
    due = "2026-11-20T23:59:59"     # local time in `timezone`
    timezone = "America/New_York"
    penalty = 10                     # percent of the raw score per `per` started late
    per = "day"                      # or "hour"
    cap = 50                         # at most this percent in all
    late_days = 2                    # free days late per student, spent before any penalty (optional, 0)
    extensions = "extensions.csv"    # optional, next to the rubric: student,due[,late_days]
    marked_late = "one period"       # or "review": a submission Canvas marked LATE, its time unknown

The time received is what the course system recorded (grader/core/received.py), never a time from inside a
student's archive. A Canvas download without Canvas's times (`grade --lms-times`) has none: an entry Canvas
did not mark LATE is on time, and one it marked LATE is "late, time unknown", listed for a TA (review.csv,
the staff's overview) and, by `marked_late`, either counted as late by one started `per` (the default: one
late day spent, else one period's penalty) or left without a penalty for the TA to decide.

A submission received at the due time to the second is on time; one second later it is one started day
(or hour) late. Late days are whole days, spent first: 26 hours late with 2 late days costs 2 days and
nothing else; 50 hours late with 2 costs 2 days and 2 started hours (per hour) or 1 started day (per day)
of penalty. The extensions file gives a student a new due date (in `timezone` unless it names an offset)
and may set their remaining late days (an empty cell keeps the rubric's). The stored submission keeps the
raw score, the penalty and the final score.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from grader.core.received import CANVAS_LATE, CANVAS_UNMARKED

UNITS = {"hour": 3600, "day": 86400}
ONE_PERIOD, REVIEW = "one period", "review"  # marked_late: what a LATE mark without a time costs


class LateError(ValueError):
    """A late policy or extensions file that cannot be used; the message names the file and the entry."""


@dataclass(frozen=True)
class Extension:
    due: datetime | None
    late_days: int | None


@dataclass(frozen=True)
class LatePolicy:
    due: datetime  # aware
    zone: str
    penalty: float  # percent per unit
    per: str
    cap: float  # percent
    late_days: int = 0
    extensions_file: Path | None = None
    extensions: dict[str, Extension] = field(default_factory=dict)
    marked_late: str = ONE_PERIOD


@dataclass(frozen=True)
class Lateness:
    percent: float  # of the raw score taken off
    note: str  # "" without a late policy

    def penalty(self, raw: float) -> float:
        return round(raw * self.percent / 100, 6)


ON_TIME = Lateness(0.0, "")


def _parse_time(text: str, zone: ZoneInfo, where: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise LateError(f"{where}: '{text}' is not a date and time (write 2026-11-20T23:59:59)") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=zone)


def read_extensions(path: Path, zone: ZoneInfo) -> dict[str, Extension]:
    """The extensions CSV: a header `student,due` (and optionally `late_days`), one row per student."""
    path = Path(path)
    if not path.is_file():
        raise LateError(f"{path}: no such extensions file")
    try:
        rows = [r for r in csv.reader(path.read_text(encoding="utf-8-sig").splitlines()) if any(c.strip() for c in r)]
    except (OSError, UnicodeDecodeError) as e:
        raise LateError(f"{path}: cannot read the extensions file ({e})") from None
    if not rows:
        raise LateError(f"{path}: the extensions file is empty (expected a header 'student,due' and a row per "
                        "student)")
    header = [h.strip() for h in rows[0]]
    if "student" not in header or "due" not in header or set(header) - {"student", "due", "late_days"}:
        raise LateError(f"{path}: the header must be 'student,due' (and optionally 'late_days'), not "
                        f"'{','.join(header)[:120]}'")
    found = {}
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise LateError(f"{path}: line {line} has {len(row)} fields where the header has {len(header)}")
        cells = dict(zip(header, (c.strip() for c in row)))
        where = f"{path}: line {line}"
        if not cells["student"]:
            raise LateError(f"{where}: empty student id")
        if cells["student"] in found:
            raise LateError(f"{where}: '{cells['student']}' has an extension already")
        days = cells.get("late_days", "")
        if days and not days.isdigit():
            raise LateError(f"{where}: late_days '{days}' is not a whole number of days")
        found[cells["student"]] = Extension(_parse_time(cells["due"], zone, where) if cells["due"] else None,
                                            int(days) if days else None)
    return found


def parse_late(section, rubric_path: Path, fail) -> LatePolicy | None:
    """The rubric's [late] table as a LatePolicy (None without one); `fail(where, why)` raises."""
    if section is None:
        return None
    where = "[late]"
    if not isinstance(section, dict):
        fail(where, "must be a table")
    known = {"due", "timezone", "penalty", "per", "cap", "late_days", "extensions", "marked_late"}
    for key in section.keys() - known:
        fail(where, f"unknown key '{key}' (expected {', '.join(sorted(known))})")
    for key in ("due", "timezone", "penalty", "per"):
        if key not in section:
            fail(where, f"'{key}' is missing")
    try:
        zone = ZoneInfo(str(section["timezone"]))
    except (ZoneInfoNotFoundError, ValueError):
        fail(where, f"'timezone' {section['timezone']!r} is not a time zone (e.g. 'America/New_York', 'UTC')")
    due = section["due"]
    if isinstance(due, datetime):
        due = due if due.tzinfo else due.replace(tzinfo=zone)
    elif isinstance(due, str):
        try:
            due = _parse_time(due, zone, where)
        except LateError as e:
            fail(where, f"'due': {e}".replace(f"{where}: ", ""))
    else:
        fail(where, "'due' must be a date and time, such as \"2026-11-20T23:59:59\"")
    if section["per"] not in UNITS:
        fail(where, f"'per' must be 'hour' or 'day', not {section['per']!r}")
    marked_late = section.get("marked_late", ONE_PERIOD)
    if marked_late not in (ONE_PERIOD, REVIEW):
        fail(where, f"'marked_late' must be '{ONE_PERIOD}' or '{REVIEW}', not {marked_late!r}")
    numbers = {}
    for key, default in (("penalty", None), ("cap", 100), ("late_days", 0)):
        value = section.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            fail(where, f"'{key}' must be a number, 0 or more")
        numbers[key] = value
    if numbers["cap"] > 100:
        fail(where, f"'cap' is a percent of the score: at most 100, not {numbers['cap']}")
    if int(numbers["late_days"]) != numbers["late_days"]:
        fail(where, "'late_days' must be a whole number of days")
    extensions_file, extensions = None, {}
    if "extensions" in section:
        extensions_file = (Path(rubric_path).parent / str(section["extensions"])).resolve()
        try:
            extensions = read_extensions(extensions_file, zone)
        except LateError as e:
            fail(where, f"extensions: {e}")
    return LatePolicy(due, str(section["timezone"]), float(numbers["penalty"]), section["per"],
                      float(numbers["cap"]), int(numbers["late_days"]), extensions_file, extensions, marked_late)


def _span(seconds: float) -> str:
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{days} d" if days else "", f"{hours} h" if hours else "", f"{minutes} min" if minutes else "",
             f"{secs} s" if secs and not days else ""]
    return " ".join(p for p in parts if p) or "0 s"


def _charged(policy: LatePolicy, budget: int, late: float) -> tuple[float, list[str], str]:
    """What `late` seconds past the due date cost with `budget` late days: the percent, the words of the late
    days and periods counted, and the words of the penalty."""
    days_late = math.ceil(late / 86400)
    used = min(days_late, budget)
    left = late - used * 86400
    what = [f"{used} of {budget} late day{'s' if budget != 1 else ''} used"] if budget else []
    if left <= 0:
        return 0.0, what, ": no penalty"
    units = math.ceil(left / UNITS[policy.per])
    percent = min(policy.cap, policy.penalty * units)
    capped = " (the cap)" if percent == policy.cap and policy.penalty * units > policy.cap else ""
    what.append(f"{'then ' if budget else ''}{units} started {policy.per}{'s' if units != 1 else ''} late")
    return percent, what, f": -{percent:g}%{capped} of the score"


def lateness(policy: LatePolicy | None, student: str, received: str, received_from: str = "") -> Lateness:
    """The share of the score a submission `received` (ISO 8601) by `student` loses, and why. `received_from`
    (grader/core/received.py): with no time known, Canvas's LATE mark decides (the rubric's `marked_late`)."""
    if policy is None:
        return ON_TIME
    ext = policy.extensions.get(student)
    due = ext.due if ext and ext.due else policy.due
    budget = ext.late_days if ext and ext.late_days is not None else policy.late_days
    zone = ZoneInfo(policy.zone)
    shown_due = due.astimezone(zone).strftime("%Y-%m-%d %H:%M:%S %Z") + (" (extension)" if ext and ext.due else "")
    if received_from == CANVAS_UNMARKED:
        return Lateness(0.0, f"on time: Canvas did not mark it LATE (its download records no submission time; due "
                             f"{shown_due})")
    if received_from == CANVAS_LATE:
        head = (f"late, time unknown: Canvas marked it LATE and its download records no submission time (due "
                f"{shown_due}); listed for a TA")
        if policy.marked_late == REVIEW:
            return Lateness(0.0, f"{head}; no penalty taken until a TA decides (marked_late = \"{REVIEW}\")")
        percent, what, cost = _charged(policy, budget, 1.0)  # late by one second: a late day, or one period
        counted = ["counted as one day late", *what] if budget else [f"counted as {what[0]}"]
        return Lateness(percent, "; ".join([head, *counted]) + cost)
    moment = datetime.fromisoformat(received)
    moment = moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    late = (moment - due).total_seconds()
    if late <= 0:
        return Lateness(0.0, f"on time: received {moment.astimezone(zone):%Y-%m-%d %H:%M:%S %Z}, due "
                             f"{shown_due}")
    percent, what, cost = _charged(policy, budget, late)
    return Lateness(percent, "; ".join([f"received {_span(late)} after the due date {shown_due}", *what]) + cost)
