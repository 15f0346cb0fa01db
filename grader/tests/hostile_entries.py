"""The hostile corpus (grader/tests/hostile/): each entry's folder and what its expected.toml says, and how an
entry is handed in as a student's submission. Read by the corpus's own tests (test_hostile_corpus.py), by the
hostile batch (hostile_batch.py: the whole corpus graded on a GPU or on the CPU backend) and by the GPU suite's
graded corpus (gpu_corpus.py).

An entry's verdict depends on the backend that grades it only where its expected.toml says so, with the cpu_*
keys (grader/tests/hostile/README.md): the CPU backend times nothing, cannot run some files at all (inline PTX,
half precision: "needs a GPU") and runs its own checks in compute-sanitizer's place."""
from __future__ import annotations

import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "grader" / "tests" / "hostile"
BACKENDS = ("gpu", "cpu")


@dataclass(frozen=True)
class Verdict:
    """What grading an entry on one backend must conclude."""
    status: str  # the submission's: graded | rejected | build_failed
    task: str
    case_status: str  # every one of the task's cases ("any-failing": none passes)
    reason: str  # text that must appear in the task's case messages (or the build or rejection reason)
    kind: str  # which of the task's cases: correctness or timed
    cases: str  # "all": every one of them gets case_status; "some": at least one does
    sanitizer: str  # the checker that must report the task ("": none is asked about)
    gap: str  # "": the backend reaches this verdict; else why it does not yet (a defense missing or wrong)


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
    never_shown: str = ""  # text (of a file the attack reads) that nothing a student reads may contain
    hidden: str = ""  # a shape of the task that the batch's rubric hides until a date after the batch
    hidden_never_shown: str = ""  # text that nothing the entry's student reads before that date may contain
    control: str = ""  # a subfolder: its honest control, handed in as a student of its own (every case passes)
    cpu: dict | None = None  # the cpu_* keys, without their prefix: where the CPU backend's verdict differs

    def verdict(self, backend: str) -> Verdict:
        """The verdict on `backend` ("gpu" or "cpu"). On the CPU backend nothing is timed, so a verdict about
        timed cases is about the correctness cases there, and its cpu_* keys replace the others."""
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}: one of {', '.join(BACKENDS)}")
        gpu = Verdict(self.status, self.task, self.case_status, self.reason, self.kind, self.cases, self.sanitizer,
                      "")
        if backend == "gpu":
            return gpu
        cpu = self.cpu or {}
        differs = "case_status" in cpu
        return Verdict(self.status, self.task, cpu.get("case_status", self.case_status),
                       cpu.get("reason", "" if differs else self.reason), "correctness",
                       cpu.get("cases", "all" if differs else self.cases), cpu.get("sanitizer", self.sanitizer),
                       cpu.get("gap", ""))

    @property
    def nickname(self) -> str | None:
        path = self.path / "nickname.txt"
        return path.read_text().splitlines()[0] if path.is_file() else None


SPEC_KEYS = {"attack", "needs_gpu", "status", "task", "case_status", "reason", "kind", "cases", "archive",
             "duplicate", "sanitizer", "never_shown", "hidden", "hidden_never_shown", "control"}
CPU_KEYS = {"cpu_case_status", "cpu_reason", "cpu_cases", "cpu_sanitizer", "cpu_gap"}


def load_corpus() -> list[Entry]:
    entries = []
    for folder in sorted(p for p in CORPUS.iterdir() if p.is_dir()):
        spec = tomllib.loads((folder / "expected.toml").read_text())
        assert not spec.keys() - SPEC_KEYS - CPU_KEYS, (folder.name, spec.keys() - SPEC_KEYS - CPU_KEYS)
        cpu = {key.removeprefix("cpu_"): spec[key] for key in CPU_KEYS if key in spec}
        entries.append(Entry(folder.name, folder, spec["attack"], spec["needs_gpu"], spec["status"], spec["task"],
                             spec["case_status"], spec["reason"],
                             spec.get("kind", "correctness"), spec.get("cases", "all"), spec.get("archive", ""),
                             spec.get("duplicate", ""), spec.get("sanitizer", ""), spec.get("never_shown", ""),
                             spec.get("hidden", ""), spec.get("hidden_never_shown", ""), spec.get("control", ""),
                             cpu or None))
    return entries


def hand_in(entry: Entry, submissions: Path, student: str) -> None:
    """Puts the entry into a submissions folder as `student`: its files as a folder, or the archive its
    build.py writes, or (duplicate) its older/ folder and the rest as a later archive of the same id."""
    import os
    import tarfile
    if entry.archive:
        # Run from its source, not imported: an import would leave a __pycache__ in the entry (wherever Python
        # writes bytecode), which then reads as a file the entry hands in.
        script = entry.path / entry.archive
        namespace = {"__name__": f"corpus_{student}", "__file__": str(script)}
        exec(compile(script.read_text(), str(script), "exec"), namespace)
        namespace["build"](submissions / f"{student}.tar.gz")
        return
    ignore = shutil.ignore_patterns("*.toml", *[folder for folder in (entry.duplicate, entry.control) if folder])
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


def hand_in_control(entry: Entry, submissions: Path, student: str) -> None:
    """Puts the entry's honest control (its `control` subfolder) into a submissions folder as `student`."""
    shutil.copytree(entry.path / entry.control, submissions / student)
