"""results/similarity.html and similarity.csv: every pair of submissions compared, task by task, for the staff.

The comparison is Debian's similarity-tester (`sim_c`, Dick Grune's tester): it tokenizes C, ignoring layout,
comments, identifiers and the values of numbers and strings, and reports what share of each file's tokens
lies in runs of at least 24 tokens also found in the other. A renamed variable or a moved function changes
nothing it sees. Before comparing, comments and every code line of the starter's own file (starter/kernels/TASK.cu; whitespace
ignored) is taken out of each submission, so the code every student was given counts for nothing; an
untouched stub is then empty and left out.

Who is compared comes from the store: each student's latest graded submission. Their files are read from the
submissions folder through the grader's own intake plan (grader/grading/plan.py: the same archives, folders,
rules and choice of the latest as `grade`; the folder is given, or `bin/grader similarity` finds the one the
latest grading run read); a
student whose entry there is not the one graded is compared all the same and marked. The score of a pair
is the larger of its two shares: a short file copied whole into a long one still ranks high.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from grader.grading.plan import NoSubmissions, plan_intake
from grader.reports.overview import feedback_link
from grader.core.registry import Registry
from grader.reports.report import TEMPLATES
from grader.core.errors import GraderError
from grader.intake.roster import stored_people
from grader.core.rubric import Rubric
from grader.core.status import SubmissionStatus
from grader.reports.spreadsheet import write_csv
from grader.store.store import Store

STARTER = Path(__file__).resolve().parents[2] / "starter" / "kernels"
TOOL = "sim_c"
MISSING_TOOL = ("sim_c is not installed: it is Debian's similarity-tester package "
                "(`make deps-similarity`, or `apt-get install similarity-tester`)")
_LINE = re.compile(r"^(.+?) consists for (\d+) % of (.+?) material$")
COLUMNS = ["task", "student_a", "student_b", "score", "a_in_b", "b_in_a", "lines_a", "lines_b", "note"]


@dataclass
class Report:
    pairs: pd.DataFrame
    csv: Path
    html: Path
    compared: dict[str, int]  # task -> files compared


def find_tool() -> str:
    tool = shutil.which(TOOL)
    if tool is None:
        raise GraderError(MISSING_TOOL)
    return tool


def _normal(line: str) -> str:
    return " ".join(line.split())


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def without_starter(text: str, starter: str) -> str:
    """The student's code less its comments (which the tool ignores too) and less every line that is, whitespace
    aside, a code line of the starter's file: what is left is the student's own, empty for an untouched stub."""
    given = {_normal(line) for line in _COMMENT.sub("", starter).splitlines() if line.strip()}
    return "\n".join(line for line in _COMMENT.sub("", text).splitlines()
                     if line.strip() and _normal(line) not in given) + "\n"


def _lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip())


def compare(texts: dict[str, str], tool: str | None = None) -> list[tuple[str, str, int, int]]:
    """(a, b, share of a found in b, share of b found in a) in percent, for every pair of the named texts."""
    tool = tool or find_tool()
    names = sorted(texts)
    shares: dict[tuple[str, str], int] = {}
    with tempfile.TemporaryDirectory(prefix="similarity-") as tmp:
        files = []
        for i, name in enumerate(names):
            path = Path(tmp) / f"f{i}.cu"  # the tool's own names: a student id never reaches its command line
            path.write_text(texts[name])
            files.append(path.name)
        by_file = dict(zip(files, names))
        done = subprocess.run([tool, "-p", "-a", "-e", "-T", *files], cwd=tmp, capture_output=True, text=True,
                              timeout=600)
        if done.returncode != 0:
            raise GraderError(f"{TOOL} failed: {(done.stderr or done.stdout).strip().splitlines()[:1]}")
        for line in done.stdout.splitlines():
            match = _LINE.match(line.strip())
            if match and match[1] in by_file and match[3] in by_file:
                shares[(by_file[match[1]], by_file[match[3]])] = int(match[2])
    return [(a, b, shares.get((a, b), 0), shares.get((b, a), 0))
            for i, a in enumerate(names) for b in names[i + 1:]]


def read_class(store: Store, registry: Registry, rubric: Rubric, folder: Path, source: str
               ) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """{task file: {student: text}} of the store's latest submissions, read from FOLDER, and a note per
    student whose entry there is not the one graded."""
    graded = store.latest_submissions()
    graded = graded[graded["status"] != SubmissionStatus.REJECTED]
    stored = dict(zip(graded["student"], graded["sha256"]))
    roster = store.roster()  # graded with --roster: the store knows each student by the roster's id
    try:
        plan = plan_intake(folder, source, stored_people(roster) if not roster.empty else None, rubric=rubric,
                           registry=registry, students=stored)
    except NoSubmissions:
        return {t.file: {} for t in registry.tasks}, {}
    subs = [s for _, s in plan.latest]
    task_files = [t.file for t in registry.tasks]
    files: dict[str, dict[str, str]] = {name: {} for name in task_files}
    notes = {}
    for sub in subs:
        if sub.rejected:
            continue
        if sub.sha256 != stored[sub.student]:
            notes[sub.student] = "its entry in the folder is not the one graded"
        for name, data in sub.files.items():
            files[name][sub.student] = data.decode("utf-8", errors="replace")
    return files, notes


def similarity(store: Store, registry: Registry, rubric: Rubric, folder: Path, source: str = "plain",
               tool: str | None = None) -> tuple[pd.DataFrame, dict[str, int]]:
    """Every pair of the class's files per task, ranked by score (highest first)."""
    tool = tool or find_tool()
    files, notes = read_class(store, registry, rubric, folder, source)
    rows, compared = [], {}
    for task in registry.tasks:
        starter_path = STARTER / task.file
        starter = starter_path.read_text() if starter_path.is_file() else ""
        own = {s: without_starter(text, starter) for s, text in files[task.file].items()}
        own = {s: text for s, text in own.items() if text.strip()}  # an untouched stub has nothing of its own
        compared[task.id] = len(own)
        if len(own) < 2:
            continue
        for a, b, a_in_b, b_in_a in compare(own, tool):
            rows.append({"task": task.id, "student_a": a, "student_b": b, "score": max(a_in_b, b_in_a),
                         "a_in_b": a_in_b, "b_in_a": b_in_a, "lines_a": _lines(own[a]), "lines_b": _lines(own[b]),
                         "note": "; ".join(f"{s}: {notes[s]}" for s in (a, b) if s in notes)})
    pairs = pd.DataFrame(rows, columns=COLUMNS)
    pairs = pairs.sort_values(["score", "task", "student_a", "student_b"], ascending=[False, True, True, True],
                              ignore_index=True)
    return pairs, compared


def write_similarity(results: Path, registry: Registry, rubric: Rubric, folder: Path, source: str = "plain") -> Report:
    """Writes RESULTS/similarity.csv and similarity.html from the submissions in FOLDER (delivered as SOURCE:
    --from); returns what it wrote."""
    tool = find_tool()  # before anything is read
    store = Store.existing(results / "grades.sqlite")
    try:
        if not Path(folder).is_dir():
            raise GraderError(f"{folder}: not a folder of submissions")
        pairs, compared = similarity(store, registry, rubric, Path(folder), source, tool)
    finally:
        store.close()
    csv, html = results / "similarity.csv", results / "similarity.html"
    write_csv(pairs, csv)
    html.write_text(TEMPLATES["html"].get_template("similarity.html.j2").render(
        title=rubric.title, pairs=pairs.to_dict("records"), compared=compared, folder=str(folder),
        link=feedback_link))
    return Report(pairs, csv, html, compared)
