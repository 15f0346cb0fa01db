"""The late policy (rubric.toml's [late]): a step of its own after scoring, stored with the submission.

    [late]
    due = "2026-11-20T23:59:59"     # local time in `timezone`
    timezone = "America/New_York"
    penalty = 10                     # percent of the raw score per `per` started late
    per = "day"                      # or "hour"
    cap = 50                         # at most this percent in all
    late_days = 2                    # free days late per student, spent before any penalty (optional, 0)
    extensions = "extensions.csv"    # optional, next to the rubric: student,due[,late_days]

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

UNITS = {"hour": 3600, "day": 86400}


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
    known = {"due", "timezone", "penalty", "per", "cap", "late_days", "extensions"}
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
                      float(numbers["cap"]), int(numbers["late_days"]), extensions_file, extensions)


def _span(seconds: float) -> str:
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{days} d" if days else "", f"{hours} h" if hours else "", f"{minutes} min" if minutes else "",
             f"{secs} s" if secs and not days else ""]
    return " ".join(p for p in parts if p) or "0 s"


def lateness(policy: LatePolicy | None, student: str, received: str) -> Lateness:
    """The share of the score a submission `received` (ISO 8601) by `student` loses, and why."""
    if policy is None:
        return ON_TIME
    ext = policy.extensions.get(student)
    due = ext.due if ext and ext.due else policy.due
    budget = ext.late_days if ext and ext.late_days is not None else policy.late_days
    zone = ZoneInfo(policy.zone)
    shown_due = due.astimezone(zone).strftime("%Y-%m-%d %H:%M:%S %Z") + (" (extension)" if ext and ext.due else "")
    moment = datetime.fromisoformat(received)
    moment = moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    late = (moment - due).total_seconds()
    if late <= 0:
        return Lateness(0.0, f"on time: received {moment.astimezone(zone):%Y-%m-%d %H:%M:%S %Z}, due "
                                  f"{shown_due}")
    days_late = math.ceil(late / 86400)
    used = min(days_late, budget)
    left = late - used * 86400
    what = [f"received {_span(late)} after the due date {shown_due}"]
    if budget:
        what.append(f"{used} of {budget} late day{'s' if budget != 1 else ''} used")
    if left <= 0:
        return Lateness(0.0, "; ".join(what) + ": no penalty")
    units = math.ceil(left / UNITS[policy.per])
    percent = min(policy.cap, policy.penalty * units)
    capped = " (the cap)" if percent == policy.cap and policy.penalty * units > policy.cap else ""
    what.append(f"{'then ' if budget else ''}{units} started {policy.per}{'s' if units != 1 else ''} late")
    return Lateness(percent, "; ".join(what) + f": -{percent:g}%{capped} of the score")
