"""`bin/grader release`: each student's feedback as one folder (or one zip) of its own, ready to upload.

RESULTS/feedback/ holds every student's pages side by side; to hand them back (a course site's per-student
file, an LMS comment's attachment) each student needs their own and nobody else's. This writes OUT/ID/ with
feedback.html (its plot embedded, so the page stands alone), feedback.md and, when the student has timed
cases, speedup.png; with --zip, OUT/ID.zip holding the same files instead. What it says it wrote is read from
what it wrote (Released.summary): a class graded without a GPU has no plot, and no plot is promised. Like every
report it reads the store (report.feedback_context), so it never hands out a page older than the scores. The
pages are for students: before the rubric's [hidden] until they show hidden cases counted, not shown
(grader/core/visibility.py), as of `now` (the time of release when not given).
"""
from __future__ import annotations

import zipfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from grader.core import visibility
from grader.core.errors import GraderError
from grader.reports.report import UNKNOWN_RUN, feedback_context, render_feedback, run_views, students_now
from grader.core.rubric import Rubric
from grader.store.store import Store

ZIP_TIME = (2026, 1, 1, 0, 0, 0)  # one fixed time inside every zip: the same feedback gives the same bytes


@dataclass
class Released:
    out: Path
    students: list[str]
    paths: list[Path]  # one folder or zip per student
    files: dict[str, list[str]]  # each student's file names, as written
    zipped: bool = False

    def summary(self) -> str:
        """What was written, from what was written: a file only some students got (the plot: timed cases only)
        is said with how many got it, and a plot no one got is not named."""
        counts: dict[str, int] = {}
        for names in self.files.values():
            for name in names:
                counts[name] = counts.get(name, 0) + 1
        everyone = [name for name, n in counts.items() if n == len(self.files)]
        some = [f"{name} for {n} of them" for name, n in counts.items() if n < len(self.files)]
        kind = "zip" if self.zipped else "folder"
        plotted = "speedup.png" in counts
        what = ", ".join(everyone + some) if everyone or some else "nothing"
        return (f"wrote {len(self.paths)} {kind}{'s' if len(self.paths) != 1 else ''} in {self.out}/, one per "
                f"student: {what}" + ("" if plotted or not self.files else
                                      " (no speedup.png: no student has a timed case)"))


def student_files(context: dict, png: bytes | None) -> dict[str, bytes]:
    """The files one student gets: the page (plot embedded), its Markdown, the plot on its own."""
    files = {"feedback.html": render_feedback(context, "html").encode(),
             "feedback.md": render_feedback(context, "md").encode()}
    if png:
        files["speedup.png"] = png
    return files


def release(results: Path, rubric: Rubric, out: Path, as_zip: bool = False, now: datetime | None = None) -> Released:
    view = visibility.student(now) if now else students_now()
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise GraderError(f"{out}: exists and is not a folder")
    if out.resolve() == Path(results).resolve():
        raise GraderError(f"{out}: is the results folder itself; give a folder of its own (e.g. {out}/release)")
    store = Store.existing(Path(results) / "grades.sqlite")
    try:
        runs = run_views(store)
        everyone = [(sub.student, *feedback_context(store, rubric, sub, runs.get(sub.run_id, UNKNOWN_RUN), view))
                    for sub in store.latest_submissions().itertuples()]
    finally:
        store.close()
    out.mkdir(parents=True, exist_ok=True)
    paths, written = [], {}
    for student, context, png in everyone:
        # The md page refers to the plot by the name report.write_feedback gives it; here it is speedup.png.
        if context.get("plot"):
            context = {**context, "plot": "speedup.png"}
        files = student_files(context, png)
        if as_zip:
            path = out / f"{student}.zip"
            with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
                for name, data in files.items():
                    info = zipfile.ZipInfo(f"{student}/{name}", ZIP_TIME)
                    info.compress_type = zipfile.ZIP_DEFLATED
                    z.writestr(info, data)
        else:
            path = out / student
            path.mkdir(exist_ok=True)
            for name, data in files.items():
                (path / name).write_bytes(data)
        paths.append(path)
        written[student] = list(files)
    return Released(out, [s for s, _, _ in everyone], paths, written, as_zip)
