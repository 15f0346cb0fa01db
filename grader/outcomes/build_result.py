"""What building one submission produced: read by the grading run, the time budget, the results and the reports.

Its own module, below grader/backends/local.py (which makes it) and grader/outcomes/results.py (which keeps it with a submission's
results), so that neither needs the other to name it."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from grader.gate.report import GateReport

NEEDS_GPU = "needs a GPU:"  # how tools/link_tasks.py's reason starts for a file the CPU backend cannot run


@dataclass
class BuildResult:
    ok: bool
    harness: Path | None
    seconds: float
    log: str = ""
    reason: str = ""  # one line, when not ok
    gate: GateReport | None = None  # the build gate's findings, when it ran
    # Task files that did not compile or link (their task's cases fail; the others run): file -> the
    # compiler's or linker's first message (tools/link_tasks.py's report).
    unbuilt: dict[str, str] = field(default_factory=dict)
    # CPU backend: task files it cannot run (inline PTX, ...): file -> "needs a GPU: uses ... at file:line".
    needs_gpu: dict[str, str] = field(default_factory=dict)
    # The grader's own folders and the names a student knows them by: the build compiled the student's files
    # where the grader put them, so their path is in every `__FILE__` and compiler message.
    folder_names: tuple[tuple[str, str], ...] = ()
    # GPU builds: the harness's own kernels in this program that no task file defines too, by mangled name
    # (racecheck leaves them out: Workspace.harness_only_kernels); empty where not read.
    harness_kernels: tuple[str, ...] = ()

    def readable(self, text: str) -> str:
        """Text from this build or its programs, with the grader's folders named as the student names them."""
        return renamed_folders(text, self.folder_names)


def renamed_folders(text: str, names: tuple[tuple[str, str], ...]) -> str:
    for folder, name in names:
        text = text.replace(folder, name)
    return text
