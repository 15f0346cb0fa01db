"""Every status a case, a submission or a compute-sanitizer run can have, and its words: the one place they are written.

Case statuses come from the harness (ok, wrong, not_implemented, build_error, error; its
registry lists them) and from the grader itself (the rest). Each has
  word:    what the feedback and the exports call it ("passed", "file missing");
  reason:  why a leaderboard entry is not ranked, fit for a public page (never a student's message);
  meaning: one sentence for the staff, what the status says happened (no reader prints it yet).
Readers (report, exports, leaderboard) look statuses up here and nowhere else.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class CaseStatus(StrEnum):
    """A case's status; also the status of the harness's reply (its first five) and of a paired timing. A member
    equals its word (CaseStatus.OK == "ok"), so the store keeps the same text and a string read back compares equal."""
    OK = "ok"
    WRONG = "wrong"
    NOT_IMPLEMENTED = "not_implemented"
    BUILD_ERROR = "build_error"
    ERROR = "error"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    MISSING = "missing"
    SKIPPED = "skipped"
    # Stopped, or not run, because the submission had used up its time budget (grader/run/budget.py).
    OUT_OF_BUDGET = "out_of_budget"
    IMPLAUSIBLE = "implausible"
    PROTOCOL = "protocol"
    FORBIDDEN = "forbidden"
    NEEDS_GPU = "needs_gpu"
    # Not run by the CPU backend's harness, the shape being over that backend's per-case budget. It is no verdict
    # on the code: the score, the feedback, the overview and the leaderboard count a task's cases without it.
    GPU_ONLY = "gpu_only"


class SubmissionStatus(StrEnum):
    GRADED = "graded"
    REJECTED = "rejected"
    BUILD_FAILED = "build_failed"


class SanitizerStatus(StrEnum):
    """compute-sanitizer's verdict on a task's small case (or the CPU backend's own checks in its place)."""
    CLEAN = "clean"
    ERRORS = "errors"
    TIMEOUT = "timeout"
    TOO_SLOW = "too_slow"  # far longer under the tool than the graded run of the same cases: a finding
    FAILED = "failed"  # no verdict
    SKIPPED = "skipped"
    UNAVAILABLE = "unavailable"


# The statuses that cost the [sanitizer] penalty: the tool's findings, and a run far longer under it than graded.
SANITIZER_FINDINGS = frozenset({SanitizerStatus.ERRORS, SanitizerStatus.TOO_SLOW})


class ProfileStatus(StrEnum):
    """The CPU backend's performance counters on a task's profile case (unscored: feedback only)."""
    COUNTED = "counted"
    FAILED = "failed"  # no counts: the run failed (what it said is the message)
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Status:
    word: str
    reason: str
    meaning: str


CASE_STATUSES: dict[CaseStatus, Status] = {
    CaseStatus.OK: Status("passed", "", "the output was right on every checked run"),
    CaseStatus.WRONG: Status("wrong", "wrong results", "the output was wrong (the message says where and how)"),
    CaseStatus.NOT_IMPLEMENTED: Status(
        "not implemented yet", "not implemented yet", "the launcher still calls NOT_IMPLEMENTED_YET()"),
    CaseStatus.BUILD_ERROR: Status(
        "does not build", "does not build",
        "the task's file did not compile or link, or lacks this element type's instantiation"),
    CaseStatus.ERROR: Status("error", "failed to run", "the run failed: a CUDA error, a fault, or an exception"),
    CaseStatus.TIMEOUT: Status("timed out", "ran out of time", "the run took longer than its time limit"),
    CaseStatus.CRASHED: Status("crashed", "crashed", "the harness process died while running the code"),
    CaseStatus.MISSING: Status("file missing", "no file for this task", "the task's file is not in the submission"),
    CaseStatus.SKIPPED: Status(
        "not run", "not run", "not run (an earlier case hung, or the submission's time ran out)"),
    CaseStatus.OUT_OF_BUDGET: Status(
        "over its time budget", "over its time budget",
        "stopped or not run: the submission's code had used up its time budget ([limits] "
        "time_budget_multiple x the solution's time for the same requests + time_budget_extra, "
        "grader/run/budget.py); the message names the case where it ran out"),
    CaseStatus.IMPLAUSIBLE: Status(
        "implausible", "implausible timing",
        "timed faster than the GPU can physically do the work: no performance credit, listed for review"),
    CaseStatus.PROTOCOL: Status(
        "not trusted", "not trusted", "something other than the harness wrote on its reply channel"),
    CaseStatus.FORBIDDEN: Status(
        "refused by the build gate", "refused by the build gate",
        "not run: the task file breaks a rule of the build gate (grader/rubric.toml [gate])"),
    CaseStatus.NEEDS_GPU: Status(
        "needs a GPU", "needs a GPU",
        "not run: graded on the CPU backend, which cannot run this file (inline PTX, cp.async, tensor "
        "cores, a CUDA library, ...; the message names the line): grade it on a GPU"),
    CaseStatus.GPU_ONLY: Status(
        "GPU only", "GPU only",
        "not run: graded on the CPU backend, and the shape is over that backend's per-case budget "
        "(starter/harness/backend_budget.h); left out of the task's score, a GPU run checks it"),
}

SUBMISSION_STATUSES: dict[SubmissionStatus, Status] = {
    SubmissionStatus.GRADED: Status("graded", "", "built and graded"),
    SubmissionStatus.REJECTED: Status(
        "rejected at intake", "rejected at intake", "the archive was refused before building"),
    SubmissionStatus.BUILD_FAILED: Status("did not build", "does not build", "no harness could be linked at all"),
}

# A case that never ran the student's code, and says nothing about it beyond its status.
NOT_RUN = frozenset({CaseStatus.MISSING, CaseStatus.NOT_IMPLEMENTED, CaseStatus.SKIPPED, CaseStatus.FORBIDDEN,
                     CaseStatus.BUILD_ERROR, CaseStatus.NEEDS_GPU, CaseStatus.GPU_ONLY, CaseStatus.OUT_OF_BUDGET})

# Why a grading run measured no performance: the CPU backend (grader/backends/cpu.py) is the one that times nothing.
# Stored with each run (grading_runs.timed, untimed_reason) and read by every report, never worked out again.
NOT_TIMED_ON_CPU = "not timed on this run: graded on the CPU backend, which checks correctness only"
NOT_TIMED = "not timed"  # the word in a performance cell of such a run


def case_word(status: str) -> str:
    return CASE_STATUSES[status].word if status in CASE_STATUSES else status


def case_reason(status: str) -> str:
    return CASE_STATUSES[status].reason if status in CASE_STATUSES else "failed"


def submission_word(status: str) -> str:
    return SUBMISSION_STATUSES[status].word if status in SUBMISSION_STATUSES else status


# compute-sanitizer's verdict on a task's small case (grader/shared/sanitizer.py; the feedback's words).
SANITIZER_STATUSES: dict[SanitizerStatus, Status] = {
    SanitizerStatus.CLEAN: Status("no problems found", "", "the tool ran and reported nothing"),
    SanitizerStatus.ERRORS: Status(
        "found errors", "", "the tool reported errors: costs the rubric's [sanitizer] penalty"),
    SanitizerStatus.TIMEOUT: Status(
        "did not finish in time", "", "the tool ran past the rubric's sanitizer limit: no verdict"),
    SanitizerStatus.TOO_SLOW: Status(
        "ran far longer than graded", "", "the code ran past [limits] checker_multiple x its graded time under the "
        "tool: code that behaves differently under a checker costs the rubric's [sanitizer] penalty"),
    SanitizerStatus.FAILED: Status("gave no verdict", "", "the tool ended without a report (its message says why)"),
    SanitizerStatus.SKIPPED: Status(
        "not run", "", "not run: the task hung, its replies were forged, or its time ran out; racecheck, where the "
        "task's compiled code has no shared memory access and no atomics"),
    SanitizerStatus.UNAVAILABLE: Status(
        "not available on the grading machine", "", "compute-sanitizer is not installed"),
}


def sanitizer_word(status: str) -> str:
    return SANITIZER_STATUSES[status].word if status in SANITIZER_STATUSES else status
