"""results/overview.html: how the class did, one page for the staff, read from the store.

Score distributions (overall and per task, histograms drawn by matplotlib and embedded as data URIs, so the
page is one self-contained file like the leaderboard), the pass rate of each correctness case (task, type,
shape: a case few pass while they pass its neighbours points at a broken test), and the lists a TA works
through: timeouts, crashes and errors, compute-sanitizer's findings, build failures, cases flagged for
review, late submissions; each student's name links to their feedback page (feedback/ID.html, beside it).

Like every other output it is a reader of results/grades.sqlite: `bin/grader overview` rewrites it
at any time, and `grade` writes it with the other reports.
"""
from __future__ import annotations

import base64
import functools
import io
import json
import urllib.parse
from pathlib import Path

import pandas as pd

from grader.core.received import shown
from grader.reports import page
from grader.reports.page import Page
from grader.reports.report import (TEMPLATES, UNKNOWN_RUN, WHOLE_SUBMISSION, grades_table, review_table, run_views,
                           untimed_note)
from grader.core.rubric import Rubric
from grader.core.status import (NOT_RUN, SANITIZER_FINDINGS, CaseStatus, SanitizerStatus, SubmissionStatus, case_word,
                                sanitizer_word, submission_word)
from grader.store.store import Store

# Cases whose run went wrong, not merely wrong output.
FAILED_RUNS = (CaseStatus.TIMEOUT, CaseStatus.CRASHED, CaseStatus.ERROR, CaseStatus.PROTOCOL)
# A pass rate counts the cases that ran the student's code: one that never did (a missing file, the stub, a file that
# did not build or that the gate refused, a case after a hang, one left to a GPU) says nothing about that case, and
# its cause is listed elsewhere on the page. Cases the grading run's backend left to a GPU (the CPU backend: a shape
# over its per-case budget, a file it cannot run) are counted apart, as scoring leaves them out of a score.
LEFT_TO_A_GPU = (CaseStatus.GPU_ONLY, CaseStatus.NEEDS_GPU)


def feedback_link(student: str) -> str:
    """The student's feedback page, relative to the overview (results/feedback/ID.html)."""
    return "feedback/" + urllib.parse.quote(f"{student}.html")


def histogram(values: list[float], top: float, title: str) -> str:
    """A small histogram of points from 0 to `top`, as a PNG data URI."""
    return _histogram(tuple(min(max(float(v), 0.0), top) for v in values), float(top), title)


@functools.lru_cache(maxsize=256)  # the same points draw the same picture (plots.py's _drawn: why)
def _histogram(values: tuple[float, ...], top: float, title: str) -> str:
    import matplotlib  # where a histogram is drawn, not at every command's start (grader/reports/plots.py)
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(4.2, 2.3), dpi=100)
    bins = [top * i / 10 for i in range(11)]
    ax.hist(values, bins=bins, color="#4a6fa5", edgecolor="white")
    ax.set_xlim(0, top)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("points", fontsize=8)
    ax.set_ylabel("students", fontsize=8)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.tick_params(labelsize=7.5)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def first_line(text) -> str:
    text = "" if text is None or (isinstance(text, float) and pd.isna(text)) else str(text)
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:300]


def pass_rates(cases: pd.DataFrame, rubric: Rubric, students: int) -> list[dict]:
    """Per correctness case of the rubric (task, type, shape): how many submissions' code ran it, how many passed,
    how many were left to a GPU."""
    rows = []
    correctness = cases[cases["kind"] == "correctness"]
    for policy in rubric.tasks:
        for dtype in policy.dtypes:
            for shape in policy.shapes:
                mine = correctness[(correctness["task"] == policy.id) & (correctness["dtype"] == dtype)
                                   & (correctness["shape"] == shape)]
                attempted = int((~mine["status"].isin(NOT_RUN)).sum())
                passed = int((mine["status"] == CaseStatus.OK).sum())
                rows.append({"task": policy.id, "dtype": dtype, "shape": shape, "passed": passed,
                             "attempted": attempted, "students": students,
                             "gpu": int(mine["status"].isin(LEFT_TO_A_GPU).sum()),
                             "rate": passed / attempted if attempted else None})
    return rows


def rate_tables(rates: list[dict], rubric: Rubric) -> list[dict]:
    """The pass rates as one small table per task: a row per shape, a column per element type."""
    tables = []
    for policy in rubric.tasks:
        mine = {(r["dtype"], r["shape"]): r for r in rates if r["task"] == policy.id}
        tables.append({"task": policy.id, "dtypes": policy.dtypes,
                       "rows": [{"shape": shape, "cells": [mine[(d, shape)] for d in policy.dtypes]}
                                for shape in policy.shapes]})
    return tables


def overview_context(store: Store, rubric: Rubric) -> dict:
    grades = grades_table(store, rubric)
    subs = store.latest_submissions()
    runs = run_views(store)
    # Graded where nothing is timed (the CPU backend, read from each run's stored device record): the histograms
    # and full marks count what such a run can give, the correctness points, when no submission shown was timed.
    untimed = [bool(runs.get(r, UNKNOWN_RUN)["untimed"]) for r in subs["run_id"]]
    correctness_only = bool(untimed) and all(untimed)
    ids = subs["id"].tolist()
    student_of = dict(zip(subs["id"], subs["student"]))
    cases = store.cases_for(ids) if ids else store.cases_for([])
    tool_runs = store.sanitizer_runs_for(ids) if ids else store.sanitizer_runs_for([])
    scores = store.scores(ids) if ids else store.scores([])
    graded = grades[grades["total"].notna()]

    measurable = sum(p.correctness_points for p in rubric.tasks) if correctness_only else rubric.max_points
    measured = " measured" if correctness_only else ""
    plots = [{"title": "overall", "src": histogram(graded["total"].astype(float).tolist(), measurable,
                                                   f"total (of {measurable:g}{measured})")}]
    task_rows = []
    for policy in rubric.tasks:
        top = policy.correctness_points + (0 if correctness_only else policy.performance_points)
        points = (pd.to_numeric(graded[f"{policy.id}_correctness"], errors="coerce").fillna(0)
                  + pd.to_numeric(graded[f"{policy.id}_performance"], errors="coerce").fillna(0))  # "not timed": 0
        overridden = scores[(scores["task"] == policy.id) & scores["override"].notna()]
        if not overridden.empty:  # a TA's points stand for the task (as in the total)
            forced = {student_of[r.submission_id]: float(r.override) for r in overridden.itertuples()}
            points = pd.Series([forced.get(s, p) for s, p in zip(graded["student"], points)], index=points.index)
        plots.append({"title": policy.id,
                      "src": histogram(points.tolist(), top, f"{policy.id} (of {top:g}{measured})")})
        task_rows.append({"task": policy.id, "mean": float(points.mean()) if len(points) else 0.0,
                          "median": float(points.median()) if len(points) else 0.0, "max": top,
                          "full": int((points.round(6) >= top).sum()), "zero": int((points.round(6) <= 0).sum())})

    def who(frame: pd.DataFrame) -> list[str]:
        return [student_of[i] for i in frame["submission_id"]]

    failed = cases[cases["status"].isin(FAILED_RUNS)]
    failed_runs = []  # one row per student, task and status: a fault usually fails every case after it alike
    for (sid, task, status), group in failed.groupby(["submission_id", "task", "status"], sort=False):
        first = group.iloc[0]
        failed_runs.append({"student": student_of[sid], "task": task, "cases": len(group),
                            "case": f"{first['kind']} {first['dtype']} {first['shape']}", "word": case_word(status),
                            "status": status, "message": first_line(first["message"] or first["output"])})
    found = tool_runs[tool_runs["status"].isin(SANITIZER_FINDINGS)]
    sanitizer = [{"student": s, "task": r.task, "tool": r.tool, "errors": int(r.errors),
                  "word": sanitizer_word(r.status), "first": first_line(r.report)}
                 for s, r in zip(who(found), found.itertuples())]
    unbuilt = [{"student": r.student, "task": WHOLE_SUBMISSION, "word": submission_word(r.status),
                "why": first_line(r.rejected if r.status == SubmissionStatus.REJECTED
                                  else (r.build_reason or r.build_log))}
               for r in subs[subs["status"].isin((SubmissionStatus.BUILD_FAILED, SubmissionStatus.REJECTED))]
               .itertuples()]
    broken = cases[cases["status"] == CaseStatus.BUILD_ERROR].drop_duplicates(["submission_id", "task"])
    unbuilt += [{"student": s, "task": r.task, "word": case_word(r.status), "why": first_line(r.message)}
                for s, r in zip(who(broken), broken.itertuples())]
    late = [{"student": r.student, "received": shown(r.received, r.received_from), "penalty": float(r.penalty),
             "percent": float(r.late_percent), "late": r.late}
            for r in subs[(subs["late_percent"] > 0) | (subs["penalty"] > 0)].itertuples()]
    flagged = review_table(store)
    review = flagged.astype(object).where(flagged.notna(), None).to_dict("records")  # a late row has no speedup
    students = [{"student": r.student, "status": submission_word(r.status) if isinstance(r.status, str) else "",
                 "total": None if pd.isna(r.total) else float(r.total),
                 "penalty": None if pd.isna(r.penalty) else float(r.penalty),
                 "late": r.late if isinstance(r.late, str) else "",
                 "overrides": r.overrides if isinstance(r.overrides, str) else "",
                 "link": feedback_link(r.student) if r.student in set(subs["student"]) else None}
                for r in grades.itertuples()]
    run = store.latest_run() or {}
    totals = graded["total"].astype(float)
    rates = pass_rates(cases, rubric, len(subs))
    return {"title": rubric.title, "max_points": rubric.max_points, "link": feedback_link, "plots": plots, "tasks": task_rows,
            "untimed": untimed_note(store, rubric), "correctness_only": correctness_only, "measurable": measurable,
            "left_to_a_gpu": {status: int((cases[cases["kind"] == "correctness"]["status"] == status).sum())
                              for status in LEFT_TO_A_GPU},
            "rates": rate_tables(rates, rubric), "failed_runs": failed_runs, "sanitizer": sanitizer,
            "unbuilt": unbuilt, "review": review, "late": late, "students": students,
            "counts": {"students": len(grades), "submitted": len(subs),
                       "mean": float(totals.mean()) if len(totals) else 0.0,
                       "median": float(totals.median()) if len(totals) else 0.0,
                       "timeouts": sum(1 for f in failed_runs if f["status"] == CaseStatus.TIMEOUT),
                       "crashes": sum(1 for f in failed_runs if f["status"] != CaseStatus.TIMEOUT)},
            "run": {"seed": run.get("seed"), "started": run.get("started"),
                    "devices": ", ".join(d.get("name", "") for d in json.loads(run.get("devices") or "[]"))}}


def write_overview(results: Path, rubric: Rubric) -> Path:
    """Writes RESULTS/overview.html from RESULTS/grades.sqlite; returns its path."""
    store = Store.existing(results / "grades.sqlite")
    try:
        context = overview_context(store, rubric)
    finally:
        store.close()
    path = results / "overview.html"
    path.write_text(overview_page(context).html)
    return path


def overview_page(context: dict) -> Page:
    """The overview as HTML and its Content-Security-Policy (the service serves both)."""
    return page.render(TEMPLATES["html"], "overview.html.j2", context, "overview.css")
