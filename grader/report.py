"""What the grader writes from the store: grades.csv, feedback per student, review.csv, the summary.

Everything here reads results/grades.sqlite, so `python3 -m grader report`
rewrites the same files at any time, from each student's latest submission.
"""
from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import jinja2
import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from grader import metrics  # noqa: E402
from grader.isolation import Isolation  # noqa: E402
from grader.status import case_word, sanitizer_word, submission_word  # noqa: E402
from grader.rubric import Rubric  # noqa: E402
from grader.sanitizer import meaning, summary_sentence  # noqa: E402
from grader.store import Store  # noqa: E402

UNRECORDED = Isolation("unknown", text="not recorded")  # a submission whose run is not in the store
UNKNOWN_RUN = {"limits": {}, "device": "", "isolation": UNRECORDED}
_LOADER = jinja2.FileSystemLoader(Path(__file__).parent / "templates")
# Markdown keeps its whitespace exactly as written; HTML is escaped, since students control its text.
TEMPLATES = {"md": jinja2.Environment(loader=_LOADER, keep_trailing_newline=True, undefined=jinja2.StrictUndefined),
             "html": jinja2.Environment(loader=_LOADER, autoescape=True, trim_blocks=True, lstrip_blocks=True,
                                        undefined=jinja2.StrictUndefined)}


def grades_table(store: Store, rubric: Rubric) -> pd.DataFrame:
    """One row per student (latest submission): total, status, and each task's two scores."""
    subs = store.latest_submissions()
    columns = ["student", "nickname", "status", "total", "max_total"]
    tail = ["received", "graded", "sha256", "sandbox"]
    if subs.empty:
        task_columns = [f"{t.id}_{part}" for t in rubric.tasks for part in ("correctness", "performance")]
        return pd.DataFrame(columns=columns + task_columns + tail)
    scores = store.scores(subs["id"].tolist())
    wide = scores.pivot(index="submission_id", columns="task", values=["correctness", "performance"])
    wide.columns = [f"{task}_{part}" for part, task in wide.columns]
    order = [f"{t.id}_{part}" for t in rubric.tasks for part in ("correctness", "performance")]
    table = subs.set_index("id").join(wide.reindex(columns=order))
    isolations = store.isolations()
    table["sandbox"] = [isolations.get(r, UNRECORDED).label for r in table["run_id"]]  # how its code was isolated
    table = table.reset_index()[columns + order + tail]
    return table.round(3)


def _plot(timed: pd.DataFrame) -> bytes | None:
    """A bar chart of the student's throughput beside the solution's, per timed case."""
    timed = timed[timed["speedup"].notna()]
    if timed.empty:
        return None
    labels = [f"{r.task}\n{r.shape}" for r in timed.itertuples()]
    student = list(metrics.throughput(timed["work"], timed["student_ms"]))
    solution = list(metrics.throughput(timed["work"], timed["solution_ms"]))
    fig, ax = plt.subplots(figsize=(max(4, 1.4 * len(labels)), 3.2), dpi=110)
    x = range(len(labels))
    ax.bar([i - 0.2 for i in x], student, width=0.4, label="yours", color="#3b6fb6")
    ax.bar([i + 0.2 for i in x], solution, width=0.4, label="solution", color="#b0b0b0")
    ax.set_xticks(list(x), labels, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("GFLOP/s or GB/s (log scale)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


def _case_view(row, limits: dict) -> dict:
    view = {"kind": row.kind, "dtype": row.dtype, "shape": row.shape, "status": row.status,
            "status_text": case_word(row.status), "message": row.message, "hint": row.hint,
            "icon": "✅" if row.status == "ok" else "❌", "speedup": None, "output": row.output}
    if pd.notna(row.speedup):
        throughput = metrics.throughput(row.work, row.student_ms)
        view.update(speedup=row.speedup, speedup_low=row.speedup_low, speedup_high=row.speedup_high,
                    student_ms=row.student_ms, solution_ms=row.solution_ms, pairs=int(row.pairs), unit=row.unit,
                    student_throughput=throughput, credit=row.credit if pd.notna(row.credit) else 0.0,
                    percent_of_limit=metrics.percent_of_limit(throughput, metrics.device_limit(limits, row.unit)),
                    limit_name=metrics.limit_name(row.unit))
    throttled = getattr(row, "throttled_pairs", None)
    view["throttle_note"] = (f"; {int(throttled)} of {int(row.pairs)} pairs were timed while the GPU's clock was "
                             "throttled" if pd.notna(throttled) and throttled else "")
    return view


def _sanitizer_view(row) -> dict:
    """One compute-sanitizer run, in words: what it found and what that means."""
    if row.status == "errors":
        text = f"{summary_sentence(row.tool, int(row.errors))} on {row.dtype} {row.shape}"
        if meaning(row.report):
            text += f": {meaning(row.report)}"
    else:
        text = (f"compute-sanitizer {row.tool} on {row.dtype} {row.shape}: {sanitizer_word(row.status)}"
                + (f" ({row.message})" if row.message else ""))
    return {"tool": row.tool, "status": row.status, "text": text, "report": row.report if row.status == "errors" else "",
            "icon": "⚠️" if row.status == "errors" else ("✅" if row.status == "clean" else "➖")}


def _sanitizer_views(runs: pd.DataFrame) -> list[dict]:
    """A task's compute-sanitizer runs; one line when every tool found nothing."""
    if not runs.empty and (runs["status"] == "clean").all():
        first = runs.iloc[0]
        return [{"tool": "", "status": "clean", "report": "", "icon": "✅",
                 "text": f"compute-sanitizer ({', '.join(runs['tool'])}) on {first['dtype']} {first['shape']}: "
                         f"{sanitizer_word('clean')}"}]
    return [_sanitizer_view(r) for r in runs.itertuples()]


def task_feedback(store: Store, rubric: Rubric, submission_id: int, limits: dict) -> list[dict]:
    """Each task of a submission as its feedback shows it: the scores, a line per stored case (with its
    timing, rated against the run's measured `limits`) and per compute-sanitizer run. The feedback pages
    and Gradescope's per-task output (grader/exports/gradescope.py) are both made from these."""
    cases = store.cases(submission_id)
    tool_runs = store.sanitizer_runs(submission_id)
    scores = store.scores([submission_id]).set_index("task")
    tasks = []
    for policy in rubric.tasks:
        s = scores.loc[policy.id] if policy.id in scores.index else None
        rows = cases[cases["task"] == policy.id]
        tasks.append({"task": policy.id, "correctness": s.correctness if s is not None else 0.0,
                      "correctness_max": policy.correctness_points,
                      "performance": s.performance if s is not None else 0.0,
                      "performance_max": policy.performance_points, "note": s.note if s is not None else "",
                      "cases": [_case_view(r, limits) for r in rows.itertuples()],
                      "sanitizer": _sanitizer_views(tool_runs[tool_runs["task"] == policy.id])})
    return tasks


def task_markdown(task: dict) -> str:
    """One task's lines of task_feedback() in Markdown, exactly as the feedback page (feedback.md) has them."""
    return TEMPLATES["md"].get_template("feedback_task.md.j2").render(t=task).strip("\n")


def run_views(store: Store) -> dict[int, dict]:
    """Each grading run as the feedback uses it: its measured limits, its first device's name, its isolation."""
    isolations = store.isolations()
    views = {}
    for run in store.runs().itertuples():
        devices = json.loads(run.devices or "[]")
        views[run.id] = {"limits": json.loads(run.limits or "{}"),
                         "device": devices[0].get("name", "") if devices else "",
                         "isolation": isolations.get(run.id, UNRECORDED)}
    return views


def run_of(store: Store, run_id: int) -> dict:
    """The grading run a submission was graded in (run_views' entry; empty limits if it is not in the store)."""
    return run_views(store).get(run_id, UNKNOWN_RUN)


def write_feedback(store: Store, rubric: Rubric, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    runs = run_views(store)
    subs = store.latest_submissions()
    for sub in subs.itertuples():
        run = runs.get(sub.run_id, UNKNOWN_RUN)
        cases = store.cases(sub.id)
        png = _plot(cases[cases["kind"] == "timed"])
        isolation = run["isolation"]
        findings = json.loads(sub.gate)
        context = {"title": rubric.title, "s": sub._asdict(), "status_word": submission_word,
                   "tasks": task_feedback(store, rubric, sub.id, run["limits"]),
                   "gate": [f for f in findings if f["enforced"]], "gate_notes": [f for f in findings if not f["enforced"]],
                   "notes": json.loads(sub.notes), "ignored": json.loads(sub.ignored), "device": run["device"],
                   "unbuilt": sorted({f"{r.task}" for r in cases.itertuples() if r.status == "build_error"}),
                   "plot": f"{sub.student}.png" if png else None,
                   "plot_data": base64.b64encode(png).decode() if png else None,
                   "unsandboxed": None if isolation.isolated else isolation.label}
        if png:
            (out / f"{sub.student}.png").write_bytes(png)
        for kind in ("md", "html"):
            path = out / f"{sub.student}.{kind}"
            path.write_text(TEMPLATES[kind].get_template(f"feedback.{kind}.j2").render(context))
            written.append(path)
    return written


def review_table(store: Store) -> pd.DataFrame:
    """Timed cases a TA should look at (latest submissions): implausibly fast, or flagged for review."""
    return store.flagged_cases(store.latest_submissions()["id"].tolist())


def summary_table(store: Store, rubric: Rubric) -> pd.DataFrame:
    """Submissions graded, build failures, timeouts, cases flagged for review, and the mean score of each task."""
    subs = store.latest_submissions()
    if subs.empty:
        return pd.DataFrame({"submissions": [0]})
    ids = subs["id"].tolist()
    cases = store.cases_for(ids)
    tool_runs = store.sanitizer_runs_for(ids)
    scores = store.scores(ids)
    row = {"submissions": len(subs), "graded": int((subs["status"] == "graded").sum()),
           "build failures": int((subs["status"] == "build_failed").sum()),
           "with files that do not build": int(cases[cases["status"] == "build_error"]["submission_id"].nunique()),
           "rejected": int((subs["status"] == "rejected").sum()),
           "with timeouts": int(cases[cases["status"] == "timeout"]["submission_id"].nunique()),
           "flagged for review": len(review_table(store)),
           "sanitizer findings": int(tool_runs[tool_runs["status"] == "errors"]["submission_id"].nunique()),
           "with forbidden files": int(cases[cases["status"] == "forbidden"]["submission_id"].nunique()),
           "mean total": round(float(subs["total"].mean()), 2), "of": rubric.max_points}
    means = (scores.assign(points=scores["correctness"] + scores["performance"])
             .groupby("task")["points"].mean().round(2))
    for policy in rubric.tasks:
        row[policy.id] = float(means.get(policy.id, 0.0))
    isolations = store.isolations()
    row["sandbox"] = ", ".join(sorted({isolations.get(r, UNRECORDED).label for r in subs["run_id"]}))
    return pd.DataFrame([row])


def write_reports(results: Path, rubric: Rubric) -> dict[str, Path]:
    store = Store(results / "grades.sqlite")
    try:
        grades = grades_table(store, rubric)
        grades.to_csv(results / "grades.csv", index=False)
        write_feedback(store, rubric, results / "feedback")
        review_table(store).to_csv(results / "review.csv", index=False)
    finally:
        store.close()
    return {"grades": results / "grades.csv", "feedback": results / "feedback", "review": results / "review.csv"}
