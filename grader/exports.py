"""Gradebook exports: Canvas CSV, Gradescope results.json, Autolab's autoresult."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from grader.leaderboard.board import METRIC_DECIMALS
from grader.report import grades_table
from grader.results import SubmissionResult
from grader.rubric import Rubric
from grader.sanitizer import meaning, summary_sentence
from grader.status import case_word
from grader.store import Store

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


class ExportError(ValueError):
    pass


def read_roster(path: Path) -> pd.DataFrame:
    """A Canvas gradebook export or any CSV with Canvas's five student columns."""
    try:
        roster = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as e:
        raise ExportError(f"{path}: cannot read the roster: {e}") from None
    missing = [c for c in CANVAS_COLUMNS if c not in roster.columns]
    if missing:
        raise ExportError(f"{path}: the roster lacks the column(s) {', '.join(missing)} "
                          f"(it needs {', '.join(CANVAS_COLUMNS)}, as in a Canvas gradebook export)")
    # Canvas exports carry a "Points Possible" row (and sometimes a muted-assignments row) under the header.
    return roster[~roster["Student"].str.strip().isin(["Points Possible", ""])][CANVAS_COLUMNS]


def canvas_csv(store: Store, rubric: Rubric, out: Path, roster: Path | None = None) -> tuple[Path, list[str]]:
    """Writes Canvas's gradebook import format; returns the path and warnings about unmatched students."""
    grades = grades_table(store, rubric)[["student", "total"]]
    column = rubric.title
    warnings = []
    if roster is None:
        rows = pd.DataFrame({"Student": grades["student"], "ID": "", "SIS User ID": "",
                             "SIS Login ID": grades["student"], "Section": "", column: grades["total"]})
    else:
        people = read_roster(roster)
        score = dict(zip(grades["student"], grades["total"]))
        matched = set()

        def find(person) -> str:
            for key in ("SIS Login ID", "SIS User ID", "ID"):
                if person[key] in score:
                    matched.add(person[key])
                    return score[person[key]]
            return ""  # no submission: left blank, so Canvas keeps whatever it has

        rows = people.assign(**{column: people.apply(find, axis=1)})
        for student in sorted(set(score) - matched):
            warnings.append(f"{student} is graded but not in the roster {roster}; not exported")
    points = pd.DataFrame([{**{c: "" for c in CANVAS_COLUMNS}, "Student": "Points Possible",
                            column: rubric.max_points}])
    out.parent.mkdir(parents=True, exist_ok=True)
    pd.concat([points, rows], ignore_index=True).to_csv(out, index=False)
    return out, warnings


def _case_lines(result: SubmissionResult, task: str) -> str:
    lines = []
    for c in result.cases:
        if c.task == task and c.status != "ok":
            line = f"{c.kind} {c.dtype} {c.shape}: {case_word(c.status)}"
            lines.append(line + (f": {c.message}" if c.message else "") + (f"\n  hint: {c.hint}" if c.hint else ""))
        elif c.task == task and c.paired is not None and c.paired.pairs:
            ci = c.paired.speedup
            lines.append(f"timed {c.dtype} {c.shape}: speedup {ci.median:.3g} against the solution "
                         f"(95% interval {ci.low:.3g} to {ci.high:.3g}), credit {100 * (c.credit or 0):.0f}%")
    for f in result.sanitizer:
        if f.task == task and f.found_errors:
            lines.append(f"{summary_sentence(f.tool, f.errors)} on {f.dtype} {f.shape}: {meaning(f.report)}\n"
                         f"{f.report}".rstrip())
    return "\n".join(lines)


def leaderboard_value(result: SubmissionResult, rubric: Rubric) -> float:
    """Throughput of the leaderboard task at the rubric's leaderboard shape, 0 if not timed or not correct."""
    for c in result.cases:
        if (c.task == rubric.leaderboard_task and c.kind == "timed" and c.shape == rubric.leaderboard_shape
                and c.status == "ok" and c.paired):
            return round(c.throughput(c.paired.student.median), METRIC_DECIMALS)
    return 0.0


def gradescope_results(result: SubmissionResult, rubric: Rubric) -> dict:
    """Gradescope's results.json: a test per task and part, and one leaderboard column."""
    sub = result.submission
    if sub.rejected:
        output = f"Your submission was not graded: {sub.rejected}"
    elif result.status == "build_failed":
        output = f"{result.build.reason}\n\n{result.build.log}"
    else:
        output = "\n".join(sub.notes)
    if result.build is not None and result.build.gate is not None:
        output = "\n".join([output] + [f"build gate: {f.message}" for f in result.build.gate.findings
                                        if f.enforced]).strip()
    tests = []
    for score in result.scores:
        for part, got, worth in (("correctness", score.correctness, score.correctness_max),
                                 ("performance", score.performance, score.performance_max)):
            if worth == 0:
                continue
            detail = _case_lines(result, score.task) if part == "correctness" else score.note
            tests.append({"name": f"{score.task}: {part}", "score": round(got, 3), "max_score": worth,
                          "status": "passed" if got >= worth else "failed", "output": detail,
                          "visibility": "visible"})
    unit = next((c.unit for c in result.cases if c.task == rubric.leaderboard_task and c.unit), "")
    return {"score": round(result.total, 3), "output": output, "visibility": "visible", "tests": tests,
            "leaderboard": [{"name": f"{rubric.leaderboard_task} {unit}".strip(),
                             "value": leaderboard_value(result, rubric), "order": "desc"}]}


def autolab_result(result: SubmissionResult, rubric: Rubric) -> dict:
    """Autolab's autoresult: one score per task, and the scoreboard columns."""
    return {"scores": {s.task: round(s.total, 3) for s in result.scores},
            "scoreboard": [leaderboard_value(result, rubric), round(result.total, 3)]}
