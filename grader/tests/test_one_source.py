"""One source per fact, checked over the grader's own code: the throughput and speedup formulas live
in grader/metrics.py."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

GRADER = Path(__file__).resolve().parents[1]
TESTS = GRADER / "tests"
# The scale factors a throughput (GFLOP/s, GB/s from work and milliseconds) cannot be written without.
THROUGHPUT_SCALES = {1e9, 1e-9, 1e6, 1e-6, 1e-3}


def modules() -> list[Path]:
    return sorted(p for p in GRADER.rglob("*.py") if TESTS not in p.parents)


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


def test_the_check_finds_what_it_looks_for():
    assert formula_findings("x = r.work / (r.student_ms * 1e-3) / 1e9\n")
    assert formula_findings("y = work / ms / 1e6\n")
    assert formula_findings("s = c.solution_ms / c.student_ms\n")
    assert not formula_findings("from grader import metrics\nx = metrics.throughput(r.work, r.student_ms)\n")


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(GRADER)))
def test_throughput_and_speedup_are_computed_only_in_metrics(path):
    if path.name == "metrics.py" and path.parent == GRADER:
        return
    assert formula_findings(path.read_text()) == [], f"{path}: use grader.metrics"
