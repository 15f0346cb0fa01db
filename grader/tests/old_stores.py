"""grades.sqlite files as older graders left them, for the tests that open them with today's Store.

The current Store can only write the current schema, so these build the old ones with sqlite3 directly, with
the SQL each older grader ran (grader/store/store.py's SCHEMA and ADDED_COLUMNS at the commit named, from git
history): the only SQL outside the store's modules (test_one_source.py allows this file and no other).
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from grader.core.registry import Registry
from grader.store.migrations import MIGRATIONS

# What each grader before numbered versions ran on a new store, by the version its store has now (grader/
# store_migrations.py's steps): version N's store is version N-1's with these statements run. None of them
# recorded a version (PRAGMA user_version stayed 0).
OLD_SQL = {
    1: """  -- b38acaf, the first release
CREATE TABLE IF NOT EXISTS grading_runs (
    id INTEGER PRIMARY KEY,
    started TEXT NOT NULL,
    finished TEXT,
    seed INTEGER NOT NULL,
    harness_version TEXT NOT NULL,
    rubric_sha256 TEXT NOT NULL,
    registry TEXT NOT NULL,       -- JSON: the harness's task registry (harness --list-tasks --json)
    devices TEXT NOT NULL,        -- JSON: the harness's device description per GPU worker
    limits TEXT NOT NULL,         -- JSON: the device limits measured by the solution's harness
    sandbox TEXT NOT NULL,        -- how student code was isolated
    command TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS submissions (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES grading_runs(id),
    student TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    received TEXT NOT NULL,
    graded TEXT NOT NULL,
    harness_version TEXT NOT NULL,
    rubric_sha256 TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('graded', 'rejected', 'build_failed')),
    total REAL NOT NULL,
    max_total REAL NOT NULL,
    nickname TEXT,
    rejected TEXT,
    notes TEXT NOT NULL,          -- JSON list
    ignored TEXT NOT NULL,        -- JSON list of paths not used
    build_log TEXT NOT NULL,
    build_seconds REAL,
    seconds REAL NOT NULL,
    UNIQUE (student, sha256, harness_version, rubric_sha256)
);
CREATE TABLE IF NOT EXISTS cases (
    id INTEGER PRIMARY KEY,
    submission_id INTEGER NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
    task TEXT NOT NULL,
    dtype TEXT NOT NULL,
    shape TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('correctness', 'timed')),
    status TEXT NOT NULL,
    message TEXT NOT NULL,
    hint TEXT NOT NULL,
    output TEXT NOT NULL,         -- what a process that hung or crashed printed last
    seed INTEGER NOT NULL,
    record TEXT,                  -- JSON: the harness's case record
    unit TEXT NOT NULL,
    work REAL NOT NULL,
    speedup REAL, speedup_low REAL, speedup_high REAL,
    student_ms REAL, solution_ms REAL,
    pairs INTEGER, stop_reason TEXT, credit REAL
);
CREATE TABLE IF NOT EXISTS samples (
    case_id INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
    pair INTEGER NOT NULL,
    student_ms REAL NOT NULL,
    solution_ms REAL NOT NULL,
    student_sm_mhz INTEGER,
    solution_sm_mhz INTEGER,
    throttled INTEGER NOT NULL,
    PRIMARY KEY (case_id, pair)
);
CREATE TABLE IF NOT EXISTS scores (
    submission_id INTEGER NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
    task TEXT NOT NULL,
    correctness REAL NOT NULL, correctness_max REAL NOT NULL,
    performance REAL NOT NULL, performance_max REAL NOT NULL,
    cases_passed INTEGER NOT NULL, cases_total INTEGER NOT NULL,
    note TEXT NOT NULL,
    PRIMARY KEY (submission_id, task)
);""",
    2: """  -- dae0515 (merged f597258): ADDED_COLUMNS' first four
ALTER TABLE cases ADD COLUMN floor_ms REAL;
ALTER TABLE cases ADD COLUMN flag TEXT NOT NULL DEFAULT '';
ALTER TABLE cases ADD COLUMN seconds REAL;
ALTER TABLE cases ADD COLUMN throttled_pairs INTEGER;""",
    3: """  -- a877434 (merged 175c14e)
CREATE TABLE IF NOT EXISTS sanitizer_runs (
    submission_id INTEGER NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
    task TEXT NOT NULL,
    tool TEXT NOT NULL,           -- memcheck, racecheck
    dtype TEXT NOT NULL,
    shape TEXT NOT NULL,
    status TEXT NOT NULL,         -- clean, errors, timeout, failed, skipped, unavailable
    errors INTEGER NOT NULL,
    report TEXT NOT NULL,         -- the tool's first findings
    message TEXT NOT NULL,        -- why there is no verdict
    seconds REAL NOT NULL,
    PRIMARY KEY (submission_id, task, tool)
);""",
    4: "ALTER TABLE submissions ADD COLUMN gate TEXT NOT NULL DEFAULT '[]';  -- 7a554c5 (merged c179d3a)",
    5: "ALTER TABLE grading_runs ADD COLUMN isolation TEXT;  -- 844d707",
    6: "ALTER TABLE submissions ADD COLUMN build_reason TEXT NOT NULL DEFAULT '';  -- 3134b1a",
    7: """  -- cb4a896, the grading week
CREATE TABLE IF NOT EXISTS roster (
    student TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    keys TEXT NOT NULL            -- JSON list: every id a submission may carry for this student
);
CREATE TABLE IF NOT EXISTS overrides (
    id INTEGER PRIMARY KEY,
    student TEXT NOT NULL,
    task TEXT NOT NULL,
    points REAL NOT NULL,
    reason TEXT NOT NULL,
    author TEXT NOT NULL,
    made TEXT NOT NULL,
    submission_sha256 TEXT NOT NULL, -- what was graded when it was made
    undone TEXT,                  -- when it was undone (NULL: in force)
    undone_by TEXT
);
ALTER TABLE submissions ADD COLUMN raw_total REAL;
ALTER TABLE submissions ADD COLUMN late_percent REAL NOT NULL DEFAULT 0;
ALTER TABLE submissions ADD COLUMN penalty REAL NOT NULL DEFAULT 0;
ALTER TABLE submissions ADD COLUMN late TEXT NOT NULL DEFAULT '';
ALTER TABLE scores ADD COLUMN override REAL;
ALTER TABLE scores ADD COLUMN override_note TEXT NOT NULL DEFAULT '';""",
    8: """  -- 9d2ffa0 (merged 4e8c504)
CREATE TABLE IF NOT EXISTS merged (
    origin TEXT PRIMARY KEY,      -- batch/shard/run/ID or batch/shard/submission/ID in the shard's store
    kind TEXT NOT NULL CHECK (kind IN ('run', 'submission')),
    local_id INTEGER NOT NULL,    -- its id in this store
    merged TEXT NOT NULL
);""",
    9: "ALTER TABLE submissions ADD COLUMN received_from TEXT NOT NULL DEFAULT '';  -- 60f46a8",
    10: "ALTER TABLE sanitizer_runs ADD COLUMN checker TEXT NOT NULL DEFAULT 'compute-sanitizer';  -- 1b84ae7",
}
UNVERSIONED = max(OLD_SQL)  # the last version written without a version number

REGISTRY = json.dumps(Registry.from_file().raw)  # the harness's, as checked in (the reports read it)
OLD_WORDS = "bubblewrap 0.8.0 (/usr/bin/bwrap): no network, read-only system, writable scratch only"
# One of everything an older grader stored: each row as the newest of those graders wrote it; an older one
# wrote the columns its tables had (`_insert` leaves out the others). Run 2 graded on the CPU backend.
OLD_ROWS = [
    ("grading_runs", {"id": 1, "started": "2026-11-21T10:00:00+00:00", "finished": "2026-11-21T10:05:00+00:00",
                      "seed": 7, "harness_version": "old-1", "rubric_sha256": "r" * 64, "registry": REGISTRY,
                      "devices": '[{"gpu": "0", "name": "Old GPU"}]', "limits": '{"dram_gbs": 900.0}',
                      "sandbox": OLD_WORDS, "command": "python3 -m grader grade subs",
                      "isolation": '{"kind": "bubblewrap", "version": "0.8.0"}'}),
    ("submissions", {"id": 1, "run_id": 1, "student": "ann", "sha256": "a" * 64,
                     "received": "2026-11-20T09:00:00+00:00", "graded": "2026-11-21T10:01:00+00:00", "harness_version": "old-1", "rubric_sha256": "r" * 64,
                     "status": "graded", "total": 7.5, "max_total": 10.0, "nickname": "annie", "rejected": None,
                     "notes": '["a note"]', "ignored": "[]", "build_log": "built", "build_seconds": 1.5,
                     "seconds": 9.0, "gate": "[]", "build_reason": "", "raw_total": 7.5, "late_percent": 0.0,
                     "penalty": 0.0, "late": "on time", "received_from": "file"}),
    ("cases", {"id": 1, "submission_id": 1, "task": "dot", "dtype": "float32", "shape": "1000", "kind": "timed",
               "status": "ok", "message": "", "hint": "", "output": "", "seed": 1, "record": None, "unit": "GB/s",
               "work": 8000.0, "speedup": 1.0, "speedup_low": 0.99, "speedup_high": 1.01, "student_ms": 1.0,
               "solution_ms": 1.0, "pairs": 10, "stop_reason": "converged", "credit": 1.0, "floor_ms": 0.25,
               "flag": "review", "seconds": 2.0, "throttled_pairs": 0}),
    ("samples", {"case_id": 1, "pair": 0, "student_ms": 1.0, "solution_ms": 1.0, "student_sm_mhz": 1400,
                 "solution_sm_mhz": 1400, "throttled": 0}),
    ("scores", {"submission_id": 1, "task": "dot", "correctness": 5.0, "correctness_max": 5.0, "performance": 2.5,
                "performance_max": 5.0, "cases_passed": 1, "cases_total": 1, "note": "", "override": None,
                "override_note": ""}),
    ("sanitizer_runs", {"submission_id": 1, "task": "dot", "tool": "memcheck", "dtype": "float32", "shape": "1000",
                        "status": "clean", "errors": 0, "report": "", "message": "", "seconds": 0.5,
                        "checker": "compute-sanitizer"}),
    ("roster", {"student": "ann", "name": "Ann Archer", "keys": '["ann", "12345"]'}),
    ("overrides", {"id": 1, "student": "ann", "task": "dot", "points": 9.0, "reason": "regraded by hand",
                   "author": "ta", "made": "2026-11-22T10:00:00+00:00", "submission_sha256": "a" * 64,
                   "undone": "2026-11-22T11:00:00+00:00", "undone_by": "ta"}),
    ("merged", {"origin": "b1/0/run/1", "kind": "run", "local_id": 1, "merged": "2026-11-23T10:00:00+00:00"}),
]
CPU_RUN = {**OLD_ROWS[0][1], "id": 2, "devices": '[{"gpu": "cpu", "backend": "cpu", "host": "lab-pc"}]'}


def _insert(db: sqlite3.Connection, table: str, row: dict):
    have = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
    if not have:
        return  # a table this version did not have yet
    row = {k: v for k, v in row.items() if k in have}
    db.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))


def store_of_version(path: Path, version: int, stamped: bool = False) -> Path:
    """A store as the grader whose schema is `version` (1 .. UNVERSIONED) left it, holding OLD_ROWS (and, from
    version 10 on, when the CPU backend had come, a run on it, CPU_RUN). `stamped`: with its version recorded in
    user_version, as a grader with numbered steps would have left it at that version."""
    db = sqlite3.connect(path)
    for step in range(1, version + 1):
        db.executescript(OLD_SQL[step])
    for table, row in OLD_ROWS + ([("grading_runs", CPU_RUN)] if version >= 10 else []):
        _insert(db, table, row)
    if stamped:
        db.execute(f"PRAGMA user_version = {version}")
    db.commit()
    db.close()
    return path


def first_release_cases(path: Path) -> Path:
    """A store of the first release: its cases table predates the plausibility floor, the review flag, GPU
    seconds and throttling (one case, dot's, speedup 1.0)."""
    return store_of_version(path, 1)


def before_the_gate(path: Path) -> Path:
    """A store whose submissions table has no `gate` column (one submission, 'old')."""
    store_of_version(path, 3)
    db = sqlite3.connect(path)
    db.execute("UPDATE submissions SET student = 'old'")
    db.commit()
    db.close()
    return path


def stamp(path: Path, version: int) -> Path:
    """The store at `path` marked with `version` (a grader from the future's, say), nothing else changed."""
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {version}")
    db.commit()
    db.close()
    return path


def foreign_database(path: Path) -> Path:
    """An SQLite file of some other program: tables, none of them a grades store's."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
    db.execute("INSERT INTO notes (text) VALUES ('not grades')")
    db.commit()
    db.close()
    return path


def contents(path: Path) -> tuple[int, list[str]]:
    """Everything in the store at `path`: its version and its SQL dump (schema and rows)."""
    db = sqlite3.connect(path)
    try:
        return db.execute("PRAGMA user_version").fetchone()[0], list(db.iterdump())
    finally:
        db.close()


def table_shapes(path: Path) -> dict[str, list[tuple]]:
    """Each table's columns as SQLite describes them (name, type, not null, default, key), in order."""
    db = sqlite3.connect(path)
    try:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"
                                                 " AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        return {t: [tuple(r[1:]) for r in db.execute(f"PRAGMA table_info({t})")] for t in tables}
    finally:
        db.close()


def as_of_version(source: Path, path: Path, version: int) -> sqlite3.Connection:
    """A copy of the store at `source` with what came after `version` taken out (those tables and columns, and
    the version number, which no grader of that time recorded): open, for the caller to change and commit."""
    db = sqlite3.connect(source)
    db.execute("VACUUM INTO ?", (str(path),))
    db.close()
    old = sqlite3.connect(path)
    for step in reversed(MIGRATIONS[version:]):  # newest first: a column goes before its table
        for table, column, _ in step.columns:
            old.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        for table, _ in step.tables:
            old.execute(f"DROP TABLE {table}")
    old.execute("PRAGMA user_version = 0")
    return old


def without_table(source: Path, path: Path, table: str) -> Path:
    """A copy of the store at `source` as a grader before `table` existed would have left it."""
    [version] = [step.version for step in MIGRATIONS if table in dict(step.tables)]
    old = as_of_version(source, path, version - 1)
    old.commit()
    old.close()
    return path


def isolation_in_words(source: Path, path: Path, words: str) -> Path:
    """A copy of the store at `source` as a grader before the isolation record left it: no `isolation`
    column, and how code was isolated only in words (`words`, for every run)."""
    [version] = [step.version for step in MIGRATIONS if ("grading_runs", "isolation") in
                 [(table, column) for table, column, _ in step.columns]]
    old = as_of_version(source, path, version - 1)
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
