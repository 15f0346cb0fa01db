"""grades.sqlite files as older graders left them, for the tests that open them with today's Store.

The current Store can only write the current schema, so these build the old ones with sqlite3
directly: the only SQL outside grader/store.py (test_one_source.py allows this file and no other).
"""
from __future__ import annotations

import sqlite3
from pathlib import Path


def first_release_cases(path: Path) -> Path:
    """A store whose cases table predates the plausibility floor, the review flag, GPU seconds and throttling."""
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE cases (id INTEGER PRIMARY KEY, submission_id INTEGER NOT NULL, task TEXT NOT NULL,
            dtype TEXT NOT NULL, shape TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL, message TEXT NOT NULL,
            hint TEXT NOT NULL, output TEXT NOT NULL, seed INTEGER NOT NULL, record TEXT, unit TEXT NOT NULL,
            work REAL NOT NULL, speedup REAL, speedup_low REAL, speedup_high REAL, student_ms REAL, solution_ms REAL,
            pairs INTEGER, stop_reason TEXT, credit REAL);
        INSERT INTO cases VALUES (1, 1, 'dot', 'float32', '1000', 'timed', 'ok', '', '', '', 1, NULL, 'GB/s', 8000,
            1.0, 0.99, 1.01, 1.0, 1.0, 10, 'converged', 1.0);
    """)
    db.commit()
    db.close()
    return path


def before_the_gate(path: Path) -> Path:
    """A store whose submissions table has no `gate` column (one submission, 'old')."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE submissions (id INTEGER PRIMARY KEY, student TEXT NOT NULL)")
    db.execute("INSERT INTO submissions (student) VALUES ('old')")
    db.commit()
    db.close()
    return path


def without_table(source: Path, path: Path, table: str) -> Path:
    """A copy of the store at `source` as a grader before `table` existed would have left it."""
    db = sqlite3.connect(source)
    db.execute("VACUUM INTO ?", (str(path),))
    db.close()
    old = sqlite3.connect(path)
    old.execute(f"DROP TABLE {table}")
    old.commit()
    old.close()
    return path


def isolation_in_words(source: Path, path: Path, words: str) -> Path:
    """A copy of the store at `source` as a grader before the isolation record left it: no `isolation`
    column, and how code was isolated only in words (`words`, for every run)."""
    db = sqlite3.connect(source)
    db.execute("VACUUM INTO ?", (str(path),))
    db.close()
    old = sqlite3.connect(path)
    old.execute("ALTER TABLE grading_runs DROP COLUMN isolation")
    old.execute("UPDATE grading_runs SET sandbox = ?", (words,))
    old.commit()
    old.close()
    return path


def damaged_isolation(path: Path, record: str) -> Path:
    """The store at `path` with every run's isolation record overwritten by hand with `record`."""
    db = sqlite3.connect(path)
    db.execute("UPDATE grading_runs SET isolation = ?", (record,))
    db.commit()
    db.close()
    return path
