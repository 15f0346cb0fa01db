"""`grade` (on this machine or as a Slurm batch), `status`, the Slurm batch's `merge` and `shard`, and the staff's
changes to stored grades: `rescore` and `override`."""
from __future__ import annotations

import argparse
import os
from contextlib import contextmanager
from pathlib import Path


from grader import backends
from grader.core.errors import GraderError
from grader.exports import canvas
from grader.exports.common import CORRECTNESS_ONLY_FLAG, not_measured, student_of
from grader.grading.grade import GradeOptions, grade
from grader.grading.plan import check_folder, plan_entries
from grader.intake.layouts import SOURCES
from grader.core.registry import Registry
from grader.reports.report import summary_table, untimed_note
from grader.reports.folder import write_reports
from grader.grading.rescore import rescore
from grader.intake.roster import Person, read_roster
from grader.core.rubric import Rubric, load_rubric
from grader.scoring.chain import settle_stored
from grader.store.store import Store
from grader.cli.common import (BUILD_CACHE_HELP, common, isolation, prepared_backend, refuse_slurm_only, sandboxing,
                               slurm_group, slurm_options, stored_rubric, UsageError)


def check_grade_inputs(args) -> list[Person] | None:
    """Every path and file `grade` was given, checked before anything is built: the submissions folder (and
    that it holds a submission, of --student when given: grader/grading/plan.py, as grading will find them), the
    rubric (against the checked-in registry) and its extensions file, the roster. The first problem is an error
    naming it, in one line. Returns the roster."""
    folder = check_folder(Path(args.submissions))
    load_rubric(Path(args.rubric), Registry.from_file())
    roster = read_roster(Path(args.roster)) if args.roster else None
    plan_entries(folder, args.source, roster, args.student, lms_times(args))
    return roster


def lms_times(args) -> Path | None:
    return Path(args.lms_times) if args.lms_times else None


def write_outputs(results: Path, rubric: Rubric):
    """What every grading ends with, from the store: grades.csv, review.csv, feedback/, canvas.csv, the summary.
    canvas.csv only where every student's performance was measured: a gradebook would take a correctness-only
    total for the grade (`export --correctness-only` writes it on purpose)."""
    write_reports(results, rubric)
    store = Store.existing(results / "grades.sqlite")
    gradebook = results / "canvas.csv"
    try:
        unwritten = not_measured(store, rubric)
        if not unwritten:
            canvas.export(store, rubric).write(gradebook)  # ids as SIS Login IDs; `export --roster` maps them
        print(summary_table(store, rubric).to_string(index=False))
        untimed = untimed_note(store, rubric)
        if untimed:
            print(untimed)
    finally:
        store.close()
    if unwritten:
        stale = gradebook.is_file()
        gradebook.unlink(missing_ok=True)  # an earlier grading's totals are not the store's any more
        print(f"canvas.csv not written{' (the earlier one removed)' if stale else ''}: {unwritten} "
              f"(`bin/grader export {CORRECTNESS_ONLY_FLAG}` writes it so)")
    print(f"results in {results}: grades.sqlite, grades.csv, {'' if unwritten else 'canvas.csv, '}review.csv and "
          "overview.html (for the staff), feedback/")


def print_roster_gaps(roster: str | None, not_on_roster: list[str], no_submission: list[str]) -> None:
    """What `grade --roster` (on one machine or with --slurm) found the roster and the submissions disagree on."""
    if not_on_roster:
        print(f"not on the roster {roster} (graded all the same): {', '.join(not_on_roster)}")
    if no_submission:
        print(f"on the roster with no submission ({len(no_submission)}): {', '.join(no_submission)}")


def cmd_grade(args) -> int:
    if args.slurm:
        return cmd_grade_slurm(args)
    refuse_slurm_only(args)
    results = Path(args.results)
    work = Path(args.work) if args.work else results / "work"
    roster = check_grade_inputs(args)
    kind = backends.get(args.device)
    sandbox = isolation(args, work) if kind.sandboxed else None  # refuses before anything else happens
    gpus = kind.devices(args.gpus)
    backend, registry, rubric = prepared_backend(args, work, args.jobs, gpus[0], sandbox)
    summary = grade(GradeOptions(Path(args.submissions), results, gpus, args.jobs, args.regrade, args.seed,
                                 not args.no_progress, source=args.source, student=args.student, roster=roster,
                                 lms_times=lms_times(args)),
                    rubric, registry, backend)
    for line in summary.skipped_entries:
        print(f"note: {line}")
    if summary.skipped_same:
        print(f"already graded, unchanged (use --regrade to grade again): {', '.join(summary.skipped_same)}")
    print_roster_gaps(args.roster, summary.not_on_roster, summary.no_submission)
    write_outputs(results, rubric)
    return 0


def cmd_grade_slurm(args) -> int:
    from grader.slurm.submit import submit
    if args.gpus != "all" or args.work or args.no_progress:
        raise UsageError("--gpus, --work and --no-progress are for grading on this machine; with --slurm each "
                         "array task grades on the GPU Slurm gives it (--gres)")
    options = slurm_options(args)
    roster = check_grade_inputs(args)
    done = submit(Path(args.submissions), Path(args.results), options, device=args.device, arch=args.arch,
                  rubric_path=Path(args.rubric), regrade=args.regrade, seed=args.seed, unsafe=args.unsafe_no_sandbox,
                  bwrap=args.bwrap, jobs=args.jobs, source=args.source, roster=roster, student=args.student,
                  lms_times=lms_times(args))
    for line in done.notes:
        print(f"note: {line}")
    print_roster_gaps(args.roster, done.not_on_roster, done.no_submission)
    if done.merged_before:
        print(f"merged {done.merged_before} submissions that earlier batches' shards had stored into "
              f"{Path(args.results) / 'grades.sqlite'}")
    if done.batch is None:
        print(f"nothing to grade: all {done.already_graded} submissions are graded already, unchanged "
              "(use --regrade to grade them again)")
        return 0
    print(f"batch {done.batch}: {done.to_grade} submissions to grade in {done.shards} shards"
          + (f" ({done.already_graded} graded already, unchanged)" if done.already_graded else ""))
    print(f"submitted job array {done.array} and merge job {done.merge} (after the whole array)")
    print(f"follow it: bin/grader status --results {args.results}")
    return 0


def cmd_status(args) -> int:
    """The service's queue and workers when the store has them; the latest Slurm batch when there is one."""
    from grader.slurm.status import batches, report
    from grader.service.status import service_status, status_text
    from grader.store.jobs import Jobs
    results = Path(args.results)
    shown = False
    if (results / "grades.sqlite").is_file() and not args.batch:
        store = Store.existing(results / "grades.sqlite")
        try:
            status = service_status(Jobs(store))
        finally:
            store.close()
        if status["workers"] or status["queue"] or status["done_last_hour"]:
            print(status_text(status))
            shown = True
    if not shown and not args.batch and not batches(results):
        raise GraderError(f"nothing to follow in {results}: no grading service has run there (`bin/grader serve "
                          f"--results {results}`) and no Slurm batch (`bin/grader grade DIR --slurm --results "
                          f"{results}`)")
    if args.batch or batches(results):
        if shown:
            print()
        print(report(results, args.batch))
    return 0


def cmd_merge(args) -> int:
    from grader.slurm.merge import merge_results
    results = Path(args.results)
    done = merge_results(results)
    if not done.batches:
        raise GraderError(f"no Slurm batch in {results}: nothing to merge")
    print(f"merged {done.merged} submissions from {done.shards} shard stores into {results / 'grades.sqlite'}"
          + (f" ({done.before} merged before)" if done.before else ""))
    if done.waiting:
        print(f"not merged yet, their tasks are still in the queue: shards {', '.join(done.waiting)}")
    if (results / "grades.sqlite").is_file():
        write_outputs(results, stored_rubric(args, check=False))
    return 0


def cmd_shard(args) -> int:
    from grader.slurm.shard import run_shard
    summary = run_shard(Path(args.manifest), args.index, Path(args.work) if args.work else None)
    names = [r.submission.student for r in summary.graded]
    print(f"graded {len(names)}: {', '.join(names) or 'none'}"
          + (f"; already in this shard's store: {', '.join(summary.skipped_same)}" if summary.skipped_same else ""))
    return 0


def cmd_rescore(args) -> int:
    results = Path(args.results)
    rubric = stored_rubric(args, check=False)
    store = Store.existing(results / "grades.sqlite")
    try:
        done = rescore(store, rubric)
    finally:
        store.close()
    write_reports(results, rubric)
    print(f"rescored {done.rescored} submission(s) under {rubric.path} (sha256 {rubric.sha256[:12]}); "
          f"{len(done.changed)} student(s)' totals changed")
    for student, before, after in done.changed:
        print(f"  {student}: {before:.2f} -> {after:.2f}")
    print(f"rewrote {results / 'grades.csv'} and {results / 'feedback'}/")
    return 0


def cmd_override(args) -> int:
    results = Path(args.results)
    rubric = stored_rubric(args)
    if args.task not in {t.id for t in rubric.tasks}:
        raise UsageError(f"'{args.task}' is not a graded task ({', '.join(t.id for t in rubric.tasks)})")
    if not args.by.strip():
        raise UsageError("--by names who made the change: it cannot be empty")
    store = Store.existing(results / "grades.sqlite")
    try:
        student_of(store, args.student)
        if args.undo:
            if args.points is not None:
                raise UsageError("--undo takes no POINTS")
            if not store.undo_override(args.student, args.task, args.by, settle_stored):
                raise GraderError(f"{args.student} has no override of {args.task} in force")
            said = f"undid the override of {args.student}'s {args.task} (kept on record, marked undone by {args.by})"
        else:
            worth = rubric.task(args.task).max_points
            if args.points is None or not 0 <= args.points <= worth:
                raise UsageError(f"POINTS for {args.task} must be between 0 and {worth:g}")
            if not (args.reason or "").strip():
                raise UsageError("--reason is required: it goes on record and into the student's feedback")
            store.add_override(args.student, args.task, args.points, args.reason.strip(), args.by.strip(),
                               settle_stored)
            said = f"{args.student}'s {args.task}: {args.points:g} points, by {args.by}: {args.reason.strip()}"
        latest = store.latest_submissions()
        total = float(latest[latest["student"] == args.student]["total"].iloc[0])
    finally:
        store.close()
    write_reports(results, rubric)
    print(f"{said}; total now {total:.2f} / {rubric.max_points:g}; rewrote grades.csv and feedback/")
    return 0


@contextmanager


def add_commands(sub) -> None:
    """This group's commands, on the parser's subcommands."""
    g = sub.add_parser("grade", help="grade a directory of submissions",
                       description="Grade every submission in SUBMISSIONS (a folder, .tar.gz, .tgz or .zip per "
                                   "student, named by student id) and write results/.")
    g.add_argument("submissions", help="directory with one entry per student (or a Canvas or Gradescope download)")
    common(g)
    g.add_argument("--from", dest="source", choices=SOURCES, default="plain",
                   help="how the submissions were delivered: plain (one entry per student id), canvas (a bulk "
                        "download: login[_LATE]_userid_submissionid_file), gradescope (an export folder with "
                        "submission_metadata.yml) (default: %(default)s)")
    g.add_argument("--student", default=None, help="grade this student only (again); everyone else's grades stay "
                                                   "as stored")
    g.add_argument("--roster", default=None, help="the class list: a Canvas gradebook export or a CSV with a "
                                                  "'student' column; everyone on it gets a row")
    g.add_argument("--lms-times", default=None, metavar="FILE",
                   help="the course system's submission times, which the late policy reads (--from canvas: "
                        "Canvas's submissions, user_id and submitted_at, as its API lists them, or its late-"
                        "assignments report; any: a CSV with student and submitted_at). Without it a Canvas "
                        "download has no times: its LATE mark decides (grader/README.md)")
    g.add_argument("--gpus", default="all", help="'all' or GPU indices such as 0,1: one grading worker per GPU")
    g.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="parallel builds (default: %(default)s)")
    g.add_argument("--regrade", action="store_true", help="grade again submissions already graded unchanged")
    g.add_argument("--seed", type=int, default=None, help="input seed (default: a fresh random one, stored)")
    g.add_argument("--work", default=None, help="build directory (default: RESULTS/work)")
    g.add_argument("--build-cache", default=None, metavar="DIR", help=BUILD_CACHE_HELP)
    g.add_argument("--arch", default=None, help="GPU architecture to build for, e.g. sm_90 (default: detected)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    g.add_argument("--device", default=backends.DEFAULT_DEVICE, metavar="NAME",
                   help="where student code runs: gpu (default: this machine's NVIDIA GPUs); cpu (correctness only, "
                        "on a machine without a GPU: the CPU backend of starter/cpu/, nothing timed); auto (the GPU "
                        "when this machine has one, else the CPU)")
    sandboxing(g)
    slurm_group(g, "submit a job array (one shard of submissions per task, one GPU each) and a merge job, print "
                   "their ids and return; again later: only what is missing")
    g.set_defaults(func=cmd_grade)

    st = sub.add_parser("status", help="the grading service's queue and workers; how far the Slurm batch got",
                        description="Show the grading service's queue, workers (GPU, state, job, jobs per hour) and "
                                    "failed jobs, when RESULTS's store has them; and the latest Slurm batch of "
                                    "RESULTS (or --batch): each array task's state "
                                    "(squeue, sacct or scontrol), graded / total per shard and in all, where each "
                                    "shard ran (host, GPU), an ETA, the merge job, and what was left ungraded.")
    st.add_argument("--results", default="results", help="results directory (default: %(default)s)")
    st.add_argument("--batch", default=None, help="a batch id (default: the latest)")
    st.set_defaults(func=cmd_status)

    mg = sub.add_parser("merge", help="merge the Slurm shards' stores into the store, then write the reports",
                        description="Merge every Slurm shard store of RESULTS that is not merged yet into "
                                    "RESULTS/grades.sqlite (one transaction per submission; a shard whose task is "
                                    "still queued is left for later), then write grades.csv, feedback/ and "
                                    "canvas.csv. The batch's merge job runs this after the array.")
    common(mg)
    mg.set_defaults(func=cmd_merge)

    sh = sub.add_parser("shard", help="grade one shard of a Slurm batch (what each array task runs)",
                        description="Grade shard N of a Slurm batch's manifest into its own store, on the first "
                                    "GPU of CUDA_VISIBLE_DEVICES (the batch's shard.sh runs this in each array task).")
    sh.add_argument("manifest", help="the batch's manifest.json")
    sh.add_argument("--index", type=int, default=None, help="the shard (default: $SLURM_ARRAY_TASK_ID)")
    sh.add_argument("--work", default=None, help="build folder (default: a new one under $TMPDIR, removed after)")
    sh.set_defaults(func=cmd_shard)

    rs = sub.add_parser("rescore", help="recompute every stored score under an edited rubric (no GPU)",
                        description="Score every stored submission again from its stored cases under --rubric "
                                    "(points, curves, penalties, the late policy), then rewrite grades.csv and "
                                    "feedback/. Nothing runs: a rubric that changes what is run needs "
                                    "`grade --regrade`.")
    rs.add_argument("results", help="the results folder holding grades.sqlite")
    common(rs, results=False)
    rs.set_defaults(func=cmd_rescore)

    ov = sub.add_parser("override", help="set a task's points for a student, with the reason on record",
                        description="Set STUDENT's points for TASK (in place of the graded ones) with a reason and "
                                    "its author, kept in the store with the time, shown in the feedback and the "
                                    "exports; --undo ends it (it stays on record, marked undone).")
    ov.add_argument("student")
    ov.add_argument("task")
    ov.add_argument("points", type=float, nargs="?", default=None)
    ov.add_argument("--reason", default=None, help="why (goes into the student's feedback)")
    ov.add_argument("--by", required=True, help="who made the change")
    ov.add_argument("--undo", action="store_true", help="end the override of STUDENT's TASK")
    common(ov)
    ov.set_defaults(func=cmd_override)


def parser_of(command: str) -> argparse.ArgumentParser:
    """One of this group's commands' parsers alone (reports read a stored `grade` command line with it)."""
    sub = argparse.ArgumentParser(prog="bin/grader").add_subparsers(dest="command")
    add_commands(sub)
    return sub.choices[command]
