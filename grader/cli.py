"""python3 -m grader <command>: the grader's command line.

  grade SUBMISSIONS   grade a directory of submissions into results/ (grades.sqlite, grades.csv, feedback/)
  report              rewrite grades.csv and feedback/ from results/grades.sqlite
  export              write results/canvas.csv for Canvas's gradebook import (--roster maps ids), or with
                      --to gradescope|autolab a student's results.json or autoresult, from the store
  gradescope          grade /autograder/submission into a store, then write its results.json from it
  autolab FILE        grade one handin into a store, then print its autoresult as the last line
  rubric              check grader/rubric.toml against the harness's registry and print it
  leaderboard         publish results/leaderboard/ (index.html, leaderboard.md, .csv) from the store
  rules               print the build gate's rules; --export FILE writes them for the students' pre-check

Exit status: 0 when grading finished, however the students did; 1 when the
grader itself could not finish; 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from grader.build import REPO, GraderError, LocalBackend
from grader.exports import EXPORTERS, ExportError, autolab, canvas, gradescope
from grader.exports.common import student_of
from grader.grade import GradeOptions, grade, grade_single
from grader.leaderboard import PublishOptions, open_store, publish
from grader.registry import Registry, RegistryError
from grader.report import summary_table, write_reports
from grader.rubric import DEFAULT_RUBRIC, Rubric, RubricError, load_rubric
from grader.sandbox import UNSAFE_FLAG, SandboxError, make_sandbox
from grader.store import Store, StoreError


class UsageError(ValueError):
    """Options that do not go together: a bad argument (exit status 2)."""


def gpu_list(spec: str) -> list[str]:
    """--gpus all|0,1,...: the CUDA device indices to run one worker on each."""
    if spec != "all":
        ids = [s.strip() for s in spec.split(",") if s.strip()]
        if not ids or not all(i.isdigit() for i in ids):
            raise GraderError(f"--gpus must be 'all' or a comma-separated list of GPU indices, not '{spec}'")
        return ids
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        ids = [s.strip() for s in visible.split(",") if s.strip()]
    else:
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True,
                                 text=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        ids = out.split()
    if not ids:
        raise GraderError("no GPU found: grading runs the kernels, so it needs a machine with an NVIDIA GPU")
    return ids


def registry_from_store(results: Path) -> Registry:
    store = Store.existing(results / "grades.sqlite")
    try:
        run = store.latest_run()
    finally:
        store.close()
    if run is None:
        raise GraderError(f"{results / 'grades.sqlite'} holds no grading run yet: run `python3 -m grader grade` first")
    return Registry.from_json(json.loads(run["registry"]))


def isolation(args, work: Path):
    """The sandbox student code runs in, checked to work here; refuses without bubblewrap unless told."""
    work.mkdir(parents=True, exist_ok=True)
    chosen = make_sandbox(args.unsafe_no_sandbox, args.bwrap, work)
    if args.unsafe_no_sandbox:
        print(f"grader: WARNING: {UNSAFE_FLAG}: student code runs with this user's rights, without isolation; "
              "every result stored says so", file=sys.stderr)
    return chosen


def prepared_backend(args, work: Path, jobs: int, gpu: str | None, sandbox) -> tuple[LocalBackend, Registry, Rubric]:
    """The built backend, its registry and the rubric checked against it; the sandbox gets the rubric's limits
    before its GPU check runs the solution through it."""
    backend = LocalBackend(work, args.arch, sandbox)
    print(f"building the harness and the solution in {backend.workspace.work} ...", file=sys.stderr)
    registry = backend.prepare(jobs)
    rubric = load_rubric(Path(args.rubric), registry)
    backend.set_limits(rubric.limits)
    if not args.unsafe_no_sandbox:
        backend.check_gpu(gpu)
    return backend, registry, rubric


def cmd_grade(args) -> int:
    results = Path(args.results)
    work = Path(args.work) if args.work else results / "work"
    sandbox = isolation(args, work)  # refuses before anything else happens
    gpus = gpu_list(args.gpus)
    backend, registry, rubric = prepared_backend(args, work, args.jobs, gpus[0], sandbox)
    summary = grade(GradeOptions(Path(args.submissions), results, gpus, args.jobs, args.regrade, args.seed,
                                 not args.no_progress), rubric, registry, backend)
    write_reports(results, rubric)
    store = Store.existing(results / "grades.sqlite")
    try:
        canvas.export(store, rubric).write(results / "canvas.csv")  # ids as SIS Login IDs; `export --roster` maps them
    finally:
        store.close()
    for line in summary.skipped_entries:
        print(f"note: {line}")
    if summary.skipped_same:
        print(f"already graded, unchanged (use --regrade to grade again): {', '.join(summary.skipped_same)}")
    store = Store(results / "grades.sqlite")
    try:
        print(summary_table(store, rubric).to_string(index=False))
    finally:
        store.close()
    print(f"results in {results}: grades.sqlite, grades.csv, canvas.csv, review.csv (for TAs), feedback/")
    return 0


def cmd_report(args) -> int:
    results = Path(args.results)
    rubric = load_rubric(Path(args.rubric), registry_from_store(results))
    paths = write_reports(results, rubric)
    print(f"wrote {paths['grades']} and {paths['feedback']}/")
    return 0


def cmd_export(args) -> int:
    results = Path(args.results)
    if args.roster and args.to != "canvas":
        raise UsageError(f"--roster maps ids for Canvas only, not for --to {args.to}")
    rubric = load_rubric(Path(args.rubric), registry_from_store(results))
    store = Store.existing(results / "grades.sqlite")
    try:
        options = {"roster": Path(args.roster) if args.roster else None} if args.to == "canvas" else {}
        done = EXPORTERS[args.to].export(store, rubric, args.student, **options)
        student = student_of(store, args.student) if args.to != "canvas" else None
    finally:
        store.close()
    for w in done.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if args.to == "autolab" and not args.out:
        print(done.text, end="")
        return 0
    default = {"canvas": results / "canvas.csv", "gradescope": results / f"{student}.results.json",
               "autolab": results / f"{student}.autoresult.txt"}[args.to]
    print(f"wrote {done.write(Path(args.out) if args.out else default)}")
    return 0


@contextmanager
def _results_folder(given: str | None):
    """Where a single submission is graded to: the folder given (kept), or a temporary one."""
    if given:
        yield Path(given)
        return
    with tempfile.TemporaryDirectory(prefix="grader-results-") as tmp:
        yield Path(tmp)


def _grade_one(args, entry: Path, results: Path):
    """Grades one entry into RESULTS/grades.sqlite, as `grade` would; its exports then read it from there."""
    if not entry.exists():
        raise GraderError(f"{entry}: no such submission")
    work = Path(args.work)
    backend, registry, rubric = prepared_backend(args, work, os.cpu_count() or 2, args.gpu, isolation(args, work))
    return grade_single(entry, results, rubric, registry, backend, args.gpu), rubric


def cmd_gradescope(args) -> int:
    with _results_folder(args.results) as results:
        single, rubric = _grade_one(args, Path(args.submission), results)
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
    open_store(results).close()  # a clear error when there is no store or no run, and never an empty new one
    rubric = load_rubric(Path(args.rubric), registry_from_store(results))
    done = publish(PublishOptions(results, Path(args.out) if args.out else None,
                                  Path(args.salt_file) if args.salt_file else None, args.with_scores,
                                  args.show_names), rubric)
    for w in done.warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"wrote {done.out}/: index.html, leaderboard.md, leaderboard.csv "
          f"({done.ranked} ranked, {done.unranked} not ranked)")
    print(f"history: {done.history}" if done.history else "history: the ranking is unchanged since the last "
          "publish; no new history file")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python3 -m grader", description=__doc__.split("\n\n")[1],
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

    def one(q):
        q.add_argument("--results", default=None, help="grade into RESULTS/grades.sqlite and keep it (default: a "
                                                        "temporary folder, removed afterwards)")
        q.add_argument("--work", default="/tmp/grader-work", help="build directory (default: %(default)s)")
        q.add_argument("--gpu", default=None, help="CUDA device index to use (default: the first visible)")
        q.add_argument("--arch", default=None, help="GPU architecture to build for, e.g. sm_90 (default: detected)")
        sandboxing(q)

    g = sub.add_parser("grade", help="grade a directory of submissions",
                       description="Grade every submission in SUBMISSIONS (a folder, .tar.gz, .tgz or .zip per "
                                   "student, named by student id) and write results/.")
    g.add_argument("submissions", help="directory with one entry per student")
    common(g)
    g.add_argument("--gpus", default="all", help="'all' or GPU indices such as 0,1: one grading worker per GPU")
    g.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="parallel builds (default: %(default)s)")
    g.add_argument("--regrade", action="store_true", help="grade again submissions already graded unchanged")
    g.add_argument("--seed", type=int, default=None, help="input seed (default: a fresh random one, stored)")
    g.add_argument("--work", default=None, help="build directory (default: RESULTS/work)")
    g.add_argument("--arch", default=None, help="GPU architecture to build for, e.g. sm_90 (default: detected)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    sandboxing(g)
    g.set_defaults(func=cmd_grade)

    r = sub.add_parser("report", help="rewrite grades.csv and feedback/ from the store",
                       description="Rewrite results/grades.csv and results/feedback/ from results/grades.sqlite.")
    common(r)
    r.set_defaults(func=cmd_report)

    e = sub.add_parser("export", help="write canvas.csv (or a Gradescope or Autolab result) from the store",
                       description="Write Canvas's gradebook import CSV (Student, ID, SIS User ID, SIS Login ID, "
                                   "Section, then the assignment) from the store. --roster maps student ids through "
                                   "a Canvas gradebook export; without it ids go in SIS Login ID. --to gradescope "
                                   "or autolab writes one student's results.json or autoresult instead.")
    common(e)
    e.add_argument("--to", choices=sorted(EXPORTERS), default="canvas", help="what to write (default: %(default)s)")
    e.add_argument("--student", default=None, help="whose latest submission (required for gradescope and autolab "
                                                   "when the store holds more than one student)")
    e.add_argument("--roster", default=None, help="a Canvas gradebook export (CSV) to map student ids")
    e.add_argument("--out", default=None, help="output file (default: RESULTS/canvas.csv, "
                                               "RESULTS/STUDENT.results.json; autolab: standard output)")
    e.set_defaults(func=cmd_export)

    gs = sub.add_parser("gradescope", help="grade /autograder/submission for Gradescope",
                        description="Grade the Gradescope submission folder into a store (--results, else a "
                                    "temporary one), then write results.json in Gradescope's format from it "
                                    "(grader/gradescope/run_autograder calls this).")
    gs.add_argument("--submission", default="/autograder/submission", help="default: %(default)s")
    gs.add_argument("--results-dir", default="/autograder/results", help="default: %(default)s")
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


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except UsageError as e:
        print(f"grader: {e}", file=sys.stderr)
        return 2
    except (GraderError, RubricError, RegistryError, StoreError, ExportError, SandboxError) as e:
        print(f"grader: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("grader: interrupted; every submission finished so far is stored", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
