"""What grading one submission produced, before it is stored."""
from __future__ import annotations

from dataclasses import dataclass, field

from grader.outcomes.build_result import BuildResult
from grader.intake.submission import Submission
from grader.outcomes.paired import PairedResult
from grader.core.status import SANITIZER_FINDINGS, CaseStatus, ProfileStatus, SanitizerStatus, SubmissionStatus

# Flags on a timed case that passed: listed for a TA, scored as measured.
REVIEW_FLAG = "review"


@dataclass
class SanitizerOutcome:
    """One compute-sanitizer run (grader/shared/sanitizer.py) on a task's small case; on the CPU backend, its own checks
    in the tool's place (checker "cpu": AddressSanitizer for memcheck, the race checker for racecheck)."""
    task: str
    tool: str  # "memcheck" or "racecheck"
    dtype: str
    shape: str
    status: SanitizerStatus
    errors: int = 0
    report: str = ""  # the tool's first findings, paths relative to the submission
    message: str = ""  # why there is no verdict (failed, skipped, unavailable)
    seconds: float = 0.0
    checker: str = "compute-sanitizer"  # or "cpu": the CPU backend's own checks ran in the tool's place

    @property
    def found_errors(self) -> bool:
        """What costs the penalty: the tool's findings, or a run far longer under the tool than graded."""
        return self.status in SANITIZER_FINDINGS


@dataclass
class ProfileOutcome:
    """make profile's counts for one task, on the CPU backend (starter/tools/profile.py): what its accesses would
    cost a GPU's memory system, and a sentence per finding naming the line. Feedback only, never points."""
    task: str
    dtype: str
    shape: str
    status: ProfileStatus
    findings: list[str] = field(default_factory=list)
    numbers: dict = field(default_factory=dict)  # the task's numbers, as make profile's table shows them
    message: str = ""  # why there are no counts
    seconds: float = 0.0


@dataclass
class CaseOutcome:
    task: str
    dtype: str
    shape: str
    kind: str  # "correctness" or "timed"
    status: str  # a CaseStatus, or the harness's reply word as it came (which equals one)
    message: str = ""
    hint: str = ""
    seed: int = 0
    output: str = ""  # the last output of a harness process that hung or crashed
    record: dict | None = None  # the harness's case record, when there is one
    paired: PairedResult | None = None
    unit: str = ""  # GFLOP/s or GB/s
    work: float = 0.0  # FLOPs or bytes of one run, for throughput
    floor_ms: float | None = None  # timed cases: the fastest time the work can honestly take on this GPU
    flag: str = ""  # REVIEW_FLAG when the speedup is high enough for a TA to look at
    seconds: float = 0.0  # correctness: its check request's wall seconds (the tools' limit is measured from them)

    @property
    def passed(self) -> bool:
        return self.status == CaseStatus.OK


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
    status: SubmissionStatus
    build: BuildResult | None = None
    cases: list[CaseOutcome] = field(default_factory=list)
    seconds: float = 0.0
    sanitizer: list[SanitizerOutcome] = field(default_factory=list)
    profiles: list[ProfileOutcome] = field(default_factory=list)  # the CPU backend's counters (feedback only)
    budget: object | None = None  # its code's TimeBudget (grader/run/budget.py): what it used; not stored
