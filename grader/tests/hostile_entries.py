"""The hostile corpus (grader/tests/hostile/): each entry's folder and what its expected.toml says, and how an
entry is handed in as a student's submission. Read by the corpus's own tests (test_hostile_corpus.py) and by the
GPU suite's graded corpus (gpu_corpus.py)."""
from __future__ import annotations

import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "grader" / "tests" / "hostile"


@dataclass
class Entry:
    name: str
    path: Path
    attack: str
    needs_gpu: bool
    status: str
    task: str
    case_status: str
    reason: str
    kind: str  # which of the task's cases the verdict is about: correctness or timed
    cases: str  # "all": every one of them gets case_status; "some": at least one does
    archive: str = ""  # "build.py": the submission is the archive that script writes
    duplicate: str = ""  # a subfolder handed in as an older folder of the same id
    sanitizer: str = ""  # the compute-sanitizer tool that must report the task


SPEC_KEYS = {"attack", "needs_gpu", "status", "task", "case_status", "reason", "kind", "cases", "archive",
             "duplicate", "sanitizer"}


def load_corpus() -> list[Entry]:
    entries = []
    for folder in sorted(p for p in CORPUS.iterdir() if p.is_dir()):
        spec = tomllib.loads((folder / "expected.toml").read_text())
        assert not spec.keys() - SPEC_KEYS, (folder.name, spec.keys() - SPEC_KEYS)
        entries.append(Entry(folder.name, folder, spec["attack"], spec["needs_gpu"], spec["status"], spec["task"],
                             spec["case_status"], spec["reason"],
                             spec.get("kind", "correctness"), spec.get("cases", "all"), spec.get("archive", ""),
                             spec.get("duplicate", ""), spec.get("sanitizer", "")))
    return entries


def hand_in(entry: Entry, submissions: Path, student: str) -> None:
    """Puts the entry into a submissions folder as `student`: its files as a folder, or the archive its
    build.py writes, or (duplicate) its older/ folder and the rest as a later archive of the same id."""
    import importlib.util
    import os
    import tarfile
    if entry.archive:
        spec = importlib.util.spec_from_file_location(f"corpus_{student}", entry.path / entry.archive)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.build(submissions / f"{student}.tar.gz")
        return
    ignore = shutil.ignore_patterns("*.toml", *([entry.duplicate] if entry.duplicate else []))
    if not entry.duplicate:
        shutil.copytree(entry.path, submissions / student, ignore=ignore)
        return
    shutil.copytree(entry.path / entry.duplicate, submissions / student)
    archive = submissions / f"{student}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for f in sorted(entry.path.glob("*.cu")):
            tar.add(f, arcname=f"{student}/{f.name}")
    os.utime(submissions / student, (1_700_000_000, 1_700_000_000))
    os.utime(archive, (1_700_000_600, 1_700_000_600))
