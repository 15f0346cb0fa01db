"""Every CSV a person opens is written here, with each text cell a spreadsheet would run made plain text.

Excel, LibreOffice and Google Sheets run a cell that starts with = + - or @ as a formula when they open a
CSV, and a leading tab or carriage return can hide one from a reader's eye: a nickname
`=HYPERLINK("http://x.y", "grades")` becomes a live link in a TA's gradebook, and `=cmd|' /C calc'!A0`
has started programs through DDE. A text cell whose first character is a tab or a carriage return, or
whose first character past any spaces is one of = + - @ (full-width and small forms such as ＝ and ﹢
count as the ASCII ones: NFKC), gets a leading apostrophe, OWASP's rule: the cell then shows as text.

Numbers stay numbers: a score or a negative penalty the grader computed is written as a number, which no
spreadsheet runs, and Canvas's import reads the points as numbers. Text that looks like a number (a
nickname "-2+3" or "-5") is text, and gets the apostrophe. Headers are cells too.

This module imports nothing of the grader's, so every writer can use it (report, exports, similarity,
the leaderboard). grader/tests/test_spreadsheet.py writes every CSV the grader makes from one store of
hostile ids and nicknames and checks every cell, and fails when code outside this module writes a CSV.
"""
from __future__ import annotations

import numbers
import unicodedata
from pathlib import Path

import pandas as pd

FORMULA_STARTS = frozenset("=+-@")
HIDDEN_STARTS = ("\t", "\r")


def runs_as_formula(text: str) -> bool:
    """Whether a spreadsheet could take this text cell for a formula."""
    if text.startswith(HIDDEN_STARTS):
        return True
    first = text.lstrip()[:1]
    return bool(first) and unicodedata.normalize("NFKC", first)[:1] in FORMULA_STARTS


def cell(value):
    """A value as it may stand in a CSV cell: numbers and empty cells as they are, text made safe."""
    if value is None or isinstance(value, (numbers.Number, pd.Timestamp)) or value is pd.NaT or value is pd.NA:
        return value
    text = value if isinstance(value, str) else str(value)
    return "'" + text if runs_as_formula(text) else text


def guarded(table: pd.DataFrame) -> pd.DataFrame:
    """A copy of `table` whose every text cell and header is safe to open in a spreadsheet; numeric columns
    are left as they are (a column of numbers holds nothing to run)."""
    out = table.copy()
    for column in out.columns:
        if not pd.api.types.is_numeric_dtype(out[column]):
            out[column] = out[column].map(cell)
    out.columns = [cell(c) for c in out.columns]
    return out


def csv_text(table: pd.DataFrame) -> str:
    """The table as CSV text, guarded (for a writer that returns its file's content: exports)."""
    return guarded(table).to_csv(index=False)


def write_csv(table: pd.DataFrame, path: Path) -> Path:
    """Writes the table to `path` as CSV, guarded; returns the path."""
    guarded(table).to_csv(path, index=False)
    return Path(path)
