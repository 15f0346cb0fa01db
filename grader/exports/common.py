"""What every exporter shares: the Export it returns, its error, and finding the submission it exports."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from grader.store import Store


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
