"""What the grader writes from the store: grades.csv, feedback per student, review.csv, the summary.

Everything here reads results/grades.sqlite, so `bin/grader report`
rewrites the same files at any time, from each student's latest submission.

A submission graded in a run that timed nothing (the CPU backend: its run's stored facts say so,
grading_runs.timed and untimed_reason) shows "not timed" in its performance columns and cells, and its
feedback says that the performance points were not measured: never a 0 that reads like a slow kernel.
"""
from __future__ import annotations

import base64
import json
import re
from datetime import datetime, timezone
from pathlib import Path

import jinja2
import pandas as pd

from grader.core import received as source_of
from grader.core import visibility
from grader.core.visibility import STAFF_VIEW, View
from grader.reports.feedback import NOT_TIMED_NOTE, condense, points_note, task_state, timed_views
from grader.outcomes.isolation import Isolation
from grader.reports import page
from grader.reports.page import Page
from grader.reports.plots import speedup_plot
from grader.core.rubric import Rubric
from grader.core.status import (NOT_TIMED, SANITIZER_FINDINGS, CaseStatus, SanitizerStatus, SubmissionStatus,
                                 case_word, submission_word)
from grader.store.store import Store

UNRECORDED = Isolation("unknown", text="not recorded")  # a submission whose run is not in the store
UNKNOWN_RUN = {"limits": {}, "device": "", "device_label": "GPU", "untimed": "", "isolation": UNRECORDED}
_LOADER = jinja2.FileSystemLoader(Path(__file__).parent / "templates")
# Markdown is not escaped (students' text lands in code spans and plain lines); HTML is, since students control its text.
TEMPLATES = {"md": jinja2.Environment(loader=_LOADER, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
                                      undefined=jinja2.StrictUndefined),
             "html": jinja2.Environment(loader=_LOADER, autoescape=True, trim_blocks=True, lstrip_blocks=True,
                                        undefined=jinja2.StrictUndefined)}


NO_SUBMISSION = "no submission"  # the status of a student on the roster who submitted nothing
WHOLE_SUBMISSION = "(whole submission)"  # the task of a row about a submission, not one of its tasks


def grades_table(store: Store, rubric: Rubric) -> pd.DataFrame:
    """One row per student (latest submission), and per student on the stored roster without one ("no
    submission", no score): the raw score, the late penalty and the final total, the status, each task's two
    scores (a TA's override of a task is in `overrides`, and in the total), the late policy's words."""
    subs = store.latest_submissions()
    columns = ["student", "nickname", "status", "raw_total", "penalty", "total", "max_total"]
    tail = ["late", "overrides", "received", "received_from", "graded", "sha256", "sandbox"]
    order = [f"{t.id}_{part}" for t in rubric.tasks for part in ("correctness", "performance")]
    if subs.empty:
        table = pd.DataFrame(columns=columns + order + tail)
    else:
        scores = store.scores(subs["id"].tolist())
        wide = scores.pivot(index="submission_id", columns="task", values=["correctness", "performance"])
        wide.columns = [f"{task}_{part}" for part, task in wide.columns]
        table = subs.set_index("id").join(wide.reindex(columns=order))
        table["raw_total"] = table["raw_total"].fillna(table["total"])  # a store from before the late policy
        forced = scores[scores["override"].notna()]
        table["overrides"] = [
            "; ".join(f"{r.task}: {r.override_note}" for r in forced[forced["submission_id"] == i].itertuples())
            for i in table.index]
        isolations = store.isolations()
        table["sandbox"] = [isolations.get(r, UNRECORDED).label for r in table["run_id"]]  # how its code was isolated
        runs = run_views(store)
        untimed = table["run_id"].map(lambda r: bool(runs.get(r, UNKNOWN_RUN)["untimed"]))
        for task in rubric.tasks:  # a run that timed nothing: its performance was not measured, not 0
            column = f"{task.id}_performance"
            table[column] = table[column].astype(object).where(~untimed, NOT_TIMED)
        unknown = table["received_from"].isin(source_of.TIME_UNKNOWN)  # its stored time only orders it
        table["received"] = table["received"].where(~unknown, "")
        table["received_from"] = table["received_from"].map(source_of.words)
        table = table.reset_index()[columns + order + tail]
    roster = store.roster()
    missing = roster[~roster["student"].isin(table["student"])]
    if not missing.empty:
        absent = pd.DataFrame({"student": missing["student"], "status": NO_SUBMISSION,
                               "max_total": rubric.max_points, "late": "", "overrides": ""})
        table = pd.concat([table, absent], ignore_index=True).sort_values("student", ignore_index=True)
        table = table.reindex(columns=columns + order + tail)
    return table.round(3)


def task_feedback(store: Store, rubric: Rubric, submission_id: int, limits: dict, untimed: str = "",
                  view: View = STAFF_VIEW) -> list[dict]:
    """Each task of a submission as its feedback shows it (grader/reports/feedback.py): the scores, a one-line verdict,
    the evidence and groups of failed cases, and the timed cases rated against the run's measured `limits`;
    `untimed`: why the run timed nothing (run_views), said in each task that has performance points.
    The feedback pages, Gradescope's per-task output and Autolab's lines are all made from these.
    A `view` that hides (grader/core/visibility.py) leaves hidden cases out of everything here; a task that had
    some says how many ("hidden") and has its points withheld ("withheld": its points are None)."""
    cases = store.cases(submission_id)
    tool_runs = store.sanitizer_runs(submission_id)
    counted = store.profile_runs(submission_id)
    hiding = view.hides(rubric)
    if hiding:  # what this reader may not see is never handed to the code below
        hidden = cases[visibility.hidden_rows(rubric, cases)] if not cases.empty else cases
        cases = cases[~visibility.hidden_rows(rubric, cases)] if not cases.empty else cases
        tool_runs = tool_runs[~visibility.hidden_rows(rubric, tool_runs)] if not tool_runs.empty else tool_runs
        # (the counters' case, when the rubric hides its shape: whether it passed is a hidden case's verdict)
        counted = counted[~visibility.hidden_rows(rubric, counted)] if not counted.empty else counted
    scores = store.scores([submission_id]).set_index("task")
    status = store.submission_status(submission_id)
    tasks = []
    for policy in rubric.tasks:
        s = scores.loc[policy.id] if policy.id in scores.index else None
        rows = cases[cases["task"] == policy.id]
        task = {"task": policy.id, "correctness": float(s.correctness) if s is not None else 0.0,
                "correctness_max": policy.correctness_points,
                "performance": float(s.performance) if s is not None else 0.0,
                "performance_max": policy.performance_points,
                **condense(policy.id, policy.shapes, rows, tool_runs[tool_runs["task"] == policy.id],
                           counted[counted["task"] == policy.id] if not counted.empty else None),
                "timed": timed_views(policy.id, rows, limits, policy),
                "hidden": int((hidden["task"] == policy.id).sum()) if hiding else 0, "withheld": False}
        if rows.empty and status in (SubmissionStatus.REJECTED, SubmissionStatus.BUILD_FAILED):
            task["verdict"] = submission_word(status)
        task["points"] = task_points(s)
        task["max_points"] = policy.max_points
        task["untimed"] = untimed if policy.performance_points else ""
        parts, taken = points_note(task, rows[rows["kind"] == "correctness"])
        task["note"] = "; ".join(parts)
        # the HTML page says "not timed" once, above its table: a phone's narrow table has no room to repeat it
        task["row_note"] = "; ".join(p for p in parts if p != NOT_TIMED_NOTE)
        task["state"] = task_state(task["verdict"], taken)  # what the cases did; an override below is a note
        task["override"] = ""
        if s is not None and pd.notna(s.get("override")):  # a TA's points for the task stand in for the two parts
            forced = float(s.override)
            graded = task["correctness"] + task["performance"]
            task["override"] = f"graded {graded:.1f}, overridden: {s.override_note}"
            task["correctness"] = min(forced, policy.correctness_points)
            task["performance"] = forced - task["correctness"]
            task["note"] = task["row_note"] = task["override"]
        if task["hidden"] and rows.empty:
            task["verdict"] = "every case hidden"
        if task["hidden"]:  # its points (and a note or override about them) would tell how its hidden cases went
            task.update(withheld=True, correctness=None, performance=None, points=None, override="",
                        note=visibility.count_line(task["hidden"], rubric), state="withheld")
            task["row_note"] = task["note"]
            for v in task["timed"]:  # a visible timed case's credit and points are the task's performance: withheld
                v.update(credit=None, points=None)
        tasks.append(task)
    return tasks


def task_points(s) -> float:
    """A task's points from its stored scores row (a Series or a dict; None: the store holds none, 0 points): its
    correctness and performance points, or a TA's override in their place."""
    if s is None:
        return 0.0
    if pd.notna(s.get("override")):
        return float(s["override"])
    return float(s["correctness"]) + float(s["performance"])


def task_markdown(task: dict) -> str:
    """One task's condensed feedback in Markdown: its verdict, then what failed, as the page has it (Gradescope's
    correctness output)."""
    return TEMPLATES["md"].get_template("feedback_task.md.j2").render(t=task, part="correctness").strip("\n")


def performance_markdown(task: dict) -> str:
    """One task's timed cases in Markdown, as the page's performance table has them (Gradescope's performance
    output)."""
    return TEMPLATES["md"].get_template("feedback_task.md.j2").render(t=task, part="performance").strip("\n")


def run_views(store: Store) -> dict[int, dict]:
    """Each grading run as the feedback uses it: its measured limits, its first device's name (for the CPU
    backend: the host, its processor, cores and compiler) and its label (GPU or CPU), why it timed nothing
    ("" when it timed), its isolation."""
    isolations = store.isolations()
    views = {}
    for run in store.runs().itertuples():
        devices = json.loads(run.devices or "[]")
        first = devices[0] if devices else {}
        cpu = first.get("backend") == "cpu"
        device = (f"CPU backend on {first.get('host', '?')} ({first.get('cpu', 'unknown processor')}, "
                  f"{first.get('cores', '?')} cores; {first.get('compiler', 'unknown compiler')})" if cpu
                  else first.get("name", ""))
        views[run.id] = {"limits": json.loads(run.limits or "{}"), "device": device,
                         "device_label": "device" if cpu else "GPU", "untimed": run.untimed_reason,
                         "isolation": isolations.get(run.id, UNRECORDED)}
    return views


def run_of(store: Store, run_id: int) -> dict:
    """The grading run a submission was graded in (run_views' entry; empty limits if it is not in the store)."""
    return run_views(store).get(run_id, UNKNOWN_RUN)


# Intake's note for a missing task file: the verdict of that task's row already says "file missing".
_MISSING_NOTE = re.compile(r"^\S+\.cu is missing: that task scores 0$")


def feedback_context(store: Store, rubric: Rubric, sub, run: dict, view: View = STAFF_VIEW) -> tuple[dict, bytes | None]:
    """What feedback.md.j2 and feedback.html.j2 render for one stored submission, and its plot's PNG, as `view`'s
    reader sees it (grader/core/visibility.py: before the rubric's date a student sees hidden cases counted)."""
    tasks = task_feedback(store, rubric, sub.id, run["limits"], run["untimed"], view)
    timed = [v for t in tasks for v in t["timed"]]
    png = speedup_plot(timed)
    tool_runs = store.sanitizer_runs(sub.id)
    if view.hides(rubric) and not tool_runs.empty:  # whether a hidden case's tools ran is not this reader's to see
        tool_runs = tool_runs[~visibility.hidden_rows(rubric, tool_runs)]
    findings = json.loads(sub.gate)
    isolation = run["isolation"]
    shown = {**sub._asdict(), "received": source_of.shown(sub.received, sub.received_from)}
    hidden = student_score(shown, tasks, rubric)
    context = {"title": rubric.title, "s": shown, "status_word": submission_word, "tasks": tasks,
               "timed": timed, "gate": [f for f in findings if f["enforced"]],
               "gate_notes": [f for f in findings if not f["enforced"]],
               "notes": [n for n in json.loads(sub.notes) if not _MISSING_NOTE.match(n)],
               "ignored": json.loads(sub.ignored), "device": run["device"], "device_label": run["device_label"],
               "untimed": run["untimed"], "performance_max": sum(p.performance_points for p in rubric.tasks),
               "unbuilt": [t["task"] for t in tasks if t["verdict"] == case_word(CaseStatus.BUILD_ERROR)],
               "no_sanitizer": bool(len(tool_runs)) and (tool_runs["status"] == SanitizerStatus.UNAVAILABLE).all(),
               "plot": f"{sub.student}.png" if png else None,
               "plot_data": base64.b64encode(png).decode() if png else None,
               "unsandboxed": None if isolation.isolated else isolation.label, "hidden": hidden}
    return context, png


def students_now() -> View:
    """The view of a student reading now: the default of every output made for students."""
    return visibility.student(datetime.now(timezone.utc))


def student_score(shown: dict, tasks: list[dict], rubric: Rubric) -> dict | None:
    """When some task's points are withheld (task_feedback): puts the other tasks' points out of their worth in
    `shown` (a submission's row as a page shows it) in place of the whole score and takes out the late penalty's
    points (a share of the whole score), and returns what the page says of the hidden cases ({"count", "line",
    "withheld"}); None, leaving `shown` as it is, when nothing is withheld."""
    withheld = [t for t in tasks if t["withheld"]]
    if not withheld:
        return None
    count = sum(t["hidden"] for t in tasks)
    shown.update(total=sum(t["points"] for t in tasks if not t["withheld"]),
                 max_total=sum(t["max_points"] for t in tasks if not t["withheld"]),
                 raw_total=None, penalty=None)
    late = "; the late penalty is taken from the whole score then" if (shown.get("late_percent") or 0) > 0 else ""
    return {"count": count, "line": visibility.count_line(count, rubric),
            "withheld": visibility.withheld_line(withheld, rubric) + late}


def render_feedback(context: dict, kind: str) -> str:
    """One feedback page ("md" or "html") from feedback_context()."""
    if kind == "html":
        return feedback_page(context).html
    return TEMPLATES[kind].get_template(f"feedback.{kind}.j2").render(context)


def feedback_page(context: dict) -> Page:
    """The HTML feedback page and its Content-Security-Policy (the service serves both)."""
    return page.render(TEMPLATES["html"], "feedback.html.j2", context, "feedback.css")


def write_feedback(store: Store, rubric: Rubric, out: Path, view: View | None = None) -> list[Path]:
    """Each student's feedback page and Markdown (and plot) in `out`: pages for students, as they read them at
    `view`'s time (now when not given)."""
    view = view or students_now()
    out.mkdir(parents=True, exist_ok=True)
    written = []
    runs = run_views(store)
    for sub in store.latest_submissions().itertuples():
        context, png = feedback_context(store, rubric, sub, runs.get(sub.run_id, UNKNOWN_RUN), view)
        if png:
            (out / f"{sub.student}.png").write_bytes(png)
        for kind in ("md", "html"):
            path = out / f"{sub.student}.{kind}"
            path.write_text(render_feedback(context, kind))
            written.append(path)
    return written


LATE_UNKNOWN = "late, time unknown"  # review.csv's flag of a submission Canvas marked LATE with no time known


def review_table(store: Store) -> pd.DataFrame:
    """What a TA should look at (latest submissions): timed cases implausibly fast or flagged for review, then
    submissions Canvas marked LATE whose time is not known (the late policy's words in `message`)."""
    ids = store.latest_submissions()["id"].tolist()
    cases = store.flagged_cases(ids)
    late = store.late_unknown(ids)
    if late.empty:
        return cases
    rows = pd.DataFrame({"student": late["student"], "task": WHOLE_SUBMISSION, "dtype": "", "shape": "",
                         "flag": LATE_UNKNOWN, "message": late["late"]})
    both = pd.concat([cases, rows], ignore_index=True) if not cases.empty else rows
    return both.reindex(columns=cases.columns)


def summary_table(store: Store, rubric: Rubric) -> pd.DataFrame:
    """Submissions graded, build failures, timeouts, cases flagged for review, and the mean score of each task."""
    subs = store.latest_submissions()
    if subs.empty:
        return pd.DataFrame({"submissions": [0]})
    ids = subs["id"].tolist()
    cases = store.cases_for(ids)
    tool_runs = store.sanitizer_runs_for(ids)
    scores = store.scores(ids)
    row = {"submissions": len(subs), "graded": int((subs["status"] == SubmissionStatus.GRADED).sum()),
           "build failures": int((subs["status"] == SubmissionStatus.BUILD_FAILED).sum()),
           "with files that do not build":
               int(cases[cases["status"] == CaseStatus.BUILD_ERROR]["submission_id"].nunique()),
           "rejected": int((subs["status"] == SubmissionStatus.REJECTED).sum()),
           "with timeouts": int(cases[cases["status"] == CaseStatus.TIMEOUT]["submission_id"].nunique()),
           "flagged for review": len(review_table(store)),
           "sanitizer findings":
               int(tool_runs[tool_runs["status"].isin(SANITIZER_FINDINGS)]["submission_id"].nunique()),
           "with forbidden files": int(cases[cases["status"] == CaseStatus.FORBIDDEN]["submission_id"].nunique()),
           "mean total": round(float(subs["total"].mean()), 2), "of": rubric.max_points}
    means = (scores.assign(points=scores["correctness"] + scores["performance"])
             .groupby("task")["points"].mean().round(2))
    for policy in rubric.tasks:
        row[policy.id] = float(means.get(policy.id, 0.0))
    isolations = store.isolations()
    row["sandbox"] = ", ".join(sorted({isolations.get(r, UNRECORDED).label for r in subs["run_id"]}))
    return pd.DataFrame([row])


def untimed_note(store: Store, rubric: Rubric) -> str:
    """A line for the end of a grading command when latest submissions were graded in runs that timed nothing
    (the CPU backend); "" otherwise."""
    subs = store.latest_submissions()
    runs = run_views(store)
    untimed = [runs.get(r, UNKNOWN_RUN)["untimed"] for r in subs["run_id"]]
    reasons = sorted({u for u in untimed if u})
    if not reasons:
        return ""
    count = sum(bool(u) for u in untimed)
    return (f"performance not measured for {count} of {len(subs)} submissions ({'; '.join(reasons)}): their scores "
            f"are correctness points only, the rubric's {sum(p.performance_points for p in rubric.tasks):g} "
            "performance points were not measured")
