"""The same classes graded by two trees of the grader, every verdict side by side (issue 42, item 5: a
restructuring changes no verdict). Run on a GPU machine, or with COMPARE_GRADE_ARGS="--device cpu" on one without.

Classes (each graded by both trees with the same seed, each tree with its own grader/rubric.toml, work folder and
results folder):
  sample   data/sample-submissions/, as `make demo` grades it
  canvas   the sample class as a Canvas bulk download with Canvas's times and a late policy
           (grader/tests/canvas_class.py: --from canvas --lms-times, its rubric, roster and extension)
  tools    the sample class and the hostile entries whose verdict is a compute-sanitizer tool's (sanitizer-detect:
           racecheck must find its race; read-past-input: memcheck), each as a student
  hostile  the hostile batch (grader/tests/hostile_batch.py: every hostile entry, a normal submission after each
           entry whose code runs), for the backend COMPARE_BACKEND names (gpu, or cpu)

Compared, for each class: every case's status (student, task, type, shape, correctness or timed), every task's
correctness points and its points in all (performance points only where the run is not timed: a timed speedup
differs from run to run), each sanitizer or checker verdict (status; its error count only as some or none), each
submission's status.

  usage: python3 docs/gpu-runs/verdict_compare.py BEFORE_TREE OUT_DIR [sample] [canvas] [hostile]
         python3 docs/gpu-runs/verdict_compare.py compare BEFORE_RESULTS AFTER_RESULTS
  AFTER_TREE=DIR grades the "after" side with the tree in DIR (default: this repository); the classes' inputs
  (the sample folder, canvas_class.py, hostile_batch.py) come from that tree too, so a tree unpacked from a
  commit (`git archive`) gives the same input in every call, whatever the working tree holds
  COMPARE_TOGETHER=1 grades each class with both trees at once (on a GPU machine's cores: the two share its GPU,
  which no verdict compared here depends on; timed points are not compared)
  COMPARE_SIDE=before|after grades with that tree alone, for a class too slow for both in one device call: it
  keeps OUT_DIR/<class>-<side>/ (the results folder, grades.sqlite in it), <class>-<side>.out (grade's output)
  and <class>-<side>.json (the tree, the seconds, whether the run was timed, a digest of the input) and
  prints one count line per class; `compare` then reads two such results folders, each with its .json beside
  it where there is one, and compares them as the first form does
  prints the differing verdicts and one count line per class; exits 1 where any verdict differs
"""
from __future__ import annotations

import hashlib
import json
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


def inputs(name: str, out: Path, tree: Path = REPO) -> tuple[Path, list[str]]:
    """The class's submissions folder, made from `tree`'s files, and the grade options it is graded with
    (besides the tree's own rubric)."""
    folder = out / f"{name}-input"
    shutil.rmtree(folder, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))}
    if name == "sample":
        shutil.copytree(tree / "data" / "sample-submissions", folder)
        return folder, []
    if name == "tools":  # the sample class and every hostile entry whose verdict is a tool's (its `sanitizer`)
        shutil.copytree(tree / "data" / "sample-submissions", folder)
        subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; "
                        "from grader.tests import hostile_entries as h; "
                        "[h.hand_in(e, Path(sys.argv[1]), 'h-' + e.name) for e in h.load_corpus() if e.sanitizer]",
                        str(folder)], cwd=tree, check=True, env=env)
        return folder, []
    if name == "canvas":
        subprocess.run([sys.executable, "-m", "grader.tests.canvas_class", str(folder)], cwd=tree, check=True,
                       capture_output=True, env=env)
        return folder / "download", ["--from", "canvas", "--lms-times", str(folder / "submission-times.csv"),
                                     "--roster", str(folder / "roster.csv"), "--rubric", str(folder / "rubric.toml")]
    if name == "hostile":
        folder.mkdir(parents=True)
        subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; "
                        "from grader.tests import hostile_batch; hostile_batch.gather(Path(sys.argv[1]), sys.argv[2])",
                        str(folder), os.environ.get("COMPARE_BACKEND", "gpu")], cwd=tree, check=True, env=env)
        return folder, ["--jobs", "2"]
    raise SystemExit(f"unknown class {name!r}: sample, tools, canvas or hostile")


def listing(folder: Path) -> str:
    """A digest of the input: each file's path and bytes; a .tar.gz's by its members' names, types, sizes and
    bytes, not their times (which differ from one unpacked tree to another), or by its own bytes where it does not
    open or holds over 10,000 members (hostile ones)."""
    import tarfile
    digest = hashlib.sha256()
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    for path in files:
        digest.update(f"{path.relative_to(folder)}\n".encode())
        if path.name.endswith((".tar.gz", ".tgz")):
            try:
                members = hashlib.sha256()
                with tarfile.open(path) as tar:
                    for count, m in enumerate(tar):
                        if count == 10_000:
                            raise tarfile.TarError("too many members")
                        members.update(f"{m.name} {m.type!r} {m.size} {m.linkname}\n".encode())
                        if m.isfile():
                            members.update(hashlib.sha256(tar.extractfile(m).read()).digest())
                digest.update(members.digest())
                continue
            except (tarfile.TarError, EOFError, OSError):
                pass
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16] + f" ({len(files)} files)"


def counted(keys) -> str:
    """How many verdicts of each kind: "917 case, 56 correctness, 8 submission, 32 tool"."""
    kinds = {}
    for k in keys:
        kinds[k[0]] = kinds.get(k[0], 0) + 1
    return ", ".join(f"{n} {w}" for w, n in sorted(kinds.items()))


def compared(name: str, found: dict, took: dict) -> int:
    """Prints every verdict that differs between found["before"] and found["after"] and the class's count line;
    returns how many differ."""
    keys = sorted(set(found["before"]) | set(found["after"]), key=str)
    differ = [k for k in keys if found["before"].get(k) != found["after"].get(k)]
    for k in differ:
        print(f"DIFF {name}: {k}: before {found['before'].get(k)!r}, after {found['after'].get(k)!r}")
    print(f"{name}: {len(keys)} verdicts ({counted(keys)}), "
          f"{len(differ)} differ; graded in {took['before']:.0f} s before, {took['after']:.0f} s after")
    return len(differ)


def compare_stores(before: Path, after: Path) -> int:
    """`compare BEFORE_RESULTS AFTER_RESULTS`: two results folders graded apart (COMPARE_SIDE), compared."""
    about = {}
    for side, results in (("before", before), ("after", after)):
        if not (results / "grades.sqlite").exists():
            raise SystemExit(f"{results}: no grades.sqlite (a results folder, as COMPARE_SIDE keeps it)")
        note = results.parent / f"{results.name}.json"
        about[side] = json.loads(note.read_text()) if note.exists() else {}
    name = about["before"].get("class") or about["after"].get("class") or after.name
    default = "--device cpu" not in os.environ.get("COMPARE_GRADE_ARGS", "")
    timed = about["before"].get("timed", default) or about["after"].get("timed", default)
    inputs_of = [about[side].get("input") for side in ("before", "after")]
    if None not in inputs_of and inputs_of[0] != inputs_of[1]:
        print(f"INPUT {name}: the two sides graded different inputs: before {inputs_of[0]}, after {inputs_of[1]}")
        return 1
    found = {side: verdicts(results, timed) for side, results in (("before", before), ("after", after))}
    took = {side: about[side].get("seconds", float("nan")) for side in ("before", "after")}
    return 1 if compared(name, found, took) else 0


def main() -> int:
    if sys.argv[1] == "compare":
        return compare_stores(Path(sys.argv[2]).resolve(), Path(sys.argv[3]).resolve())
    before, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    after = Path(os.environ.get("AFTER_TREE") or REPO).resolve()
    only = os.environ.get("COMPARE_SIDE", "")
    if only not in ("", "before", "after"):
        raise SystemExit(f"COMPARE_SIDE={only!r}: before or after")
    classes = sys.argv[3:] or ["sample", "canvas"]
    out.mkdir(parents=True, exist_ok=True)
    timed = "--device cpu" not in os.environ.get("COMPARE_GRADE_ARGS", "")
    differ_in_all = 0
    for name in classes:
        folder, extra = inputs(name, out, after)
        took, found = {}, {}

        def side_of(side: str, tree: Path):
            options = extra if "--rubric" in extra else [*extra, "--rubric", str(tree / "grader" / "rubric.toml")]
            results = out / f"{name}-{side}"
            shutil.rmtree(results, ignore_errors=True)
            took[side] = grade(tree, folder, results, options)
            found[side] = verdicts(results, timed)
        sides = (("before", before), ("after", after))
        if only:  # one tree alone: its results folder stays, with what `compare` needs beside it
            (side, tree), = [s for s in sides if s[0] == only]
            given = listing(folder)
            print(f"{name}: grading with the {side} tree ({tree}), input {given}", flush=True)
            side_of(side, tree)
            (out / f"{name}-{side}.json").write_text(json.dumps({
                "class": name, "side": side, "tree": str(tree), "seconds": round(took[side], 1), "timed": timed,
                "input": given, "grade_args": os.environ.get("COMPARE_GRADE_ARGS", "")}, indent=1) + "\n")
            print(f"{name} {side}: {len(found[side])} verdicts ({counted(found[side])}); "
                  f"graded in {took[side]:.0f} s")
            continue
        if os.environ.get("COMPARE_TOGETHER") == "1":  # both trees at once (a machine with cores to spare)
            with ThreadPoolExecutor(2) as pool:
                for future in [pool.submit(side_of, *s) for s in sides]:
                    future.result()
        else:
            for side in sides:
                side_of(*side)
        differ_in_all += compared(name, found, took)
    return 1 if differ_in_all else 0


if __name__ == "__main__":
    sys.exit(main())
