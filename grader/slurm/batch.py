"""A batch: what one `grade --slurm` submitted (its manifest), its folders, its jobs, and its shards' progress.

The manifest is written before anything is submitted and never changes after; the array's tasks read it. Each
shard's progress.json is written by the task grading it, on its own node, from its own store (SQLite's WAL
journal wants its readers on the writer's host, so `status`, on another machine, reads this file while the task
runs, and the store itself only once the task has ended).
"""
from __future__ import annotations

import json
import os
import secrets
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from grader.core.errors import GraderError

FORMAT = 1
SLURM_FOLDER = "slurm"


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def new_batch_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(2)


def write_json(path: Path, data: dict):
    """Written whole or not at all (a reader never sees half a file)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


@dataclass
class Manifest:
    batch: str
    results: str  # absolute: the folder whose grades.sqlite the merge fills
    submissions: str  # the directory graded
    entries: list[dict]  # intake.Entry.record() and the "sha256" read at submission, in the order listed
    shards: list[list[int]]  # indices into entries, one list per array task
    seed: int
    device: str  # the backend's name (grader/backends/__init__.py)
    arch: str
    cache: str  # the cache entry's folder (grader/backends/build_cache.py)
    cache_key: str
    harness_version: str
    rubric: str  # absolute path
    rubric_sha256: str
    repo: str
    python: str
    unsafe_no_sandbox: bool = False
    bwrap: str | None = None
    source: str = "plain"  # how it was delivered (--from; grader/intake/layouts.py), which each shard's grading run records
    options: dict = field(default_factory=dict)  # the Slurm options given (partition, gres, max_parallel, ...)
    skipped_same: int = 0  # submissions left out: already graded, unchanged
    service_jobs: dict = field(default_factory=dict)  # student -> the grading service's job (a service's batch)
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="microseconds"))
    format: int = FORMAT

    @property
    def folder(self) -> Path:
        return Path(self.results) / SLURM_FOLDER / self.batch

    @property
    def path(self) -> Path:
        return self.folder / "manifest.json"

    def shard_folder(self, index: int) -> Path:
        return self.folder / "shards" / f"{index:03d}"

    def shard_store(self, index: int) -> Path:
        return self.shard_folder(index) / "grades.sqlite"

    def shard_entries(self, index: int) -> list[dict]:
        if not 0 <= index < len(self.shards):
            raise GraderError(f"batch {self.batch} has shards 0 to {len(self.shards) - 1}, not {index}")
        return [self.entries[i] for i in self.shards[index]]

    def save(self) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        write_json(self.path, asdict(self))
        return self.path

    @classmethod
    def load(cls, path: Path) -> Manifest:
        data = read_json(Path(path))
        if data is None:
            raise GraderError(f"{path}: not a readable batch manifest")
        if data.get("format") != FORMAT:
            raise GraderError(f"{path}: a batch manifest of format {data.get('format')}, which this grader "
                              f"does not read (it reads format {FORMAT})")
        return cls(**data)

    # --- the jobs, once submitted --------------------------------------------------------------------------
    @property
    def jobs(self) -> dict:
        """{"array": id, "merge": id, "submitted": time, "commands": [...]}, or {} before they are submitted."""
        return read_json(self.folder / "jobs.json") or {}

    def record_jobs(self, **jobs):
        write_json(self.folder / "jobs.json", {**self.jobs, **jobs})


def batches(results: Path) -> list[Manifest]:
    """Every batch submitted for these results, oldest first (by when each was made: two batches' ids made
    within one second do not sort by time)."""
    root = Path(results) / SLURM_FOLDER
    found = []
    for path in sorted(root.glob("*/manifest.json")) if root.is_dir() else []:
        try:
            found.append(Manifest.load(path))
        except (GraderError, TypeError):
            continue  # not ours, or from another version: never merged by guess
    return sorted(found, key=lambda m: (m.created, m.batch))


def read_progress(folder: Path) -> dict | None:
    return read_json(Path(folder) / "progress.json")


def write_progress(folder: Path, **fields):
    path = Path(folder) / "progress.json"
    write_json(path, {**(read_json(path) or {}), **fields, "updated": now()})
