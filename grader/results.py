"""What grading one submission produced, before it is stored."""
from __future__ import annotations

from dataclasses import dataclass, field

from grader.build import BuildResult
from grader.intake import Submission
from grader.paired import PairedResult

# Case statuses: the harness's (ok, wrong, not_implemented, error) and the grader's own.
GRADER_STATUSES = {
    "timeout": "the run took longer than its time limit",
    "crashed": "the harness process died while running the code",
    "missing": "the task's file is not in the submission",
    "skipped": "not run",
    "forbidden": "not run: the task file breaks a rule of the build gate (grader/rubric.toml [gate])",
}


@dataclass
class CaseOutcome:
    task: str
    dtype: str
    shape: str
    kind: str  # "correctness" or "timed"
    status: str
    message: str = ""
    hint: str = ""
    seed: int = 0
    output: str = ""  # the last output of a harness process that hung or crashed
    record: dict | None = None  # the harness's case record, when there is one
    paired: PairedResult | None = None
    credit: float | None = None  # performance credit of a timed case, 0..1
    unit: str = ""  # GFLOP/s or GB/s
    work: float = 0.0  # FLOPs or bytes of one run, for throughput

    @property
    def passed(self) -> bool:
        return self.status == "ok"

    def throughput(self, ms: float) -> float:
        return self.work / (ms * 1e-3) / 1e9 if ms > 0 else 0.0


@dataclass
class TaskScore:
    task: str
    correctness: float
    correctness_max: float
    performance: float
    performance_max: float
    cases_passed: int
    cases_total: int
    note: str = ""

    @property
    def total(self) -> float:
        return self.correctness + self.performance


@dataclass
class SubmissionResult:
    submission: Submission
    status: str  # "graded", "rejected", "build_failed"
    build: BuildResult | None = None
    cases: list[CaseOutcome] = field(default_factory=list)
    scores: list[TaskScore] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def total(self) -> float:
        return sum(s.total for s in self.scores)
