"""The two drivers of a grading session (grader/grading/session.py) on this machine: `grade`, a class (builds in
parallel on the CPU, --jobs; one thread per GPU, --gpus, grading one submission at a time, each stored in one
transaction as soon as it is done), and `grade_single`, one submission on its own (Gradescope, Autolab). What a
submission's grading does is the session's and grader/grading/cases.py's; these decide only which, where and when.
"""
from __future__ import annotations

import queue
import shlex
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from grader.backends.base import Backend
from grader.core.errors import GraderError
from grader.core.registry import Registry
from grader.core.rubric import Rubric
from grader.grading.plan import NoSubmissions, plan_intake
from grader.grading.session import GradingSession
from grader.intake.roster import Person
from grader.intake.submission import Entry, Submission
from grader.outcomes.build_result import BuildResult
from grader.outcomes.results import SubmissionResult
from grader.store.store import Store


@dataclass
class GradeOptions:
    submissions: Path
    results: Path
    gpus: list[str | None]
    jobs: int = 2
    regrade: bool = False
    seed: int | None = None
    progress: bool = True
    command: str = field(default_factory=lambda: shlex.join(sys.argv))
    source: str = "plain"  # how the submissions were delivered: plain, canvas, gradescope (grader/intake/layouts.py)
    student: str | None = None  # grade this student only (again), leaving everyone else's grades as stored
    roster: list[Person] | None = None  # the class list (grader/intake/roster.py), stored; ids are mapped through it
    entries: list[Entry] | None = None  # these entries of `submissions` only (a Slurm shard's); None: all of them
    lms_times: Path | None = None  # the course system's submission times (--lms-times; grader/intake/lms_times.py)


# A grading run's source (grading_runs.source) when it graded one submission on its own (grade_single); a class's
# run stores its --from (grader/intake/layouts.py's SOURCES).
SINGLE = "single"


@dataclass
class SingleGrade:
    """One submission graded on its own (Gradescope, Autolab), as stored."""
    store: Path  # the grades.sqlite it is in
    student: str
    submission_id: int
    result: SubmissionResult


@dataclass
class GradeSummary:
    graded: list[SubmissionResult]
    skipped_same: list[str]  # students whose identical submission was already graded
    skipped_entries: list[str]  # directory entries that are not submissions
    run_id: int
    not_on_roster: list[str] = field(default_factory=list)  # ids submitted that the roster lacks
    no_submission: list[str] = field(default_factory=list)  # roster ids with no submission


def grade(options: GradeOptions, rubric: Rubric, registry: Registry, backend: Backend) -> GradeSummary:
    try:
        plan = plan_intake(options.submissions, options.source, options.roster, options.student, options.regrade,
                           options.results / "grades.sqlite", rubric=rubric, registry=registry,
                           harness_version=backend.harness_version, lms_times=options.lms_times,
                           entries=options.entries)
    except NoSubmissions:  # (the command line says so before building anything: cli.check_grade_inputs)
        raise GraderError(f"{options.submissions}: no submissions in it; no grading run recorded") from None
    skipped_entries, skipped_same, todo = plan.skipped_entries, plan.skipped_same, plan.todo
    not_on_roster, no_submission = plan.not_on_roster, plan.no_submission
    store = Store(options.results / "grades.sqlite")
    if options.roster is not None:
        store.save_roster(options.roster)
    try:
        session = GradingSession(store, rubric, registry, backend, options.gpus, options.seed, options.command,
                                 options.submissions, options.source)
    except BaseException:
        store.close()
        raise

    lock = threading.Lock()
    graded: list[SubmissionResult] = []
    bar = tqdm(total=len(todo), unit="submission", disable=not options.progress or not todo, file=sys.stderr)

    def finish(result: SubmissionResult):
        with lock:
            session.save(result)
            graded.append(result)
            bar.set_postfix_str(result.submission.student)
            bar.update()

    def build_one(sub: Submission) -> tuple[Submission, BuildResult | None]:
        done, build = session.build(sub)
        if done is not None:
            finish(done)
        return sub, build

    ready: queue.Queue = queue.Queue()
    errors: list[BaseException] = []

    def gpu_worker(gpu: str | None):
        while (item := ready.get()) is not None:
            sub, build = item
            try:
                finish(session.run(sub, build, gpu))
            except BaseException as e:  # the grader's own failure: stop, keep what is stored
                errors.append(e)
                return

    workers = [threading.Thread(target=gpu_worker, args=(gpu,), daemon=True) for gpu in options.gpus]
    for w in workers:
        w.start()
    try:
        with ThreadPoolExecutor(max_workers=options.jobs) as pool:
            for sub, build in pool.map(build_one, todo):
                if build is not None:
                    ready.put((sub, build))
        for _ in workers:
            ready.put(None)
        for w in workers:
            w.join()
    finally:
        bar.close()
        session.close()
        store.close()
    if errors:
        raise errors[0]
    return GradeSummary(graded, skipped_same, skipped_entries, session.run_id, not_on_roster, no_submission)


def grade_single(entry: Path | Entry, results: Path, rubric: Rubric, registry: Registry, backend: Backend, gpu: str | None,
                 seed: int | None = None, command: str | None = None) -> SingleGrade:
    """Grades one submission on its own (Gradescope, Autolab) into RESULTS/grades.sqlite, as a class run would:
    a grading run with the same record, the submission saved by the same Store.save. Its exports read it back
    from there (grader/exports/). It is graded even if the store holds it already (the new grade replaces it)."""
    store = Store(Path(results) / "grades.sqlite")
    session = None
    try:
        sub = GradingSession.read_alone(entry, rubric, registry)
        session = GradingSession(store, rubric, registry, backend, [gpu], seed,
                                 command if command is not None else shlex.join(sys.argv), sub.source, SINGLE)
        result = session.grade(sub, gpu)
        submission_id = session.save(result)
    finally:
        if session is not None:
            session.close()
        store.close()
    return SingleGrade(store.path, sub.student, submission_id, result)
