"""The merge: every shard's store of every batch in RESULTS merged into RESULTS/grades.sqlite.

    bin/grader merge [--results DIR]     (the batch's merge job runs this, after the whole array)

Each submission goes in as one transaction (Store.merge_from), with its grading run, so a merge that is stopped
midway is simply run again: what is merged is recorded by origin (batch/shard/id) and never merged twice. A shard
whose task is still in Slurm's queue is left for later (its store is being written, on another node). After the
merge the command writes the reports, as `grade` does. Each merged submission is settled again by the scoring chain
(grader/scoring/chain.py) with the overrides on record in RESULTS, as one graded there would be.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from grader.scoring.chain import settle_stored
from grader.slurm import scheduler
from grader.slurm.batch import Manifest, batches, now, write_json
from grader.store.store import Store


@dataclass
class Merged:
    merged: int = 0  # submissions merged now
    before: int = 0  # merged by an earlier merge
    shards: int = 0  # shard stores read
    waiting: list[str] = field(default_factory=list)  # shards left alone: their task is still queued or running
    batches: list[str] = field(default_factory=list)


def in_queue(found: list[Manifest]) -> set[str]:
    """The array tasks of these batches still in Slurm's queue ("1234_5"); nothing when Slurm cannot be asked
    (the merge then reads every store there is)."""
    arrays = [m.jobs["array"] for m in found if m.jobs.get("array")]
    try:
        return {job for job, state in scheduler.queued(arrays).items() if not state.ended}
    except scheduler.SlurmError as e:
        print(f"note: {e}; merging every shard store there is", file=sys.stderr)
        return set()


def merge_results(results: Path) -> Merged:
    results = Path(results)
    found = batches(results)
    out = Merged(batches=[m.batch for m in found])
    if not found:
        return out
    busy = in_queue(found)
    store = Store(results / "grades.sqlite")
    try:
        for manifest in found:
            counts = {"merged_now": 0, "merged_in_all": 0, "waiting": []}
            for index in range(len(manifest.shards)):
                path = manifest.shard_store(index)
                if f"{manifest.jobs.get('array')}_{index}" in busy:
                    counts["waiting"].append(index)
                    out.waiting.append(f"{manifest.batch}/{index:03d}")
                    continue
                if not path.is_file():
                    continue
                merged, before = store.merge_from(path, f"{manifest.batch}/{index:03d}", settle_stored)
                out.shards += 1
                out.merged += merged
                out.before += before
                counts["merged_now"] += merged
                counts["merged_in_all"] += merged + before
            write_json(manifest.folder / "merged.json", {"merged_at": now(), **counts})
    finally:
        store.close()
    return out
