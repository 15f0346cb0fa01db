"""One submission for a course system's autograder: `gradescope` and `autolab` grade it into a store, then
write that system's result from it."""
from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path


from grader.core.errors import GraderError
from grader.exports import autolab, gradescope
from grader.grading.grade import grade_single
from grader.intake.layouts import gradescope_single
from grader.store.store import Store
from grader.cli.common import common, isolation, one, prepared_backend


@contextmanager
def _results_folder(given: str | None):
    """Where a single submission is graded to: the folder given (kept), or a temporary one."""
    if given:
        yield Path(given)
        return
    with tempfile.TemporaryDirectory(prefix="grader-results-") as tmp:
        yield Path(tmp)


def _grade_one(args, entry, results: Path):
    """Grades one entry (a path, or an lms Entry) into RESULTS/grades.sqlite, as `grade` would; its exports then
    read it from there."""
    path = Path(getattr(entry, "path", entry))
    if not path.exists():
        raise GraderError(f"{path}: no such submission")
    work = Path(args.work)
    backend, registry, rubric = prepared_backend(args, work, os.cpu_count() or 2, args.gpu, isolation(args, work))
    return grade_single(entry, results, rubric, registry, backend, args.gpu), rubric


def cmd_gradescope(args) -> int:
    metadata = Path(args.metadata)
    entry = gradescope_single(Path(args.submission), metadata) if metadata.is_file() else Path(args.submission)
    with _results_folder(args.results) as results:
        single, rubric = _grade_one(args, entry, results)
        store = Store.existing(single.store)
        try:
            done = gradescope.export(store, rubric, single.student)
        finally:
            store.close()
    out = done.write(Path(args.results_dir) / "results.json")
    print(f"wrote {out}: {json.loads(done.text)['score']:.1f} / {rubric.max_points:.0f}")
    return 0


def cmd_autolab(args) -> int:
    with _results_folder(args.results) as results:
        single, rubric = _grade_one(args, Path(args.handin), results)
        store = Store.existing(single.store)
        try:
            done = autolab.export(store, rubric, single.student)
        finally:
            store.close()
    print(done.text, end="")
    return 0


def add_commands(sub) -> None:
    """This group's commands, on the parser's subcommands."""
    gs = sub.add_parser("gradescope", help="grade /autograder/submission for Gradescope",
                        description="Grade the Gradescope submission folder into a store (--results, else a "
                                    "temporary one), then write results.json in Gradescope's format from it "
                                    "(grader/gradescope/run_autograder calls this).")
    gs.add_argument("--submission", default="/autograder/submission", help="default: %(default)s")
    gs.add_argument("--results-dir", default="/autograder/results", help="default: %(default)s")
    gs.add_argument("--metadata", default="/autograder/submission_metadata.json",
                    help="Gradescope's record of the submission: the submitter's id and the time it was made, for "
                         "the late policy (default: %(default)s; without it, the folder's name and time)")
    common(gs, results=False)
    one(gs)
    gs.set_defaults(func=cmd_gradescope)

    a = sub.add_parser("autolab", help="grade one handin for Autolab",
                       description="Grade one handin (folder, .tar.gz, .tgz or .zip) into a store (--results, "
                                   "else a temporary one), then print Autolab's autoresult JSON from it as the "
                                   "last line.")
    a.add_argument("handin", help="the student's handin")
    common(a, results=False)
    one(a)
    a.set_defaults(func=cmd_autolab)
