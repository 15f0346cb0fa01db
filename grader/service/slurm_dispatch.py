"""`serve --slurm`: the service's jobs graded on a Slurm cluster, in batches, by the path `grade --slurm` takes.

The service schedules no GPU itself. Every `batch_seconds`, when no batch of its own is in Slurm's queue and jobs
wait, the dispatcher claims a batch: every waiting student's next job in the queue's fair order (at most one per
student: a batch grades one entry per student), all under one claim that is the batch's id, worker "slurm". It
submits them through grader/slurm/submit.py as that batch: each job's kept archive is an Entry with the time the
service received it and where that time came from (its clock, or Gradescope's for the bridge), never a file's
time; graded again even if an identical archive was graded before (regrade), as a local worker would. The
manifest lists the job of each entry.

Then it follows the batch (squeue): each job's phase says where its array task is (slurm: queued, running,
merging). Once the array and the merge job have left the queue, whatever the merge job did not merge (it was
cancelled) is merged here, as `grade --slurm` does before its next batch; each job is done with the grade the
merge stored for its student and archive under the batch's harness and rubric (one transaction, under the
batch's claim: a job is done once). A job whose grade is missing (its array task cancelled, timed out or failed)
goes back to the queue with the reason, or fails after the rubric's `attempts`.

Restart: a batch stays in Slurm's queue when the service stops or dies. At the next start, jobs claimed by
"slurm" whose batch was submitted (its jobs.json names the array) are followed again, not given back; those
whose batch never reached Slurm go back to the queue. A batch that could not be submitted (Slurm refused, or
another batch of these results is in the queue) gives its jobs back without counting the attempt.
"""
from __future__ import annotations

import os
import threading
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from grader.core.errors import GraderError
from grader.core.service_policy import ServicePolicy
from grader.core.status import SubmissionStatus
from grader.intake.submission import Entry
from grader.service.log import say
from grader.service.runner import Runner
from grader.slurm import scheduler
from grader.slurm.batch import SLURM_FOLDER, Manifest, new_batch_id
from grader.slurm.merge import merge_results
from grader.slurm.status import batch_status
from grader.slurm.submit import SlurmOptions, submit
from grader.store.jobs import SLURM_WORKER, Job, Jobs
from grader.store.store import Store

FOLLOW_SECONDS = 5.0  # at most this long between looks at a batch in Slurm's queue
SUBMITTING, QUEUED, RUNNING, MERGING = "slurm: submitting", "slurm: queued", "slurm: running", "slurm: merging"


@dataclass
class DispatchOptions:
    results: Path
    slurm: SlurmOptions
    device: str
    arch: str
    rubric: Path
    policy: ServicePolicy
    batch_seconds: float = 20.0
    unsafe: bool = False
    bwrap: str | None = None
    build_jobs: int = 2  # parallel builds, when the batch's build cache is made


def phase_of(task_state: str | None) -> str:
    """A job's phase from its array task's state in squeue (None: the task left the queue; the merge is next)."""
    if task_state is None:
        return MERGING
    return RUNNING if task_state.split()[0] in ("RUNNING", "COMPLETING") else QUEUED


class SlurmDispatcher(Runner):
    def __init__(self, options: DispatchOptions):
        self.o = options
        self.results = Path(options.results)
        self.stopping = threading.Event()
        self.batches: list[Manifest] = []  # this service's batches in Slurm's queue, or not yet settled
        self._thread: threading.Thread | None = None

    def log(self, line: str):
        say(f"slurm: {line}")

    def describe(self) -> str:
        where = f"partition {self.o.slurm.partition}" if self.o.slurm.partition else "the default partition"
        return f"batches to Slurm ({where}, every {self.o.batch_seconds:g} s)"

    def alive(self) -> int:
        return 1 if self._thread is not None and self._thread.is_alive() else 0

    def _open(self) -> tuple[Store, Jobs]:
        store = Store(self.results / "grades.sqlite")
        return store, Jobs(store)

    def _manifest(self, batch: str) -> Manifest | None:
        path = self.results / SLURM_FOLDER / batch / "manifest.json"
        try:
            return Manifest.load(path) if path.is_file() else None
        except (GraderError, TypeError):
            return None

    # --- the Runner ---------------------------------------------------------------------------------------------

    def start(self):
        store, jobs = self._open()
        try:
            jobs.worker_started(SLURM_WORKER, self.describe(), os.getpid())
            for claim in sorted({j.claim for j in jobs.running(SLURM_WORKER)}):
                manifest = self._manifest(claim)
                mine = jobs.claimed(claim)
                if manifest is not None and manifest.jobs.get("array"):
                    self.batches.append(manifest)
                    self.log(f"batch {claim} (jobs {', '.join(str(j.id) for j in mine)}) was handed to Slurm before "
                             "the service stopped: followed again")
                    continue
                for job in mine:
                    state = jobs.give_back(job.id, "the service stopped before its Slurm batch was submitted",
                                           self.o.policy.attempts, claim, counted=False)  # the service's, not the job's
                    self.log(f"job {job.id} ({job.student}) was never handed to Slurm: {state} again at its old place")
            jobs.worker_state(SLURM_WORKER, "busy" if self.batches else "idle")
        finally:
            store.close()
        self.log(f"ready: {self.describe()}")
        self._thread = threading.Thread(target=self._loop, name="slurm-dispatch", daemon=True)
        self._thread.start()

    def stop(self):
        """Stops dispatching; batches in Slurm's queue grade on, and the next start takes them over."""
        self.stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        store, jobs = self._open()
        try:
            jobs.worker_state(SLURM_WORKER, "stopped")
        finally:
            store.close()
        if self.batches:
            self.log(f"batches {', '.join(m.batch for m in self.batches)} stay in Slurm's queue: the next start "
                     "follows them")

    # --- the loop -----------------------------------------------------------------------------------------------

    def _loop(self):
        store, jobs = self._open()
        looked = float("-inf")
        try:
            while not self.stopping.is_set():
                try:
                    for manifest in list(self.batches):
                        self._follow(jobs, manifest)
                    if not self.batches and time.monotonic() - looked >= self.o.batch_seconds:
                        looked = time.monotonic()
                        self._dispatch(jobs)
                except GraderError as e:  # Slurm does not answer, say: the next look tries again
                    self.log(f"{e} (trying again in {self._pause():g} s)")
                    jobs.worker_state(SLURM_WORKER, "busy" if self.batches else "idle", str(e))
                except Exception:  # noqa: BLE001 - the grader's own failure: logged, and the loop goes on
                    self.log("failed:\n" + traceback.format_exc())
                self.stopping.wait(self._pause())
        finally:
            store.close()

    def _pause(self) -> float:
        return min(self.o.batch_seconds, FOLLOW_SECONDS)

    def _dispatch(self, jobs: Jobs):
        batch = new_batch_id()
        claimed = jobs.claim_batch(SLURM_WORKER, batch, SUBMITTING)
        if not claimed:
            return
        entries = [Entry(Path(j.archive), j.student, j.received, received_from=j.received_from) for j in claimed]
        try:
            done = submit(self.results / "uploads", self.results, self.o.slurm, device=self.o.device,
                          arch=self.o.arch, rubric_path=self.o.rubric, regrade=True, unsafe=self.o.unsafe,
                          bwrap=self.o.bwrap, jobs=self.o.build_jobs, entries=entries, batch=batch,
                          service_jobs={j.student: j.id for j in claimed})
        except GraderError as e:
            jobs.unclaim([j.id for j in claimed], batch, f"waiting: Slurm did not take the batch ({e})")
            jobs.worker_state(SLURM_WORKER, "idle", f"the last batch was not submitted: {e}")
            self.log(f"batch of jobs {', '.join(str(j.id) for j in claimed)} not submitted, queued again: {e}")
            return
        for job in claimed:
            jobs.progress(job.id, batch, QUEUED)
        self.batches.append(self._manifest(batch))
        jobs.worker_state(SLURM_WORKER, "busy")
        self.log(f"batch {batch}: jobs {', '.join(f'{j.id} ({j.student})' for j in claimed)} in {done.shards} "
                 f"shard(s): job array {done.array}, merge job {done.merge}")

    def _follow(self, jobs: Jobs, manifest: Manifest):
        mine = jobs.claimed(manifest.batch)
        array, merge = manifest.jobs.get("array"), manifest.jobs.get("merge")
        queued = scheduler.queued([j for j in (array, merge) if j])
        if mine and queued:
            shard_of = {manifest.entries[i]["student"]: s for s, members in enumerate(manifest.shards) for i in members}
            for job in mine:
                task = queued.get(f"{array}_{shard_of.get(job.student)}")
                jobs.progress(job.id, manifest.batch, phase_of(task.state if task else None))
            return
        if mine:
            self._settle(jobs, manifest, mine)
        self.batches.remove(manifest)
        jobs.worker_state(SLURM_WORKER, "busy" if self.batches else "idle")

    def _settle(self, jobs: Jobs, manifest: Manifest, mine: list[Job]):
        """The batch left Slurm's queue: its grades merged (here, what its merge job did not), each job done with
        its grade or given back."""
        merge_results(self.results)
        store = jobs.store
        origins = store.merged_origins()
        ours = origins[(origins["kind"] == "submission") & origins["origin"].str.startswith(f"{manifest.batch}/")]
        subs = store.submissions()
        graded = subs[subs["id"].isin(ours["local_id"]) & (subs["harness_version"] == manifest.harness_version)
                      & (subs["rubric_sha256"] == manifest.rubric_sha256)]
        missing = []
        for job in mine:
            found = graded[(graded["student"] == job.student) & (graded["sha256"] == job.sha256)]
            if found.empty:
                missing.append(job)
                continue
            row = found.sort_values("id").iloc[-1]
            seconds = (datetime.now(timezone.utc) - datetime.fromisoformat(job.started)).total_seconds()
            if jobs.finish_merged(job.id, manifest.batch, int(row["id"]), row["status"],
                                  row["status"] == SubmissionStatus.GRADED, seconds, job.sha256):
                self.log(f"job {job.id} {job.student} attempt {jobs.attempt_number(job)}: {row['status']} "
                         f"{row['total']:.1f}/{row['max_total']:.0f} in {seconds:.1f} s (batch {manifest.batch})")
        if missing:
            why = self._why_missing(manifest)
            for job in missing:
                reason = (f"its Slurm batch {manifest.batch} ended without its grade "
                          f"({why.get(job.student, 'not merged')})")
                state = jobs.give_back(job.id, reason, self.o.policy.attempts, manifest.batch)
                self.log(f"job {job.id} ({job.student}): {reason}: {state} again")

    def _why_missing(self, manifest: Manifest) -> dict[str, str]:
        """student -> how the array task of their shard ended, in Slurm's words (and the task's own note)."""
        try:
            shards = batch_status(manifest).shards
        except GraderError as e:
            return {e_["student"]: str(e) for e_ in manifest.entries}
        said = {}
        for row in shards.itertuples():
            words = f"array task {row.job}: {row.state}" + (f", {row.note}" if row.note else "")
            for i in manifest.shards[row.shard]:
                said[manifest.entries[i]["student"]] = words
        return said
