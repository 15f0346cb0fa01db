"""`bin/grader status`: how far a Slurm batch of RESULTS got (the latest, or --batch ID).

Per shard: its array task's state (squeue while it is queued; once it ended, sacct, or scontrol, which remembers a
job for a few minutes; else what the task itself wrote in progress.json), how many of its submissions are graded
(progress.json while the task runs, its store once it ended), and where (host, GPU, UUID). Then graded / total,
how many tasks run, wait and ended early, an ETA from the pace so far, the merge job's state, and, when
something was left ungraded, the command that grades it.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pandas as pd

from grader.core.errors import GraderError
from grader.slurm import scheduler
from grader.slurm.batch import Manifest, batches, read_json, read_progress
from grader.store.store import Store

WAITING = ("PENDING", "CONFIGURING", "REQUEUED", "RESV_DEL_HOLD", "REQUEUE_HOLD", "SUSPENDED")
# What a task that left the queue without a word from Slurm said of itself (progress.json's state).
SELF_REPORTED = {"done": "COMPLETED", "failed": "FAILED", "cancelled": "CANCELLED",
                 "running": "ENDED (gone while running)", "starting": "ENDED (gone while starting)"}


@dataclass
class BatchStatus:
    manifest: Manifest
    shards: pd.DataFrame  # shard, job, state, graded, total, host, gpu, note
    merge_state: str
    notes: list[str]

    @property
    def graded(self) -> int:
        return int(self.shards["graded"].sum())

    @property
    def total(self) -> int:
        return int(self.shards["total"].sum())


def _seconds(start: str | None, end: str | None) -> float | None:
    try:
        return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except (TypeError, ValueError):
        return None


def _stored(path: Path) -> int | None:
    if not path.is_file():
        return None
    try:
        store = Store.existing(path)
        try:
            return len(store.submissions())
        finally:
            store.close()
    except Exception:  # noqa: BLE001 - a store another node is writing: progress.json says it instead
        return None


def batch_status(manifest: Manifest) -> BatchStatus:
    jobs, notes = manifest.jobs, []
    array, merge = jobs.get("array"), jobs.get("merge")
    ids = [j for j in (array, merge) if j]
    try:
        queued = scheduler.queued(ids)
        gone = [f"{array}_{i}" for i in range(len(manifest.shards)) if f"{array}_{i}" not in queued]
        ended = scheduler.ended(([array] if gone else []) + ([merge] if merge and merge not in queued else []))
    except scheduler.SlurmError as e:
        queued, ended = {}, {}
        notes.append(f"Slurm was not asked: {e}")
    rows = []
    for index, members in enumerate(manifest.shards):
        job = f"{array}_{index}"
        progress = read_progress(manifest.shard_folder(index)) or {}
        in_queue = job in queued
        if in_queue:
            state = queued[job].state + (f" ({queued[job].reason})" if queued[job].reason else "")
        elif job in ended:
            state = ended[job].state
        else:
            state = SELF_REPORTED.get(progress.get("state"), "NOT RUN (left the queue before it started)")
        graded = progress.get("graded", 0) if in_queue else _stored(manifest.shard_store(index))
        graded = progress.get("graded", 0) if graded is None else graded
        device = progress.get("device") or {}
        rows.append({"shard": index, "job": job, "state": state, "graded": int(graded or 0), "total": len(members),
                     "host": device.get("host") or progress.get("host") or "",
                     "gpu": " ".join(str(device[k]) for k in ("name", "uuid") if device.get(k)),
                     "note": progress.get("message") or "", "started": progress.get("started"),
                     "until": progress.get("finished") or progress.get("updated"), "queued": in_queue})
    shards = pd.DataFrame(rows)
    if merge in queued:
        merge_state = queued[merge].state + (f" ({queued[merge].reason})" if queued[merge].reason else "")
    elif merge in ended:
        merge_state = ended[merge].state
    else:
        merged = read_json(manifest.folder / "merged.json")
        merge_state = f"ran ({merged['merged_at']})" if merged else "not run"
    return BatchStatus(manifest, shards, merge_state, notes)


def eta_line(status: BatchStatus) -> str:
    s = status.shards
    active = s[s["queued"]]
    remaining = int((active["total"] - active["graded"]).sum())
    if remaining == 0:
        return ""
    paced = [(_seconds(r.started, r.until), r.graded) for r in s.itertuples() if r.graded > 0]
    paced = [(t, n) for t, n in paced if t is not None]
    if not paced:
        return "ETA: not known yet (no submission graded so far)"
    per = sum(t for t, _ in paced) / sum(n for _, n in paced)
    running = int(active["state"].str.startswith("RUNNING").sum())
    limit = status.manifest.options.get("max_parallel") or len(active)
    at_once = max(1, running or min(limit, len(active)))
    minutes = remaining * per / at_once / 60
    return (f"ETA: about {max(1, round(minutes))} min ({remaining} to go, {per:.0f} s a submission so far per task, "
            f"{at_once} at once)")


def report(results: Path, batch: str | None = None) -> str:
    found = batches(results)
    if batch:
        found = [m for m in found if m.batch == batch]
        if not found:
            raise GraderError(f"no batch {batch} in {Path(results) / 'slurm'}")
    if not found:
        raise GraderError(f"no Slurm batch in {results}: `bin/grader grade DIR --slurm --results {results}` "
                          "submits one")
    status = batch_status(found[-1])
    m, s = status.manifest, status.shards
    jobs = m.jobs
    lines = [f"batch {m.batch} (submitted {jobs.get('submitted', '?')}): {status.total} submissions in "
             f"{len(m.shards)} shards; job array {jobs.get('array', '?')}"
             + (f" (at most {m.options['max_parallel']} at once)" if m.options.get("max_parallel") else "")
             + f", merge job {jobs.get('merge', '?')}", ""]
    table = s[["shard", "job", "state", "graded", "total", "host", "gpu", "note"]].copy()
    table["graded"] = table["graded"].astype(str) + "/" + table["total"].astype(str)
    lines.append(table.drop(columns="total").to_string(index=False))
    running = int(s["state"].str.startswith("RUNNING").sum())
    pending = int(s["state"].str.startswith(WAITING).sum())
    ended_short = s[~s["queued"] & (s["graded"] < s["total"])]
    lines += ["", f"graded {status.graded} / {status.total}; {running} running, {pending} pending, "
                  f"{len(ended_short)} ended with submissions left ungraded"]
    eta = eta_line(status)
    if eta:
        lines.append(eta)
    lines.append(f"merge job {jobs.get('merge', '?')}: {status.merge_state}")
    if len(ended_short) and not s["queued"].any():
        missing = int((ended_short["total"] - ended_short["graded"]).sum())
        lines.append(f"{missing} submissions were left ungraded (shards {', '.join(map(str, ended_short['shard']))}): "
                     f"`bin/grader grade {m.submissions} --slurm --results {m.results}` submits only those")
    lines += [f"note: {n}" for n in status.notes]
    return "\n".join(lines)
