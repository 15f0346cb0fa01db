"""The grading service's queue, tokens and workers, in the grades store (tables of migrations step 12), and the staff's
actions on its jobs (step 13).

The queue is the store: an accepted upload is a row before its reply is sent, so it survives the service's
restart; a worker takes a job by a claim written in one transaction (`claim`), and only the holder of the
job's current claim can finish it (`finish_in`, inside the transaction that stores the grade), so a job a
restarted service gave back to the queue is stored exactly once even if a stray old worker ends it too.

Order (`claim`): round robin by student. The next job is the oldest queued job of the student served least
recently (never served first), among students with no job running: one student's many uploads cannot
starve the rest, and each student's results come back in their upload order.

Every statement runs in a transaction of its own; `admit` and `claim` take the write lock first (BEGIN
IMMEDIATE), so two uploads of one student at the same moment cannot both pass the limits.
"""
from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from grader.store.store import Store, now

QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"
OPEN = (QUEUED, RUNNING)
SLURM_WORKER = "slurm"  # the worker name of jobs handed to Slurm in a batch (grader/service/slurm_dispatch.py)
ROLES = ("student", "staff", "assignment")
REQUEUE, CANCEL = "requeue", "cancel"  # job_actions.action: what staff did to a job (issue 30)
REQUEUE_FROM = (FAILED, CANCELLED, RUNNING)  # a queued job is in the queue already; a done one has its grade
CANCEL_FROM = OPEN  # a finished job has nothing left to stop
GRADE, PROFILE = "grade", "profile"  # jobs.kind: an upload to grade; Nsight Compute on one task (make profile GPU=1)
# A running job's phases before it reaches its worker's GPU (grader/service/worker.py's build stage): a worker that
# dies holding one did not die of it, so it goes back to the queue uncounted.
BUILDING, BUILT = "building", "built"
BUILD_PHASES = (BUILDING, BUILT)


class UploadIdUsed(RuntimeError):
    """A job with this Upload-Id is stored already (the same request twice at the same moment)."""


class LostClaim(RuntimeError):
    """The job was given to another worker (or back to the queue) meanwhile: this worker's result is not stored."""


@dataclass
class Job:
    id: int
    student: str
    upload_id: str
    token: str
    received: str
    received_from: str
    archive: str
    sha256: str
    bytes: int
    state: str
    phase: str
    done_cases: int | None
    total_cases: int | None
    worker: str | None
    claim: str | None
    attempts: int
    started: str | None
    finished: str | None
    seconds: float | None
    submission_id: int | None
    status: str | None
    counted: int
    error: str
    kind: str = GRADE
    task: str = ""
    profile: str = ""  # a done profile job's result, JSON
    gpu_seconds: float | None = None  # seconds its GPU held it (taken from the build stage to stored; 0: never)
    build_seconds: float | None = None  # its intake and build on the CPU, before the GPU took it
    solution_seconds: float | None = None  # of gpu_seconds, measuring the solution's times for later jobs too

    @property
    def open(self) -> bool:
        return self.state in OPEN


@dataclass(frozen=True)
class Token:
    hash: str
    role: str
    student: str
    name: str
    made: str
    revoked: str | None


def _stamp(when: datetime) -> str:
    return when.astimezone(timezone.utc).isoformat(timespec="seconds")


class Jobs:
    """The service's rows of one store. Every SQL statement of the service is here."""

    def __init__(self, store: Store):
        self.store = store
        self.db: sqlite3.Connection = store.db

    @contextmanager
    def _writing(self):
        """A write transaction that holds the lock from its first statement (reads inside it are current)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.rollback()
            raise
        self.db.commit()

    def _dicts(self, sql: str, params: tuple = ()) -> list[dict]:
        cur = self.db.execute(sql, params)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]

    def _jobs(self, sql: str, params: tuple = ()) -> list[Job]:
        cur = self.db.execute(sql, params)
        names = [d[0] for d in cur.description]
        return [Job(**dict(zip(names, row))) for row in cur.fetchall()]

    # --- tokens ---------------------------------------------------------------------------------------------

    def add_tokens(self, rows: list[tuple[str, str, str, str]]) -> None:
        """(hash, role, student, name) each, made now."""
        made = now()
        with self.db:
            self.db.executemany("INSERT INTO tokens (hash, role, student, name, made) VALUES (?, ?, ?, ?, ?)",
                                [(*row, made) for row in rows])

    def token(self, digest: str) -> Token | None:
        row = self.db.execute("SELECT hash, role, student, name, made, revoked FROM tokens WHERE hash = ?",
                              (digest,)).fetchone()
        return Token(*row) if row else None

    def tokens(self) -> list[Token]:
        return [Token(*row) for row in self.db.execute(
            "SELECT hash, role, student, name, made, revoked FROM tokens ORDER BY role, student, made")]

    def revoke(self, student: str | None = None, digest_prefix: str | None = None) -> int:
        """Revokes a student's tokens in force, or the one token whose hash starts with `digest_prefix`."""
        with self.db:
            if student is not None:
                cur = self.db.execute("UPDATE tokens SET revoked = ? WHERE student = ? AND role = 'student'"
                                      " AND revoked IS NULL", (now(), student))
            else:
                cur = self.db.execute("UPDATE tokens SET revoked = ? WHERE hash LIKE ? AND revoked IS NULL",
                                      (now(), f"{digest_prefix}%"))
        return cur.rowcount

    def students_with_tokens(self) -> set[str]:
        return {s for (s,) in self.db.execute("SELECT student FROM tokens WHERE role = 'student' AND revoked IS"
                                              " NULL")}

    # --- login codes (make login CODE=...) ----------------------------------------------------------------------

    def add_login_code(self, digest: str, student: str, expires: datetime) -> None:
        with self._writing():
            self.db.execute("DELETE FROM login_codes WHERE expires < ?", (now(),))
            self.db.execute("INSERT INTO login_codes (hash, student, made, expires) VALUES (?, ?, ?, ?)",
                            (digest, student, now(), _stamp(expires)))

    def take_login_code(self, digest: str) -> str | None:
        """The student of a code made on the pages, marked used; None for a code unknown, expired or used before."""
        with self._writing():
            row = self.db.execute("SELECT student FROM login_codes WHERE hash = ? AND used IS NULL AND expires >= ?",
                                  (digest, now())).fetchone()
            if row is None:
                return None
            self.db.execute("UPDATE login_codes SET used = ? WHERE hash = ?", (now(), digest))
        return row[0]

    # --- LTI launches (grader/service/lti/) -------------------------------------------------------------------

    def lti_begin(self, state: str, nonce: str, issuer: str, client_id: str, expires: datetime) -> None:
        """Keeps a login step's state until its launch (expired ones are dropped on the way)."""
        with self._writing():
            self.db.execute("DELETE FROM lti_states WHERE expires < ?", (now(),))
            self.db.execute("INSERT INTO lti_states (state, nonce, issuer, client_id, expires) VALUES (?, ?, ?, ?, ?)",
                            (state, nonce, issuer, client_id, _stamp(expires)))

    def lti_take(self, state: str) -> dict | None:
        """The login step's row for `state`, removed (a launch answers one login once); None when there is none
        or it expired."""
        with self._writing():
            rows = self._dicts("SELECT state, nonce, issuer, client_id, expires FROM lti_states WHERE state = ?",
                               (state,))
            self.db.execute("DELETE FROM lti_states WHERE state = ?", (state,))
        if not rows or rows[0]["expires"] < now():
            return None
        return rows[0]

    def lti_nonce_used(self, issuer: str, nonce: str, expires: datetime) -> bool:
        """Records an id token's nonce until `expires`; True when the platform's token with it was seen before."""
        with self._writing():
            self.db.execute("DELETE FROM lti_nonces WHERE expires < ?", (now(),))
            try:
                self.db.execute("INSERT INTO lti_nonces (issuer, nonce, expires) VALUES (?, ?, ?)",
                                (issuer, nonce, _stamp(expires)))
            except sqlite3.IntegrityError:
                return True
        return False

    def lti_link_grade(self, issuer: str, client_id: str, lineitem: str, user_id: str, student: str) -> None:
        """A student launched from a graded link: their score goes to its line item from now on."""
        with self._writing():
            self.db.execute("INSERT INTO lti_grades (issuer, client_id, lineitem, user_id, student)"
                            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (issuer, client_id, lineitem, user_id)"
                            " DO UPDATE SET student = excluded.student",
                            (issuer, client_id, lineitem, user_id, student))

    def lti_context_seen(self, issuer: str, client_id: str, context_id: str, title: str, memberships: str) -> None:
        with self._writing():
            self.db.execute("INSERT INTO lti_contexts (issuer, client_id, context_id, title, memberships, seen)"
                            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (issuer, client_id, context_id) DO UPDATE SET"
                            " title = excluded.title, memberships = excluded.memberships, seen = excluded.seen",
                            (issuer, client_id, context_id, title, memberships, now()))

    def lti_contexts(self) -> list[dict]:
        return self._dicts("SELECT issuer, client_id, context_id, title, memberships, seen FROM lti_contexts"
                           " ORDER BY seen")

    def lti_grades(self) -> list[dict]:
        return self._dicts("SELECT issuer, client_id, lineitem, user_id, student, sent, sent_at, attempts, next_try,"
                           " error FROM lti_grades ORDER BY student, issuer, lineitem")

    def lti_grade_sent(self, row: dict, sent: str) -> None:
        with self._writing():
            self.db.execute("UPDATE lti_grades SET sent = ?, sent_at = ?, attempts = 0, next_try = NULL, error = ''"
                            " WHERE issuer = ? AND client_id = ? AND lineitem = ? AND user_id = ?",
                            (sent, now(), row["issuer"], row["client_id"], row["lineitem"], row["user_id"]))

    def lti_grade_held(self, row: dict, why: str) -> None:
        """A score that is not sent for a reason the store gives (it is looked at again each round)."""
        with self._writing():
            self.db.execute("UPDATE lti_grades SET error = ? WHERE issuer = ? AND client_id = ? AND lineitem = ?"
                            " AND user_id = ?", (why, row["issuer"], row["client_id"], row["lineitem"], row["user_id"]))

    def lti_grade_failed(self, row: dict, error: str, next_try: datetime) -> None:
        with self._writing():
            self.db.execute("UPDATE lti_grades SET attempts = attempts + 1, next_try = ?, error = ?"
                            " WHERE issuer = ? AND client_id = ? AND lineitem = ? AND user_id = ?",
                            (_stamp(next_try), error, row["issuer"], row["client_id"], row["lineitem"],
                             row["user_id"]))

    # --- the queue --------------------------------------------------------------------------------------------

    def admit(self, job: dict, limit: Callable[[list[Job]], str | None]) -> tuple[int | None, str | None]:
        """Adds a queued job unless `limit` (given the student's jobs of the last hour and every job still
        open, read under the write lock) refuses it: (its id, None), or (None, the refusal's words)."""
        with self._writing():
            hour_ago = _stamp(datetime.now(timezone.utc) - timedelta(hours=1))
            recent = self._jobs("SELECT * FROM jobs WHERE student = ? AND (received >= ? OR state IN (?, ?))"
                                " ORDER BY id", (job["student"], hour_ago, *OPEN))
            refused = limit(recent)
            if refused:
                return None, refused
            try:
                cur = self.db.execute(
                    "INSERT INTO jobs (student, upload_id, token, received, received_from, archive, sha256, bytes,"
                    " kind, task, state) VALUES (:student, :upload_id, :token, :received, :received_from, :archive,"
                    " :sha256, :bytes, :kind, :task, 'queued')", {"kind": GRADE, "task": "", **job})
            except sqlite3.IntegrityError:
                raise UploadIdUsed(job["upload_id"]) from None
            return cur.lastrowid, None

    def by_upload(self, upload_id: str) -> Job | None:
        found = self._jobs("SELECT * FROM jobs WHERE upload_id = ?", (upload_id,))
        return found[0] if found else None

    def job(self, job_id: int) -> Job | None:
        found = self._jobs("SELECT * FROM jobs WHERE id = ?", (job_id,))
        return found[0] if found else None

    def jobs(self, student: str | None = None, states: tuple[str, ...] | None = None) -> list[Job]:
        sql, params = "SELECT * FROM jobs WHERE 1", []
        if student is not None:
            sql, params = sql + " AND student = ?", [*params, student]
        if states:
            sql += f" AND state IN ({', '.join('?' * len(states))})"
            params += list(states)
        return self._jobs(sql + " ORDER BY id", tuple(params))

    def attempt_number(self, job: Job) -> int:
        """The job's place among its student's uploads, or among their profile requests (1: their first)."""
        return self.db.execute("SELECT COUNT(*) FROM jobs WHERE student = ? AND id <= ? AND kind = ?",
                               (job.student, job.id, job.kind)).fetchone()[0]

    def attempt_numbers(self, students: set[str]) -> dict[int, int]:
        """attempt_number of every job of these students, in one query: {job id: its number}."""
        found: dict[int, int] = {}
        ordered = sorted(students)
        for i in range(0, len(ordered), 500):  # (SQLite's limit on a statement's parameters)
            chunk = ordered[i:i + 500]
            found.update(self.db.execute(
                "SELECT id, ROW_NUMBER() OVER (PARTITION BY student, kind ORDER BY id) FROM jobs"
                f" WHERE student IN ({', '.join('?' * len(chunk))})", chunk).fetchall())
        return found

    # The queue in the order workers take it (the module's docstring): a student with a job running waits.
    _ORDER = """
        SELECT j.id, j.student FROM jobs j
        LEFT JOIN (SELECT student, MAX(started) AS served FROM jobs WHERE started IS NOT NULL GROUP BY student) s
          ON s.student = j.student
        WHERE j.state = 'queued'
        ORDER BY s.served IS NOT NULL, s.served, j.id"""

    def queue(self) -> list[int]:
        """The queued jobs' ids in the order workers will take them (a student's later jobs after the first
        ones of everyone else)."""
        rows = self.db.execute(self._ORDER).fetchall()
        first, rest, seen = [], [], set()
        for job_id, student in rows:
            (rest if student in seen else first).append(job_id)
            seen.add(student)
        return first + rest

    def claim(self, worker: str, claim: str, mark_busy: bool = True) -> Job | None:
        """Gives the next job to `worker` under `claim` (running, attempts + 1), or None when none waits.
        `mark_busy`: the worker's row shows it busy with the job (a build stage's claim leaves the row to the
        GPU's thread)."""
        with self._writing():
            busy = {s for (s,) in self.db.execute("SELECT DISTINCT student FROM jobs WHERE state = 'running'")}
            nxt = next((job_id for job_id, student in self.db.execute(self._ORDER) if student not in busy), None)
            if nxt is None:
                return None
            self.db.execute("UPDATE jobs SET state = 'running', phase = ?, worker = ?, claim = ?,"
                            " attempts = attempts + 1, started = ?, done_cases = NULL, total_cases = NULL"
                            " WHERE id = ?", (BUILDING, worker, claim, now(), nxt))
            if mark_busy:
                self._busy(worker, nxt)
        return self.job(nxt)

    def _busy(self, worker: str, job_id: int):
        self.db.execute("UPDATE workers SET state = 'busy', job = ?, seen = ? WHERE name = ?", (job_id, now(), worker))

    def claim_batch(self, worker: str, claim: str, phase: str) -> list[Job]:
        """Gives `worker`, under one `claim`, every student's next job in the queue's order (at most one per
        student, none of a student with a job running): a batch. [] when none waits."""
        with self._writing():
            busy = {s for (s,) in self.db.execute("SELECT DISTINCT student FROM jobs WHERE state = 'running'")}
            taken: dict[str, int] = {}
            profiles = {i for (i,) in self.db.execute("SELECT id FROM jobs WHERE state = 'queued' AND kind != ?",
                                                      (GRADE,))}  # a batch grades; Slurm runs no profiler
            for job_id, student in self.db.execute(self._ORDER).fetchall():
                if student not in busy and student not in taken and job_id not in profiles:
                    taken[student] = job_id
            for job_id in taken.values():
                self.db.execute("UPDATE jobs SET state = 'running', phase = ?, worker = ?, claim = ?,"
                                " attempts = attempts + 1, started = ?, done_cases = NULL, total_cases = NULL"
                                " WHERE id = ?", (phase, worker, claim, now(), job_id))
        return [self.job(i) for i in sorted(taken.values())]

    def unclaim(self, job_ids: list[int], claim: str, reason: str) -> int:
        """Jobs claimed under `claim` that were never handed on (the batch could not be submitted) go back to
        the queue at their old place, the take not counted as an attempt. Returns how many went back."""
        with self._writing():
            count = 0
            for job_id in job_ids:
                count += self.db.execute("UPDATE jobs SET state = 'queued', phase = 'waiting', claim = NULL,"
                                         " attempts = attempts - 1, started = NULL, error = ? WHERE id = ?"
                                         " AND claim = ? AND state = 'running'", (reason, job_id, claim)).rowcount
        return count

    def claimed(self, claim: str) -> list[Job]:
        """The jobs running under one claim (a Slurm batch's)."""
        return self._jobs("SELECT * FROM jobs WHERE claim = ? AND state = 'running' ORDER BY id", (claim,))

    def finish_merged(self, job_id: int, claim: str, submission_id: int, status: str, counted: bool,
                      seconds: float, sha256: str) -> bool:
        """A job of a Slurm batch is done with the grade the batch's merge stored (which may have replaced an
        earlier grade of the same archive: the jobs that pointed to that one point to the new one). False when
        the job is no longer under `claim` (done already, or given back): nothing changes."""
        with self._writing():
            student = self.db.execute("SELECT student FROM jobs WHERE id = ?", (job_id,)).fetchone()
            replaced = [i for (i,) in self.db.execute(
                "SELECT DISTINCT submission_id FROM jobs WHERE student = ? AND sha256 = ? AND submission_id IS NOT"
                " NULL AND submission_id NOT IN (SELECT id FROM submissions)", (student[0] if student else "", sha256))]
            try:
                self.finish_in(job_id, claim, submission_id, status, counted, seconds, replaced)
            except LostClaim:
                return False
        return True

    def progress(self, job_id: int, claim: str, phase: str, done: int | None = None, total: int | None = None
                 ) -> bool:
        """Records the job's phase and cases; False when the job is no longer under `claim` (the staff cancelled
        or re-queued it, or it went back to the queue): its worker stops grading it."""
        with self.db:
            cur = self.db.execute("UPDATE jobs SET phase = ?, done_cases = COALESCE(?, done_cases),"
                                  " total_cases = COALESCE(?, total_cases) WHERE id = ? AND claim = ?"
                                  " AND state = 'running'", (phase, done, total, job_id, claim))
        return cur.rowcount == 1

    def taken_by_gpu(self, job_id: int, claim: str, phase: str, worker: str) -> bool:
        """The job leaves its worker's build stage for the GPU (`phase`: running or profiling) and the worker's row
        says busy with it, in one transaction, so that no reader sees the job on the GPU and its worker idle.
        False, changing nothing, when the job is no longer under `claim` (as progress)."""
        with self.db:
            cur = self.db.execute("UPDATE jobs SET phase = ? WHERE id = ? AND claim = ? AND state = 'running'",
                                  (phase, job_id, claim))
            if cur.rowcount == 1:
                self._busy(worker, job_id)
        return cur.rowcount == 1

    def finish_in(self, job_id: int, claim: str, submission_id: int, status: str, counted: bool, seconds: float,
                  replaced: list[int], gpu_seconds: float | None = None, build_seconds: float | None = None,
                  solution_seconds: float | None = None):
        """Inside Store.save's transaction: the job is done with its grade (`gpu_seconds`: how long its GPU held it,
        `solution_seconds` of them measuring the solution's times for the worker's later jobs too; `build_seconds`:
        its intake and build before). Earlier jobs whose grade the new one replaced (the same archive uploaded
        again) point to it. Raises LostClaim, undoing the save, when the job is no longer this worker's."""
        cur = self.db.execute("UPDATE jobs SET state = 'done', phase = 'done', finished = ?, submission_id = ?,"
                              " status = ?, counted = ?, seconds = ?, gpu_seconds = ?, build_seconds = ?,"
                              " solution_seconds = ?, error = '' WHERE id = ? AND claim = ? AND state = 'running'",
                              (now(), submission_id, status, int(counted), seconds, gpu_seconds, build_seconds,
                               solution_seconds, job_id, claim))
        if cur.rowcount != 1:
            raise LostClaim(f"job {job_id} is no longer this worker's")
        if replaced:
            self.db.execute(f"UPDATE jobs SET submission_id = ? WHERE submission_id IN ({', '.join('?' * len(replaced))})",
                            (submission_id, *replaced))
        self.db.execute("UPDATE workers SET state = 'idle', job = NULL, done = done + 1, seen = ? WHERE job = ?",
                        (now(), job_id))

    def finish_profile(self, job_id: int, claim: str, profile: str, status: str, counted: bool, seconds: float):
        """A profile job is done: its result (JSON) kept on it. Raises LostClaim when the job is no longer this
        worker's."""
        with self._writing():
            cur = self.db.execute("UPDATE jobs SET state = 'done', phase = 'done', finished = ?, profile = ?,"
                                  " status = ?, counted = ?, seconds = ?, error = '' WHERE id = ? AND claim = ?"
                                  " AND state = 'running'", (now(), profile, status, int(counted), seconds, job_id,
                                                             claim))
            if cur.rowcount != 1:
                raise LostClaim(f"job {job_id} is no longer this worker's")
            self.db.execute("UPDATE workers SET state = 'idle', job = NULL, done = done + 1, seen = ? WHERE job = ?",
                            (now(), job_id))

    def same_archive_grades(self, student: str, sha256: str) -> list[int]:
        """The stored grades a new grade of this archive will replace (Store.save keeps one per key)."""
        return [i for (i,) in self.db.execute("SELECT id FROM submissions WHERE student = ? AND sha256 = ?",
                                              (student, sha256))]

    def give_back(self, job_id: int, reason: str, max_attempts: int, claim: str | None = None,
                  counted: bool = True) -> str:
        """A running job whose worker is gone (or stops) goes back to the queue at its old place: its start is
        undone, so its student is served as before the take (`_ORDER`), ahead of everyone who uploaded later.
        `counted`: the job's own doing (its worker died under it), one of its `max_attempts`; after that many it
        fails instead (a submission that kills its worker every time must not stop the queue). Not counted: the
        service's doing (it crashed, restarted or stopped) or the machine's (a full disk): the take is undone
        as if it never happened, however often. Returns the job's new state ('' when it was not running, or not
        under `claim`)."""
        with self._writing():
            row = self.db.execute("SELECT attempts FROM jobs WHERE id = ? AND state = 'running'"
                                  + (" AND claim = ?" if claim else ""),
                                  (job_id, claim) if claim else (job_id,)).fetchone()
            if row is None:
                return ""
            if counted and row[0] >= max_attempts:
                self.db.execute("UPDATE jobs SET state = 'failed', phase = 'done', finished = ?, claim = NULL,"
                                " counted = 0, error = ? WHERE id = ?",
                                (now(), f"{reason}; it was tried {row[0]} times, so it was not tried again", job_id))
                return FAILED
            self.db.execute("UPDATE jobs SET state = 'queued', phase = 'waiting', claim = NULL, started = NULL,"
                            " done_cases = NULL, total_cases = NULL, error = ?,"
                            " attempts = MAX(0, attempts - ?) WHERE id = ?", (reason, 0 if counted else 1, job_id))
            self.db.execute("UPDATE workers SET job = NULL WHERE job = ?", (job_id,))
            return QUEUED

    def running(self, worker: str | None = None) -> list[Job]:
        return self._jobs("SELECT * FROM jobs WHERE state = 'running'" + (" AND worker = ?" if worker else "")
                          + " ORDER BY id", (worker,) if worker else ())

    def cancel(self, job_id: int, reason: str) -> bool:
        with self.db:
            cur = self.db.execute("UPDATE jobs SET state = 'cancelled', phase = 'done', finished = ?, counted = 0,"
                                  " claim = NULL, error = ? WHERE id = ? AND state = 'queued'", (now(), reason, job_id))
        return cur.rowcount == 1

    # --- staff actions (issue 30): a job put back in the queue or stopped by hand, on record ------------------

    def _state(self, job_id: int) -> str | None:
        row = self.db.execute("SELECT state FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return row[0] if row else None

    def _record(self, job_id: int, action: str, by: str, reason: str, before: str):
        """Who did what to a job, and what it was before: a student asking where their upload went gets an
        answer, and a TA's mistake can be seen and undone."""
        self.db.execute("INSERT INTO job_actions (job, action, by, at, reason, state_before) VALUES (?, ?, ?, ?, ?, ?)",
                        (job_id, action, by, now(), reason, before))

    def _release_worker(self, job_id: int):
        """The worker that had the job no longer has it (as `give_back` does): the staff page stops showing it
        there, and its result, when it comes, finds the claim gone (`finish_in` raises LostClaim)."""
        self.db.execute("UPDATE workers SET job = NULL WHERE job = ?", (job_id,))

    @staticmethod
    def _words(what: str, by: str, reason: str) -> str:
        return f"{what} by {by}" + (f": {reason}" if reason else "")

    def requeue(self, job_id: int, by: str, reason: str = "") -> str:
        """Staff put a failed, cancelled or running job back in the queue, under its id, so at its old place
        in the fair order (`queue`). A running job's claim is cleared: its worker's result is not stored. Its
        attempts start again from 0: a job failed for too many tries (a worker that kept dying, since mended)
        would otherwise fail again at its first give-back. Returns 'queued', or '' when there is no such job
        or its state does not allow it (nothing recorded then)."""
        with self._writing():
            before = self._state(job_id)
            if before not in REQUEUE_FROM:
                return ""
            self.db.execute("UPDATE jobs SET state = 'queued', phase = 'waiting', claim = NULL, done_cases = NULL,"
                            " total_cases = NULL, finished = NULL, attempts = 0, error = ? WHERE id = ?",
                            (self._words("re-queued", by, reason), job_id))
            self._release_worker(job_id)
            self._record(job_id, REQUEUE, by, reason, before)
        return QUEUED

    def cancel_by_staff(self, job_id: int, by: str, reason: str = "") -> str:
        """Staff stop a queued or running job (a running one's claim is cleared, so its worker's result is not
        stored); it does not count against its student's hourly limit. Returns 'cancelled', or '' when there is
        no such job or it has finished already (nothing recorded then). `cancel` is the student's own."""
        with self._writing():
            before = self._state(job_id)
            if before not in CANCEL_FROM:
                return ""
            self.db.execute("UPDATE jobs SET state = 'cancelled', phase = 'done', finished = ?, counted = 0,"
                            " claim = NULL, error = ? WHERE id = ?",
                            (now(), self._words("cancelled", by, reason), job_id))
            self._release_worker(job_id)
            self._record(job_id, CANCEL, by, reason, before)
        return CANCELLED

    def actions(self, job_id: int | None = None, limit: int = 50) -> list[dict]:
        """The staff's recorded actions (of one job, or of all), newest first."""
        return self._dicts("SELECT * FROM job_actions" + (" WHERE job = ?" if job_id is not None else "")
                           + " ORDER BY id DESC LIMIT ?", (job_id, limit) if job_id is not None else (limit,))

    def results_version(self) -> str:
        """Changes when a job's result is stored (the live leaderboard's ETag), not with each job's progress."""
        count, last, newest = self.db.execute("SELECT COUNT(*), MAX(id), MAX(finished) FROM jobs WHERE state = 'done'"
                                              ).fetchone()
        return f"r{count}-{last or 0}-{newest or ''}"

    def fingerprint(self, student: str | None = None) -> str:
        """A short string that changes whenever anything a live page shows about the jobs (a student's, or
        everyone's with the workers and the staff's actions) changes, and only then: the pages' ETag, so a
        browser polling an unchanged page gets 304 at the cost of one read per table. The workers' `seen` is
        left out on purpose: it moves with every heartbeat and no page shows it live."""
        digest = hashlib.sha256()
        count, top = 0, 0
        for row in self.db.execute(
                "SELECT id, state, phase, done_cases, total_cases, worker, submission_id, finished, error FROM jobs"
                + (" WHERE student = ?" if student is not None else "") + " ORDER BY id",
                (student,) if student is not None else ()):
            digest.update(repr(row).encode())
            count, top = count + 1, row[0]
        if student is None:
            for row in self.db.execute("SELECT name, state, job, done, reason FROM workers ORDER BY name"):
                digest.update(repr(row).encode())
            digest.update(repr(self.db.execute("SELECT COUNT(*) FROM job_actions").fetchone()).encode())
        return f"{count}-{top}-{digest.hexdigest()[:16]}"

    def recent_stages(self, count: int = 20, kind: str = GRADE) -> list[tuple[float, float | None, float | None]]:
        """(seconds, gpu_seconds, build_seconds) of the last `count` jobs of a kind that reached a device (a job
        stored by its build stage has gpu_seconds 0), newest first: the pace of grader/service/eta.py. Its own device
        seconds: less those a job spent measuring the solution's times, once per worker's grading run, which the
        jobs after it reuse (a fresh worker's first job held its GPU a third longer than the next)."""
        return list(self.db.execute("SELECT seconds, gpu_seconds - COALESCE(solution_seconds, 0), build_seconds"
                                    " FROM jobs WHERE state = 'done'"
                                    " AND seconds IS NOT NULL AND (gpu_seconds IS NULL OR gpu_seconds > 0)"
                                    " AND kind = ? ORDER BY finished DESC, id DESC LIMIT ?", (kind, count)))

    # --- workers ----------------------------------------------------------------------------------------------

    def worker_started(self, name: str, gpu: str | None, pid: int):
        with self.db:
            self.db.execute("INSERT INTO workers (name, gpu, pid, state, started, seen) VALUES (?, ?, ?, 'starting',"
                            " ?, ?) ON CONFLICT (name) DO UPDATE SET gpu = excluded.gpu, pid = excluded.pid,"
                            " state = 'starting', job = NULL, reason = '', started = excluded.started,"
                            " seen = excluded.seen, done = 0", (name, gpu, pid, now(), now()))

    def worker_state(self, name: str, state: str, reason: str = ""):
        with self.db:
            self.db.execute("UPDATE workers SET state = ?, reason = ?, seen = ?"
                            + (", job = NULL" if state != "busy" else "") + " WHERE name = ?",
                            (state, reason, now(), name))

    def workers(self) -> list[dict]:
        return self._dicts("SELECT * FROM workers ORDER BY name")

    def finished_since(self, since: str) -> list[tuple[str, str, float, float | None, float | None]]:
        """(worker, finished, seconds, gpu_seconds, build_seconds) of every job done since `since` (the staff's
        throughput)."""
        return list(self.db.execute("SELECT worker, finished, seconds, gpu_seconds, build_seconds FROM jobs"
                                    " WHERE state = 'done' AND finished >= ? ORDER BY finished", (since,)))
