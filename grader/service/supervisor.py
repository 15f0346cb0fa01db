"""The service's workers, one process per GPU (grader/service/worker.py): started, watched, restarted, stopped.

On start, every job a previous life of the service left running on a worker goes back to the queue (its worker
died with it); a job handed to Slurm in a batch is not (its batch grades on in Slurm's queue, and `serve --slurm`
takes it over: grader/service/slurm_dispatch.py). A worker that exits is looked at: its job goes back to the
queue (or fails after the rubric's `attempts`); a worker that stopped because its GPU failed stays stopped (the
staff see why in `bin/grader status`); any other is started again, unless it keeps dying within seconds of
starting with no job in hand (it cannot start). A death under a job is the job's to answer, counted by its
attempts: a submission that kills its worker every time fails after the rubric's `attempts`, and the worker goes
on with the queue. The service's own end (a crash, a restart, a stop) and the machine's faults (a full disk:
grader/store/faults.py) count against no job: such a job goes back at its old place, however often.
Stopping the service asks each worker to finish the job in hand (SIGTERM), waits up to `drain` seconds, then
ends the rest and gives their jobs back.

The watch never stops on an error of its own: a store it cannot write (a full disk) leaves the ended worker as
it is, to be settled at a later look, with one log line per minute for as long as it lasts.

Workers die with the service: on Linux the kernel sends them SIGKILL when it dies (PR_SET_PDEATHSIG), and each
also stops when its parent changes. A stray worker that outlived it anyway cannot store a job that was given
back meanwhile (grader/store/jobs.py: the claim).
"""
from __future__ import annotations

import ctypes
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grader.core.service_policy import ServicePolicy
from grader.service.connections import RateLimitedLog
from grader.service.log import say
from grader.service.runner import Runner
from grader.service.worker import GPU_FAILED, MACHINE_FAULT
from grader.store.faults import fault_of
from grader.store.jobs import BUILD_PHASES, SLURM_WORKER, Jobs
from grader.store.store import Store

WATCH_SECONDS = 0.5
QUICK_DEATH = 10.0  # a worker dying this soon after starting, with no job, three times running: not started again
FAULT_PAUSE = 5.0  # seconds before a worker that stopped for the machine's fault (a full disk) is started again


def _die_with_parent():
    """In the worker, before exec: SIGKILL when the service dies (Linux); elsewhere the worker's own check."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def worker_name(gpu: str | None, index: int) -> str:
    """gpu0 for GPU 0; the CPU backend's device as it is named (cpu); worker1 for a device without a name."""
    if gpu is None:
        return f"worker{index}"
    return f"gpu{gpu}" if str(gpu).isdigit() else str(gpu)


@dataclass
class _Worker:
    name: str
    gpu: str | None
    process: subprocess.Popen | None = None
    started: float = 0.0
    quick_deaths: int = 0
    given_up: str = ""
    not_before: float = 0.0  # monotonic: not started again before this (after the machine's fault)


class Supervisor(Runner):
    def __init__(self, results: Path, gpus: list[str | None], command: Callable[[str, str | None], list[str]],
                 policy: ServicePolicy, drain: float = 60.0):
        self.results, self.policy, self.drain = Path(results), policy, drain
        self.command = command  # (worker name, gpu) -> the worker's command line
        self.workers = [_Worker(worker_name(gpu, i), gpu) for i, gpu in enumerate(gpus)]
        self.stopping = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._done = threading.Event()  # stop() has settled every worker: the watch's thread may end
        self._repeats = RateLimitedLog()  # an error that repeats at every look: a line a minute

    def log(self, line: str):
        say(line)

    def log_repeating(self, kind: str, line: str):
        """`line` once a minute however often it happens, with how many times it did meanwhile."""
        self._repeats.note(kind, line)

    def _jobs(self) -> tuple[Store, Jobs]:
        store = Store(self.results / "grades.sqlite")
        return store, Jobs(store)

    def start(self):
        """Recovery and every worker's start happen on the watch's own thread, which lives as long as the service:
        PR_SET_PDEATHSIG ends a worker when the thread that started it ends, not only the process."""
        self._recovered = False
        self._thread = threading.Thread(target=self._watch, name="supervisor", daemon=True)
        self._thread.start()

    def _recover(self):
        """What a previous life left running goes back to the queue, then the workers start. A store that cannot be
        written now (a full disk) is tried again at each look of the watch, the workers started only after."""
        try:
            store, jobs = self._jobs()
            try:
                for job in jobs.running():
                    if job.worker == SLURM_WORKER:  # its batch grades on in Slurm's queue, whoever serves meanwhile
                        continue
                    state = jobs.give_back(job.id, "the service restarted while it was being graded",
                                           self.policy.attempts, counted=False)
                    self.log(f"job {job.id} ({job.student}) was running when the service stopped: {state} again at "
                             f"its old place (not counted as an attempt)")
            finally:
                store.close()
        except Exception as e:  # tried again at the next look; the workers wait for it
            cause = fault_of(e)
            self.log_repeating("recover", "waiting: " + (f"the grading machine's {cause}" if cause else
                                                         f"{type(e).__name__}: {e}") + "; the workers start once it is fixed")
            return
        self._recovered = True
        for w in self.workers:
            self._spawn(w)

    def _spawn(self, w: _Worker):
        w.process = subprocess.Popen(self.command(w.name, w.gpu), preexec_fn=_die_with_parent)
        w.started = time.monotonic()

    def _watch(self):
        try:
            self._looks()
        finally:  # the workers' parent thread outlives them (PR_SET_PDEATHSIG): it ends after stop() is done
            self._done.wait()

    def _looks(self):
        while not self.stopping:
            with self._lock:
                if self.stopping:
                    return
                if not self._recovered:
                    self._recover()
                for w in self.workers if self._recovered else ():
                    try:
                        self._look(w)
                    except Exception as e:  # the watch outlives its own errors: the next look tries again
                        cause = fault_of(e)
                        self.log_repeating(f"{w.name}:{cause or type(e).__name__}",
                                           f"worker {w.name}: " + (f"waiting: the grading machine's {cause}" if cause
                                                                    else f"{type(e).__name__}: {e}")
                                           + "; tried again every few seconds")
            time.sleep(WATCH_SECONDS)

    def _look(self, w: _Worker):
        if w.process is None:
            if not w.given_up and w.not_before and time.monotonic() >= w.not_before:
                w.not_before = 0.0
                self._spawn(w)
            return
        if w.process.poll() is None:
            return
        self._ended(w, w.process.returncode)

    def _ended(self, w: _Worker, code: int):
        """Settles a worker that ended: its job back to the queue, then it is started again (or not). Raises, with
        nothing changed but the store's rows it could write, when the store cannot be written: the next look
        settles it again."""
        store, jobs = self._jobs()
        try:
            why = f"signal {-code}" if code < 0 else f"exit status {code}"
            held = jobs.running(w.name)
            fault = code == MACHINE_FAULT
            for job in held:  # counted only where it may have killed the worker: past its build
                state = jobs.give_back(job.id, f"its worker {w.name} ended ({why})", self.policy.attempts,
                                       counted=not fault and job.phase not in BUILD_PHASES)
                self.log(f"job {job.id} ({job.student}): worker {w.name} ended ({why}); the job is {state}")
            w.process = None
            if fault:  # the worker said why in its log; a full disk is not the worker's to give up on
                w.not_before = time.monotonic() + FAULT_PAUSE
                self.log(f"worker {w.name} stopped for the grading machine's fault: started again in "
                         f"{FAULT_PAUSE:g} s")
                return
            if code == GPU_FAILED:
                self.log(f"worker {w.name} stopped for good (its GPU or the grader failed): `bin/grader status` says why")
                return
            quick = not held and time.monotonic() - w.started < QUICK_DEATH
            w.quick_deaths = w.quick_deaths + 1 if quick else 0
            if w.quick_deaths >= 3:
                last = next((r["reason"] for r in jobs.workers() if r["name"] == w.name and r["state"] == "failed"), "")
                w.given_up = (f"it ended {w.quick_deaths} times within {QUICK_DEATH:g} s of starting ({why})"
                              + (f"; {last}" if last else ""))
                jobs.worker_started(w.name, w.gpu, 0)
                jobs.worker_state(w.name, "failed", w.given_up)
                self.log(f"worker {w.name} not started again: {w.given_up}")
                return
            self.log(f"worker {w.name} ended ({why}): started again")
        finally:
            store.close()
        self._spawn(w)

    def stop(self):
        """Finishes or gives back every job in hand, then returns (the service's clean shutdown)."""
        with self._lock:
            self.stopping = True
        self.log(f"each worker finishes the job in hand (at most {self.drain:g} s)")
        live = [w for w in self.workers if w.process is not None and w.process.poll() is None]
        for w in live:
            w.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.drain
        for w in live:
            try:
                w.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                w.process.kill()
                w.process.wait()
        try:
            self._give_back_unfinished(live)
        except Exception as e:  # the next start gives them back (they stay `running` in the store until then)
            cause = fault_of(e)
            if not cause:
                raise
            self.log(f"the unfinished jobs stay in the store as running (the grading machine's {cause}); the next "
                     "start puts them back in the queue")
        finally:
            self._done.set()

    def _give_back_unfinished(self, live: list[_Worker]):
        store, jobs = self._jobs()
        try:
            for w in live:
                for job in jobs.running(w.name):
                    jobs.give_back(job.id, f"the service stopped while {w.name} graded it", self.policy.attempts,
                                   counted=False)
                    self.log(f"job {job.id} ({job.student}) was not finished within {self.drain:g} s: queued again at "
                             f"its old place")
                row = next((r for r in jobs.workers() if r["name"] == w.name), None)
                if row is not None and row["state"] not in ("failed", "stopped"):
                    jobs.worker_state(w.name, "stopped")
        finally:
            store.close()

    def alive(self) -> int:
        return sum(1 for w in self.workers if w.process is not None and w.process.poll() is None)

    def describe(self) -> str:
        return f"{len(self.workers)} worker(s) ({', '.join(w.name for w in self.workers)})"
