"""What every exporter shares: the Export it returns, its error, finding the submission it exports, and whether its
performance points were measured."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from grader.reports.report import UNKNOWN_RUN, run_views
from grader.core.rubric import Rubric
from grader.store.store import Store

CORRECTNESS_ONLY_FLAG = "--correctness-only"


class ExportError(ValueError):
    """The export cannot be made from this store or these options; the message says what was wrong."""


@dataclass
class Export:
    text: str  # the file's content (or the output's)
    warnings: list[str] = field(default_factory=list)

    def write(self, path: Path) -> Path:
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.text)
        except OSError as e:
            raise ExportError(f"{path}: cannot write the export there ({e.strerror})") from None
        return path


def _listed(names: list[str], most: int = 5) -> str:
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def student_of(store: Store, student: str | None) -> str:
    """The student an export is for: the one named, who must be in the store, or the store's only student."""
    students = sorted(set(store.submissions()["student"]))
    if not students:
        raise ExportError(f"{store.path} holds no submission yet: grade first")
    if student is None:
        if len(students) > 1:
            raise ExportError(f"{store.path} holds {len(students)} students ({_listed(students)}): name one (--student)")
        return students[0]
    if student not in students:
        raise ExportError(f"{store.path} holds no submission of '{student}' (it holds {_listed(students)})")
    return student


def latest_submission(store: Store, student: str | None) -> dict:
    """The latest submission (as the store's row) of the student an export is for."""
    name = student_of(store, student)
    latest = store.latest_submissions()
    return latest[latest["student"] == name].iloc[0].to_dict()


def submission_row(store: Store, submission_id: int) -> dict:
    """One stored submission (as the store's row), by its id."""
    rows = store.submissions()
    return rows[rows["id"] == int(submission_id)].iloc[0].to_dict()


def unmeasured(store: Store, student: str | None = None) -> tuple[int, int, str]:
    """Of the students an export is for (the one named, else everyone in the store), how many have a latest
    submission graded in a run that measured no performance, how many there are, and why (the first run's stored
    reason, grading_runs.untimed_reason: read, never worked out again)."""
    latest = store.latest_submissions()
    if student is not None:
        latest = latest[latest["student"] == student_of(store, student)]
    runs = run_views(store)
    reasons = [runs.get(r, UNKNOWN_RUN)["untimed"] for r in latest["run_id"]]
    return sum(bool(r) for r in reasons), len(reasons), next((r for r in reasons if r), "")


def not_measured(store: Store, rubric: Rubric, student: str | None = None) -> str:
    """What an export's totals lack when some student's performance was not measured ("" when none): a gradebook
    takes a total as the grade, and one without its performance points reads as a weak submission (48 of 100 for a
    correct one)."""
    count, total, why = unmeasured(store, student)
    if not count:
        return ""
    correctness = sum(p.correctness_points for p in rubric.tasks)
    return (f"performance was not measured for {count} of {total} student{'s' if total != 1 else ''} ({why}): "
            f"{'their totals are' if count != 1 else 'the total is'} correctness points only, at most "
            f"{correctness:g} of {rubric.max_points:g}")


def check_measured(store: Store, rubric: Rubric, student: str | None = None,
                   correctness_only: bool = False) -> list[str]:
    """Refuses (ExportError, one line naming why and the flag) an export in which some student's performance was not
    measured, unless `correctness_only`; then returns the warning to print with it."""
    lacking = not_measured(store, rubric, student)
    if not lacking:
        return []
    if not correctness_only:
        raise ExportError(f"{store.path}: {lacking}; grade on a GPU for the performance points, or export the "
                          f"correctness points as they are with {CORRECTNESS_ONLY_FLAG}")
    return [f"correctness only ({CORRECTNESS_ONLY_FLAG}): {lacking}"]
