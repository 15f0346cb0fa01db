"""results/grades.sqlite: every grading run, submission, case, timing sample and score.

Each submission's results are written in one transaction, so a grader killed
at any moment leaves either all of a submission or none of it. A submission
already graded with the same (student, sha256, harness version, rubric hash)
is skipped on the next run unless --regrade.
"""
from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from grader.isolation import Isolation
from grader.results import SubmissionResult

SCHEMA = """
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
    sandbox TEXT NOT NULL,        -- how student code was isolated, in words (for people reading the file)
    command TEXT NOT NULL,
    isolation TEXT                -- JSON: the same as a record (grader/isolation.py), what the grader reads
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
    gate TEXT NOT NULL DEFAULT '[]', -- JSON list: the build gate's findings (grader/gate/)
    build_reason TEXT NOT NULL DEFAULT '', -- why the build failed, in one line (the log is build_log)
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
    pairs INTEGER, stop_reason TEXT, credit REAL,
    floor_ms REAL,                -- timed: the fastest time the work can honestly take on the GPU
    flag TEXT NOT NULL DEFAULT '',  -- 'review': listed for a TA (status 'implausible' is listed too)
    seconds REAL,                 -- timed: GPU time the case took (checks, warm-ups, pairs)
    throttled_pairs INTEGER       -- timed: pairs with a sample taken while the SM clock was throttled
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
-- compute-sanitizer on one small case per task (a table of its own, so stores made before it still open)
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
);
CREATE TABLE IF NOT EXISTS scores (
    submission_id INTEGER NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
    task TEXT NOT NULL,
    correctness REAL NOT NULL, correctness_max REAL NOT NULL,
    performance REAL NOT NULL, performance_max REAL NOT NULL,
    cases_passed INTEGER NOT NULL, cases_total INTEGER NOT NULL,
    note TEXT NOT NULL,
    PRIMARY KEY (submission_id, task)
);
"""

# Columns added since the first release of the store, so an older grades.sqlite
# is brought up to date in place, keeping everything in it.
ADDED_COLUMNS = [("cases", "floor_ms", "REAL"), ("cases", "flag", "TEXT NOT NULL DEFAULT ''"),
                 ("cases", "seconds", "REAL"), ("cases", "throttled_pairs", "INTEGER"),
                 ("submissions", "gate", "TEXT NOT NULL DEFAULT '[]'"),  # the build gate's findings (JSON list)
                 ("grading_runs", "isolation", "TEXT"),
                 ("submissions", "build_reason", "TEXT NOT NULL DEFAULT ''")]  # JSON record; older runs get theirs from their words


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class StoreError(RuntimeError):
    pass


class Store:
    """The grades store. Opening one creates it, or brings an older one up to date in place (`existing`
    opens only a store that is already there). Every SQL statement of the grader is in this class."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"{self.path.parent}: cannot hold a grades store ({e.strerror})") from None
        try:
            self.db = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
            self.db.execute("PRAGMA foreign_keys = ON")
            self.db.execute("PRAGMA journal_mode = WAL")  # readers never block the writer
            with self.db:
                self.db.executescript(SCHEMA)
                for table, column, declaration in ADDED_COLUMNS:
                    have = {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}
                    if column not in have:
                        self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
                self._record_old_isolation()
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path}: not a usable grades store ({e}); move it aside to start a new one") from None

    def _record_old_isolation(self):
        """Runs stored before the isolation record get one made from their words (kept whole in it), once."""
        old = self.db.execute("SELECT id, sandbox FROM grading_runs WHERE isolation IS NULL").fetchall()
        self.db.executemany("UPDATE grading_runs SET isolation = ? WHERE id = ?",
                            [(Isolation.from_legacy(words or "").to_json(), run_id) for run_id, words in old])

    @classmethod
    def existing(cls, path: Path) -> Store:
        """The store at `path`, which must exist: a command that only reads never creates an empty one."""
        if not Path(path).is_file():
            raise StoreError(f"{path}: no grades store there; grade first (`python3 -m grader grade DIR "
                             f"--results {Path(path).parent}`), or pass --results")
        return cls(path)

    def close(self):
        self.db.close()

    def start_run(self, seed: int, harness_version: str, rubric_sha256: str, registry: dict, devices: list,
                  limits: dict, isolation: Isolation, command: str) -> int:
        with self.db:
            cur = self.db.execute(
                "INSERT INTO grading_runs (started, seed, harness_version, rubric_sha256, registry, devices, limits,"
                " sandbox, command, isolation) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (now(), seed, harness_version, rubric_sha256, json.dumps(registry), json.dumps(devices),
                 json.dumps(limits), isolation.words, command, isolation.to_json()))
        return cur.lastrowid

    def finish_run(self, run_id: int):
        with self.db:
            self.db.execute("UPDATE grading_runs SET finished = ? WHERE id = ?", (now(), run_id))

    def already_graded(self, student: str, sha256: str, harness_version: str, rubric_sha256: str) -> bool:
        row = self.db.execute("SELECT 1 FROM submissions WHERE student = ? AND sha256 = ? AND harness_version = ?"
                              " AND rubric_sha256 = ?", (student, sha256, harness_version, rubric_sha256)).fetchone()
        return row is not None

    def save(self, run_id: int, result: SubmissionResult, harness_version: str, rubric_sha256: str,
             max_total: float) -> int:
        """Writes one submission's results in a single transaction, replacing an earlier grade of the same key."""
        sub, build = result.submission, result.build
        with self.db:
            self.db.execute("DELETE FROM submissions WHERE student = ? AND sha256 = ? AND harness_version = ?"
                            " AND rubric_sha256 = ?", (sub.student, sub.sha256, harness_version, rubric_sha256))
            sid = self.db.execute(
                "INSERT INTO submissions (run_id, student, sha256, received, graded, harness_version, rubric_sha256,"
                " status, total, max_total, nickname, rejected, notes, ignored, build_log, build_seconds, seconds, gate,"
                " build_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, sub.student, sub.sha256, sub.received, now(), harness_version, rubric_sha256, result.status,
                 result.total, max_total, sub.nickname, sub.rejected, json.dumps(sub.notes), json.dumps(sub.ignored),
                 build.log if build else "", build.seconds if build else None, result.seconds,
                 json.dumps(build.gate.to_json() if build and build.gate else []),
                 build.reason if build and not build.ok else "")).lastrowid
            for c in result.cases:
                p = c.paired
                ok_pairs = p is not None and p.pairs
                speed = p.speedup if ok_pairs else None
                cid = self.db.execute(
                    "INSERT INTO cases (submission_id, task, dtype, shape, kind, status, message, hint, output, seed,"
                    " record, unit, work, speedup, speedup_low, speedup_high, student_ms, solution_ms, pairs,"
                    " stop_reason, credit, floor_ms, flag, seconds, throttled_pairs)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (sid, c.task, c.dtype, c.shape, c.kind, c.status, c.message, c.hint, c.output, c.seed,
                     json.dumps(c.record) if c.record is not None else None, c.unit, c.work,
                     speed.median if speed else None, speed.low if speed else None, speed.high if speed else None,
                     p.student.median if ok_pairs else None, p.solution.median if ok_pairs else None,
                     len(p.pairs) if p else None, p.stop_reason if p else None, c.credit, c.floor_ms, c.flag,
                     p.seconds if p else None, p.throttled_pairs if p else None)).lastrowid
                if p:
                    self.db.executemany(
                        "INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [(cid, i, q.student_ms, q.solution_ms, q.student_sm_mhz, q.solution_sm_mhz, int(q.throttled))
                         for i, q in enumerate(p.pairs)])
            self.db.executemany(
                "INSERT INTO sanitizer_runs (submission_id, task, tool, dtype, shape, status, errors, report, message,"
                " seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(sid, f.task, f.tool, f.dtype, f.shape, f.status, f.errors, f.report, f.message, f.seconds)
                 for f in result.sanitizer])
            self.db.executemany(
                "INSERT INTO scores VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(sid, s.task, s.correctness, s.correctness_max, s.performance, s.performance_max, s.cases_passed,
                  s.cases_total, s.note) for s in result.scores])
        return sid

    # --- reading, as pandas tables: every query the readers (report, exports, leaderboard) need -------------

    def _table(self, sql: str, params: tuple = ()) -> pd.DataFrame:
        return pd.read_sql_query(sql, self.db, params=params)

    def _where_in(self, sql: str, column: str, ids, order: str, params: tuple = ()) -> pd.DataFrame:
        """`sql` (which ends in a WHERE clause's first condition) for the rows whose `column` is one of
        `ids` (all rows when ids is None), asked in chunks small enough for any SQLite."""
        if ids is None:
            return self._table(f"{sql} ORDER BY {order}", params)
        ids = sorted({int(i) for i in ids})
        chunks = [ids[i:i + 500] for i in range(0, len(ids), 500)] or [[]]
        parts = [self._table(f"{sql} AND {column} IN ({','.join('?' * len(chunk)) or 'NULL'}) ORDER BY {order}",
                             params + tuple(chunk)) for chunk in chunks]
        found = [p for p in parts if not p.empty]
        return pd.concat(found, ignore_index=True) if len(found) > 1 else (found or parts)[0]

    def runs(self) -> pd.DataFrame:
        """Every grading run, oldest first."""
        return self._table("SELECT * FROM grading_runs ORDER BY id")

    def latest_run(self) -> dict | None:
        row = self._table("SELECT * FROM grading_runs ORDER BY id DESC LIMIT 1")
        return None if row.empty else row.iloc[0].to_dict()

    def submissions(self, student: str | None = None) -> pd.DataFrame:
        """Every stored submission (or one student's), in the order they were stored."""
        if student is None:
            return self._table("SELECT * FROM submissions ORDER BY id")
        return self._table("SELECT * FROM submissions WHERE student = ? ORDER BY id", (student,))

    def submission_status(self, submission_id: int) -> str | None:
        """One submission's status (graded, rejected, build_failed); None when the store does not hold it."""
        row = self.db.execute("SELECT status FROM submissions WHERE id = ?", (int(submission_id),)).fetchone()
        return row[0] if row else None

    def latest_submissions(self) -> pd.DataFrame:
        """Each student's most recent submission (by time received, then time graded)."""
        return self._table(
            "SELECT * FROM submissions s WHERE s.id = (SELECT t.id FROM submissions t WHERE t.student = s.student"
            " ORDER BY t.received DESC, t.graded DESC, t.id DESC LIMIT 1) ORDER BY s.student")

    def scores(self, submission_ids: list[int] | None = None) -> pd.DataFrame:
        return self._where_in("SELECT * FROM scores WHERE 1", "submission_id", submission_ids, "submission_id, rowid")

    def cases_for(self, submission_ids: list[int] | None = None) -> pd.DataFrame:
        """The cases of these submissions (of every submission when None), in the order they ran."""
        return self._where_in("SELECT * FROM cases WHERE 1", "submission_id", submission_ids, "id")

    def cases(self, submission_id: int) -> pd.DataFrame:
        return self.cases_for([submission_id])

    def timed_cases(self, submission_ids: list[int] | None = None) -> pd.DataFrame:
        return self._where_in("SELECT * FROM cases WHERE kind = 'timed'", "submission_id", submission_ids, "id")

    def samples_for(self, case_ids: list[int] | None = None) -> pd.DataFrame:
        """The paired timing samples of these timed cases (all when None), pair by pair."""
        return self._where_in("SELECT * FROM samples WHERE 1", "case_id", case_ids, "case_id, pair")

    def flagged_cases(self, submission_ids: list[int]) -> pd.DataFrame:
        """Timed cases a TA should look at: implausibly fast, or flagged for review."""
        return self._where_in(
            "SELECT s.student, c.task, c.dtype, c.shape, CASE WHEN c.status = 'implausible' THEN 'implausible'"
            " ELSE c.flag END AS flag, c.speedup, c.student_ms, c.solution_ms, c.floor_ms, c.pairs, c.message"
            " FROM cases c JOIN submissions s ON s.id = c.submission_id"
            " WHERE c.kind = 'timed' AND (c.status = 'implausible' OR c.flag != '')",
            "c.submission_id", submission_ids, "s.student, c.id")

    def sanitizer_runs_for(self, submission_ids: list[int] | None = None) -> pd.DataFrame:
        return self._where_in("SELECT * FROM sanitizer_runs WHERE 1", "submission_id", submission_ids,
                              "submission_id, rowid")

    def sanitizer_runs(self, submission_id: int) -> pd.DataFrame:
        return self.sanitizer_runs_for([submission_id])

    def isolations(self) -> dict[int, Isolation]:
        """How student code was isolated, per grading run id."""
        return {run_id: Isolation.stored(record, words)
                for run_id, record, words in self.db.execute("SELECT id, isolation, sandbox FROM grading_runs")}

    def integrity(self) -> str:
        """SQLite's own check of the file: 'ok' when it is intact."""
        return self.db.execute("PRAGMA integrity_check").fetchone()[0]
