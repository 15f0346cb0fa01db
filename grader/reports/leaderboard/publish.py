"""One publish: the store's board, names, the change since the last publish, and the three files."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from grader.reports.leaderboard.board import (CORRECT_NOT_TIMED, METRIC_DECIMALS, Board, build_board, parse_times,
                                      throughput_column)
from grader.reports.leaderboard.chart import bar_chart
from grader.reports.leaderboard.history import changes, keep, previous_publish
from grader.reports.leaderboard.pseudonyms import LeaderboardError, Pseudonyms, display_names, load_or_create_salt
from grader.reports.leaderboard.render import render_html, render_md
from grader.core.rubric import Rubric
from grader.reports.spreadsheet import write_csv
from grader.store.store import Store

SALT_FILE = "pseudonym-salt"
STORE_FILE = "grades.sqlite"


@dataclass(frozen=True)
class PublishOptions:
    results: Path
    out: Path | None = None  # default: RESULTS/leaderboard
    salt_file: Path | None = None  # default: RESULTS/pseudonym-salt
    with_scores: bool = False
    show_names: bool = False
    now: datetime | None = None  # the publish's time (tests fix it)
    ranked_only: bool = False  # leave the entries that are not ranked (and why) off the published files

    @property
    def out_dir(self) -> Path:
        return Path(self.out) if self.out else Path(self.results) / "leaderboard"

    @property
    def salt_path(self) -> Path:
        return Path(self.salt_file) if self.salt_file else Path(self.results) / SALT_FILE


@dataclass
class Published:
    out: Path
    html: Path
    md: Path
    csv: Path
    history: Path | None  # None when the ranking had not changed since the last publish
    ranked: int
    unranked: int
    warnings: list[str] = field(default_factory=list)


def open_store(results: Path) -> Store:
    """The grades store, which must exist already (a leaderboard never creates an empty one)."""
    path = Path(results) / STORE_FILE
    if not path.is_file():
        raise LeaderboardError(f"{path}: no grades store there; grade first (`bin/grader grade DIR "
                               f"--results {results}`), or pass --results")
    store = Store(path)
    if store.latest_run() is None:
        store.close()
        raise LeaderboardError(f"{path} holds no grading run yet: run `bin/grader grade` first")
    return store


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def _round(value, decimals: int):
    return None if pd.isna(value) else round(float(value), decimals)


def publish_table(board: Board, names: dict[str, str], pseudonyms: Pseudonyms, options: PublishOptions) -> pd.DataFrame:
    """The published rows, ranked first: what leaderboard.csv holds (before the change columns)."""
    rows = [_row(board, r, names, pseudonyms, r["rank"], "ranked") for r in board.ranked.to_dict("records")]
    if not options.ranked_only:
        rows += [_row(board, r, names, pseudonyms, None, r["reason"]) for r in board.unranked.to_dict("records")]
    columns = (["rank", "name"] + (["student"] if options.show_names else [])
               + [board.metric.label, "speedup", "speedup_low", "speedup_high", board.percent_label]
               + [c.label for c in board.others]
               + (["score", "max_score"] if options.with_scores else []) + ["submitted", "status", "key"])
    table = pd.DataFrame(rows, columns=columns)
    table["rank"] = table["rank"].astype("Int64")
    return table


def _row(board: Board, r: dict, names: dict[str, str], pseudonyms: Pseudonyms, rank: int | None,
         status: str) -> dict:
    """One published row; an unranked one carries no measurements (its submission's are not correct)."""
    ranked = rank is not None
    row = {"rank": rank, "name": names[r["student"]], "student": r["student"],
           board.metric.label: _round(r["metric"], METRIC_DECIMALS) if ranked else None,
           "speedup": _round(r["speedup"], 3) if ranked else None,
           "speedup_low": _round(r["speedup_low"], 3) if ranked else None,
           "speedup_high": _round(r["speedup_high"], 3) if ranked else None,
           board.percent_label: _round(r["percent_of_limit"], 1) if ranked else None,
           "score": _round(r["total"], 2), "max_score": _round(r["max_total"], 2),
           "submitted": r["received"], "status": status, "key": pseudonyms.key(r["student"])}
    for c in board.others:
        row[c.label] = _round(r[throughput_column(c.task)], METRIC_DECIMALS) if ranked else None
    return row


def _snapshot(table: pd.DataFrame, board: Board, metric_col: str) -> pd.DataFrame:
    return pd.DataFrame({"key": table["key"], "name": table["name"], "rank": table["rank"],
                         "value": table[metric_col], "unit": board.metric.unit})


def _stamp(value: datetime) -> str:
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _write(path: Path, text: str) -> None:
    """Replaces the file in one step, so a static host never serves half a page."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def publish(options: PublishOptions, rubric: Rubric) -> Published:
    out, salt_path = options.out_dir, options.salt_path
    if _inside(salt_path, out):
        raise LeaderboardError(f"the pseudonym salt {salt_path} is inside the published folder {out}: "
                               "keep it elsewhere (--salt-file)")
    store = open_store(options.results)
    try:
        board = build_board(store, rubric)
    finally:
        store.close()
    now = options.now or datetime.now(timezone.utc)
    out.mkdir(parents=True, exist_ok=True)
    view = ranked(board, rubric, options, now)
    context = view.context
    paths = {"html": out / "index.html", "md": out / "leaderboard.md", "csv": out / "leaderboard.csv"}
    _write(paths["html"], render_html(context))
    _write(paths["md"], render_md(context))
    tmp = out / ".leaderboard.csv.tmp"
    write_csv(view.table, tmp)
    os.replace(tmp, paths["csv"])
    written = None if view.unchanged else keep(out, view.snapshot, now)
    return Published(out, paths["html"], paths["md"], paths["csv"], written, len(board.ranked),
                     len(board.unranked), view.warnings)


@dataclass
class Ranked:
    """The board as its pages show it, each entry's move since the last publish in `options.out_dir` (none there:
    every entry is "first publish")."""
    context: dict  # what leaderboard.html.j2 and leaderboard.md.j2 render
    table: pd.DataFrame  # the CSV's rows
    snapshot: pd.DataFrame  # what a publish keeps in the history
    unchanged: bool  # the ranking is the last publish's
    warnings: list[str]


def ranked(board: Board, rubric: Rubric, options: PublishOptions, now: datetime) -> Ranked:
    """Writes nothing but a missing pseudonym salt (the same salt then serves every later publish and the
    service's live page)."""
    salt, warnings = load_or_create_salt(options.salt_path)
    pseudonyms = Pseudonyms(salt)
    names = display_names(board.students, board.nicknames, pseudonyms)
    metric_col = board.metric.label
    table = publish_table(board, names, pseudonyms, options)
    snapshot = _snapshot(table, board, metric_col)
    previous, unchanged, history_warnings = previous_publish(options.out_dir, snapshot)
    warnings += history_warnings
    moves = changes(snapshot, previous)
    table.insert(1, "previous_rank", table["key"].map(moves["previous_rank"]).astype("Int64"))
    table.insert(2, "rank_change", table["key"].map(moves["rank_change"]).astype("Int64"))
    value_change = table["key"].map(moves["value_change"]).astype(float)
    table.insert(table.columns.get_loc(metric_col) + 1, "change_percent", (100 * value_change).round(1))
    context = _context(board, table, rubric, options, now, previous.published if previous else None, metric_col)
    return Ranked(context, table, snapshot, unchanged, warnings)


def _context(board: Board, table: pd.DataFrame, rubric: Rubric, options: PublishOptions, now: datetime,
             previous: datetime | None, metric_col: str) -> dict:
    ranked = table[table["status"] == "ranked"]
    received = parse_times(table["submitted"])
    rows = [dict(r, submitted_at=received[i]) for i, r in table.iterrows()]
    drawn = [(int(r["rank"]), r["name"], r[metric_col]) for r in rows[: len(ranked)]]
    chart = bar_chart(drawn, board.metric.unit, board.solution, board.limit, board.limit_name)
    narrow_chart = bar_chart(drawn, board.metric.unit, board.solution, board.limit, board.limit_name, narrow=True)
    values = ranked[metric_col]
    return {
        "title": rubric.title, "metric": board.metric, "metric_col": metric_col, "dtype": board.dtype,
        "shape": board.metric.shape.replace("x", "×"), "unit": board.metric.unit, "limit_name": board.limit_name,
        "percent_col": board.percent_label, "others": board.others,
        "other_cols": [c.label for c in board.others],
        "devices": ", ".join(board.devices) or "unknown device", "harness": ", ".join(board.harness_versions) or "—",
        "published": _stamp(now), "previous": _stamp(previous) if previous else None,
        "ranked": rows[: len(ranked)], "unranked": rows[len(ranked):], "entries": len(rows),
        "students": len(board.students),
        "with_scores": options.with_scores, "show_names": options.show_names, "chart": chart,
        "narrow_chart": narrow_chart,
        "solution": board.solution, "limit": board.limit,
        "top": rows[0] if len(ranked) else None, "median": float(values.median()) if len(values) else None,
        "decimals": METRIC_DECIMALS, "untimed": board.untimed, "correct_not_timed": CORRECT_NOT_TIMED,
        "correct_untimed": int((board.unranked["reason"] == CORRECT_NOT_TIMED).sum()),  # --ranked-only too
    }
