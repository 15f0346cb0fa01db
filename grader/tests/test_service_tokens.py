"""`bin/grader tokens`: one token per roster student, kept only as a hash, handed out in a file only its owner can
read; staff and assignment tokens; revoking and listing (never showing a token)."""
from __future__ import annotations

import hashlib
import stat

import pandas as pd

from grader.cli import main as grader
from grader.service.tokens import digest
from grader.store.jobs import Jobs
from grader.store.store import Store


def tokens_of(results) -> dict[str, str]:
    table = pd.read_csv(results / "tokens.csv", dtype=str)
    return dict(zip(table["student"], table["token"]))


def stored(results) -> list:
    store = Store(results / "grades.sqlite")
    try:
        return Jobs(store).tokens()
    finally:
        store.close()


def test_tokens_from_the_roster_are_stored_as_hashes_and_handed_out_privately(tmp_path, capsys):
    roster = tmp_path / "roster.csv"
    roster.write_text("student,name\ns01,=HYPERLINK(\"x\")\ns02,Bo\n")
    results = tmp_path / "results"
    assert grader(["tokens", "--results", str(results), "--roster", str(roster)]) == 0
    handed = tokens_of(results)
    assert set(handed) == {"s01", "s02"} and all(t.startswith("gs_") and len(t) > 40 for t in handed.values())
    assert stat.S_IMODE((results / "tokens.csv").stat().st_mode) == 0o600
    assert "'=HYPERLINK" in (results / "tokens.csv").read_text()  # a name is not a formula in a spreadsheet
    kept = stored(results)
    assert {t.hash for t in kept} == {hashlib.sha256(t.encode()).hexdigest() for t in handed.values()}
    db = (results / "grades.sqlite").read_bytes()
    assert not any(t.encode() in db for t in handed.values())  # the tokens themselves are nowhere in the store

    # again: only students without one get a token (the roster stored is used when none is given)
    assert grader(["tokens", "--results", str(results)]) == 0
    assert "0 new student tokens" in capsys.readouterr().out
    assert grader(["tokens", "--results", str(results), "--renew"]) == 0
    renewed = tokens_of(results)
    assert set(renewed.values()).isdisjoint(handed.values())
    live = {t.hash for t in stored(results) if t.revoked is None}
    assert live == {digest(t) for t in renewed.values()}


def test_staff_and_assignment_tokens_revoking_and_listing(tmp_path, capsys):
    results = tmp_path / "results"
    roster = tmp_path / "roster.csv"
    roster.write_text("student,name\ns01,Ann\n")
    assert grader(["tokens", "--results", str(results), "--roster", str(roster)]) == 0
    assert grader(["tokens", "--results", str(results), "--staff", "ta-alice"]) == 0
    staff = capsys.readouterr().out.strip().splitlines()[-1]
    assert staff.startswith("gst_")
    assert grader(["tokens", "--results", str(results), "--assignment", "gradescope"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("gsa_")
    assert grader(["tokens", "--results", str(results), "--list"]) == 0
    listing = capsys.readouterr().out
    assert "ta-alice" in listing and "gradescope" in listing and "s01" in listing and staff not in listing
    assert grader(["tokens", "--results", str(results), "--revoke", "s01"]) == 0
    assert grader(["tokens", "--results", str(results), "--revoke", "s01"]) == 1
    assert "holds no token in force" in capsys.readouterr().err
    assert [t.revoked is not None for t in stored(results) if t.role == "student"] == [True]


def test_tokens_without_a_roster_anywhere_is_one_line(tmp_path, capsys):
    assert grader(["tokens", "--results", str(tmp_path / "results")]) == 2
    assert "give --roster FILE" in capsys.readouterr().err
