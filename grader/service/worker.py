"""One GPU's worker: takes the service's jobs from the store's queue and grades each by the path a class takes.

A worker is a process of its own (`bin/grader serve-worker`, started by grader/service/supervisor.py), one per
GPU, so a job that brings it down takes nothing else with it: the service gives the job back to the queue and
starts the worker again. It opens one grading session for its life (grader/grading/session.py: its run's record,
its solution's process and measured times), the one `grade` opens, and hands it each job: intake → build → run →
score → store; the grade and the job's end are stored in one transaction (grader/store/jobs.py's finish_in). The
worker decides only which job, and what the queue hears of it.

Two stages, so that the GPU never waits for a compiler (issue 43): the worker's build stage (`builders` threads on
the host's cores) claims jobs in the queue's fair order and does their intake and build while the GPU's thread runs
the job before; the GPU's thread takes built jobs in the order they were claimed. A job that is rejected or does
not build is stored by the build stage and never reaches the GPU. The stage holds at most `builders` + 1 jobs
ahead of the GPU (phase `building`, then `built`); they are running jobs of this worker in the store, so the
queue's rules hold across both stages (one job per student at a time, one claim, stored once). A job the build
stage holds when the worker stops or dies goes back to the queue at its old place, uncounted: it did not kill the
worker (the supervisor counts only a job past its build, grader/store/jobs.py's BUILD_PHASES).

Before a grade is stored, the worker checks its GPU: the solution must still pass one small case. A GPU that
fails the check (or a grader failure of any kind) stops the worker: the job goes back to the queue for another
GPU, the worker's row says why (`bin/grader status`), and it takes no more jobs.

The machine's faults (grader/store/faults.py: a full or read-only disk, a locked store) are not the job's: the
worker gives the job back to the queue at its old place, uncounted, waits until the results folder can be written
again, and goes on by itself. A build that failed in words of such a fault is built once more before it is a
verdict (a student's own `#error No space left on device` fails both times); no grade is stored while the results
folder is faulty. A fault before the worker is ready ends it with MACHINE_FAULT: the supervisor starts it again
after a pause, without counting it as a worker that cannot start.

SIGTERM (the service shutting down) lets the job in hand finish, then the worker stops.
"""
from __future__ import annotations

import json
import os
import queue
import secrets
import signal
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from grader.backends.base import Backend
from grader.core.registry import Registry
from grader.core.rubric import Rubric
from grader.grading.session import GradingSession
from grader.service import policy
from grader.intake.submission import Entry, Submission
from grader.outcomes.build_result import BuildResult
from grader.service.log import say
from grader.store.faults import MachineFault, fault_of, results_fault, words_fault
from grader.store.jobs import BUILT, PROFILE, Job, Jobs, LostClaim
from grader.store.store import Store

SOURCE = "service"  # the grading run's source (grading_runs.source)
IDLE_POLL = 0.2  # seconds between looks at an empty queue
GPU_FAILED = 3  # the worker's exit status when its GPU (or the grader) failed: the supervisor does not restart it
MACHINE_FAULT = 4  # the exit status when the machine failed before the worker was ready: started again after a pause
HEAL_POLL = 2.0  # seconds between looks at a faulty results folder


def phases(build, result, held: float) -> str:
    """Where a job's seconds went, for the staff comparing workers: the build (before the device took it), and
    of the device's seconds the sanitizer runs and the cases (checks and timed pairs) with the rest."""
    if build is None:
        return ""
    sanitizer = sum(o.seconds for o in result.sanitizer)
    return (f": build {build.seconds:.1f} s, {len(result.sanitizer)} sanitizer checks {sanitizer:.1f} s, "
            f"cases {max(0.0, held - sanitizer):.1f} s")


def held_words(gpu: str | None, held: float, built: float, reached: bool = True, measuring: float = 0.0) -> str:
    """What a job cost its worker's device, for the job's log line: the seconds it held it (`measuring` of them
    spent measuring the solution's times, which the worker's later jobs reuse), and the seconds its intake and
    build took on the CPU before (the device ran the job before meanwhile)."""
    device = "this machine's CPU worker" if gpu == "cpu" else f"GPU {gpu}"
    if not reached:
        return f"never reached {device}: finished by the build stage in {built:.1f} s"
    shared = (f", {measuring:.1f} s of it measuring the solution's times, which the worker's later jobs reuse"
              if measuring >= 0.05 else "")
    return f"held {device} {held:.1f} s{shared}; built before it in {built:.1f} s on the CPU"


@dataclass
class Built:
    """A job its build stage finished: what the device's thread runs next."""
    job: Job
    claim: str
    sub: Submission
    build: BuildResult
    built: float  # seconds of intake and build
    started: float  # time.monotonic() when the build stage took it


class GpuFailed(RuntimeError):
    """The worker's GPU, or the grader on it, failed: the worker stops taking jobs."""


@dataclass
class WorkerOptions:
    results: Path
    name: str  # gpu0, ...
    gpu: str | None
    parent: int  # the service's pid: the worker stops when it is gone
    command: str
    seed: int | None = None
    work: Path | None = None  # the worker's build folder (its disk is looked at beside the results folder's)
    builders: int = 1  # threads of its build stage


def failed_build_words(result) -> str:
    """The texts of a build that failed (its reason, log and each file's message), to look for a disk's fault."""
    build = result.build if result is not None else None
    if build is None:
        return ""
    return "\n".join([build.reason, build.log, *build.unbuilt.values()])


class Worker:
    def __init__(self, options: WorkerOptions, backend: Backend, registry: Registry, rubric: Rubric):
        self.o, self.backend, self.registry, self.rubric = options, backend, registry, rubric
        self.store = Store(Path(options.results) / "grades.sqlite")
        self.jobs = Jobs(self.store)
        self.stopping = False
        self.session: GradingSession | None = None  # the worker's grading run, for its life
        self.ready: queue.Queue[Built] = queue.Queue()  # built jobs, in the order the build stage claimed them
        self._ahead: dict[int, str] = {}  # jobs the build stage claimed and the device has not taken: id -> claim
        self._claiming = 0  # build threads claiming a job now (counted ahead, so no more than the room is taken)
        self._lock = threading.Lock()
        self._stage_failed: BaseException | None = None  # the build stage's own failure, raised on the GPU's thread

    def log(self, line: str):
        say(f"{self.o.name}: {line}")

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        try:
            self.jobs.worker_started(self.o.name, self.o.gpu, os.getpid())
            self.session = GradingSession(self.store, self.rubric, self.registry, self.backend, [self.o.gpu],
                                          self.o.seed, self.o.command, Path(self.o.results) / "uploads", SOURCE,
                                          say=lambda line: self.log(f"warning: {line}"))
            self.jobs.worker_state(self.o.name, "idle")
        except Exception as e:
            if fault_of(e):  # nothing of a job is in hand yet: the supervisor starts this worker again later
                self.log(f"could not start: the grading machine's {fault_of(e)}; started again once it is fixed")
                self._close()
                return MACHINE_FAULT
            return self._failed(e)
        where = "this machine's CPU" if self.o.gpu == "cpu" else f"GPU {self.o.gpu}"
        self.log(f"ready on {where} (grading run {self.session.run_id}; {self.o.builders} build thread(s))")
        for i in range(self.o.builders):
            threading.Thread(target=self._build_stage, name=f"build{i}", daemon=True).start()
        try:
            while not self.stopping and os.getppid() == self.o.parent:
                if self._stage_failed is not None:
                    raise self._stage_failed
                try:
                    item = self.ready.get(timeout=IDLE_POLL)
                except queue.Empty:
                    continue
                with self._lock:
                    self._ahead.pop(item.job.id, None)
                try:
                    if item.job.kind == PROFILE:
                        self._profile(item)
                    else:
                        self._grade(item)
                except GpuFailed:
                    raise
                except Exception as e:
                    cause = fault_of(e)
                    if not cause:
                        raise
                    self._heal(item.job, item.claim, cause)
        except GpuFailed as e:
            self._release_ahead(f"its worker {self.o.name} stopped taking jobs before the GPU ran it")
            self.jobs.worker_state(self.o.name, "failed", str(e))
            self.log(f"stopped taking jobs: {e}")
            self._close()
            return GPU_FAILED
        except Exception as e:  # the grader's own failure: the same
            return self._failed(e)
        self._close()
        try:
            self._release_ahead(f"the service stopped before {self.o.name}'s GPU ran it")
            self.jobs.worker_state(self.o.name, "stopped")
        except Exception as e:  # a full disk at the stop: the row says "busy" or "waiting" until the next start
            if not fault_of(e):
                raise
        self.log("stopped")
        return 0

    # --- the build stage ------------------------------------------------------------------------------------------

    def _room(self) -> bool:
        """Whether a build thread may claim one more job (counted at once, so two threads never both take the last
        place): at most `builders` + 1 ahead of the GPU, none while the results folder is faulty."""
        with self._lock:
            if self.stopping or len(self._ahead) + self._claiming > self.o.builders:
                return False
            self._claiming += 1
        return True

    def _build_stage(self):
        """One thread of the build stage, with a store connection of its own: claims the next job, builds it, and
        stores it at once if it was rejected or did not build, else hands it to the GPU's thread."""
        store = None
        try:
            store = Store(Path(self.o.results) / "grades.sqlite")
            jobs = Jobs(store)
            while not self.stopping and self._stage_failed is None:
                if self.machine_fault() or not self._room():
                    time.sleep(IDLE_POLL)
                    continue
                job, claim = None, secrets.token_hex(8)
                try:
                    try:
                        job = jobs.claim(self.o.name, claim, mark_busy=False)
                    finally:
                        with self._lock:
                            self._claiming -= 1
                            if job is not None:
                                self._ahead[job.id] = claim
                    if job is None:
                        time.sleep(IDLE_POLL)
                        continue
                    self._build(store, jobs, job, claim)
                except Exception as e:
                    cause = fault_of(e)
                    if not cause:
                        raise
                    if job is not None:  # the machine's fault, not the job's: back at its old place, uncounted
                        with self._lock:
                            self._ahead.pop(job.id, None)
                        self._give_back_when_stored(jobs, job, claim, f"the grading machine's {cause} while it was "
                                                    "built; built again once that is fixed")
                    time.sleep(HEAL_POLL)
        except BaseException as e:  # the grader's own failure: the GPU's thread raises it and the worker stops
            self._stage_failed = e
        finally:
            if store is not None:
                store.close()

    def _give_back_when_stored(self, jobs: Jobs, job: Job, claim: str, reason: str):
        """Gives the job back to the queue, uncounted, as soon as the store takes it (a full disk may refuse it for a
        while); if the worker stops first, the supervisor gives back what it held."""
        while not self.stopping:
            try:
                jobs.give_back(job.id, reason, self.rubric.service.attempts, claim, counted=False)
                return
            except Exception as e:
                if not fault_of(e):
                    raise
                time.sleep(HEAL_POLL)

    def _build(self, store: Store, jobs: Jobs, job: Job, claim: str):
        started = time.monotonic()
        sub = self.session.read(Entry(Path(job.archive), job.student, job.received, received_from=job.received_from))
        result, build = self.session.build(sub)
        if words_fault(failed_build_words(result)):  # the disk filled under the compiler, or the student's #error
            self._check_machine()
            result, build = self.session.build(sub)
        built = time.monotonic() - started
        if result is not None:  # rejected, or it did not build: finished here, the GPU never sees it
            with self._lock:
                self._ahead.pop(job.id, None)
            if job.kind == PROFILE:
                reason = sub.rejected or (result.build.reason if result.build else "")
                outcome = {"status": str(result.status), "task": job.task, "message": f"{result.status}: {reason}"}
                return self._profiled(jobs, job, claim, outcome, str(result.status), False, started)
            return self._store(store, jobs, job, claim, result, None, started, built, 0.0)
        if not jobs.progress(job.id, claim, BUILT):
            with self._lock:
                self._ahead.pop(job.id, None)
            return self.log(f"job {job.id} ({job.student}) was taken from this worker while it was built")
        self.ready.put(Built(job, claim, sub, build, built, started))

    def _release_ahead(self, reason: str):
        """The jobs the build stage holds go back to the queue at their old place, uncounted (the worker stops)."""
        self.stopping = True
        with self._lock:
            ahead, self._ahead = dict(self._ahead), {}
        for job_id, claim in ahead.items():
            if self.jobs.unclaim([job_id], claim, reason):
                self.log(f"job {job_id} goes back to the queue at its old place: {reason}")

    def _close(self):
        if self.session is not None:  # (its run is not marked finished: the worker's next life opens another)
            self.session.close(finish=False)
            self.session = None

    def _failed(self, e: BaseException) -> int:
        """The grader's own failure (starting the solution included): its job back to the queue, this worker
        stopped for good, its row saying why."""
        reason = f"{type(e).__name__}: {e}"
        self._close()
        try:
            self._release_ahead(f"its worker {self.o.name} failed before the GPU ran it ({reason})")
            for job in self.jobs.running(self.o.name):
                self.jobs.give_back(job.id, f"its worker failed ({reason})", self.rubric.service.attempts)
            self.jobs.worker_state(self.o.name, "failed", reason)
        except Exception as again:
            if not fault_of(again):
                raise
            self.log(f"stopped taking jobs: {reason} (the store could not say so: the grading machine's "
                     f"{fault_of(again)})")
            return MACHINE_FAULT  # the supervisor settles its job once the store can be written
        self.log(f"stopped taking jobs: {reason}")
        return GPU_FAILED

    def machine_fault(self) -> str:
        """What stops grading on this machine now ("" when nothing): the results folder's and the build folder's
        disks."""
        work = self.o.work if self.o.work is not None and self.o.work.is_dir() else None
        return results_fault(Path(self.o.results)) or (results_fault(work) if work else "")

    def _heal(self, job: Job | None, claim: str, cause: str):
        """The machine failed under `job` (or before one was taken): the job goes back to the queue, uncounted, as
        soon as the store takes it; then the worker waits until the folders can be written again, and goes on."""
        self.log(f"paused: the grading machine's {cause}"
                 + (f"; job {job.id} ({job.student}) goes back to the queue at its old place" if job else "")
                 + "; grading resumes by itself once it is fixed")
        given_back = job is None
        waited, said = 0.0, cause
        while not self.stopping and os.getppid() == self.o.parent:
            try:
                if not given_back:
                    self.jobs.give_back(job.id, f"the grading machine's {cause} while it was graded; graded again "
                                        "once that is fixed", self.rubric.service.attempts, claim, counted=False)
                    given_back = True
                now_fault = self.machine_fault()
                if not now_fault:
                    self.jobs.worker_state(self.o.name, "idle")
                    self.log(f"resumed after {waited:.0f} s: the results folder can be written again")
                    return
                if now_fault != said:
                    self.log(f"still paused: the grading machine's {now_fault}")
                    said = now_fault
                self.jobs.worker_state(self.o.name, "waiting", f"the grading machine's {now_fault}")
            except Exception as e:
                if not fault_of(e):
                    raise
            time.sleep(HEAL_POLL)
            waited += HEAL_POLL

    def _stop(self, *_):
        self.stopping = True

    def _check_machine(self):
        """Raises MachineFault when the results or build folder cannot be written now: what was measured meanwhile
        is not a verdict."""
        fault = self.machine_fault()
        if fault:
            raise MachineFault(fault)

    def _taken(self, job: Job, what: str):
        """The job is no longer this worker's (staff cancelled or re-queued it, or it went back to the queue): the
        log says so, and the staff see the worker free again, not busy with no job."""
        self.log(f"job {job.id} ({job.student}) was taken from this worker {what}")
        self.jobs.worker_state(self.o.name, "idle")

    def _profile(self, item: Built):
        """make profile GPU=1: the student's build (the build stage's), Nsight Compute on the task's profile case,
        the solution's numbers beside it; kept on the job, graded nothing. One that does not build, or that the
        profiler could not count, does not count against the hourly limit."""
        job, claim = item.job, item.claim
        if not self.jobs.taken_by_gpu(job.id, claim, "profiling", self.o.name):
            return self._taken(job, "before it was profiled")
        result, status, counted = self.session.gpu_profile(item.sub, item.build, job.task, self.o.gpu)
        return self._profiled(self.jobs, job, claim, result, status, counted, item.started)

    def _profiled(self, jobs: Jobs, job: Job, claim: str, result: dict, status: str, counted: bool, started: float):
        seconds = time.monotonic() - started
        try:
            jobs.finish_profile(job.id, claim, json.dumps(result), status, counted, seconds)
        except LostClaim:
            return self.log(f"job {job.id} ({job.student}) was taken from this worker meanwhile; its profile here "
                            "is dropped")
        self.log(f"job {job.id} {job.student} profile {jobs.attempt_number(job)} of {job.task}: {status} in "
                 f"{seconds:.1f} s")

    def _grade(self, item: Built):
        """A built job on this worker's device: its cases and tools, the GPU's health, then the grade stored."""
        job, claim, sub, build = item.job, item.claim, item.sub, item.build
        taken = time.monotonic()
        if not self.jobs.taken_by_gpu(job.id, claim, "running", self.o.name):
            return self._taken(job, "before its cases ran")

        def progress(done: int, total: int):
            if not self.jobs.progress(job.id, claim, "running", done, total):
                raise LostClaim(f"job {job.id} is no longer this worker's")
        solution = self.session.times(self.o.gpu)
        measured_before = solution.measuring
        try:
            result = self.session.run(sub, build, self.o.gpu, progress)
        except LostClaim:  # the staff cancelled or re-queued it: the rest of its cases would be thrown away
            return self._taken(job, "while graded; stopped grading it")
        sick = self.session.health(self.o.gpu)
        if sick:  # what this GPU measured cannot be trusted: another GPU grades the job again
            self.jobs.give_back(job.id, f"GPU {self.o.gpu} failed after grading it ({sick})", self.rubric.service.attempts,
                                claim)
            raise GpuFailed(sick)
        self._check_machine()
        self.jobs.progress(job.id, claim, "storing")
        self._store(self.store, self.jobs, job, claim, result, build, item.started, item.built,
                    time.monotonic() - taken, solution.measuring - measured_before)

    def _store(self, store: Store, jobs: Jobs, job: Job, claim: str, result, build, started: float, built: float,
               held: float, measuring: float = 0.0):
        """The grade and the job's end in one transaction, through the connection of the thread that has it (the
        build stage's for a job that did not build, with no device seconds), and the job's log line. `measuring`:
        of the `held` seconds, those spent measuring the solution's times (grader/run/budget.py's SolutionTimes)."""
        sub = result.submission
        seconds = time.monotonic() - started
        counted = policy.counts(result)  # rejected, not built, or no file compiled: not counted
        replaced = jobs.same_archive_grades(sub.student, sub.sha256)
        try:
            sid = self.session.save(result, store=store, then=lambda sid: jobs.finish_in(
                job.id, claim, sid, result.status, counted, seconds, replaced, gpu_seconds=held, build_seconds=built,
                solution_seconds=measuring))
        except LostClaim:
            if store is self.store:
                return self._taken(job, "meanwhile; its grade here is dropped")
            return self.log(f"job {job.id} ({job.student}) was taken from this worker meanwhile; its grade here is "
                            "dropped")
        row = store.submissions(job.student).set_index("id").loc[sid]
        waited = (datetime.now(timezone.utc) - datetime.fromisoformat(job.received)).total_seconds() - seconds
        cost = held_words(self.o.gpu, held, built, build is not None, measuring)
        self.log(f"job {job.id} {job.student} attempt {jobs.attempt_number(job)}: {result.status} "
                 f"{row['total']:.1f}/{row['max_total']:.0f} in {seconds:.1f} s{phases(build, result, held)} "
                 f"(waited {max(0.0, waited):.1f} s; {cost})")
