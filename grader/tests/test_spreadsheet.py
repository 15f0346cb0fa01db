"""Every CSV a person opens goes through one guard (grader/reports/spreadsheet.py): no cell a spreadsheet would run.

A class whose students carry hostile ids (a Canvas gradebook's SIS Login ID, which the roster makes their
id), hostile Canvas names and hostile nicknames is graded on the fake backend; then every command that
writes a CSV runs (grade: grades.csv, review.csv, canvas.csv; export --roster; similarity; leaderboard with
names and scores, and its history), and every cell of every CSV under the results is read back with the csv
module and checked. The grader's own code is also checked for CSV written anywhere but the guard.
"""
from __future__ import annotations

import ast
import csv
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from grader.reports.spreadsheet import cell, csv_text, runs_as_formula
from grader.tests.conftest import grade_on_fakes, small_rubric_text
from grader.tests.test_lms import canvas_tar

REPO = Path(__file__).resolve().parents[2]
GUARD = REPO / "grader" / "reports" / "spreadsheet.py"
# Where code that writes what a person opens lives: the grader, the release tools, the handout's generator.
PACKAGES = [REPO / "grader", REPO / "release", REPO / "handout"]
TESTS = REPO / "grader" / "tests"
LATE_POLICY = '\n[late]\ndue = "2026-11-20T23:59:59"\ntimezone = "UTC"\npenalty = 10\nper = "day"\n'
# sim_c (Debian's similarity-tester, which `make check` installs); without it only similarity.csv goes unchecked
SIMILARITY = shutil.which("sim_c") is not None
NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")

# (Canvas login, user id, the roster's SIS Login ID (their id in the grades), the roster's name, nickname, speed)
HOSTILE = [
    ("mallory", 41001, "@SUM(1+1)*cmd|'-C calc'!A0", "=1+2", '=HYPERLINK("http://x.y","hi")', 2.0),
    ("trudy", 41002, "-2+3", "+cmd", "＝1+1", 1.0),
    ("eve", 41003, "+SUM(A1)", "-1", "-2+3", 1.0),
    ("honest", 41004, "honest", "Honest, Ann", "-5", 1.0),
]


def test_cells_a_spreadsheet_would_run_are_recognized_whatever_their_disguise():
    for text in ["=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1", "  =1", "\u00a0=1", "\n=1", "＝1", "﹢1", "－2",
                 "＠x", "-2+3"]:
        assert runs_as_formula(text), repr(text)
    for text in ["", "1-2", "a=b", "plain words", "'=1", "2026-11-20T23:59:59+00:00", "s01"]:
        assert not runs_as_formula(text), repr(text)


def test_numbers_stay_numbers_and_text_that_looks_like_one_is_text():
    assert cell(-2.5) == -2.5 and cell(-3) == -3 and cell(np.float64(-1.0)) == -1.0 and cell(None) is None
    assert cell("-5") == "'-5" and cell("-2+3") == "'-2+3" and cell("=A1") == "'=A1" and cell("ok") == "ok"
    table = pd.DataFrame({"=name": ["-2+3", "Ann"], "penalty": [-2.5, 0.0], "mixed": [-1.5, "-x"]})
    rows = list(csv.reader(csv_text(table).splitlines()))
    assert rows == [["'=name", "penalty", "mixed"], ["'-2+3", "-2.5", "-1.5"], ["Ann", "0.0", "'-x"]]


# --- nothing writes a CSV but the guard -----------------------------------------------------------------------

CSV_WRITERS = {"writer", "DictWriter"}


def csv_writes(source: str) -> list[str]:
    """Where a module writes CSV itself: pandas' to_csv, the csv module's writers."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and (node.attr in ("to_csv", "writerow", "writerows") or (
                node.attr in CSV_WRITERS and isinstance(node.value, ast.Name) and node.value.id == "csv")):
            found.append(f"line {node.lineno}: .{node.attr}")
        if isinstance(node, ast.ImportFrom) and node.module == "csv" and CSV_WRITERS & {a.name for a in node.names}:
            found.append(f"line {node.lineno}: from csv import a writer")
    return found


def product_modules() -> list[Path]:
    return sorted(p for root in PACKAGES for p in root.rglob("*.py") if TESTS not in p.parents and p != GUARD)


def test_the_check_finds_every_way_to_write_a_csv():
    assert csv_writes("table.to_csv(path, index=False)\n")
    assert csv_writes("import csv\nw = csv.writer(f)\nw.writerow(row)\n")
    assert csv_writes("from csv import DictWriter\n")
    assert csv_writes("out.writerows(rows)\n")
    assert not csv_writes("import csv\nrows = list(csv.reader(text.splitlines()))\npd.read_csv(p)\n")
    assert not csv_writes("from grader.reports.spreadsheet import write_csv\nwrite_csv(table, path)\n")


@pytest.mark.parametrize("path", product_modules(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_code_but_the_guard_writes_a_csv(path):
    assert csv_writes(path.read_text()) == [], f"{path}: write CSV through grader.reports.spreadsheet (write_csv, csv_text)"


# --- a hostile class, every CSV the grader writes --------------------------------------------------------------

def hostile_class(root: Path, registry) -> tuple[Path, Path]:
    """A Canvas download (a nickname.txt in each archive) and the gradebook export that names the students."""
    download = root / "download"
    download.mkdir(parents=True)
    for n, (login, user, _, _, nickname, speed) in enumerate(HOSTILE):
        files = {f"hw/{t.file}": f"// fake: ok speed={speed}\n".encode() + (REPO / "solution" / "kernels" / t.file)
                 .read_bytes() for t in registry.tasks}  # code of its own, so the similarity check compares it
        files["hw/nickname.txt"] = nickname.encode()
        late = "_LATE" if n == 0 else ""  # mallory's: Canvas marked it LATE, so review.csv lists her
        canvas_tar(download / f"{login}{late}_{user}_{90000 + n}_submission.tar.gz", files)
    roster = root / "roster.csv"
    with roster.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section"])
        out.writerow(["    Points Possible", "", "", "", ""])
        for _, user, sis, name, _, _ in HOSTILE:
            out.writerow([name, user, f"S{user}", sis, "CS 4120-001"])
    return download, roster


def every_cell(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


@pytest.fixture(scope="module")
def written(tmp_path_factory, registry, rubric) -> Path:
    """The results folder after every command that writes a CSV, from one store of the hostile class."""
    from grader import cli
    from grader.core.rubric import load_rubric
    root = tmp_path_factory.mktemp("hostile-csv")
    download, roster = hostile_class(root, registry)
    rubric_path = root / "rubric.toml"
    rubric_path.write_text(small_rubric_text(rubric) + LATE_POLICY)
    small = load_rubric(rubric_path, registry)
    patch = pytest.MonkeyPatch()
    grade_on_fakes(patch, registry, small)
    results, common = root / "results", ["--rubric", str(rubric_path), "--results", str(root / "results")]
    try:
        for command in (["grade", str(download), "--from", "canvas", "--roster", str(roster), "--no-progress",
                         "--gpus", "0"],
                        ["export", "--roster", str(roster), "--assignment-id", "5123", "--out",
                         str(results / "canvas-roster.csv")],
                        *([["similarity", "--submissions", str(download), "--from", "canvas"]] if SIMILARITY else []),
                        ["leaderboard", "--show-names", "--with-scores"]):
            assert cli.main([*command, *common]) == 0, command
    finally:
        patch.undo()
    return results


def test_every_csv_the_grader_writes_is_there(written):
    found = sorted(str(p.relative_to(written)) for p in written.rglob("*.csv"))
    history = [f for f in found if f.startswith("leaderboard/history/")]
    assert len(history) == 1
    assert sorted(set(found) - set(history)) == sorted(["canvas-roster.csv", "canvas.csv", "grades.csv",
                                                        "leaderboard/leaderboard.csv", "review.csv",
                                                        *(["similarity.csv"] if SIMILARITY else [])])


def test_no_cell_of_any_csv_would_run_as_a_formula(written):
    """Every cell of every CSV under the results: text that would run starts with the apostrophe; what is left
    starting with a sign is a number the grader wrote."""
    for path in written.rglob("*.csv"):
        for line, row in enumerate(every_cell(path), start=1):
            for value in row:
                assert not runs_as_formula(value) or NUMBER.fullmatch(value), (str(path), line, value)


def test_each_hostile_id_name_and_nickname_reached_the_csvs_as_text(written):
    texts = {p.relative_to(written).as_posix(): {v for row in every_cell(p) for v in row}
             for p in written.rglob("*.csv")}
    for _, _, sis, name, nickname, _ in HOSTILE[:3]:
        for where in ("grades.csv", "canvas.csv", "canvas-roster.csv", "leaderboard/leaderboard.csv",
                      *(["similarity.csv"] if SIMILARITY else [])):
            assert "'" + sis in texts[where], (where, sis)
        assert "'" + name in texts["canvas-roster.csv"]
        assert "'" + nickname in texts["grades.csv"] and "'" + nickname in texts["leaderboard/leaderboard.csv"]
    assert "'-5" in texts["grades.csv"]  # a nickname that looks like a number is text
    review = every_cell(written / "review.csv")
    flags = {(row[0], row[review[0].index("flag")]) for row in review[1:]}
    sis = "'" + HOSTILE[0][2]
    assert (sis, "review") in flags  # 2x the solution: a timed case flagged for review
    assert (sis, "late, time unknown") in flags  # Canvas marked it LATE, and no time was given


def test_the_points_canvas_imports_are_numbers(written):
    rows = every_cell(written / "canvas-roster.csv")
    column = rows[0].index(next(h for h in rows[0] if h.endswith("(5123)")))
    points = [row[column] for row in rows[1:]]
    assert points and all(NUMBER.fullmatch(p) for p in points), points
    grades = every_cell(written / "grades.csv")
    for name in ("raw_total", "penalty", "total"):
        i = grades[0].index(name)
        assert all(NUMBER.fullmatch(row[i]) for row in grades[1:]), name
