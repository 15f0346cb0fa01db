"""One array task: grade one shard of a batch into the shard's own store, on the one GPU Slurm gave the task.

    bin/grader shard MANIFEST [--index N]      (N: $SLURM_ARRAY_TASK_ID; the batch's shard.sh runs this)

The backend is the one the batch names (grader/backends/__init__.py: gpu; cpu, whose tasks grade correctness only on the
CPUs Slurm gives them, asking for no GPU; the tests' simulated one), opened on the batch's build cache after the cache's key is computed again here (same sources,
same toolchain), with the sandbox and the rubric's limits exactly as `grade` on one machine. The task grades on
one GPU: the first of CUDA_VISIBLE_DEVICES, which Slurm sets to the GPUs of --gres; the solution's process runs
on that same GPU, so no timing is ever compared across GPUs, and the grading run records that GPU (host, name,
UUID, driver). Submissions are stored one transaction each in shards/NNN/grades.sqlite; a task started again on
the same shard (requeued) skips what its store holds. While it runs, progress.json says how far it got; Slurm's
SIGTERM (scancel, the time limit, preemption) is recorded there before the task stops.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
from pathlib import Path

from grader import backends
from grader.core.errors import GraderError
from grader.grading.grade import GradeOptions, GradeSummary, grade
from grader.intake.submission import Entry
from grader.core.rubric import load_rubric
from grader.run.sandbox import make_sandbox
from grader.backends import build_cache as cache
from grader.slurm.batch import Manifest, now, write_progress
from grader.store.store import Store

PROGRESS_SECONDS = 2.0


def shard_index(given: int | None) -> int:
    if given is not None:
        return given
    task = os.environ.get("SLURM_ARRAY_TASK_ID", "")
    if not task.isdigit():
        raise GraderError("which shard? pass --index N, or run inside a Slurm array task (SLURM_ARRAY_TASK_ID)")
    return int(task)


class _Progress(threading.Thread):
    """Writes progress.json from the shard's store every few seconds (on this node, where the store is written)."""

    def __init__(self, folder: Path, seconds: float):
        super().__init__(daemon=True)
        self.folder, self.seconds = folder, seconds
        self.halt = threading.Event()

    def run(self):
        while not self.halt.wait(self.seconds):
            self.write()

    def write(self):
        path = self.folder / "grades.sqlite"
        if not path.is_file():
            return
        try:
            store = Store.existing(path)
            try:
                subs, run = store.submissions(), store.latest_run()
            finally:
                store.close()
        except Exception:  # noqa: BLE001 - best effort (a locked store, say): the store itself is what counts
            return
        device = (json.loads(run["devices"]) or [{}])[0] if run is not None else {}
        write_progress(self.folder, graded=len(subs), students=sorted(set(subs["student"])),
                       device={k: device.get(k) for k in ("host", "gpu", "name", "uuid", "nvidia_driver")})

    def stop(self):
        self.halt.set()
        self.write()


def _stop_on_sigterm(folder: Path):
    """Slurm ends a task with SIGTERM (then SIGKILL): record it, then stop as an interrupt would, which keeps
    every submission already stored. Returns the handler it replaced (None off the main thread)."""
    def handler(signum, frame):
        write_progress(folder, state="cancelled", finished=now(),
                       message="stopped by Slurm's SIGTERM (scancel, its time limit, or preemption)")
        raise KeyboardInterrupt
    if threading.current_thread() is threading.main_thread():
        return signal.signal(signal.SIGTERM, handler)
    return None


def run_shard(manifest_path: Path, index: int | None = None, work: Path | None = None,
              progress_seconds: float = PROGRESS_SECONDS, command: str | None = None) -> GradeSummary:
    manifest = Manifest.load(manifest_path)
    index = shard_index(index)
    entries = manifest.shard_entries(index)
    folder = manifest.shard_folder(index)
    folder.mkdir(parents=True, exist_ok=True)
    write_progress(folder, index=index, total=len(entries), state="starting", message="", started=now(),
                   finished=None, host=socket.gethostname(), pid=os.getpid(), job=os.environ.get("SLURM_JOB_ID"),
                   array_job=os.environ.get("SLURM_ARRAY_JOB_ID"), task=os.environ.get("SLURM_ARRAY_TASK_ID"))
    replaced = _stop_on_sigterm(folder)
    own_work = work is None
    work = Path(work) if work else Path(tempfile.mkdtemp(prefix=f"grader-{manifest.batch}-{index:03d}-"))
    watcher = _Progress(folder, progress_seconds)
    state, message = "failed", ""
    try:
        kind = backends.get(manifest.device)
        entry = cache.verify(Path(manifest.cache), kind, manifest.arch, Path(manifest.repo))
        sandbox = None
        if kind.sandboxed:
            sandbox = make_sandbox(manifest.unsafe_no_sandbox, manifest.bwrap, work)
        backend, registry = kind.open(entry.folder, entry.record, work, sandbox, manifest.arch)
        rubric = load_rubric(Path(manifest.rubric), registry)
        if rubric.sha256 != manifest.rubric_sha256:
            raise GraderError(f"{manifest.rubric} changed since the batch was submitted (sha256 "
                              f"{rubric.sha256[:12]}, not {manifest.rubric_sha256[:12]}): submit again")
        if backend.harness_version != manifest.harness_version:
            raise GraderError(f"the harness here is {backend.harness_version}, the batch's {manifest.harness_version}")
        backend.set_limits(rubric.limits)
        gpus = kind.devices("all")
        if len(gpus) > 1:
            print(f"shard {index}: {len(gpus)} GPUs visible ({','.join(gpus)}); grading on the first only, so that "
                  "each submission is timed beside the solution on one GPU", file=sys.stderr)
        gpu = gpus[0]
        if kind.sandboxed and not manifest.unsafe_no_sandbox:
            backend.check_gpu(gpu)
        write_progress(folder, state="running")
        watcher.start()
        jobs = int(os.environ.get("SLURM_CPUS_PER_TASK") or manifest.options.get("cpus_per_task") or 2)
        summary = grade(GradeOptions(Path(manifest.submissions), folder, [gpu], jobs=jobs, seed=manifest.seed,
                                     source=manifest.source,
                                     progress=False, command=command or " ".join(sys.argv),
                                     entries=[Entry.from_record(e) for e in entries]),
                        rubric, registry, backend)
        state = "done"
        return summary
    except KeyboardInterrupt:
        state, message = "cancelled", "stopped by Slurm's SIGTERM (scancel, its time limit, or preemption)"
        raise
    except BaseException as e:
        message = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise
    finally:
        if watcher.is_alive():
            watcher.stop()
        else:
            watcher.write()
        write_progress(folder, state=state, message=message, finished=now())
        if replaced is not None:  # a shard run inside another program (the tests) gives SIGTERM back
            signal.signal(signal.SIGTERM, replaced)
        if own_work:
            shutil.rmtree(work, ignore_errors=True)
