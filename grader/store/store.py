"""results/grades.sqlite: every grading run, submission, case, timing sample and score.

Each submission's results are written in one transaction, so a grader killed
at any moment leaves either all of a submission or none of it. A submission
already graded with the same (student, sha256, harness version, rubric hash)
is skipped on the next run unless --regrade.

Its tables and columns, each with why it came, are the numbered steps of grader/store/migrations.py: a new store
runs them all, an older one the ones it lacks.
"""
from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from grader.store import migrations as migrations
from grader.outcomes.isolation import Isolation
from grader.core.received import CANVAS_LATE
from grader.outcomes.results import SubmissionResult

if TYPE_CHECKING:  # the store is handed the chain's results; it never runs the chain on its own
    from grader.scoring.chain import Scored

# The scoring chain (grader/scoring/chain.py) as the store calls it, inside the transaction that writes its result:
# Score, for a submission being written, gets its student's overrides in force (the store's rows);
# Settle, for one already stored, gets its submission row, its scores rows and those overrides.
Score = Callable[[pd.DataFrame], "Scored"]
Settle = Callable[[pd.Series, pd.DataFrame, pd.DataFrame], "Scored"]


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class StoreError(RuntimeError):
    pass


class Store:
    """The grades store. Opening one creates it, or brings an older one up to date in place through the numbered
    steps of grader/store/migrations.py (`existing` opens only a store that is already there). Every SQL
    statement of the grader is in this class or in those steps."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"{self.path.parent}: cannot hold a grades store ({e.strerror})") from None
        try:
            self.db = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path}: cannot be opened as a grades store ({e})") from None
        try:
            migrations.check_version(self.db)  # before anything is written, the journal mode included
            self.db.execute("PRAGMA foreign_keys = ON")
            migrations.migrate(self.db)  # a store it cannot bring up to date is left as it was, journal mode too
            self.db.execute("PRAGMA journal_mode = WAL")  # readers never block the writer
        except migrations.MigrationError as e:
            self.db.close()
            raise StoreError(f"{self.path}: {e}") from None
        except sqlite3.DatabaseError as e:
            self.db.close()
            raise StoreError(f"{self.path}: not a usable grades store ({e}); move it aside to start a new one") from None

    @classmethod
    def existing(cls, path: Path) -> Store:
        """The store at `path`, which must exist: a command that only reads never creates an empty one."""
        if not Path(path).is_file():
            raise StoreError(f"{path}: no grades store there; grade first (`bin/grader grade DIR "
                             f"--results {Path(path).parent}`), or pass --results")
        return cls(path)

    def close(self):
        self.db.close()

    def start_run(self, seed: int, harness_version: str, rubric_sha256: str, registry: dict, devices: list,
                  limits: dict, isolation: Isolation, command: str, *, timed: bool, untimed_reason: str = "",
                  folder: str = "", source: str = "") -> int:
        """Records a grading run with its facts, which every reader reads and none works out again: whether its
        timed cases were timed (`untimed_reason` says why not, and only then), the submissions `folder` it read
        and how they were delivered (`source`: plain, canvas, gradescope; single for one submission alone)."""
        if timed == bool(untimed_reason):
            raise ValueError("a grading run that times nothing says why, and only such a run")
        with self.db:
            cur = self.db.execute(
                "INSERT INTO grading_runs (started, seed, harness_version, rubric_sha256, registry, devices, limits,"
                " sandbox, command, isolation, timed, untimed_reason, folder, source)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (now(), seed, harness_version, rubric_sha256, json.dumps(registry), json.dumps(devices),
                 json.dumps(limits), isolation.words, command, isolation.to_json(), int(timed), untimed_reason,
                 folder, source))
        return cur.lastrowid

    def finish_run(self, run_id: int):
        with self.db:
            self.db.execute("UPDATE grading_runs SET finished = ? WHERE id = ?", (now(), run_id))

    def already_graded(self, student: str, sha256: str, harness_version: str, rubric_sha256: str) -> bool:
        row = self.db.execute("SELECT 1 FROM submissions WHERE student = ? AND sha256 = ? AND harness_version = ?"
                              " AND rubric_sha256 = ?", (student, sha256, harness_version, rubric_sha256)).fetchone()
        return row is not None

    def save(self, run_id: int, result: SubmissionResult, harness_version: str, rubric_sha256: str,
             max_total: float, score: Score, then: Callable[[int], None] | None = None) -> int:
        """Writes one submission's results in a single transaction, replacing an earlier grade of the same key,
        with the scores, credits and totals `score` (the scoring chain) returns for its student's overrides in
        force: called inside the transaction, so an override made meanwhile is either counted or not yet made.
        `then(submission_id)` runs last in the same transaction (the service marks its job done there: the grade
        and the job's end are stored together or not at all); whatever it raises undoes both."""
        sub, build = result.submission, result.build
        with self.db:
            self.db.execute("DELETE FROM submissions WHERE student = ? AND sha256 = ? AND harness_version = ?"
                            " AND rubric_sha256 = ?", (sub.student, sub.sha256, harness_version, rubric_sha256))
            scored = score(self._in_force(sub.student))
            sid = self.db.execute(
                "INSERT INTO submissions (run_id, student, sha256, received, graded, harness_version, rubric_sha256,"
                " status, total, max_total, nickname, rejected, notes, ignored, build_log, build_seconds, seconds, gate,"
                " build_reason, received_from) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, sub.student, sub.sha256, sub.received, now(), harness_version, rubric_sha256, result.status,
                 scored.totals.total, max_total, sub.nickname, sub.rejected, json.dumps(sub.notes),
                 json.dumps(sub.ignored),
                 build.log if build else "", build.seconds if build else None, result.seconds,
                 json.dumps(build.gate.to_json() if build and build.gate else []),
                 build.reason if build and not build.ok else "", sub.received_from)).lastrowid
            for i, c in enumerate(result.cases):
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
                     len(p.pairs) if p else None, p.stop_reason if p else None, scored.credits.get(i), c.floor_ms,
                     c.flag,
                     p.seconds if p else None, p.throttled_pairs if p else None)).lastrowid
                if p:
                    self.db.executemany(
                        "INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [(cid, i, q.student_ms, q.solution_ms, q.student_sm_mhz, q.solution_sm_mhz, int(q.throttled))
                         for i, q in enumerate(p.pairs)])
            self.db.executemany(
                "INSERT INTO sanitizer_runs (submission_id, task, tool, dtype, shape, status, errors, report, message,"
                " seconds, checker) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(sid, f.task, f.tool, f.dtype, f.shape, f.status, f.errors, f.report, f.message, f.seconds, f.checker)
                 for f in result.sanitizer])
            self.db.executemany(
                "INSERT INTO profile_runs (submission_id, task, dtype, shape, status, findings, numbers, message,"
                " seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(sid, p.task, p.dtype, p.shape, p.status, json.dumps(p.findings), json.dumps(p.numbers), p.message,
                  p.seconds) for p in result.profiles])
            self._write_scored(sid, scored)
            if then is not None:
                then(sid)
        return sid

    def _in_force(self, student: str) -> pd.DataFrame:
        """The student's overrides in force, oldest first (the chain's overrides step reads them)."""
        return self._table("SELECT task, points, author, made, reason FROM overrides WHERE student = ? AND undone IS"
                           " NULL ORDER BY id", (student,))

    def _write_scored(self, sid: int, scored: Scored):
        """Writes what the scoring chain made of a submission: its task scores with their overrides, its lateness
        and its totals. Inside the caller's transaction."""
        self.db.execute("DELETE FROM scores WHERE submission_id = ?", (sid,))
        self.db.executemany(
            "INSERT INTO scores (submission_id, task, correctness, correctness_max, performance, performance_max,"
            " cases_passed, cases_total, note, override, override_note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(sid, s.task, s.correctness, s.correctness_max, s.performance, s.performance_max, s.cases_passed,
              s.cases_total, s.note, scored.overrides[s.task].points, scored.overrides[s.task].note)
             for s in scored.scores])
        t = scored.totals
        self.db.execute("UPDATE submissions SET late_percent = ?, late = ?, raw_total = ?, penalty = ?, total = ?"
                        " WHERE id = ?", (scored.late.percent, scored.late.note, t.raw_total, t.penalty, t.total, sid))

    def _resettle(self, sid: int, settle: Settle):
        """A stored submission's totals again, by `settle` from its rows, after its student's overrides changed
        or it was merged in. Inside the caller's transaction."""
        submission = self._table("SELECT * FROM submissions WHERE id = ?", (sid,)).iloc[0]
        scores = self._table("SELECT * FROM scores WHERE submission_id = ? ORDER BY rowid", (sid,))
        self._write_scored(sid, settle(submission, scores, self._in_force(submission["student"])))

    # --- the class list ----------------------------------------------------------------------------------

    def save_roster(self, people) -> None:
        """Replaces the stored class list (grader/intake/roster.py's people)."""
        with self.db:
            self.db.execute("DELETE FROM roster")
            self.db.executemany("INSERT INTO roster VALUES (?, ?, ?)",
                                [(p.student, p.name, json.dumps(list(p.keys))) for p in people])

    def roster(self) -> pd.DataFrame:
        return self._table("SELECT * FROM roster ORDER BY student")

    # --- operations: rescore, overrides ---------------------------------------------------------------------

    def rescore(self, sid: int, rubric_sha256: str, max_total: float, score: Score) -> bool:
        """Replaces one submission's scores, its timed cases' credit (by case id) and its totals with what `score`
        (the scoring chain under another rubric) returns for its student's overrides in force, in one
        transaction. False when the store already holds the same submission graded under that rubric (this
        copy is then removed: the other one stands)."""
        with self.db:
            row = self.db.execute("SELECT student, sha256, harness_version FROM submissions WHERE id = ?",
                                  (sid,)).fetchone()
            twin = self.db.execute("SELECT id FROM submissions WHERE student = ? AND sha256 = ? AND harness_version = ?"
                                   " AND rubric_sha256 = ? AND id != ?", (*row, rubric_sha256, sid)).fetchone()
            if twin is not None:
                self.db.execute("DELETE FROM submissions WHERE id = ?", (sid,))
                return False
            self.db.execute("UPDATE submissions SET rubric_sha256 = ?, max_total = ? WHERE id = ?",
                            (rubric_sha256, max_total, sid))
            scored = score(self._in_force(row[0]))
            self.db.executemany("UPDATE cases SET credit = ? WHERE id = ? AND submission_id = ?",
                                [(c, i, sid) for i, c in scored.credits.items()])
            self._write_scored(sid, scored)
        return True

    def add_override(self, student: str, task: str, points: float, reason: str, author: str, settle: Settle) -> int:
        """Sets a task's points for a student (in place of any earlier override of it), on record, and each of
        the student's submissions' totals again by `settle` (the scoring chain's last steps): the chain is called
        here, inside the transaction, rather than its results passed in, so the override and the totals it makes
        land together or not at all, computed from the rows as they are under the write lock (a submission saved
        by a grade running meanwhile is settled too), while the store itself does no arithmetic."""
        with self.db:
            sha = self.db.execute("SELECT sha256 FROM submissions WHERE student = ? ORDER BY received DESC, graded"
                                  " DESC, id DESC LIMIT 1", (student,)).fetchone()
            if sha is None:
                raise StoreError(f"{self.path} holds no submission of '{student}'")
            when = now()
            self.db.execute("UPDATE overrides SET undone = ?, undone_by = ? WHERE student = ? AND task = ? AND"
                            " undone IS NULL", (when, f"{author} (replaced)", student, task))
            oid = self.db.execute("INSERT INTO overrides (student, task, points, reason, author, made,"
                                  " submission_sha256) VALUES (?, ?, ?, ?, ?, ?, ?)",
                                  (student, task, points, reason, author, when, sha[0])).lastrowid
            for (sid,) in self.db.execute("SELECT id FROM submissions WHERE student = ?", (student,)).fetchall():
                self._resettle(sid, settle)
        return oid

    def undo_override(self, student: str, task: str, author: str, settle: Settle) -> bool:
        """Ends the override in force on a student's task (kept on record, marked undone), and settles the
        student's submissions again by `settle`, in the same transaction (add_override); False if none."""
        with self.db:
            done = self.db.execute("UPDATE overrides SET undone = ?, undone_by = ? WHERE student = ? AND task = ?"
                                   " AND undone IS NULL", (now(), author, student, task)).rowcount
            for (sid,) in self.db.execute("SELECT id FROM submissions WHERE student = ?", (student,)).fetchall():
                self._resettle(sid, settle)
        return bool(done)

    def overrides(self, student: str | None = None) -> pd.DataFrame:
        """Every override on record (or one student's), undone ones included, oldest first."""
        if student is None:
            return self._table("SELECT * FROM overrides ORDER BY id")
        return self._table("SELECT * FROM overrides WHERE student = ? ORDER BY id", (student,))

    # --- Slurm: shard stores merged into this one (grader/slurm/merge.py) -------------------------------------

    def _columns(self, table: str) -> list[str]:
        return [row[1] for row in self.db.execute(f"PRAGMA main.table_info({table})")]

    def merge_from(self, shard: Path, origin: str, settle: Settle, students: set[str] | None = None
                   ) -> tuple[int, int]:
        """Copies every submission of the shard store at `shard` not merged from it before, each in one
        transaction with its cases, timing samples, sanitizer runs and scores, and with it, the first time, its
        grading run (seed, devices, limits, isolation: as the shard recorded them). A submission of the same
        (student, sha256, harness version, rubric hash) already here is replaced, as `save` replaces it.
        `origin` names the shard (batch/shard): merging it again adds nothing. With `students`, only their
        submissions are merged (a store of part of a class, for the readers that read a whole store). Each is
        settled by `settle` (the scoring chain's last steps) with the overrides on record here, as one graded
        here would be. Returns (merged now, merged before)."""
        Store(shard).close()  # brings the shard's store up to date, like any store opened
        try:
            self.db.execute("ATTACH DATABASE ? AS shard", (str(shard),))
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{shard}: cannot be read to merge ({e})") from None
        done = before = 0
        try:
            runs = {}
            for (sid, run_id, student) in self.db.execute(
                    "SELECT id, run_id, student FROM shard.submissions ORDER BY id").fetchall():
                if students is not None and student not in students:
                    continue
                key = f"{origin}/submission/{sid}"
                if self.db.execute("SELECT 1 FROM merged WHERE origin = ?", (key,)).fetchone():
                    before += 1
                    continue
                with self.db:
                    if run_id not in runs:
                        runs[run_id] = self._merge_run(run_id, f"{origin}/run/{run_id}")
                    local = self._merge_submission(sid, runs[run_id])
                    self._resettle(local, settle)  # the overrides on record here apply to it
                    self.db.execute("INSERT INTO merged VALUES (?, 'submission', ?, ?)", (key, local, now()))
                done += 1
        finally:
            self.db.execute("DETACH DATABASE shard")
        return done, before

    def _merge_run(self, run_id: int, key: str) -> int:
        row = self.db.execute("SELECT local_id FROM merged WHERE origin = ?", (key,)).fetchone()
        if row:
            return row[0]
        cols = ", ".join(c for c in self._columns("grading_runs") if c != "id")
        local = self.db.execute(f"INSERT INTO grading_runs ({cols}) SELECT {cols} FROM shard.grading_runs"
                                " WHERE id = ?", (run_id,)).lastrowid
        self.db.execute("INSERT INTO merged VALUES (?, 'run', ?, ?)", (key, local, now()))
        return local

    def _merge_submission(self, sid: int, run_id: int) -> int:
        student, sha, harness, rubric = self.db.execute(
            "SELECT student, sha256, harness_version, rubric_sha256 FROM shard.submissions WHERE id = ?",
            (sid,)).fetchone()
        self.db.execute("DELETE FROM submissions WHERE student = ? AND sha256 = ? AND harness_version = ?"
                        " AND rubric_sha256 = ?", (student, sha, harness, rubric))
        cols = [c for c in self._columns("submissions") if c not in ("id", "run_id")]
        local = self.db.execute(f"INSERT INTO submissions (run_id, {', '.join(cols)}) SELECT ?, {', '.join(cols)}"
                                " FROM shard.submissions WHERE id = ?", (run_id, sid)).lastrowid
        case_cols = ", ".join(c for c in self._columns("cases") if c not in ("id", "submission_id"))
        sample_cols = ", ".join(c for c in self._columns("samples") if c != "case_id")
        for (cid,) in self.db.execute("SELECT id FROM shard.cases WHERE submission_id = ? ORDER BY id",
                                      (sid,)).fetchall():
            new = self.db.execute(f"INSERT INTO cases (submission_id, {case_cols}) SELECT ?, {case_cols}"
                                  " FROM shard.cases WHERE id = ?", (local, cid)).lastrowid
            self.db.execute(f"INSERT INTO samples (case_id, {sample_cols}) SELECT ?, {sample_cols}"
                            " FROM shard.samples WHERE case_id = ? ORDER BY pair", (new, cid))
        for table in ("sanitizer_runs", "profile_runs", "scores"):
            cols = ", ".join(c for c in self._columns(table) if c != "submission_id")
            self.db.execute(f"INSERT INTO {table} (submission_id, {cols}) SELECT ?, {cols} FROM shard.{table}"
                            " WHERE submission_id = ? ORDER BY rowid", (local, sid))
        return local

    def merged_origins(self) -> pd.DataFrame:
        """What was merged in from shard stores: origin, kind, local id, when."""
        return self._table("SELECT * FROM merged ORDER BY rowid")

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

    def submissions_by_id(self, submission_ids: list[int]) -> pd.DataFrame:
        """These stored submissions (ids the store does not hold are left out), in the order they were stored."""
        return self._where_in("SELECT * FROM submissions WHERE 1", "id", submission_ids, "id")

    def case_shapes(self, submission_ids: list[int]) -> pd.DataFrame:
        """Which task and shape each case of these submissions ran (what hiding a case is decided by)."""
        return self._where_in("SELECT submission_id, task, shape FROM cases WHERE 1", "submission_id",
                              submission_ids, "id")

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

    def late_unknown(self, submission_ids: list[int]) -> pd.DataFrame:
        """Submissions a late policy judged with no time known (Canvas marked them LATE; received_from
        'canvas-late', the policy's words stored): for a TA to look at."""
        return self._where_in("SELECT student, late FROM submissions WHERE received_from = ? AND late != ''", "id",
                              submission_ids, "student, id", (CANVAS_LATE,))

    def sanitizer_runs_for(self, submission_ids: list[int] | None = None) -> pd.DataFrame:
        return self._where_in("SELECT * FROM sanitizer_runs WHERE 1", "submission_id", submission_ids,
                              "submission_id, rowid")

    def sanitizer_runs(self, submission_id: int) -> pd.DataFrame:
        return self.sanitizer_runs_for([submission_id])

    def profile_runs(self, submission_id: int) -> pd.DataFrame:
        """The performance counters' runs of one submission (findings and numbers as JSON text)."""
        return self._where_in("SELECT * FROM profile_runs WHERE 1", "submission_id", [submission_id], "task")

    def submission_devices(self, submission_ids: list[int] | None = None) -> pd.DataFrame:
        """Where each submission was graded: host, GPU index, name, UUID and NVIDIA driver, from its grading run's
        device record. A run on one GPU (each Slurm array task's) names it; for a run on several GPUs at once the
        GPU is not recorded per submission, and these columns are empty (gpus lists the run's)."""
        rows = self._where_in("SELECT s.id AS submission_id, s.student, r.devices FROM submissions s"
                              " JOIN grading_runs r ON r.id = s.run_id WHERE 1", "s.id", submission_ids, "s.id")
        out = []
        for row in rows.itertuples(index=False):
            devices = json.loads(row.devices or "[]")
            one = devices[0] if len(devices) == 1 else {}
            out.append({"submission_id": row.submission_id, "student": row.student, "host": one.get("host"),
                        "gpu": one.get("gpu"), "gpu_name": one.get("name"), "uuid": one.get("uuid"),
                        "nvidia_driver": one.get("nvidia_driver"),
                        "gpus": ",".join(str(d.get("gpu")) for d in devices)})
        return pd.DataFrame(out, columns=["submission_id", "student", "host", "gpu", "gpu_name", "uuid",
                                          "nvidia_driver", "gpus"])

    def isolations(self) -> dict[int, Isolation]:
        """How student code was isolated, per grading run id."""
        return {run_id: Isolation.stored(record, words)
                for run_id, record, words in self.db.execute("SELECT id, isolation, sandbox FROM grading_runs")}

    def integrity(self) -> str:
        """SQLite's own check of the file: 'ok' when it is intact."""
        return self.db.execute("PRAGMA integrity_check").fetchone()[0]
