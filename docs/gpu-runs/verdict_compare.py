"""The same classes graded by two trees of the grader, every verdict side by side (issue 42, item 5: a
restructuring changes no verdict). Run on a GPU machine, or with COMPARE_GRADE_ARGS="--device cpu" on one without.

Classes (each graded by both trees with the same seed, each tree with its own grader/rubric.toml, work folder and
results folder):
  sample   data/sample-submissions/, as `make demo` grades it
  canvas   the sample class as a Canvas bulk download with Canvas's times and a late policy
           (grader/tests/canvas_class.py: --from canvas --lms-times, its rubric, roster and extension)
  hostile  the hostile batch (grader/tests/hostile_batch.py: every hostile entry, a normal submission after each
           entry whose code runs), for the backend COMPARE_BACKEND names (gpu, or cpu)

Compared, for each class: every case's status (student, task, type, shape, correctness or timed), every task's
correctness points and its points in all (performance points only where the run is not timed: a timed speedup
differs from run to run), each sanitizer or checker verdict (status; its error count only as some or none), each
submission's status.

  usage: python3 docs/gpu-runs/verdict_compare.py BEFORE_TREE OUT_DIR [sample] [canvas] [hostile]
  COMPARE_TOGETHER=1 grades each class with both trees at once (on a GPU machine's cores: the two share its GPU,
  which no verdict compared here depends on; timed points are not compared)
  prints the differing verdicts and one count line per class; exits 1 where any verdict differs
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from grader.tests.conftest import opened  # noqa: E402


def grade(tree: Path, submissions: Path, results: Path, extra: list[str]) -> float:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(submissions), "--results", str(results),
                           "--work", str(results.parent / f"{results.name}-work"), "--seed", "7", "--no-progress",
                           *extra, *os.environ.get("COMPARE_GRADE_ARGS", "").split()],
                          cwd=tree, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(tree)})
    (results.parent / f"{results.name}.out").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: grade exited {done.returncode}: {done.stderr[-1500:]}")
    return time.monotonic() - start


def verdicts(results: Path, timed: bool) -> dict:
    """(what, student, ...) -> the verdict, for every verdict the store holds."""
    found = {}
    with opened(results) as store:
        subs = store.submissions().set_index("id")
        student = subs["student"].to_dict()
        for s in subs.itertuples():
            found[("submission", s.student)] = s.status
        for c in store.cases_for().itertuples():
            found[("case", student[c.submission_id], c.task, c.dtype, c.shape, c.kind)] = c.status
        for t in store.scores().itertuples():
            found[("correctness", student[t.submission_id], t.task)] = round(float(t.correctness), 6)
            if not timed:
                found[("points", student[t.submission_id], t.task)] = round(float(t.correctness + t.performance), 6)
        runs = store.sanitizer_runs_for()
        for r in runs.itertuples():
            found[("tool", student[r.submission_id], r.task, r.tool)] = (r.status, int(r.errors or 0) > 0)
    return found


def inputs(name: str, out: Path) -> tuple[Path, list[str]]:
    """The class's submissions folder and the grade options it is graded with (besides the tree's own rubric)."""
    folder = out / f"{name}-input"
    shutil.rmtree(folder, ignore_errors=True)
    if name == "sample":
        shutil.copytree(REPO / "data" / "sample-submissions", folder)
        return folder, []
    if name == "canvas":
        subprocess.run([sys.executable, "-m", "grader.tests.canvas_class", str(folder)], cwd=REPO, check=True,
                       capture_output=True)
        return folder / "download", ["--from", "canvas", "--lms-times", str(folder / "submission-times.csv"),
                                     "--roster", str(folder / "roster.csv"), "--rubric", str(folder / "rubric.toml")]
    if name == "hostile":
        from grader.tests import hostile_batch
        folder.mkdir(parents=True)
        hostile_batch.gather(folder, os.environ.get("COMPARE_BACKEND", "gpu"))
        return folder, ["--jobs", "2"]
    raise SystemExit(f"unknown class {name!r}: sample, canvas or hostile")


def main() -> int:
    before, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    classes = sys.argv[3:] or ["sample", "canvas"]
    out.mkdir(parents=True, exist_ok=True)
    timed = "--device cpu" not in os.environ.get("COMPARE_GRADE_ARGS", "")
    differ_in_all = 0
    for name in classes:
        folder, extra = inputs(name, out)
        took, found = {}, {}

        def side_of(side: str, tree: Path):
            options = extra if "--rubric" in extra else [*extra, "--rubric", str(tree / "grader" / "rubric.toml")]
            results = out / f"{name}-{side}"
            shutil.rmtree(results, ignore_errors=True)
            took[side] = grade(tree, folder, results, options)
            found[side] = verdicts(results, timed)
        sides = (("before", before), ("after", REPO))
        if os.environ.get("COMPARE_TOGETHER") == "1":  # both trees at once (a machine with cores to spare)
            with ThreadPoolExecutor(2) as pool:
                for future in [pool.submit(side_of, *s) for s in sides]:
                    future.result()
        else:
            for side in sides:
                side_of(*side)
        keys = sorted(set(found["before"]) | set(found["after"]), key=str)
        differ = [k for k in keys if found["before"].get(k) != found["after"].get(k)]
        for k in differ:
            print(f"DIFF {name}: {k}: before {found['before'].get(k)!r}, after {found['after'].get(k)!r}")
        kinds = {}
        for k in keys:
            kinds[k[0]] = kinds.get(k[0], 0) + 1
        print(f"{name}: {len(keys)} verdicts ({', '.join(f'{n} {w}' for w, n in sorted(kinds.items()))}), "
              f"{len(differ)} differ; graded in {took['before']:.0f} s before, {took['after']:.0f} s after")
        differ_in_all += len(differ)
    return 1 if differ_in_all else 0


if __name__ == "__main__":
    sys.exit(main())
