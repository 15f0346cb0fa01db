"""One source per fact, checked over the grader's own code: the throughput and speedup formulas live
in grader/core/metrics.py, and every SQL statement in the store (grader/store/store.py, its schema's steps in
grader/store/migrations.py)."""
from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

GRADER = Path(__file__).resolve().parents[1]
TESTS = GRADER / "tests"
# The scale factors a throughput (GFLOP/s, GB/s from work and milliseconds) cannot be written without.
THROUGHPUT_SCALES = {1e9, 1e-9, 1e6, 1e-6, 1e-3}
SQL = re.compile(r"\b(SELECT\b.+\bFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+TABLE|ALTER\s+TABLE|"
                 r"DROP\s+TABLE|PRAGMA)\b", re.DOTALL)  # the keywords as SQL is written here: in capitals
SQL_CALLS = {"execute", "executemany", "executescript", "read_sql", "read_sql_query", "read_sql_table"}
# Stores as older graders wrote them: the current Store cannot write an old schema, so these fixtures
# build one with sqlite3, and are the only SQL outside store.py.
OLD_STORES = TESTS / "old_stores.py"
FAULT_SAMPLES = TESTS / "test_machine_faults.py"  # makes SQLite's exceptions to name them; writes no SQL
# the store: its queries, its schema's steps, and the grading service's queue (its own tables)
STORE = (GRADER / "store" / "store.py", GRADER / "store" / "migrations.py", GRADER / "store" / "jobs.py")


def modules(include_tests: bool) -> list[Path]:
    return sorted(p for p in GRADER.rglob("*.py") if include_tests or TESTS not in p.parents)


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | \
           {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def formula_findings(source: str) -> list[str]:
    """Lines that scale a throughput, or divide the solution's time by the student's, themselves."""
    found = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, float) and node.value in THROUGHPUT_SCALES:
            found.append(f"line {node.lineno}: the constant {node.value!r}")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left, right = _names(node.left), _names(node.right)
            if any("solution_ms" in n for n in left) and any("student_ms" in n for n in right):
                found.append(f"line {node.lineno}: solution time over student time")
    return found


def sql_findings(source: str) -> list[str]:
    """String literals that hold SQL, and calls that run it (sqlite3's execute*, pandas' read_sql*)."""
    found = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.STRING and SQL.search(tok.string):
            found.append(f"line {tok.start[0]}: {tok.string[:60]}")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SQL_CALLS:
            found.append(f"line {node.lineno}: .{node.func.attr}(...)")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
            if "sqlite3" in names:
                found.append(f"line {node.lineno}: imports sqlite3")
    return found


def test_the_checks_find_what_they_look_for():
    assert formula_findings("x = r.work / (r.student_ms * 1e-3) / 1e9\n")
    assert formula_findings("y = work / ms / 1e6\n")
    assert formula_findings("s = c.solution_ms / c.student_ms\n")
    assert not formula_findings("from grader import metrics\nx = metrics.throughput(r.work, r.student_ms)\n")
    assert sql_findings('rows = store.table("SELECT id FROM submissions")\n')
    assert sql_findings("db.execute(query)\n") and sql_findings("import sqlite3\n")
    assert sql_findings('pd.read_sql_query(q, db)\n')
    assert not sql_findings('store.cases_for([1])\nmessage = "select a shape from the list"\n')


@pytest.mark.parametrize("path", modules(include_tests=False), ids=lambda p: str(p.relative_to(GRADER)))
def test_throughput_and_speedup_are_computed_only_in_metrics(path):
    if path == GRADER / "core" / "metrics.py":
        return
    assert formula_findings(path.read_text()) == [], f"{path}: use grader.core.metrics"


@pytest.mark.parametrize("path", modules(include_tests=True), ids=lambda p: str(p.relative_to(GRADER)))
def test_sql_is_written_only_in_the_store(path):
    if path in (*STORE, OLD_STORES, FAULT_SAMPLES, Path(__file__).resolve()):  # (this file's samples)
        return
    assert sql_findings(path.read_text()) == [], f"{path}: add a Store method (grader/store/store.py)"
