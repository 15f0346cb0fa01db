"""The shared build cache: the pristine harness and the solution, built once for their sources and toolchain and
read by every grading run after (`grade`, the service's workers, each Slurm array task of a class).

An entry is named by its key, the sha256 of everything the build depends on: each file of the pristine harness
(starter/ as the grader copies it, without build/ and __pycache__/), the solution's kernels, the architecture,
and the backend kind with its toolchain (nvcc's and the host compiler's versions, the header libraries' folder).
The same sources, architecture and toolchain find their entry built; anything else builds a new entry beside it.
An entry is complete once its cache.json exists (written last); it is built under a lock, so two submissions at
once build it once, and a build that was interrupted is started again from nothing.

    CACHE/<key>/cache.json   the key and what it was made of, the harness version and registry, the architecture
    CACHE/<key>/work/        the backend's build (gpu: pristine/, build/lib, build/solution, build/stubs)

Array tasks only read an entry. Each one first computes the key again on its own node: a node whose compilers
differ, or sources changed since the submission, is refused rather than graded against a build that is not its own.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from grader.backends.base import Kind
from grader.backends.local import REPO
from grader.core.errors import GraderError

SKIPPED = {"build", "__pycache__"}  # what Workspace.prepare leaves out of its copy of starter/
# Not a build input: the solution's times on the grading GPU, which `make bench-reference` writes anew each term
# and which make bench, make handout and make dist read from the repository; no build reads it, and grading
# reads no copy of it in an entry. Keyed, a new record would rebuild every entry for nothing.
NOT_BUILD_INPUTS = {"bench/reference.json"}


def tree_digest(root: Path, skip: set[str] = frozenset(), skip_files: set[str] = frozenset()) -> str:
    """sha256 over every file's relative path and contents (links by their target), in a fixed order; `skip`
    names folders left out wherever they are, `skip_files` files by their path under `root`."""
    h = hashlib.sha256()
    root = Path(root)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip)
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if rel in skip_files:
                continue
            data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            h.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()


def key_inputs(kind: Kind, arch: str, repo: Path = REPO) -> dict:
    return {"backend": kind.name, "arch": arch, "toolchain": kind.toolchain(),
            "harness_sources": tree_digest(Path(repo) / "starter", SKIPPED, NOT_BUILD_INPUTS),
            "solution": tree_digest(Path(repo) / "solution" / "kernels", {"__pycache__"})}


def key_of(inputs: dict) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class CacheEntry:
    folder: Path
    key: str
    record: dict  # cache.json: key, inputs, harness_version, registry, arch, built

    @property
    def harness_version(self) -> str:
        return self.record["harness_version"]


def _read(folder: Path) -> dict | None:
    try:
        return json.loads((folder / "cache.json").read_text())
    except (OSError, ValueError):
        return None


def ensure(root: Path, kind: Kind, arch: str, jobs: int, rubric: Path, repo: Path = REPO,
           announce=None) -> tuple[CacheEntry, bool]:
    """The entry for this kind, architecture and these sources under `root`, built now if it is not there yet
    (`announce(folder)` first: a build takes minutes); and whether it was built now."""
    inputs = key_inputs(kind, arch, repo)
    key = key_of(inputs)
    root = Path(root).resolve()
    folder = root / key[:20]
    try:
        root.mkdir(parents=True, exist_ok=True)
        lock = open(root / f"{key[:20]}.lock", "a")
    except OSError as e:
        raise GraderError(f"{root}: cannot hold the build cache ({e.strerror})") from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record = _read(folder)
        if record is not None and record.get("key") == key:
            return CacheEntry(folder, key, record), False
        shutil.rmtree(folder, ignore_errors=True)  # an interrupted build, or another key's leftovers
        folder.mkdir(parents=True)
        if announce is not None:
            announce(folder)
        built = kind.build_cache(folder, arch, jobs, Path(rubric))
        record = {"key": key, "inputs": inputs, "built": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  **built}
        tmp = folder / "cache.json.tmp"
        tmp.write_text(json.dumps(record, indent=1))
        os.replace(tmp, folder / "cache.json")
    return CacheEntry(folder, key, record), True


def verify(folder: Path, kind: Kind, arch: str, repo: Path = REPO) -> CacheEntry:
    """The entry at `folder`, checked against the key computed here: the same sources and toolchain, or an error
    that names what differs."""
    folder = Path(folder)
    record = _read(folder)
    if record is None:
        raise GraderError(f"the build cache {folder} is missing or incomplete (no cache.json): submit the batch "
                          "again (`grade --slurm` builds it)")
    here = key_inputs(kind, arch, repo)
    if key_of(here) != record["key"]:
        differs = sorted(k for k in here if here[k] != record["inputs"].get(k))
        raise GraderError(f"this node's build would differ from the cached one ({', '.join(differs)} changed "
                          f"since `grade --slurm` built {folder.name}): grade with the same sources and toolchain "
                          "on every node, or submit again")
    return CacheEntry(folder, record["key"], record)
