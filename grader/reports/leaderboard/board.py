"""The leaderboard's rows, from results/grades.sqlite: one per student, ranked or not.

The metric is the rubric's leaderboard task's throughput (GFLOP/s or GB/s) at
its leaderboard shape, from the median of the student's paired timed runs. A
submission is correct for the leaderboard when it was graded, every
correctness case of that task passed, and its timed run at that shape passed
(a timed run verifies its output too). The board is public: it never reads a
case at a hidden shape (rubric.toml's `hidden`), before the rubric's date or
after it, and ranks by a shape that is not hidden (the rubric refuses one). Each student is represented by their
best correct submission: the highest metric, rounded as shown (to
METRIC_DECIMALS), the earlier submission on a tie; the same order ranks the
students. A student with no correct submission is listed below the ranking,
with the reason taken from their latest submission.

A run that timed nothing (the CPU backend; its stored record says so: grading_runs.timed) has no metric: a submission whose
leaderboard task passed every case that ran there is listed as correct and not timed, never as something to fix,
and a board whose every entry comes from such runs says that nothing was timed (`Board.untimed`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

import pandas as pd

from grader.core import metrics, visibility
from grader.core.rubric import Rubric
from grader.core.status import SUBMISSION_STATUSES, CaseStatus, SubmissionStatus, case_reason
from grader.store.store import Store

METRIC_DECIMALS = 1  # the metric as shown and as ranked: equal on the page means tied

# Which failed status explains an unranked entry first (its words: grader/core/status.py's reasons).
REASON_ORDER = [CaseStatus.MISSING, CaseStatus.FORBIDDEN, CaseStatus.BUILD_ERROR, CaseStatus.NEEDS_GPU,
                CaseStatus.NOT_IMPLEMENTED, CaseStatus.WRONG, CaseStatus.CRASHED, CaseStatus.TIMEOUT, CaseStatus.ERROR,
                CaseStatus.SKIPPED]
# The reason of an entry graded where nothing is timed whose leaderboard task passed every case that ran: correct.
CORRECT_NOT_TIMED = "correct; not timed (graded on the CPU)"
# ... and of one whose leaderboard task had no case the CPU backend could run (every shape over its budget).
ALL_GPU_ONLY = "GPU only: not run on the CPU"


@dataclass(frozen=True)
class TaskColumn:
    task: str
    shape: str
    unit: str  # GFLOP/s or GB/s

    @property
    def label(self) -> str:
        """The column's name in the CSV and the Markdown, e.g. "matmul_fast GFLOP/s"."""
        return f"{self.task} {self.unit}".strip()


@dataclass
class Board:
    """What a publish shows, before names, history and formatting."""
    metric: TaskColumn
    dtype: str
    others: list[TaskColumn]  # the other tasks' throughput columns, at their largest timed shapes
    ranked: pd.DataFrame  # rank, student, metric, speedup..., one column per task, total, received, ...
    unranked: pd.DataFrame  # student, reason, total, received, ...
    nicknames: dict[str, str | None]  # each student's latest nickname
    devices: list[str]  # device names of the grading runs shown
    harness_versions: list[str]
    untimed: str  # why nothing shown was timed (the runs' stored untimed_reason), when no entry comes from a timed run; else ""
    limit: float | None  # the latest run's measured limit for the metric's unit (cuBLAS FP32 or copy bandwidth)
    solution: float | None  # the solution's throughput: median over the ranked entries' paired runs

    @property
    def limit_name(self) -> str:
        return metrics.limit_name(self.metric.unit)

    @property
    def percent_label(self) -> str:
        return f"% of {self.limit_name}"

    @property
    def students(self) -> list[str]:
        return list(self.ranked["student"]) + list(self.unranked["student"])


def throughput_column(task: str) -> str:
    """The board's column holding a task's throughput (named apart from the store's own columns)."""
    return f"throughput:{task}"


def parse_times(times: pd.Series) -> pd.Series:
    """The store's ISO 8601 times as UTC timestamps (fromisoformat: no guessing, any pandas)."""
    return pd.to_datetime(times.map(datetime.fromisoformat), utc=True)


def _unit(registry_json: str, task: str) -> str:
    for t in json.loads(registry_json).get("tasks", []):
        if t.get("id") == task:
            return t.get("metric", "")
    return ""


def _reason(sub: pd.Series, cases: pd.DataFrame, metric: TaskColumn, untimed_runs: frozenset = frozenset()) -> str:
    if sub["status"] != SubmissionStatus.GRADED:
        return SUBMISSION_STATUSES[sub["status"]].reason
    mine = cases[(cases["submission_id"] == sub["id"]) & (cases["task"] == metric.task)]
    checks = mine[(mine["kind"] == "correctness") & (mine["status"] != CaseStatus.GPU_ONLY)]
    failed = set(checks.loc[checks["status"] != CaseStatus.OK, "status"])
    for status in REASON_ORDER:
        if status in failed:
            # A student who submitted other tasks did submit: name the file that was missing.
            return f"no {metric.task}.cu" if status == CaseStatus.MISSING else case_reason(status)
    if failed:
        return "failed its checks"
    timed = mine[(mine["kind"] == "timed") & (mine["shape"] == metric.shape)]
    if timed.empty and sub["run_id"] in untimed_runs:
        return CORRECT_NOT_TIMED if not checks.empty else ALL_GPU_ONLY
    if timed.empty:
        return f"not timed at {metric.shape}"
    status = timed["status"].iloc[0]
    return f"{case_reason(status)} in its timed run"


def _columns(runs: pd.DataFrame, rubric: Rubric) -> tuple[TaskColumn, list[TaskColumn]]:
    """The metric's column and each other task's (at its largest timed shape), units from the latest run's registry."""
    latest_run = runs.iloc[-1] if not runs.empty else None
    units = {t.id: _unit(latest_run["registry"], t.id) if latest_run is not None else "" for t in rubric.tasks}
    metric = TaskColumn(rubric.leaderboard_task, rubric.leaderboard_shape, units[rubric.leaderboard_task])
    others = [TaskColumn(t.id, t.largest_shown_timed, units[t.id]) for t in rubric.tasks
              if t.id != metric.task and t.largest_shown_timed]
    return metric, others


def _measure(subs: pd.DataFrame, cases: pd.DataFrame, runs: pd.DataFrame, metric: TaskColumn,
             others: list[TaskColumn]) -> pd.DataFrame:
    """`subs` with each column's throughput, the metric's timed run (speedup and interval, the solution's
    throughput), the metric, its % of the run's limit, and `correct`: whether it counts for the leaderboard."""
    # Throughput of every passed timed run at each column's shape, one column per task.
    timed = cases[(cases["kind"] == "timed") & (cases["status"] == CaseStatus.OK) & (cases["student_ms"] > 0)].copy()
    timed["throughput"] = metrics.throughput(timed["work"], timed["student_ms"])
    timed["solution_throughput"] = metrics.throughput(timed["work"], timed["solution_ms"])
    wanted = pd.DataFrame([(c.task, c.shape) for c in [metric, *others]], columns=["task", "shape"])
    timed = timed.merge(wanted, on=["task", "shape"])
    per_task = timed.pivot_table(index="submission_id", columns="task", values="throughput", aggfunc="first")
    per_task = per_task.reindex(columns=[c.task for c in [metric, *others]])
    per_task.columns = [throughput_column(t) for t in per_task.columns]

    board_runs = timed[timed["task"] == metric.task].set_index("submission_id")[
        ["speedup", "speedup_low", "speedup_high", "solution_throughput"]]
    failed_checks = cases[(cases["task"] == metric.task) & (cases["kind"] == "correctness")
                          & ~cases["status"].isin([CaseStatus.OK, CaseStatus.GPU_ONLY])]["submission_id"].unique()

    subs = subs.join(per_task, on="id").join(board_runs, on="id")
    subs["metric"] = subs[throughput_column(metric.task)]
    limits = {r.id: metrics.device_limit(json.loads(r.limits or "{}"), metric.unit) for r in runs.itertuples()}
    subs["limit"] = subs["run_id"].map(limits).astype(float)
    subs["percent_of_limit"] = metrics.percent_of_limit(subs["metric"], subs["limit"])
    subs["correct"] = ((subs["status"] == SubmissionStatus.GRADED) & subs["metric"].notna()
                       & ~subs["id"].isin(failed_checks))
    subs["metric_rounded"] = subs["metric"].round(METRIC_DECIMALS)
    return subs


def _public(rubric: Rubric, cases: pd.DataFrame) -> pd.DataFrame:
    """The cases a public board may read: none at a hidden shape (grader/core/visibility.py), before the rubric's
    date or after it, so the board's ranking and reasons never change with it."""
    return cases[~visibility.hidden_rows(rubric, cases)] if not cases.empty else cases


def submission_metric(store: Store, rubric: Rubric, submission_id: int) -> tuple[float | None, TaskColumn]:
    """One submission's leaderboard metric as the board shows and ranks it (rounded), and its column; None when
    the submission does not count for the leaderboard. Gradescope's and Autolab's leaderboard columns."""
    runs = store.runs()
    metric, _ = _columns(runs, rubric)
    subs = store.submissions()
    row = _measure(subs[subs["id"] == submission_id], _public(rubric, store.cases_for([submission_id])), runs, metric,
                   [])
    if row.empty or not row["correct"].iloc[0]:
        return None, metric
    return float(row["metric_rounded"].iloc[0]), metric


def build_board(store: Store, rubric: Rubric) -> Board:
    runs = store.runs()[["id", "started", "harness_version", "registry", "devices", "limits", "timed",
                         "untimed_reason"]]
    subs = store.submissions()[["id", "run_id", "student", "received", "graded", "status", "total", "max_total",
                                "nickname", "harness_version"]]
    cases = _public(rubric, store.cases_for()[["submission_id", "task", "shape", "kind", "status", "work", "speedup",
                                               "speedup_low", "speedup_high", "student_ms", "solution_ms"]])
    latest_run = runs.iloc[-1] if not runs.empty else None
    metric, others = _columns(runs, rubric)
    dtype = rubric.task(metric.task).timed_dtype
    subs = _measure(subs, cases, runs, metric, others)
    subs["received_at"] = parse_times(subs["received"])
    subs["graded_at"] = parse_times(subs["graded"])

    # Best correct submission per student, then the ranking: one order for both.
    best = subs[subs["correct"]].sort_values(["metric_rounded", "received_at", "id"], ascending=[False, True, True])
    ranked = best.drop_duplicates("student").reset_index(drop=True)
    ranked.insert(0, "rank", range(1, len(ranked) + 1))

    by_recency = subs.sort_values(["received_at", "graded_at", "id"], ascending=False)
    latest = by_recency.drop_duplicates("student")
    unranked = latest[~latest["student"].isin(ranked["student"])].copy()
    untimed = frozenset(r.id for r in runs.itertuples() if not r.timed)
    unranked["reason"] = [_reason(row, cases, metric, untimed) for _, row in unranked.iterrows()]
    unranked = unranked.sort_values(["received_at", "id"]).reset_index(drop=True)
    nicknames = by_recency.dropna(subset=["nickname"]).drop_duplicates("student").set_index("student")["nickname"]

    shown = pd.concat([ranked, unranked])
    shown_runs = runs[runs["id"].isin(shown["run_id"])]
    reasons = list(shown_runs["untimed_reason"])
    nothing_timed = reasons[0] if reasons and all(reasons) else ""
    devices = sorted({d.get("name", "") for r in shown_runs.itertuples() for d in json.loads(r.devices or "[]")}
                     - {""})
    solution = float(ranked["solution_throughput"].median()) if not ranked.empty else None
    limit = None
    if latest_run is not None:
        limit = metrics.device_limit(json.loads(latest_run["limits"] or "{}"), metric.unit)
    return Board(metric=metric, dtype=dtype, others=others, ranked=ranked, unranked=unranked,
                 nicknames={s: nicknames.get(s) for s in shown["student"]}, devices=devices,
                 harness_versions=sorted(set(shown["harness_version"])), untimed=nothing_timed,
                 limit=float(limit) if limit else None, solution=solution)
