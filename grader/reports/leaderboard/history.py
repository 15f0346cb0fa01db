"""Every publish is kept in OUT/history/<UTC time>.csv, and each row shows its change since the last one.

A history file holds only what the page showed, keyed by the salted key (never
a student id, even when a publish showed names), so the folder can be
published with the page. A publish whose ranking is the same as the last one
adds no file, and its changes are still counted from the publish before: a
TA who publishes twice does not wipe out the day's movements.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from grader.reports.spreadsheet import write_csv

HISTORY_DIR = "history"
COLUMNS = ["key", "name", "rank", "value", "unit"]
STAMP = "%Y-%m-%dT%H-%M-%SZ"
_NAME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ)(?:\+(\d+))?\.csv")


@dataclass
class Snapshot:
    path: Path
    published: datetime
    rows: pd.DataFrame  # COLUMNS


def _order(path: Path) -> tuple[str, int]:
    m = _NAME.fullmatch(path.name)
    return m.group(1), int(m.group(2) or 0)


def history_files(out: Path) -> list[Path]:
    folder = out / HISTORY_DIR
    if not folder.is_dir():
        return []
    return sorted((p for p in folder.iterdir() if _NAME.fullmatch(p.name)), key=_order)


def read_snapshot(path: Path) -> Snapshot:
    rows = pd.read_csv(path, dtype={"key": str, "name": str, "unit": str}, keep_default_na=False,
                       na_values={"rank": [""], "value": [""]})
    missing = [c for c in COLUMNS if c not in rows.columns]
    if missing:
        raise ValueError(f"{path}: not a leaderboard history file (no {', '.join(missing)} column)")
    published = datetime.strptime(_order(path)[0], STAMP).replace(tzinfo=timezone.utc)
    return Snapshot(path, published, rows[COLUMNS])


def _same(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    def norm(t: pd.DataFrame) -> list[tuple]:
        return sorted((str(k), None if pd.isna(r) else int(r), None if pd.isna(v) else round(float(v), 6))
                      for k, r, v in zip(t["key"], t["rank"], t["value"]))
    return norm(a) == norm(b)


def previous_publish(out: Path, rows: pd.DataFrame) -> tuple[Snapshot | None, bool, list[str]]:
    """The publish to compare `rows` (COLUMNS) with; whether `rows` equal the last publish's; and warnings."""
    warnings, snapshots = [], []
    for path in history_files(out):
        try:
            snapshots.append(read_snapshot(path))
        except (ValueError, OSError, pd.errors.ParserError) as e:
            warnings.append(f"{path}: unreadable, left out of the history ({e})")
    if snapshots and _same(snapshots[-1].rows, rows):
        return (snapshots[-2] if len(snapshots) > 1 else None), True, warnings
    return (snapshots[-1] if snapshots else None), False, warnings


def keep(out: Path, rows: pd.DataFrame, now: datetime) -> Path:
    """Writes this publish's rows as OUT/history/<UTC time>.csv."""
    folder = out / HISTORY_DIR
    folder.mkdir(parents=True, exist_ok=True)
    stamp = now.astimezone(timezone.utc).strftime(STAMP)
    path, n = folder / f"{stamp}.csv", 0
    while path.exists():  # two publishes in one second
        n += 1
        path = folder / f"{stamp}+{n}.csv"
    write_csv(rows[COLUMNS], path)
    return path


def changes(rows: pd.DataFrame, previous: Snapshot | None) -> pd.DataFrame:
    """previous_rank, rank_change (up is positive) and value_change (a fraction) for each key in `rows`."""
    out = pd.DataFrame({"key": rows["key"]})
    if previous is None:
        out["previous_rank"] = pd.array([pd.NA] * len(out), dtype="Int64")
        out["previous_value"] = float("nan")
    else:
        before = previous.rows.drop_duplicates("key").set_index("key")
        out["previous_rank"] = out["key"].map(before["rank"]).astype("Int64")
        out["previous_value"] = out["key"].map(before["value"]).astype(float)
    out["rank_change"] = (out["previous_rank"] - rows["rank"].astype("Int64").values).astype("Int64")
    out["value_change"] = rows["value"].astype(float).values / out["previous_value"] - 1
    return out.set_index("key")
