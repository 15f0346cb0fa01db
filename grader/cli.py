"""bin/grader <command>: the grader's command line.

  grade SUBMISSIONS   grade a directory of submissions into results/ (grades.sqlite, grades.csv, feedback/)
  report              rewrite grades.csv and feedback/ from results/grades.sqlite
  export              write results/canvas.csv for Canvas's gradebook import (--roster maps ids), or with
                      --to gradescope|autolab a student's results.json or autoresult, from the store
  gradescope          grade /autograder/submission into a store, then write its results.json from it
  autolab FILE        grade one handin into a store, then print its autoresult as the last line
  rescore RESULTS     recompute every stored score under an edited rubric (--rubric), without a GPU
  override ID TASK POINTS --reason TEXT --by NAME   set a task's points for a student, on record (--undo)
  rubric              check grader/rubric.toml against the harness's registry and print it
  release --out DIR   one folder (or --zip) per student: the feedback page (and its plot, if timed), ready to upload
  similarity          compare every pair of submissions per task: results/similarity.html, .csv (staff only)
  overview            rewrite results/overview.html: how the class did, for the staff (histograms, pass rates, lists)
  leaderboard         publish results/leaderboard/ (index.html, leaderboard.md, .csv) from the store
  rules               print the build gate's rules; --export FILE writes them for the students' pre-check
  serve               the course's grading service: uploads over HTTP, one worker per GPU (docs/service.md)
  tokens              make the service's tokens from the roster (a file to hand out), a staff or assignment token;
                      --revoke, --list
  status              the grading service's queue and workers; how far the Slurm batch of `grade --slurm` got
  merge               merge the Slurm shards' stores into results/grades.sqlite, then write the reports
  shard MANIFEST      grade one shard of a Slurm batch (what each array task runs)

Exit status: 0 when grading finished, however the students did; 1 when the
grader itself could not finish; 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from grader import backends
from grader.backends.base import Backend
from grader.core.errors import GraderError
from grader.exports import EXPORTERS, ExportError, autolab, canvas, gradescope
from grader.exports.common import CORRECTNESS_ONLY_FLAG, check_measured, not_measured, student_of
from grader.grading.grade import GradeOptions, grade, grade_single
from grader.reports.leaderboard import PublishOptions, publish
from grader.core.late import lateness
from grader.grading.plan import check_folder, plan_entries
from grader.intake.layouts import SOURCES, IntakeError, gradescope_single
from grader.core.registry import Registry, RegistryError
from grader.reports.overview import write_overview
from grader.reports.report import summary_table, untimed_note
from grader.reports.folder import write_reports
from grader.grading.rescore import RescoreError, rescore
from grader.intake.roster import Person, RosterError, read_roster, stored_people
from grader.core.rubric import DEFAULT_RUBRIC, Rubric, RubricError, load_rubric
from grader.run.sandbox import UNSAFE_FLAG, SandboxError, make_sandbox
from grader.scoring.chain import settle_stored
from grader.store.store import Store, StoreError


class UsageError(ValueError):
    """Options that do not go together: a bad argument (exit status 2)."""


def registry_from_store(results: Path) -> Registry:
    store = Store.existing(results / "grades.sqlite")
    try:
        run = store.latest_run()
    finally:
        store.close()
    if run is None:
        raise GraderError(f"{results / 'grades.sqlite'} holds no grading run yet: run `bin/grader grade` first")
    return Registry.from_json(json.loads(run["registry"]))


def stored_rubric(args, check: bool = True) -> Rubric:
    """--rubric, read against the registry of the store in --results (a one-line error where there is no store or
    no grading run, and never an empty new store); with `check`, also refused unless the stored scores were
    computed under it."""
    results = Path(args.results)
    rubric = load_rubric(Path(args.rubric), registry_from_store(results))
    if check:
        check_rubric_matches(results, rubric)
    return rubric


def isolation(args, work: Path):
    """The sandbox student code runs in, checked to work here; refuses without bubblewrap unless told."""
    work.mkdir(parents=True, exist_ok=True)
    chosen = make_sandbox(args.unsafe_no_sandbox, args.bwrap, work)
    if args.unsafe_no_sandbox:
        print(f"grader: WARNING: {UNSAFE_FLAG}: student code runs with this user's rights, without isolation; "
              "every result stored says so", file=sys.stderr)
    return chosen


BUILD_CACHE_ENV = "GRADER_BUILD_CACHE"
BUILD_CACHE_HELP = ("where the harness and the solution are built once for their sources and toolchain, and found "
                    f"after (default: ${BUILD_CACHE_ENV}, else WORK/cache)")


def build_cache_root(args, work: Path) -> Path:
    """Where the harness and the solution are built once for their sources and toolchain (grader/slurm/cache.py):
    --build-cache, else $GRADER_BUILD_CACHE, else WORK/cache."""
    given = getattr(args, "build_cache", None) or os.environ.get(BUILD_CACHE_ENV)
    return Path(given).resolve() if given else Path(work).resolve() / "cache"


def prepared_backend(args, work: Path, jobs: int, gpu: str | None, sandbox) -> tuple[Backend, Registry, Rubric]:
    """The built backend (--device's kind: grader/backends/__init__.py) over its build cache entry (built now if
    these sources and this toolchain have none yet), its registry and the rubric checked against it; the sandbox
    gets the rubric's limits before its GPU check runs the solution through it."""
    from grader.slurm import cache
    kind = backends.get(getattr(args, "device", backends.DEFAULT_DEVICE))
    arch = kind.arch(args.arch)
    target = "the CPU backend" if kind.name == "cpu" else arch

    def announce(folder: Path):
        print(f"building the harness and the solution for {target} in {folder} (once for these sources and this "
              "toolchain) ...", file=sys.stderr)
    entry, _ = cache.ensure(build_cache_root(args, work), kind, arch, jobs, Path(args.rubric), announce=announce)
    backend, registry = kind.open(entry.folder, entry.record, Path(work).resolve(), sandbox, arch)
    rubric = load_rubric(Path(args.rubric), registry)
    backend.set_limits(rubric.limits)
    if kind.sandboxed and not args.unsafe_no_sandbox:
        backend.check_gpu(gpu)
    return backend, registry, rubric


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


SLURM_ONLY = ("partition", "account", "gres", "time", "max_parallel", "cpus_per_task", "shard_size", "merge_time",
              "sbatch", "cache")


def refuse_slurm_only(args, command: str) -> None:
    """Without --slurm, the Slurm options (of `grade` and `serve`) are a mistake."""
    given = [name for name in SLURM_ONLY if getattr(args, name) != parser_defaults(command)[name]]
    if given:
        raise UsageError(f"--{given[0].replace('_', '-')} is an option of --slurm")


def slurm_options(args, command: str):
    """The Slurm options of `grade --slurm` and `serve --slurm`, checked against the device."""
    from grader.slurm.submit import SlurmOptions, sbatch_arguments
    if args.device == "auto":
        raise UsageError("--device auto decides by the machine it runs on, and with --slurm that is the login node, "
                         "not the nodes that grade: say --device gpu or --device cpu")
    if args.gres != parser_defaults(command)["gres"] and not backends.get(args.device).uses_gpus:
        raise UsageError(f"--gres {args.gres}: --device {args.device} grades on the CPUs each array task gets "
                         "(--cpus-per-task) and asks Slurm for no GPU; leave --gres out")
    if args.unsafe_no_sandbox:
        print(f"grader: WARNING: {UNSAFE_FLAG}: on every node, student code runs with this user's rights, without "
              "isolation; every result stored says so", file=sys.stderr)
    return SlurmOptions(args.partition, args.account, args.gres, args.time, args.max_parallel, args.cpus_per_task,
                        args.shard_size, args.merge_time, sbatch_arguments(args.sbatch),
                        Path(args.cache) if args.cache else None)


def cmd_grade(args) -> int:
    if args.slurm:
        return cmd_grade_slurm(args)
    refuse_slurm_only(args, "grade")
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
    options = slurm_options(args, "grade")
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


def cmd_serve(args) -> int:
    """Builds the solution once (the Slurm path's build cache), then serves; each worker opens that build."""
    from grader.service.connections import ConnectionLimits
    from grader.service.serve import ServeOptions, serve
    from grader.service.supervisor import Supervisor
    from grader.slurm import cache
    if args.slurm:
        return cmd_serve_slurm(args)
    refuse_slurm_only(args, "serve")
    if args.batch_seconds != parser_defaults("serve")["batch_seconds"]:
        raise UsageError("--batch-seconds is an option of --slurm")
    results = Path(args.results).resolve()
    work = Path(args.work).resolve() if args.work else results / "work"
    kind = backends.get(args.device)
    if kind.sandboxed:
        isolation(args, work)  # refuses now, before a worker starts, where the sandbox cannot work
    gpus = kind.devices(args.gpus)
    registry = Registry.from_file()
    rubric = load_rubric(Path(args.rubric), registry)
    arch = kind.arch(args.arch)

    def prepare() -> Supervisor:
        """The solution built once (or found in the build cache), then the workers that open it."""
        entry, built = cache.ensure(build_cache_root(args, work), kind, arch, os.cpu_count() or 2,
                                    Path(args.rubric))
        print(f"service: solution {'built' if built else 'already built'} in {entry.folder}", file=sys.stderr)

        def worker_command(name: str, gpu: str | None) -> list[str]:
            command = [sys.executable, "-m", "grader", "serve-worker", "--results", str(results), "--name", name,
                       "--device", args.device, "--rubric", str(Path(args.rubric).resolve()), "--cache",
                       str(entry.folder), "--work", str(work / name), "--parent", str(os.getpid()), "--arch", arch]
            command += ["--gpu", gpu] if gpu is not None else []
            command += [UNSAFE_FLAG] if args.unsafe_no_sandbox else (["--bwrap", args.bwrap] if args.bwrap else [])
            return command
        return Supervisor(results, gpus, worker_command, rubric.service, args.drain)

    doing = f"building the solution for {'the CPU' if args.device == 'cpu' else arch} (minutes the first time)"
    return serve(ServeOptions(results, args.host, args.port, args.leaderboard_ranked_only,
                              ConnectionLimits.from_args(args)), rubric, registry, prepare,
                 doing, kind.profiler)


def cmd_serve_slurm(args) -> int:
    """The service whose jobs go to Slurm in batches (grader/service/slurm_dispatch.py), through the build cache
    and the submission step of `grade --slurm`: the cache is made (or found) now, so the first batch waits for no
    build."""
    from grader.service.connections import ConnectionLimits
    from grader.service.serve import ServeOptions, serve
    from grader.service.slurm_dispatch import DispatchOptions, SlurmDispatcher
    from grader.slurm import cache, scheduler
    from grader.slurm.batch import SLURM_FOLDER
    if args.gpus != "all" or args.work:
        raise UsageError("--gpus and --work are for workers on this machine; with --slurm each array task grades on "
                         "the GPU Slurm gives it (--gres)")
    if args.batch_seconds <= 0:
        raise UsageError("--batch-seconds must be more than 0")
    options = slurm_options(args, "serve")
    results = Path(args.results).resolve()
    kind = backends.get(args.device)
    scheduler.check_partition(options.partition)  # Slurm answers, and the partition exists, before serving
    registry = Registry.from_file()
    rubric = load_rubric(Path(args.rubric), registry)
    arch = kind.arch(args.arch)

    def prepare() -> SlurmDispatcher:
        entry, built = cache.ensure(options.cache or results / SLURM_FOLDER / "cache", kind, arch,
                                    os.cpu_count() or 2, Path(args.rubric))
        print(f"service: the batches' build {'made' if built else 'found'} in {entry.folder}", file=sys.stderr)
        return SlurmDispatcher(DispatchOptions(results, options, args.device, arch, Path(args.rubric).resolve(),
                                               rubric.service, args.batch_seconds, args.unsafe_no_sandbox,
                                               args.bwrap, os.cpu_count() or 2))
    return serve(ServeOptions(results, args.host, args.port, args.leaderboard_ranked_only,
                              ConnectionLimits.from_args(args)), rubric, registry, prepare,
                 "building the solution for the Slurm batches (minutes the first time)",
                 lambda: "its jobs are graded in Slurm batches, which do not profile")


def cmd_serve_worker(args) -> int:
    from grader.service.worker import GPU_FAILED, MACHINE_FAULT, Worker, WorkerOptions
    from grader.store.faults import fault_of
    from grader.store.jobs import Jobs

    def failed(reason: str, status: int, said: str = "") -> int:
        """The worker's row says why it stopped (`bin/grader status`); the supervisor decides what comes next."""
        try:
            store = Store(Path(args.results) / "grades.sqlite")
            try:
                jobs = Jobs(store)
                jobs.worker_started(args.name, args.gpu, os.getpid())
                jobs.worker_state(args.name, "failed", reason)
            finally:
                store.close()
        except Exception as e:  # a full disk: the supervisor starts the worker again once it is fixed
            if not fault_of(e):
                raise
            status = MACHINE_FAULT
        print(f"service: {args.name}: {said}{reason}", file=sys.stderr)
        return status

    kind = backends.get(args.device)
    try:
        # A fresh folder each life: what a killed worker or a stopped service left in it is stale, and the backend
        # links the cache's harness into a new one (only `current`, which the worker makes, is removed).
        work = Path(args.work) / "current"
        shutil.rmtree(work, ignore_errors=True)
        sandbox = isolation(args, work) if kind.sandboxed else None
        cached = json.loads((Path(args.cache) / "cache.json").read_text())
        backend, registry = kind.open(Path(args.cache), cached, work, sandbox, args.arch)
        rubric = load_rubric(Path(args.rubric), registry)
        backend.set_limits(rubric.limits)
    except (GraderError, OSError, ValueError, KeyError) as e:  # the supervisor tries again
        if fault_of(e):  # not the worker's: started again after a pause, not counted as one that cannot start
            print(f"service: {args.name}: could not start: the grading machine's {fault_of(e)}", file=sys.stderr)
            return MACHINE_FAULT
        return failed(f"could not start: {e if isinstance(e, GraderError) else f'{type(e).__name__}: {e}'}", 1)
    if kind.sandboxed and not args.unsafe_no_sandbox:
        try:
            backend.check_gpu(args.gpu)
        except GraderError as e:  # the GPU cannot run the solution here: no job is lost, the worker is not restarted
            return failed(str(e), GPU_FAILED, said="stopped taking jobs: ")
    options = WorkerOptions(Path(args.results), args.name, args.gpu, args.parent, shlex.join(sys.argv),
                            work=Path(args.work))
    return Worker(options, backend, registry, rubric).run()


def cmd_tokens(args) -> int:
    from grader.service import tokens
    from grader.store.jobs import Jobs
    results = Path(args.results)
    store = Store(results / "grades.sqlite")
    try:
        jobs = Jobs(store)
        if args.revoke:
            n = jobs.revoke(student=args.revoke)
            if not n:
                raise GraderError(f"{args.revoke} holds no token in force (bin/grader tokens --list)")
            print(f"revoked {n} token(s) of {args.revoke}; `bin/grader tokens --roster ...` gives them a new one")
        elif args.staff or args.assignment:
            role, name = ("staff", args.staff) if args.staff else ("assignment", args.assignment)
            token = tokens.issue_one(jobs, role, name)
            print(f"a {role} token for {name} (shown once; only its hash is stored):\n{token}")
        elif args.list:
            for t in jobs.tokens():
                state = f"revoked {t.revoked}" if t.revoked else "in force"
                print(f"{t.role:10} {t.student or t.name:24} {t.hash[:12]}  made {t.made}  {state}")
        else:
            people = read_roster(Path(args.roster)) if args.roster else None
            if people is None:
                stored = store.roster()
                if not len(stored):
                    raise UsageError("give --roster FILE (the class list): the store holds none yet")
                people = stored_people(stored)
            else:
                store.save_roster(people)
            issued = tokens.issue_students(jobs, people, renew=args.renew)
            rubric = load_rubric(Path(args.rubric), Registry.from_file())
            out = tokens.write_hand_out(issued, Path(args.out) if args.out else results / "tokens.csv")
            kept = len(people) - len(issued)
            print(f"{len(issued)} new student tokens in {out} (readable by you only: hand each student their row, "
                  "then delete it)" + (f"; {kept} students kept the token they have (--renew replaces them)"
                                       if kept else ""))
            if not rubric.service.url:
                print(f"note: {args.rubric} names no [service] url yet: set it before `make dist`, or the students' "
                      "`make upload` finds no service")
    finally:
        store.close()
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


def check_rubric_matches(results: Path, rubric: Rubric) -> None:
    """The scores in the store were computed under this very rubric and its extensions file as it is now, or an
    error that says to rescore."""
    store = Store.existing(results / "grades.sqlite")
    try:
        latest = store.latest_submissions()
    finally:
        store.close()
    used = sorted(set(latest["rubric_sha256"]))
    rescore = f"run `bin/grader rescore {results} --rubric {rubric.path}` first"
    if used and used != [rubric.sha256]:
        raise GraderError(f"{rubric.path} (sha256 {rubric.sha256[:12]}) is not the rubric the stored scores were "
                          f"computed with ({', '.join(u[:12] for u in used)}): {rescore}")
    # The extensions file is read with the rubric but is not part of its bytes: an extension granted since
    # grading changes a late penalty without changing the rubric's digest.
    stale = [(r.student, r.late, now.note) for r in latest.itertuples()
             if (now := lateness(rubric.late, r.student, r.received, r.received_from)).note != r.late
             or now.percent != r.late_percent]
    if stale:
        student, before, after = stale[0]
        where = rubric.late.extensions_file if rubric.late and rubric.late.extensions_file else rubric.path
        raise GraderError(f"{where} changed since grading: {len(stale)} stored submission(s) now have a different "
                          f"late penalty ({student}: stored '{before}', now '{after}'): {rescore}")


def cmd_report(args) -> int:
    results = Path(args.results)
    rubric = stored_rubric(args)
    paths = write_reports(results, rubric)
    print(f"wrote {paths['grades']}, {paths['overview']} and {paths['feedback']}/")
    return 0


def graded_folder(results: Path) -> tuple[Path, str]:
    """The folder and delivery (--from) the latest grading run in RESULTS read, from its stored command line
    (read with this parser, whose options it was), or an error asking for --submissions when it names none
    that is still there."""
    store = Store.existing(results / "grades.sqlite")
    try:
        run = store.latest_run()
    finally:
        store.close()
    words = shlex.split((run or {}).get("command") or "")
    found = None
    if "grade" in words:
        try:
            given, _ = parser().parse_known_args(words[words.index("grade"):])
            found = (Path(given.submissions), given.source)
        except SystemExit:
            pass
    if found is None or not found[0].is_dir():
        raise GraderError(f"{results}: the grading run's submissions folder is not known or not there: "
                          "pass --submissions DIR")
    return found


def cmd_similarity(args) -> int:
    from grader.reports.similarity import find_tool, write_similarity
    results = Path(args.results)
    registry = registry_from_store(results)  # (a one-line error where there is no store or no run)
    rubric = load_rubric(Path(args.rubric), registry)
    find_tool()  # the tool's absence is said before the folder's
    folder, source = (Path(args.submissions), args.source) if args.submissions else graded_folder(results)
    done = write_similarity(results, registry, rubric, folder, source)
    top = done.pairs.head(1)
    print(f"wrote {done.html} and {done.csv}: {len(done.pairs)} pairs"
          + (f"; the most similar: {top.task[0]} {top.student_a[0]} and {top.student_b[0]} at {top.score[0]}%"
             if len(top) else ""))
    return 0


def cmd_release(args) -> int:
    from grader.reports.release import release
    results = Path(args.results)
    rubric = stored_rubric(args)
    done = release(results, rubric, Path(args.out), args.zip)
    print(done.summary())
    return 0


def cmd_overview(args) -> int:
    results = Path(args.results)
    rubric = stored_rubric(args)
    print(f"wrote {write_overview(results, rubric)}")
    return 0


def cmd_export(args) -> int:
    results = Path(args.results)
    if args.roster and args.to != "canvas":
        raise UsageError(f"--roster maps ids for Canvas only, not for --to {args.to}")
    rubric = stored_rubric(args)
    store = Store.existing(results / "grades.sqlite")
    try:
        options = {"roster": Path(args.roster) if args.roster else None,
                   "assignment_id": args.assignment_id} if args.to == "canvas" else {}
        student = student_of(store, args.student) if args.to != "canvas" or args.student else None
        measured = check_measured(store, rubric, student, args.correctness_only)  # refuses before writing
        done = EXPORTERS[args.to].export(store, rubric, args.student, **options)
        done.warnings = measured + done.warnings
    finally:
        store.close()
    if args.to == "autolab" and not args.out:
        print(done.text, end="")
        for w in done.warnings:
            print(f"warning: {w}", file=sys.stderr)
        return 0
    default = {"canvas": results / "canvas.csv", "gradescope": results / f"{student}.results.json",
               "autolab": results / f"{student}.autoresult.txt"}[args.to]
    written = done.write(Path(args.out) if args.out else default)
    for w in done.warnings:  # after the write: a failed one is the only line
        print(f"warning: {w}", file=sys.stderr)
    print(f"wrote {written}")
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


def _built_registry(harness_arg: str | None) -> Registry:
    """A built harness's registry when given, else the checked-in one (no build needed)."""
    return Registry.from_harness(Path(harness_arg)) if harness_arg else Registry.from_file()


def cmd_rules(args) -> int:
    rubric = load_rubric(Path(args.rubric), _built_registry(args.harness))
    gate = rubric.gate
    if args.export:
        Path(args.export).write_text(rubric.student_rules_text())
        print(f"wrote {args.export}")
        return 0
    print("Rules (a task file that breaks one is not run):")
    for rule in gate.rules.values():
        print(f"  {rule.name}: {rule.description}")
    print("Allowed external symbols, by category: " + ", ".join(gate.allowed))
    for task, loosened in gate.tasks.items():
        if loosened.allow or loosened.allow_symbols or loosened.allow_headers:
            print(f"  {task}: allows rules {list(loosened.allow)}, symbols {list(loosened.allow_symbols)}, "
                  f"headers {list(loosened.allow_headers)}")
    return 0


def cmd_rubric(args) -> int:
    registry = _built_registry(args.harness)
    rubric: Rubric = load_rubric(Path(args.rubric), registry)
    table = pd.DataFrame([{"task": t.id, "correctness": t.correctness_points, "performance": t.performance_points,
                           "types": ",".join(t.dtypes), "cases": len(t.dtypes) * len(t.shapes),
                           "timed": ",".join(t.timed), "s_zero": t.s_zero, "s_full": t.s_full} for t in rubric.tasks])
    print(f"{rubric.path}: valid; {rubric.max_points:.0f} points; sha256 {rubric.sha256[:12]}")
    print(table.to_string(index=False))
    return 0


def cmd_leaderboard(args) -> int:
    results = Path(args.results)
    rubric = stored_rubric(args, check=False)
    done = publish(PublishOptions(results, Path(args.out) if args.out else None,
                                  Path(args.salt_file) if args.salt_file else None, args.with_scores,
                                  args.show_names, ranked_only=args.ranked_only), rubric)
    for w in done.warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"wrote {done.out}/: index.html, leaderboard.md, leaderboard.csv "
          f"({done.ranked} ranked, {done.unranked} not ranked{', left off' if args.ranked_only else ''})")
    print(f"history: {done.history}" if done.history else "history: the ranking is unchanged since the last "
          "publish; no new history file")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bin/grader", description=__doc__.split("\n\n")[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="command")

    def common(q, results=True):
        q.add_argument("--rubric", default=str(DEFAULT_RUBRIC), help="the grading policy (default: %(default)s)")
        if results:
            q.add_argument("--results", default="results", help="results directory (default: %(default)s)")

    def sandboxing(q):
        q.add_argument("--bwrap", default=None, metavar="PATH",
                       help="the bubblewrap binary to sandbox student code with (default: $BWRAP, else bwrap on PATH)")
        q.add_argument(UNSAFE_FLAG, action="store_true",
                       help="run student code without a sandbox, with this user's rights (every result says so)")

    def slurm_group(q, what: str):
        """The Slurm options, the same for `grade --slurm` and `serve --slurm`."""
        c = q.add_argument_group("on a Slurm cluster (docs/slurm.md)")
        c.add_argument("--slurm", action="store_true", help=what)
        c.add_argument("--partition", default=None, help="sbatch --partition (default: the cluster's)")
        c.add_argument("--account", default=None, help="sbatch --account")
        c.add_argument("--gres", default="gpu:1",
                       help="each task's GPU, one: gpu:1 or gpu:TYPE:1 (default: %(default)s)")
        c.add_argument("--time", default=None, help="each task's time limit (default: enough for every submission of "
                       "a shard to use its whole build and submission limits from the rubric)")
        c.add_argument("--max-parallel", type=int, default=None, metavar="K",
                       help="at most K tasks at once (the array's %%K; default: as many as Slurm gives)")
        c.add_argument("--cpus-per-task", type=int, default=4,
                       help="CPUs per task, for builds (default: %(default)s)")
        c.add_argument("--shard-size", type=int, default=8, help="submissions per task (default: %(default)s)")
        c.add_argument("--merge-time", default="1:00:00", help="the merge job's time limit (default: %(default)s)")
        c.add_argument("--sbatch", action="append", default=[], metavar="ARGS",
                       help="more sbatch options for both jobs, e.g. --sbatch='--qos=short --mem=16G' (repeatable)")
        c.add_argument("--cache", default=None, metavar="DIR", help="the shared build cache, on a filesystem every "
                       "node sees (default: RESULTS/slurm/cache)")
        return c

    def one(q):
        q.add_argument("--results", default=None, help="grade into RESULTS/grades.sqlite and keep it (default: a "
                                                        "temporary folder, removed afterwards)")
        q.add_argument("--work", default="/tmp/grader-work", help="build directory (default: %(default)s)")
        q.add_argument("--build-cache", default=None, metavar="DIR", help=BUILD_CACHE_HELP)
        q.add_argument("--gpu", default=None, help="CUDA device index to use (default: the first visible)")
        q.add_argument("--arch", default=None, help="GPU architecture to build for, e.g. sm_90 (default: detected)")
        q.add_argument("--device", default="auto", metavar="NAME",
                       help="where the code runs: auto (default: the GPU when this machine has one, else the CPU "
                            "backend, correctness only: Gradescope's containers have no GPU), gpu or cpu")
        sandboxing(q)

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

    r = sub.add_parser("report", help="rewrite grades.csv and feedback/ from the store",
                       description="Rewrite results/grades.csv and results/feedback/ from results/grades.sqlite.")
    common(r)
    r.set_defaults(func=cmd_report)

    o = sub.add_parser("overview", help="rewrite overview.html, the staff's page of how the class did",
                       description="Rewrite RESULTS/overview.html from RESULTS/grades.sqlite: score histograms, the "
                                   "pass rate of each correctness case, timeouts, crashes, sanitizer findings, build "
                                   "failures, flags for review, late submissions, with links to each student's "
                                   "feedback. One self-contained file, for the staff only (it names students).")
    common(o)
    o.set_defaults(func=cmd_overview)

    sm = sub.add_parser("similarity", help="compare every pair of submissions per task (staff only)",
                        description="Write RESULTS/similarity.html and similarity.csv: every pair of the graded "
                                    "students' files compared task by task with Debian's similarity-tester (sim_c), "
                                    "the starter's own lines left out, ranked by how much of one is in the other. "
                                    "For the staff only.")
    common(sm)
    sm.add_argument("--submissions", default=None, metavar="DIR",
                    help="the submissions folder (default: the one the latest grading run read, if still there)")
    sm.add_argument("--from", dest="source", choices=SOURCES, default="plain",
                    help="how the submissions were delivered, as for grade (default: %(default)s)")
    sm.set_defaults(func=cmd_similarity)

    rl = sub.add_parser("release", help="one folder (or zip) of feedback per student, ready to upload",
                        description="Write OUT/ID/ for each student (their latest submission): feedback.html "
                                    "(its plot embedded), feedback.md and, for a student with timed cases, "
                                    "speedup.png; with --zip, OUT/ID.zip holding them. Read from the store, as every "
                                    "report is.")
    common(rl)
    rl.add_argument("--out", required=True, metavar="DIR", help="the folder to write into")
    rl.add_argument("--zip", action="store_true", help="one zip per student instead of one folder")
    rl.set_defaults(func=cmd_release)

    e = sub.add_parser("export", help="write canvas.csv (or a Gradescope or Autolab result) from the store",
                       description="Write Canvas's gradebook import CSV (Student, ID, SIS User ID, SIS Login ID, "
                                   "Section, then the assignment) from the store. --roster maps student ids through "
                                   "a Canvas gradebook export; without it, the roster `grade --roster` stored (if "
                                   "any) lists the students, and ids go in SIS Login ID. --to gradescope "
                                   "or autolab writes one student's results.json or autoresult instead.")
    common(e)
    e.add_argument("--to", choices=sorted(EXPORTERS), default="canvas", help="what to write (default: %(default)s)")
    e.add_argument("--student", default=None, help="whose latest submission (required for gradescope and autolab "
                                                   "when the store holds more than one student)")
    e.add_argument("--roster", default=None, help="a Canvas gradebook export (CSV) to map student ids (default: "
                                                  "the roster grade --roster stored, if any)")
    e.add_argument("--assignment-id", default=None,
                   help="Canvas's id of the assignment (the number in its URL), so the column reads "
                        "'Title (id)' and Canvas fills that assignment instead of making a new one")
    e.add_argument("--out", default=None, help="output file (default: RESULTS/canvas.csv, "
                                               "RESULTS/STUDENT.results.json; autolab: standard output)")
    e.add_argument(CORRECTNESS_ONLY_FLAG, action="store_true",
                   help="export totals whose performance points were not measured (graded without a GPU: "
                        "grade --device cpu) as they are, correctness points only; without it such an export "
                        "is refused")
    e.set_defaults(func=cmd_export)

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

    sv = sub.add_parser("serve", help="the course's grading service: uploads over HTTP, one worker per GPU",
                        description="Serve the grading API (docs/service.md) on HOST:PORT, behind the course's "
                                    "reverse proxy with TLS; the queue and every result are in RESULTS/grades.sqlite. "
                                    "SIGTERM or Ctrl-C stops it cleanly.")
    common(sv)
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s: the proxy's side)")
    sv.add_argument("--port", type=int, default=8000, help="port (default: %(default)s)")
    sv.add_argument("--gpus", default="all", help="'all' or GPU indices such as 0,1: one worker per GPU")
    sv.add_argument("--device", default=backends.DEFAULT_DEVICE, metavar="NAME",
                    help="where student code runs: gpu (default), cpu (correctness only) or auto")
    sv.add_argument("--arch", default=None, help="GPU architecture to build for, e.g. sm_90 (default: detected)")
    sv.add_argument("--work", default=None, help="build directory (default: RESULTS/work)")
    sv.add_argument("--build-cache", default=None, metavar="DIR", help=BUILD_CACHE_HELP)
    sv.add_argument("--leaderboard-ranked-only", action="store_true",
                    help="the live leaderboard page (/leaderboard) lists ranked entries only, as `leaderboard "
                         "--ranked-only` does")
    sv.add_argument("--drain", type=float, default=60.0, help="seconds a stopping service lets each worker finish "
                    "its job; after that the job goes back to the queue (default: %(default)s)")
    from grader.service import connections
    limits = connections.ConnectionLimits()
    group = sv.add_argument_group("connections (docs/service.md, \"Connections\"): the service's own limits, "
                                  "whatever proxy is in front of it")
    group.add_argument("--max-connections", type=connections.whole_number, metavar="N",
                       default=limits.max_connections,
                       help="connections open at once, all clients together: one more is answered 503 and closed "
                            "(default: %(default)s; lowered to fit the open-files limit)")
    group.add_argument("--max-per-address", type=connections.whole_number, metavar="N",
                       default=limits.max_per_address,
                       help="connections open at once from one client address (default: %(default)s)")
    group.add_argument("--proxy", action="append", default=list(limits.proxies), metavar="ADDRESS",
                       help="a reverse proxy's address, left out of --max-per-address (behind it every client has "
                            "its address); repeatable (default: none)")
    group.add_argument("--header-timeout", type=connections.seconds, default=limits.header_timeout, metavar="S",
                       help="seconds a connection has to send a request's whole headers, from connecting or from "
                            "its previous response (default: %(default)s)")
    group.add_argument("--body-timeout", type=connections.seconds, default=limits.body_timeout, metavar="S",
                       help="the longest pause in a request's body, in seconds; then it is answered 408 "
                            "(default: %(default)s)")
    group.add_argument("--keep-alive", type=connections.seconds, default=limits.keep_alive, metavar="S",
                       help="seconds an idle connection is kept after a response (default: %(default)s)")
    sandboxing(sv)
    on_slurm = slurm_group(sv, "grade on a Slurm cluster: the waiting jobs go to Slurm in batches (one job per "
                               "student each), through `grade --slurm`'s job array and merge, instead of workers on "
                               "this machine's GPUs")
    on_slurm.add_argument("--batch-seconds", type=float, default=20.0, metavar="S",
                          help="how often a new batch may be submitted, when none is in Slurm's queue and jobs "
                               "wait (default: %(default)s)")
    sv.set_defaults(func=cmd_serve)

    sw = sub.add_parser("serve-worker", help="one GPU's worker of `serve` (the service starts it)")
    common(sw)
    sw.add_argument("--name", required=True)
    sw.add_argument("--gpu", default=None)
    sw.add_argument("--device", default=backends.DEFAULT_DEVICE)
    sw.add_argument("--arch", default=None)
    sw.add_argument("--cache", required=True, help="the solution's build (serve's)")
    sw.add_argument("--work", required=True)
    sw.add_argument("--parent", type=int, required=True, help="the service's pid")
    sandboxing(sw)
    sw.set_defaults(func=cmd_serve_worker)

    tk = sub.add_parser("tokens", help="the grading service's tokens: one per student, staff, the assignment's",
                        description="Make a token for every student of the roster who has none (only their hashes "
                                    "are stored) and write RESULTS/tokens.csv to hand out; or one staff or "
                                    "assignment (Gradescope bridge) token; or revoke or list them.")
    common(tk)
    tk.add_argument("--roster", default=None, help="the class list (default: the one stored)")
    tk.add_argument("--out", default=None, help="the file to hand out (default: RESULTS/tokens.csv)")
    tk.add_argument("--renew", action="store_true", help="new tokens for everyone, the old ones revoked")
    tk.add_argument("--staff", default=None, metavar="NAME", help="print a new staff token for NAME")
    tk.add_argument("--assignment", default=None, metavar="NAME",
                    help="print a new assignment token (the Gradescope bridge's), named NAME")
    tk.add_argument("--revoke", default=None, metavar="ID", help="revoke the student's tokens")
    tk.add_argument("--list", action="store_true", help="list the tokens (hash prefixes, never the tokens)")
    tk.set_defaults(func=cmd_tokens)

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

    rb = sub.add_parser("rubric", help="check the rubric against the harness and print it",
                        description="Validate the rubric against the harness's task registry and print it.")
    common(rb, results=False)
    rb.add_argument("--harness", default=None, help="a built harness to read the registry from (default: the "
                                                    "checked-in starter/harness/registry.json)")
    rb.set_defaults(func=cmd_rubric)

    lb = sub.add_parser("leaderboard", help="publish the leaderboard (HTML, Markdown, CSV) from the store",
                        description="Write RESULTS/leaderboard/: index.html (one self-contained page), "
                                    "leaderboard.md, leaderboard.csv and history/, ranking each student's best "
                                    "correct submission by the rubric's leaderboard metric. Students appear by "
                                    "nickname or salted pseudonym, never by id unless --show-names.")
    common(lb)
    lb.add_argument("--out", default=None, help="output folder (default: RESULTS/leaderboard)")
    lb.add_argument("--with-scores", action="store_true", help="add each entry's total score")
    lb.add_argument("--show-names", action="store_true", help="add student ids (not for a public page)")
    lb.add_argument("--ranked-only", action="store_true",
                    help="list ranked entries only: leave off those not ranked, and why (default: list them below)")
    lb.add_argument("--salt-file", default=None,
                    help="the pseudonyms' secret salt, created on first use (default: RESULTS/pseudonym-salt)")
    lb.set_defaults(func=cmd_leaderboard)

    ru = sub.add_parser("rules", help="print the build gate's rules, or export them for the pre-check",
                        description="Print the build gate's rules from the rubric, or write them as JSON for "
                                    "starter/tools/precheck.py (--export starter/tools/rules.json).")
    common(ru, results=False)
    ru.add_argument("--harness", default=None, help="a built harness to read the registry from (default: the "
                                                    "checked-in starter/harness/registry.json)")
    ru.add_argument("--export", default=None, metavar="FILE", help="write the pre-check's rules.json here")
    ru.set_defaults(func=cmd_rules)
    return p


def parser_defaults(command: str) -> dict:
    """A command's option defaults, as its parser has them."""
    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {a.dest: a.default for a in sub.choices[command]._actions}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except UsageError as e:
        print(f"grader: {e}", file=sys.stderr)
        return 2
    except (GraderError, RubricError, RegistryError, StoreError, ExportError, SandboxError, IntakeError,
            RosterError, RescoreError) as e:
        print(f"grader: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("grader: interrupted; every submission finished so far is stored", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
