"""The same submissions graded by two trees of the grader, compute-sanitizer's verdicts side by side (issue 29:
one run of each tool for all of a submission's tasks, each task alone only where that run was not clean).

The submissions are the GPU corpus's real run (grader/tests/gpu_corpus.py: the solution as a student, a planted
race, a planted wild write and the hostile entries a tool must report) and the sample class's s04-race. Each tree
grades them with its own grader/rubric.toml, in its own results folder, on one shared build cache.

  usage (on the GPU machine): python3 docs/gpu-runs/sanitizer_once_compare.py BEFORE_TREE OUT_DIR
  (COMPARE_GRADE_ARGS: more options for both grade runs, e.g. --device cpu for a dry run)
  prints one line per (student, task, tool) and each submission's grading seconds; exits 1 where a verdict differs
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from grader.tests.conftest import opened  # noqa: E402
from grader.tests.gpu_corpus import gather_real  # noqa: E402


def grade(tree: Path, submissions: Path, results: Path, work: Path) -> float:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(submissions), "--results", str(results),
                           "--work", str(work), "--rubric", str(tree / "grader" / "rubric.toml"), "--no-progress",
                           *os.environ.get("COMPARE_GRADE_ARGS", "").split()],
                          cwd=tree, capture_output=True, text=True)
    (results.parent / f"{results.name}.out").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: grade exited {done.returncode}: {done.stderr[-800:]}")
    return time.monotonic() - start


def verdicts(results: Path) -> tuple[dict, dict]:
    with opened(results) as store:
        subs = store.submissions().set_index("id")
        runs = store.sanitizer_runs_for()
    students = runs["submission_id"].map(subs["student"])
    table = {(s, r.task, r.tool): (r.status, int(r.errors or 0)) for s, r in zip(students, runs.itertuples())}
    return table, subs.set_index("student")["seconds"].to_dict() if "seconds" in subs else {}


def main() -> int:
    before, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    submissions = out / "submissions"
    shutil.rmtree(submissions, ignore_errors=True)
    gather_real(submissions)
    shutil.copytree(REPO / "data" / "sample-submissions" / "s04-race", submissions / "s04-race")
    took = {name: grade(tree, submissions, out / name, out / "work")
            for name, tree in (("before", before), ("after", REPO))}
    (old, old_s), (new, new_s) = verdicts(out / "before"), verdicts(out / "after")
    differ = 0
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        # A race's hazard count varies from run to run; its verdict (errors or not) does not.
        same = a is not None and b is not None and a[0] == b[0] and (a[1] > 0) == (b[1] > 0)
        differ += not same
        print(f"{'same ' if same else 'DIFF '} {key[0]:<22} {key[1]:<13} {key[2]:<10} before {a}  after {b}")
    for student in sorted(set(old_s) | set(new_s)):
        print(f"seconds {student:<22} before {old_s.get(student, 0):6.1f}  after {new_s.get(student, 0):6.1f}")
    print(f"grade, whole run: before {took['before']:.1f} s, after {took['after']:.1f} s; "
          f"{len(set(old) | set(new))} tool verdicts, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
