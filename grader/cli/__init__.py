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
  lti                 the service as an LTI 1.3 tool: config (its URLs, Canvas's and Moodle's settings), platform
                      (register an LMS), keys (--rotate) (docs/lti.md)
  merge               merge the Slurm shards' stores into results/grades.sqlite, then write the reports
  shard MANIFEST      grade one shard of a Slurm batch (what each array task runs)

Exit status: 0 when grading finished, however the students did; 1 when the
grader itself could not finish; 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import sys

from grader.cli import grading, lti, reports, rules, service, single
from grader.cli.common import UsageError
from grader.core.errors import GraderError
from grader.core.registry import RegistryError
from grader.core.rubric import RubricError
from grader.exports import ExportError
from grader.grading.rescore import RescoreError
from grader.intake.layouts import IntakeError
from grader.intake.roster import RosterError
from grader.run.sandbox import SandboxError
from grader.store.store import StoreError

GROUPS = (grading, reports, single, service, lti, rules)  # each module: its commands, their options and their work


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bin/grader", description=__doc__.split("\n\n")[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="command")
    for group in GROUPS:
        group.add_commands(sub)
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
