"""Hidden cases (rubric.toml's `hidden = [...]` per task and `[hidden] until`): what a student sees of them, and when.

A task may list shapes of its graded or timed sets as hidden. Every case at a hidden shape (every element type,
correctness and timed alike) and the task's compute-sanitizer run at such a shape are graded as usual and stored
as usual; only what a student is shown changes, and only before `until`:

- the student sees that hidden cases exist and how many ("4 hidden cases: their results are shown after
  2026-12-11 23:59 UTC"), never their verdicts, messages, hints, outputs, timings or reproduce commands;
- a task with hidden cases shows its visible cases' feedback, and its points as withheld: its points (both parts,
  with any override) would tell how its hidden cases went;
- the score shown is the other tasks' points out of their worth, with a line saying which tasks' points are
  withheld until the date (a late penalty's words are shown, its points are not: they are a share of the whole
  score).

The feedback page and its Markdown, `release`'s folders, Gradescope's per-task output, Autolab's lines and the
grading service's result (grader/reports/student_view.py) all show it so. Gradescope's results.json keeps a
withheld task's points in a test of their own ("matmul_fast: hidden cases", visibility "after_due_date") whose
output is the count line only, and keeps the whole score at the top: Gradescope's specification says a student
does not see the total while a test is hidden, and shows it (and that test) after the assignment's due date, so
set that date (the late due date, if any) to `until`. Gradescope never re-runs the grader by itself: after the
date, "Regrade all submissions" replaces the count line with the cases' feedback. Autolab has no hidden scores:
its autoresult leaves a withheld task out (that problem stays ungraded) and its scoreboard counts the visible
tasks; regrade after the date.

After `until` a student sees everything, exactly as without hidden shapes. Staff (the overview, grades.csv,
review.csv, similarity, Canvas's gradebook, which the instructor posts) always see everything. The leaderboard is
public before and after the date, so it never reads a hidden case: it ranks by the leaderboard task's largest
timed shape that is not hidden (naming a hidden `leaderboard_shape` is a rubric error) and judges a submission
correct on its visible correctness cases.

Grading keeps them hidden too (grader/grading/cases.py, issue 44): every visible case, the tools' runs at visible
shapes (sent only visible shapes), the visible timed cases and the CPU counters (run when the visible cases passed)
are decided first; the hidden cases run last, in a harness process that serves no visible case, so a task file
cannot carry a hidden shape into a visible case's output, and no skip, budget, cut or timing a student sees
depends on a hidden case. A withheld task's visible timed cases show their speedup, not their credit or points
(performance counts only once every case passes). What remains: when a job's result arrives.

Who sees what is a View: its audience and the time `now`, passed in by the caller (this module never reads the
clock), so tests give times.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

import pandas as pd

from grader.core.rubric import Rubric

STUDENT, STAFF = "student", "staff"


@dataclass(frozen=True)
class View:
    """Who reads an output and when: a student before the rubric's `until` sees hidden cases counted, not shown."""
    audience: str = STAFF
    now: datetime | None = None  # aware; needed for a student

    def __post_init__(self):
        if self.audience not in (STUDENT, STAFF):
            raise ValueError(f"audience must be {STUDENT!r} or {STAFF!r}, got {self.audience!r}")
        if self.audience == STUDENT and (self.now is None or self.now.tzinfo is None):
            raise ValueError("a student's view needs the time it is read at, with its offset")

    def hides(self, rubric: Rubric) -> bool:
        """Whether this reader sees hidden cases counted rather than shown."""
        return self.audience == STUDENT and rubric.hidden_until is not None and self.now < rubric.hidden_until


STAFF_VIEW = View()


def student(now: datetime) -> View:
    return View(STUDENT, now)


def hidden_shape(rubric: Rubric, task: str, shape: str) -> bool:
    """Whether the rubric hides a task's shape (at any time: the public leaderboard never reads one)."""
    return any(p.id == task and shape in p.hidden for p in rubric.tasks)


def is_hidden(rubric: Rubric, task: str, dtype: str, shape: str, kind: str, now: datetime) -> bool:
    """Whether a student reading at `now` sees the case (task, dtype, shape, kind) counted rather than shown: every
    type and kind of a hidden shape is hidden, until the rubric's `until`."""
    return student(now).hides(rubric) and hidden_shape(rubric, task, shape)


def hidden_rows(rubric: Rubric, rows: pd.DataFrame) -> pd.Series:
    """Which rows (stored cases or compute-sanitizer runs: columns task and shape) are at a hidden shape."""
    hidden = {(p.id, s) for p in rubric.tasks for s in p.hidden}
    return pd.Series([(t, s) in hidden for t, s in zip(rows["task"], rows["shape"])], index=rows.index, dtype=bool)


def hidden_count(rubric: Rubric, cases: pd.DataFrame, view: View) -> int:
    """How many of a submission's stored cases this reader sees counted rather than shown."""
    return int(hidden_rows(rubric, cases).sum()) if view.hides(rubric) and not cases.empty else 0


def shown_until(rubric: Rubric) -> str:
    """The rubric's `until` as a student reads it: "2026-12-11 23:59 UTC"."""
    return rubric.hidden_until.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def count_line(count: int, rubric: Rubric) -> str:
    """"4 hidden cases: their results are shown after 2026-12-11 23:59 UTC"."""
    return (f"{count} hidden case{'s' if count != 1 else ''}: {'their results are' if count != 1 else 'its result is'}"
            f" shown after {shown_until(rubric)}")


def withheld_line(tasks: list[dict], rubric: Rubric) -> str:
    """Which tasks' points the score leaves out until the date, from task views ({"task", "max_points"})."""
    names = [t["task"] for t in tasks]
    worth = sum(t["max_points"] for t in tasks)
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return (f"the {worth:g} points of {listed} (the task{'s' if len(names) != 1 else ''} with hidden cases) are shown "
            f"after {shown_until(rubric)}; the score counts the other tasks")
