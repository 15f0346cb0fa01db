"""The grades store's schema as numbered steps, and how a store of any earlier version is brought up to date.

A store records its version in SQLite's own header (PRAGMA user_version). Step 1 is the schema of the first
store the grader ever wrote; each later step is one change, in the order the grader made them, with why it
came. Opening a store runs the steps it lacks, all in one transaction that also sets its new version: a grader
killed during an upgrade leaves the store as it was. A store newer than every step here is refused unchanged.
Stores written before the version was recorded (user_version 0) are recognised by their tables and columns
(`adopt_unversioned`, the one bridge). To change the schema: append a step, never edit one that has shipped.
"""
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Callable

from grader.outcomes.isolation import Isolation
from grader.core.status import NOT_TIMED_ON_CPU


class MigrationError(RuntimeError):
    """A file the store cannot open as a grades store; the message says why, without the path."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    tables: tuple[tuple[str, str], ...] = ()  # (name, CREATE TABLE statement): the tables this step brings
    columns: tuple[tuple[str, str, str], ...] = ()  # (table, column, declaration): the columns it adds
    fill: Callable[[sqlite3.Connection], None] | None = None  # gives rows already stored the new columns' values

    def apply(self, db: sqlite3.Connection, have: dict[str, set[str]] | None = None):
        """Runs the step inside the caller's transaction; with `have` (the store's tables and their columns),
        only the parts it lacks (the bridge's use)."""
        for name, create in self.tables:
            if have is None or name not in have:
                db.execute(create)
        for table, column, declaration in self.columns:
            if have is None or column not in have.get(table, set()):
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
        if self.fill:
            self.fill(db)

    def found_in(self, have: dict[str, set[str]]) -> bool:
        """Whether a store has anything this step brings."""
        return any(name in have for name, _ in self.tables) or \
            any(column in have.get(table, set()) for table, column, _ in self.columns)


def _job_indexes(db: sqlite3.Connection):
    """The queue is read by state and by student on every upload and every claim."""
    db.execute("CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state, id)")
    db.execute("CREATE INDEX IF NOT EXISTS jobs_by_student ON jobs (student, id)")


# --- the first release (2026-11-21, b38acaf): runs, submissions, cases, timing samples, task scores ----------

FIRST_RELEASE = (
    ("grading_runs", """CREATE TABLE grading_runs (
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
    command TEXT NOT NULL
)"""),
    ("submissions", """CREATE TABLE submissions (
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
)"""),
    ("cases", """CREATE TABLE cases (
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
)"""),
    ("samples", """CREATE TABLE samples (
    case_id INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
    pair INTEGER NOT NULL,
    student_ms REAL NOT NULL,
    solution_ms REAL NOT NULL,
    student_sm_mhz INTEGER,
    solution_sm_mhz INTEGER,
    throttled INTEGER NOT NULL,
    PRIMARY KEY (case_id, pair)
)"""),
    ("scores", """CREATE TABLE scores (
    submission_id INTEGER NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
    task TEXT NOT NULL,
    correctness REAL NOT NULL, correctness_max REAL NOT NULL,
    performance REAL NOT NULL, performance_max REAL NOT NULL,
    cases_passed INTEGER NOT NULL, cases_total INTEGER NOT NULL,
    note TEXT NOT NULL,
    PRIMARY KEY (submission_id, task)
)"""),
)

# --- the later steps' fills: what rows stored before a column came get in it ------------------------------------


def _isolation_from_words(db: sqlite3.Connection):
    """Runs stored before the isolation record get one made from their words (kept whole in it)."""
    old = db.execute("SELECT id, sandbox FROM grading_runs WHERE isolation IS NULL").fetchall()
    db.executemany("UPDATE grading_runs SET isolation = ? WHERE id = ?",
                   [(Isolation.from_legacy(words or "").to_json(), run_id) for run_id, words in old])


def _raw_total_is_total(db: sqlite3.Connection):
    """Submissions stored before the late policy lost nothing to it: their tasks' points are their total."""
    db.execute("UPDATE submissions SET raw_total = total WHERE raw_total IS NULL")


def legacy_untimed_reason(devices: list) -> str:
    """Why a run stored before its timing was recorded measured no performance, from the backend its device
    records name (grader/backends/cpu.py wrote "backend" into each; none: a GPU run). Only the migration asks: a
    run stored since says it itself (grading_runs.timed, untimed_reason)."""
    for device in devices or []:
        if (device or {}).get("backend", "gpu") == "cpu":
            return NOT_TIMED_ON_CPU
    return ""


def _run_facts_from_devices(db: sqlite3.Connection):
    """Runs stored before their facts were columns: timed or not, and why, from their device records. Their
    folder and delivery were never recorded apart from the command line, and stay '' (unknown)."""
    rows = db.execute("SELECT id, devices FROM grading_runs").fetchall()
    reasons = [(legacy_untimed_reason(json.loads(devices or "[]")), run_id) for run_id, devices in rows]
    db.executemany("UPDATE grading_runs SET timed = ?, untimed_reason = ? WHERE id = ?",
                   [(int(not reason), reason, run_id) for reason, run_id in reasons])


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "first release", tables=FIRST_RELEASE),
    # dae0515: the timing budget's plausibility floor, a TA's review flag, GPU seconds per case, throttled pairs
    Migration(2, "timing flags", columns=(
        ("cases", "floor_ms", "REAL"),  # timed: the fastest time the work can honestly take on the GPU
        ("cases", "flag", "TEXT NOT NULL DEFAULT ''"),  # 'review': listed for a TA ('implausible' is listed too)
        ("cases", "seconds", "REAL"),  # timed: GPU time the case took (checks, warm-ups, pairs)
        ("cases", "throttled_pairs", "INTEGER"))),  # timed: pairs with a sample taken while the clock throttled
    # a877434: compute-sanitizer on one small case per task (a table of its own, so older stores still open)
    Migration(3, "compute-sanitizer runs", tables=(("sanitizer_runs", """CREATE TABLE sanitizer_runs (
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
)"""),)),
    # 7a554c5: the build gate's findings (grader/gate/), a JSON list, shown in the feedback
    Migration(4, "build gate", columns=(("submissions", "gate", "TEXT NOT NULL DEFAULT '[]'"),)),
    # 844d707: how student code was isolated as a record the grader reads (grader/outcomes/isolation.py), not prose
    # parsed back; older runs get theirs from their words
    Migration(5, "isolation record", columns=(("grading_runs", "isolation", "TEXT"),), fill=_isolation_from_words),
    # 3134b1a: why the build failed, in one line, for the per-task feedback (the log is build_log)
    Migration(6, "build reason", columns=(("submissions", "build_reason", "TEXT NOT NULL DEFAULT ''"),)),
    # cb4a896, the grading week: the class list, a TA's overrides on record, the late policy (grader/core/late.py)
    Migration(7, "roster, overrides, late policy", tables=(
        ("roster", """CREATE TABLE roster (
    student TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    keys TEXT NOT NULL            -- JSON list: every id a submission may carry for this student
)"""),
        ("overrides", """CREATE TABLE overrides (
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
)""")), columns=(
        ("submissions", "raw_total", "REAL"),  # the tasks' points (overrides applied) before the late penalty
        ("submissions", "late_percent", "REAL NOT NULL DEFAULT 0"),  # the share of raw_total the policy takes
        ("submissions", "penalty", "REAL NOT NULL DEFAULT 0"),  # in points (total = raw_total - penalty)
        ("submissions", "late", "TEXT NOT NULL DEFAULT ''"),  # the policy's words: on time, how late, the penalty
        ("scores", "override", "REAL"),  # a TA's points for the whole task, in place of its two scores
        ("scores", "override_note", "TEXT NOT NULL DEFAULT ''")), fill=_raw_total_is_total),
    # 9d2ffa0: what was merged in from Slurm shard stores (grader/slurm/), so nothing is merged twice
    Migration(8, "Slurm merges", tables=(("merged", """CREATE TABLE merged (
    origin TEXT PRIMARY KEY,      -- batch/shard/run/ID or batch/shard/submission/ID in the shard's store
    kind TEXT NOT NULL CHECK (kind IN ('run', 'submission')),
    local_id INTEGER NOT NULL,    -- its id in this store
    merged TEXT NOT NULL
)"""),)),
    # 60f46a8: where a submission's time received came from (grader/core/received.py; '': not recorded), so a
    # time read from inside a student's archive is never taken for the course system's
    Migration(9, "received from", columns=(("submissions", "received_from", "TEXT NOT NULL DEFAULT ''"),)),
    # 1b84ae7: which checks ran on a task: compute-sanitizer, or the CPU backend's own in its place ("cpu")
    Migration(10, "sanitizer checker", columns=(
        ("sanitizer_runs", "checker", "TEXT NOT NULL DEFAULT 'compute-sanitizer'"),)),
    # issue 28: the facts of a run stored when known and read by every report, never worked out again from the
    # device records; older runs get theirs from those records, once, here
    Migration(11, "run facts", columns=(
        ("grading_runs", "timed", "INTEGER NOT NULL DEFAULT 1"),  # 1: its timed cases were timed
        ("grading_runs", "untimed_reason", "TEXT NOT NULL DEFAULT ''"),  # why not, in words ('' when timed)
        ("grading_runs", "folder", "TEXT NOT NULL DEFAULT ''"),  # the submissions graded ('': not recorded)
        ("grading_runs", "source", "TEXT NOT NULL DEFAULT ''")),  # how they were delivered: plain, canvas, ...
        fill=_run_facts_from_devices),
    # issue 29: the grading service (grader/service/) keeps its queue, its tokens and its workers here, so an
    # accepted upload survives a restart and its result lands in the same store every reader reads
    Migration(12, "grading service", tables=(("tokens", """CREATE TABLE tokens (
    hash TEXT PRIMARY KEY,        -- sha256 of the token; the token itself is never stored
    role TEXT NOT NULL CHECK (role IN ('student', 'staff', 'assignment')),
    student TEXT NOT NULL DEFAULT '',  -- a student token's student ('' for the others)
    name TEXT NOT NULL DEFAULT '',     -- who holds a staff token, or what an assignment token is for
    made TEXT NOT NULL,
    revoked TEXT                  -- when it was revoked (NULL: in force)
)"""), ("jobs", """CREATE TABLE jobs (
    id INTEGER PRIMARY KEY,
    student TEXT NOT NULL,
    upload_id TEXT NOT NULL UNIQUE,  -- the client's Upload-Id: a request repeating one is refused
    token TEXT NOT NULL,          -- the hash of the token that uploaded it
    received TEXT NOT NULL,       -- the service's clock (or Gradescope's, from the bridge)
    received_from TEXT NOT NULL,
    archive TEXT NOT NULL,        -- where the upload is kept
    sha256 TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    phase TEXT NOT NULL DEFAULT 'waiting',
    done_cases INTEGER,
    total_cases INTEGER,
    worker TEXT,                  -- the worker that has it (or had it last)
    claim TEXT,                   -- that worker's claim: only the holder of the current claim may finish it
    attempts INTEGER NOT NULL DEFAULT 0,  -- times a worker took it
    started TEXT,
    finished TEXT,
    seconds REAL,                 -- from claimed to stored
    submission_id INTEGER,        -- its grade in submissions (a later identical upload may replace the row)
    status TEXT,                  -- the grade's status: graded, build_failed, rejected
    counted INTEGER NOT NULL DEFAULT 1,  -- counts against the hourly limit (not when it did not build)
    error TEXT NOT NULL DEFAULT ''
)"""), ("workers", """CREATE TABLE workers (
    name TEXT PRIMARY KEY,        -- gpu0, gpu1, ...
    gpu TEXT,
    pid INTEGER,
    state TEXT NOT NULL CHECK (state IN ('starting', 'idle', 'busy', 'failed', 'stopped')),
    job INTEGER,
    reason TEXT NOT NULL DEFAULT '',  -- why it failed
    started TEXT NOT NULL,
    seen TEXT NOT NULL,
    done INTEGER NOT NULL DEFAULT 0   -- jobs it finished since it started
)""")), fill=_job_indexes),
    # issue 30: staff re-queue or cancel a job from the service's staff page; each action is recorded with who
    # did it and what the job was before, so a student asking where their upload went gets an answer
    Migration(13, "staff actions on jobs", tables=(("job_actions", """CREATE TABLE job_actions (
    id INTEGER PRIMARY KEY,
    job INTEGER NOT NULL,         -- jobs.id
    action TEXT NOT NULL CHECK (action IN ('requeue', 'cancel')),
    by TEXT NOT NULL,             -- who did it: the staff token's name
    at TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    state_before TEXT NOT NULL    -- the job's state when it was done
)"""),)),
    # issue 31: the CPU backend's performance counters on each task's profile case, as make profile says them
    # (feedback only: no score reads them)
    Migration(14, "performance counters", tables=(("profile_runs", """CREATE TABLE profile_runs (
    submission_id INTEGER NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
    task TEXT NOT NULL,
    dtype TEXT NOT NULL,
    shape TEXT NOT NULL,          -- the registry's profile shape
    status TEXT NOT NULL,         -- counted, failed, skipped
    findings TEXT NOT NULL,       -- JSON list of sentences, each naming a line
    numbers TEXT NOT NULL,        -- JSON: the task's numbers, as make profile's table shows them
    message TEXT NOT NULL,        -- why there are no counts
    seconds REAL NOT NULL,
    PRIMARY KEY (submission_id, task)
)"""),)),
    # issue 31: `make profile GPU=1` asks the service for Nsight Compute's counters of one task; such a job is
    # queued, claimed and limited like an upload, and its result (the numbers, beside the solution's on the same
    # GPU) is kept on the job: it grades nothing
    Migration(15, "profile jobs", columns=(
        ("jobs", "kind", "TEXT NOT NULL DEFAULT 'grade'"),  # grade: an upload to grade; profile: ncu on one task
        ("jobs", "task", "TEXT NOT NULL DEFAULT ''"),  # a profile job's task
        ("jobs", "profile", "TEXT NOT NULL DEFAULT ''"))),  # a done profile job's result (JSON)
    # issue 43: what a job cost its GPU worker, beside its wall time: the seconds it held the GPU, and the seconds
    # of its intake and build (since the worker's build stage, done before the GPU takes the job; rows stored
    # before it have the build inside gpu_seconds)
    Migration(16, "GPU-held seconds", columns=(
        ("jobs", "gpu_seconds", "REAL"),  # from the GPU taking the job to the grade stored (0: it never reached it)
        ("jobs", "build_seconds", "REAL"))),  # intake and build
    # issue 46: an LTI 1.3 launch from the course's LMS (grader/service/lti/). Its login step's state and nonce are
    # kept until the launch that answers it (once: a replayed launch finds none); every nonce a platform's id
    # token carried is kept until the token's expiry, so a token cannot be used twice
    Migration(17, "LTI launches", tables=(("lti_states", """CREATE TABLE lti_states (
    state TEXT PRIMARY KEY,       -- sent to the platform at login, returned with the launch
    nonce TEXT NOT NULL,          -- the id token must carry it
    issuer TEXT NOT NULL,
    client_id TEXT NOT NULL,
    expires TEXT NOT NULL
)"""), ("lti_nonces", """CREATE TABLE lti_nonces (
    issuer TEXT NOT NULL,
    nonce TEXT NOT NULL,
    expires TEXT NOT NULL,
    PRIMARY KEY (issuer, nonce)
)"""))),
    # issue 46: grades back to the LMS (LTI Assignment and Grade Services): each student who launched from a graded
    # link, with that link's line item; the score the store says now, and what was last sent and when the next try is
    Migration(18, "LTI grade passback", tables=(("lti_grades", """CREATE TABLE lti_grades (
    issuer TEXT NOT NULL,
    client_id TEXT NOT NULL,
    lineitem TEXT NOT NULL,       -- the line item's URL (the LMS's gradebook column)
    user_id TEXT NOT NULL,        -- the LMS's id of the person (the id token's sub)
    student TEXT NOT NULL,        -- the roster's id
    sent TEXT NOT NULL DEFAULT '',     -- what was last sent and accepted (the score's JSON, without its time)
    sent_at TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,  -- failed tries since the last success
    next_try TEXT,                -- not before this (after a failure)
    error TEXT NOT NULL DEFAULT '',    -- why the last try failed
    PRIMARY KEY (issuer, client_id, lineitem, user_id)
)"""),)),
    # issue 46: `make login CODE=...`: a student logged in on the pages (from the LMS: no token file) makes a short
    # code there, which the command line trades once, within minutes, for a token of its own
    Migration(19, "login codes", tables=(("login_codes", """CREATE TABLE login_codes (
    hash TEXT PRIMARY KEY,        -- sha256 of the code; the code itself is never stored
    student TEXT NOT NULL,
    made TEXT NOT NULL,
    expires TEXT NOT NULL,
    used TEXT                     -- when it was traded for a token (NULL: not yet)
)"""),)),
    # issue 46: the roster from the LMS (LTI Names and Role Provisioning Services): each course (context) a launch
    # came from, with its membership service's URL, which `bin/grader lti roster` and the service read
    Migration(20, "LTI courses", tables=(("lti_contexts", """CREATE TABLE lti_contexts (
    issuer TEXT NOT NULL,
    client_id TEXT NOT NULL,
    context_id TEXT NOT NULL,     -- the LMS's course (or section) id
    title TEXT NOT NULL DEFAULT '',
    memberships TEXT NOT NULL,    -- its membership service's URL
    seen TEXT NOT NULL,           -- the latest launch from it
    PRIMARY KEY (issuer, client_id, context_id)
)"""),)),
    # issue 43: of a job's GPU-held seconds, those its worker spent measuring the solution's correctness times,
    # once per grading run (the first job's), which every later job reuses: the ETA's pace leaves them out
    Migration(21, "the solution's measuring", columns=(
        ("jobs", "solution_seconds", "REAL"),)),
)
LATEST = MIGRATIONS[-1].version
FIRST_TABLES = {name for name, _ in FIRST_RELEASE}


def added_columns() -> list[tuple[str, str, str]]:
    """(table, column, declaration) of every column added since the first release, in order."""
    return [column for step in MIGRATIONS[1:] for column in step.columns]


def version(db: sqlite3.Connection) -> int:
    return db.execute("PRAGMA user_version").fetchone()[0]


def _shape(db: sqlite3.Connection) -> dict[str, set[str]]:
    tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"
                                             " AND name NOT LIKE 'sqlite_%'")]
    return {name: {row[1] for row in db.execute(f"PRAGMA table_info({name})")} for name in tables}


def check_version(db: sqlite3.Connection):
    """Refuses, before anything is written, a store from a grader newer than this one."""
    found = version(db)
    if found > LATEST:
        raise MigrationError(f"a grades store of version {found}, written by a newer grader; this grader knows "
                             f"versions up to {LATEST}: open it with that grader (nothing was changed)")


def adopt_unversioned(db: sqlite3.Connection) -> int:
    """The bridge: the version of a store written before versions were recorded (user_version 0), told by its
    columns, the store completed to it; 0 for an empty file (a new store). Every such store was made by
    `CREATE TABLE IF NOT EXISTS` and a list of added columns, so its version is the newest step any of its
    tables or columns comes from; a step an older development branch skipped on the way is added here too.
    A file with other tables and not the first release's is not a grades store. Runs in the caller's
    transaction."""
    have = _shape(db)
    if not have:
        return 0
    if not FIRST_TABLES <= set(have):
        raise MigrationError(f"not a usable grades store (an SQLite file with the tables {', '.join(sorted(have))}"
                             f", not {', '.join(sorted(FIRST_TABLES - set(have)))}); move it aside to start a new one")
    reached = max(step.version for step in MIGRATIONS if step.found_in(have))
    for step in MIGRATIONS[:reached]:
        step.apply(db, have)
    return reached


def migrate(db: sqlite3.Connection) -> int:
    """Brings the store on `db` to the newest version (the last of MIGRATIONS), in one transaction; returns the
    version it had."""
    check_version(db)
    steps = MIGRATIONS
    if version(db) == steps[-1].version:
        return version(db)  # the common case: no lock taken, nothing written
    db.execute("BEGIN IMMEDIATE")  # one upgrader at a time: another waits, then finds the work done
    try:
        check_version(db)
        before = version(db)
        start = before or adopt_unversioned(db)
        for step in steps[start:]:
            step.apply(db)
        db.execute(f"PRAGMA user_version = {steps[-1].version}")
        db.commit()
    except BaseException:
        db.rollback()
        raise
    return before
