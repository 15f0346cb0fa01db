"""The intake plan: which submissions a command grades, which entries it skips and why, and what the roster and
the submissions disagree on. `grade` (on this machine, and --slurm's submit step), `similarity` and the command
line's early checks all ask this one place.

In two steps, so that a command can check its input before anything is read or built:
  plan_entries  the folder's entries as the course system delivered them (grader/intake/layouts.py), each named by the
                roster's id (grader/intake/roster.py), --student's alone; refuses a folder with nothing to grade and a
                --student who submitted nothing there;
  plan_intake   plan_entries, then every entry read (grader/intake/submission.py: the rubric's limits, the registry's task
                files), one per student (the one received last: choose_latest), and those the store holds graded
                already, unchanged, left out (all are graded again with --regrade or --student).

Nothing here writes: the store is read, never created (a command that refuses leaves no store behind); saving
the roster is the grading command's own step.
"""
from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from grader.core.errors import GraderError
from grader.intake.submission import Entry, IntakeLimits, Submission, choose_latest, read_submission
from grader.intake.layouts import find_entries
from grader.core.registry import Registry
from grader.intake.roster import Person, name_by_roster
from grader.core.rubric import Rubric
from grader.store.store import Store


class NoSubmissions(GraderError):
    """A submissions folder with no entry to grade; the message says what was skipped instead."""

    def __init__(self, folder: Path, skipped: list[str]):
        self.folder, self.skipped = Path(folder), list(skipped)
        why = (f"{len(skipped)} entr{'y' if len(skipped) == 1 else 'ies'} skipped, such as {skipped[0]}"
               if skipped else "it is empty")
        super().__init__(f"{folder}: no submissions in it ({why})")


@dataclass
class Entries:
    """A delivery's entries, named by the roster, before any is read."""
    entries: list[Entry]  # to read: --student's alone when given
    skipped: list[str]  # a note per entry that is not a submission
    not_on_roster: list[str] = field(default_factory=list)  # ids submitted that the roster lacks (graded all the same)
    no_submission: list[str] = field(default_factory=list)  # the roster's students with no entry


@dataclass
class IntakePlan:
    """What a grading command does with a folder: `work` to grade (each entry with its submission as read),
    `latest` every student's submission chosen (graded already or not), and what was left out and why."""
    work: list[tuple[Entry, Submission]]
    latest: list[tuple[Entry, Submission]]
    skipped_entries: list[str]  # entries that are not submissions, and a student's entries received earlier
    skipped_same: list[str]  # students whose identical submission the store holds graded already
    not_on_roster: list[str]
    no_submission: list[str]

    @property
    def todo(self) -> list[Submission]:
        return [s for _, s in self.work]


def check_folder(folder: Path) -> Path:
    """The submissions folder exists and is a folder, or a one-line error naming it."""
    folder = Path(folder)
    if not folder.exists():
        raise GraderError(f"{folder}: no such submissions folder")
    if not folder.is_dir():
        raise GraderError(f"{folder}: not a folder; give the folder that holds the submissions (one entry per "
                          "student, or a Canvas or Gradescope download with --from)")
    return folder


def plan_entries(folder: Path, source: str = "plain", roster: list[Person] | None = None, student: str | None = None,
                 lms_times: Path | None = None, entries: list[Entry] | None = None) -> Entries:
    """The entries to read. `entries`: these only (a Slurm shard's, chosen and named by its submit step),
    instead of the folder's. Refuses (NoSubmissions) a folder with none, and a --student with none."""
    if entries is not None:
        found, skipped = list(entries), []
    else:
        found, skipped = find_entries(check_folder(folder), source, lms_times)
    if not found:
        raise NoSubmissions(folder, skipped)
    not_on_roster, no_submission = name_by_roster(found, roster) if roster is not None else ([], [])
    if student is not None:
        found = [e for e in found if e.student == student]
        if not found:
            raise GraderError(f"{folder}: no submission of '{student}' in it")
    return Entries(found, skipped, not_on_roster, no_submission)


def plan_intake(folder: Path, source: str = "plain", roster: list[Person] | None = None, student: str | None = None,
                regrade: bool = False, store: Path | None = None, *, rubric: Rubric, registry: Registry,
                harness_version: str = "", lms_times: Path | None = None, entries: list[Entry] | None = None,
                students: Collection[str] | None = None) -> IntakePlan:
    """The plan for a folder (plan_entries, then each entry read and the latest of each student chosen).
    store: the grades.sqlite whose submissions graded already with this harness version and rubric are left out
    (read when it exists, never created; None: nothing is left out). students: read only these students'
    entries (similarity: the graded ones)."""
    found = plan_entries(folder, source, roster, student, lms_times, entries)
    chosen = found.entries if students is None else [e for e in found.entries if e.student in students]
    task_files = [t.file for t in registry.tasks]
    limits = IntakeLimits.from_rubric(rubric.limits)
    read = [(e, read_submission(e, task_files, limits)) for e in chosen]
    subs, duplicates = choose_latest([s for _, s in read])
    entry_of = {id(s): e for e, s in read}
    latest = [(entry_of[id(s)], s) for s in subs]
    same = [] if regrade or student is not None else _graded_already(store, subs, harness_version, rubric)
    work = [(e, s) for e, s in latest if s.student not in same]
    return IntakePlan(work, latest, found.skipped + duplicates, same, found.not_on_roster, found.no_submission)


def _graded_already(store: Path | None, subs: list[Submission], harness_version: str, rubric: Rubric) -> list[str]:
    if store is None or not Path(store).is_file():
        return []
    opened = Store(Path(store))
    try:
        return [s.student for s in subs if opened.already_graded(s.student, s.sha256, harness_version, rubric.sha256)]
    finally:
        opened.close()
