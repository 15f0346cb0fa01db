"""The fake backend made to behave as the CPU backend (grader/backends/cpu.py's CpuKind): nothing timed, no
compute-sanitizer, a device record with backend "cpu"; `// fake: needs-gpu` marks a file the CPU cannot run and
`// fake: gpu-only` one whose every shape is over the CPU's per-case budget. test_grade_cpu.py grades the sample
class on the real CPU backend; these stores answer the same questions in a second."""
from __future__ import annotations

from pathlib import Path

from grader.grading.grade import GradeOptions, grade
from grader.reports.folder import write_reports
from grader.core.status import NOT_TIMED_ON_CPU
from grader.tests.conftest import write_submission
from grader.tests.fakes import FakeBackend

CPU_DEVICE = {"backend": "cpu", "host": "lab-pc", "cpu": "Some CPU 3000", "cores": 8, "compiler": "g++ (Debian) 12.2.0"}


class CpuLikeBackend(FakeBackend):
    harness_version = "fake-1+cpu"
    timed = False
    untimed_reason = NOT_TIMED_ON_CPU
    checker = "cpu"

    def identify(self, gpu, device: dict) -> dict:
        return dict(CPU_DEVICE)

    def build(self, sub, timeout: float, gate=None):
        result = super().build(sub, timeout, gate)
        result.needs_gpu = {name: f"needs a GPU: uses inline PTX at {name}:3" for name, data in sub.files.items()
                            if b"// fake: needs-gpu" in data}
        return result

    def sanitize(self, *args, **kwargs):
        """The CPU backend's own checks in compute-sanitizer's place: the fake's verdicts, marked as theirs."""
        outcome = super().sanitize(*args, **kwargs)
        outcome.checker = self.checker
        return outcome


def grade_cpu_like(root: Path, rubric, registry, students: dict[str, dict[str, str]]) -> Path:
    """Grades `students` (id -> files) on the CPU-like backend into ROOT/results, reports written."""
    for student, files in students.items():
        write_submission(root / "subs", student, files)
    results = root / "results"
    grade(GradeOptions(root / "subs", results, ["cpu"], jobs=1, progress=False, seed=3), rubric, registry,
          CpuLikeBackend())
    write_reports(results, rubric)
    return results
