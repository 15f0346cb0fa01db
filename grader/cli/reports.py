"""The readers of the store: `report`, `overview`, `similarity`, `release`, `export` and `leaderboard`."""
from __future__ import annotations

import shlex
import sys
from pathlib import Path


from grader.core.errors import GraderError
from grader.exports import EXPORTERS
from grader.exports.common import CORRECTNESS_ONLY_FLAG, check_measured, student_of
from grader.reports.leaderboard import PublishOptions, publish
from grader.intake.layouts import SOURCES
from grader.reports.overview import write_overview
from grader.reports.folder import write_reports
from grader.core.rubric import load_rubric
from grader.store.store import Store
from grader.cli.grading import parser_of
from grader.cli.common import common, registry_from_store, stored_rubric, UsageError


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
            given, _ = parser_of("grade").parse_known_args(words[words.index("grade") + 1:])
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


def add_commands(sub) -> None:
    """This group's commands, on the parser's subcommands."""
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
