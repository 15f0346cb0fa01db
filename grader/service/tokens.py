"""Who may talk to the service: tokens made from the roster, kept only as their sha256, revocable.

A token is 32 random bytes (URL-safe base64) behind a prefix that says what it is (`gs_`, student; `gst_`,
staff; `gsa_`, the assignment's, for the Gradescope bridge): long enough that a plain sha256 is a safe way to
keep it, as for any API token. The service never stores or logs a token itself.
"""
from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta, timezone
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from grader.core.errors import GraderError
from grader.reports.spreadsheet import write_csv
from grader.store.jobs import Jobs, Token

PREFIX = {"student": "gs_", "staff": "gst_", "assignment": "gsa_"}


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def new_token(role: str) -> str:
    return PREFIX[role] + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Issued:
    student: str
    name: str
    token: str


def issue_students(jobs: Jobs, people, renew: bool = False) -> list[Issued]:
    """A token for every student of the roster who has none in force (with `renew`: everyone, their old ones
    revoked). Returns what to hand out; only the hashes are stored."""
    have = jobs.students_with_tokens()
    issued = []
    for person in people:
        if person.student in have and not renew:
            continue
        if renew:
            jobs.revoke(student=person.student)
        issued.append(Issued(person.student, person.name, new_token("student")))
    jobs.add_tokens([(digest(i.token), "student", i.student, "") for i in issued])
    return issued


def issue_one(jobs: Jobs, role: str, name: str) -> str:
    if role not in ("staff", "assignment"):
        raise GraderError(f"a token is for a student (from the roster), staff or the assignment, not {role!r}")
    token = new_token(role)
    jobs.add_tokens([(digest(token), role, "", name)])
    return token


def write_hand_out(issued: list[Issued], out: Path) -> Path:
    """The file to hand out through the course system: one row per student (CSV: id, name, token, and the
    command that stores it on their machine). Written readable by its owner only."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.touch(mode=0o600, exist_ok=True)
    out.chmod(0o600)  # before a token is in it
    table = pd.DataFrame([(i.student, i.name, i.token, f"make login TOKEN={i.token}") for i in issued],
                         columns=["student", "name", "token", "command"])
    return write_csv(table, out)


def who(jobs: Jobs, token: str | None) -> Token | None:
    """The stored token behind a presented one (revoked ones included: the caller says why it is refused)."""
    if not token:
        return None
    return jobs.token(digest(token))


CODE_MINUTES = 10


def new_login_code(jobs: Jobs, student: str) -> str:
    """A code for `make login CODE=...`: one use, within CODE_MINUTES; only its hash is kept."""
    code = secrets.token_urlsafe(12)
    jobs.add_login_code(digest(code), student, datetime.now(timezone.utc) + timedelta(minutes=CODE_MINUTES))
    return code


def trade_login_code(jobs: Jobs, code: str) -> tuple[str, str] | None:
    """(student, a new token of theirs) for a code made on the pages, once; None for one unknown, expired or used."""
    student = jobs.take_login_code(digest(code.strip())) if code else None
    if student is None:
        return None
    token = new_token("student")
    jobs.add_tokens([(digest(token), "student", student, "make login CODE (from the pages)")])
    return student, token
