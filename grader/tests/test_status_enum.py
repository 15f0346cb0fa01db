"""Statuses are one vocabulary (grader/core/status.py): every member has its words, a member is stored and read
back as the same text, and no module of the grader writes a status as a raw string again."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from grader.core.status import (CASE_STATUSES, NOT_RUN, SANITIZER_STATUSES, SUBMISSION_STATUSES, CaseStatus,
                                SanitizerStatus, SubmissionStatus)
from grader.store.store import Store
from grader.outcomes.results import SanitizerOutcome
from grader.tests import leaderboard_class
from grader.tests.leaderboard_class import Entry, fill

GRADER = Path(__file__).resolve().parents[1]
ENUMS = (CaseStatus, SubmissionStatus, SanitizerStatus)
STATUS_WORDS = frozenset(m.value for enum in ENUMS for m in enum)
# Calls that take a status by position: the callee's name, the argument's index.
STATUS_ARGUMENTS = {"CaseOutcome": 4, "SanitizerOutcome": 4, "SubmissionResult": 1, "PairedResult": 0,
                    "ScoredCase": 2, "HarnessFailure": 1, "_fail": 0, "task_scores": 1, "case_word": 0,
                    "case_reason": 0, "submission_word": 0, "sanitizer_word": 0}


def _name(node: ast.AST) -> str:
    """The last name of a name, an attribute or a subscript by a string (`case.status`, `cases["status"]`)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args \
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return node.args[0].value  # reply.get("status")
    return ""


def _is_status(node: ast.AST) -> bool:
    """An expression holding a status: named ...status, or a harness failure's kind (a case status)."""
    name = _name(node).lower()
    return name.endswith("status") or (isinstance(node, ast.Attribute) and name == "kind")


def _words(node: ast.AST | None) -> list[ast.Constant]:
    """The status words an expression puts where a status goes: itself, either branch of a conditional, the members
    of a tuple, list or set, the default of `.get("status", ...)`."""
    if isinstance(node, ast.Constant):
        return [node] if isinstance(node.value, str) and node.value in STATUS_WORDS else []
    if isinstance(node, ast.IfExp):
        return _words(node.body) + _words(node.orelse)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [w for e in node.elts for w in _words(e)]
    if isinstance(node, ast.BoolOp):
        return [w for v in node.values for w in _words(v)]
    if isinstance(node, ast.Call) and _is_status(node) and len(node.args) > 1:
        return _words(node.args[1])
    return []


def raw_statuses(source: str) -> list[tuple[int, str]]:
    """(line, word) of every status written as a raw string where a status is compared, tested for membership,
    assigned, passed as `status=` or as a status argument (STATUS_ARGUMENTS)."""
    found: list[ast.Constant] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_status(s) for s in sides):
                found += [w for s in sides if not _is_status(s) for w in _words(s)]
        elif isinstance(node, ast.Call):
            found += [w for k in node.keywords if k.arg and k.arg.lower().endswith("status") for w in _words(k.value)]
            callee = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if callee in STATUS_ARGUMENTS and len(node.args) > STATUS_ARGUMENTS[callee]:
                found += _words(node.args[STATUS_ARGUMENTS[callee]])
            if callee == "isin" and _is_status(node.func.value) and node.args:  # cases["status"].isin([...])
                found += _words(node.args[0])
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    found += [w for t, v in zip(target.elts, node.value.elts) if _is_status(t) for w in _words(v)]
                elif _is_status(target):
                    found += _words(node.value)
    return sorted({(w.lineno, w.value) for w in found})


def product_modules() -> list[Path]:
    return [p for p in sorted(GRADER.rglob("*.py")) if "tests" not in p.relative_to(GRADER).parts]


def test_no_module_of_the_grader_writes_a_status_as_a_raw_string():
    found = [f"{path.relative_to(GRADER.parent)}:{line}: {word!r}" for path in product_modules()
             for line, word in raw_statuses(path.read_text())]
    assert not found, ("statuses written as raw strings; use grader/core/status.py's members (CaseStatus.OK, ...):\n"
                       + "\n".join(found))


@pytest.mark.parametrize("line", [
    'if c.status == "ok": pass',
    'if "timeout" != case.status: pass',
    'x = [c for c in cases if c.status in ("ok", "wrong")]',
    'done = cases[cases["status"] == "errors"]',
    'done = subs[subs["status"].isin(("build_failed", "rejected"))]',
    'if reply.get("status") != "ok": pass',
    'case.status = "implausible"',
    'case.status, case.message = "protocol", reason',
    'status = "not_implemented" if stop else "skipped"',
    'outcome = run(task, status="clean")',
    'CaseOutcome(task, dtype, shape, "correctness", "missing", message)',
    'SubmissionResult(sub, "graded", build)',
    'self._fail("crashed", "the harness ended")',
    'if failure.kind == "timeout": pass',
    'word = case_word("needs_gpu")',
    'status: str = "ok"',
    'status = reply.get("status", "error")',
])
def test_the_scan_finds_a_raw_status_wherever_a_status_goes(line):
    assert raw_statuses(line), line


@pytest.mark.parametrize("line", [
    'listing = {"error": "no list of what it includes was made"}',
    'if reply.get("op") == "error": pass',
    'tests.append({"status": "passed" if good else "failed"})',
    'table["graded"] = table["graded"].astype(str)',
    'state, message = "failed", ""',
    'if c.kind == "correctness": pass',
    'if c.status == CaseStatus.OK: pass',
])
def test_the_scan_leaves_words_that_are_not_statuses(line):
    assert not raw_statuses(line), line


def test_the_scan_fails_on_a_literal_put_back():
    source = (GRADER / "outcomes" / "results.py").read_text()
    assert "self.status == CaseStatus.OK" in source
    assert raw_statuses(source.replace("self.status == CaseStatus.OK", 'self.status == "ok"', 1))


@pytest.mark.parametrize("enum, words", [(CaseStatus, CASE_STATUSES), (SubmissionStatus, SUBMISSION_STATUSES),
                                         (SanitizerStatus, SANITIZER_STATUSES)])
def test_every_member_has_its_words_and_every_word_a_member(enum, words):
    assert set(words) == set(enum)
    assert all(type(key) is enum for key in words)
    assert all(words[m].word for m in enum)


def test_a_member_equals_its_word_and_finds_it():
    assert CaseStatus.OK == "ok" and CASE_STATUSES["ok"] is CASE_STATUSES[CaseStatus.OK]
    assert f"{CaseStatus.GPU_ONLY}" == "gpu_only" and str(SubmissionStatus.BUILD_FAILED) == "build_failed"
    assert NOT_RUN <= set(CaseStatus) and "missing" in NOT_RUN


def test_every_status_the_harness_lists_is_a_case_status(registry):
    assert set(registry.raw["statuses"]) <= set(CaseStatus)


def test_every_member_saved_in_the_store_reads_back_equal_as_its_text(tmp_path, small_rubric, registry,
                                                                      monkeypatch):
    """Through the real store (an SQLite file): a case of every case status but OK (which every passing entry
    has), a submission of every submission status (the table's CHECK refuses a word it does not list), a tool run
    of every sanitizer status."""
    failing = [m for m in CaseStatus if m is not CaseStatus.OK]
    entries = ([Entry(f"case-{m}", None, failure=m) for m in failing]
               + [Entry(f"sub-{m}", status=m) for m in SubmissionStatus]
               + [Entry(f"tool-{m}") for m in SanitizerStatus])
    made = leaderboard_class.result_for

    def with_a_tool_run(entry, rubric, registry_):
        result = made(entry, rubric, registry_)
        if entry.student.startswith("tool-"):
            status = SanitizerStatus(entry.student.removeprefix("tool-"))
            policy = rubric.tasks[0]
            result.sanitizer.append(SanitizerOutcome(policy.id, "memcheck", policy.timed_dtype, policy.shapes[0],
                                                     status, errors=int(status is SanitizerStatus.ERRORS)))
        return result
    monkeypatch.setattr(leaderboard_class, "result_for", with_a_tool_run)
    store = Store(fill(tmp_path / "grades.sqlite", entries, small_rubric, registry))
    try:
        subs, cases, tools = store.submissions(), store.cases_for(), store.sanitizer_runs_for(None)
    finally:
        store.close()
    student = dict(zip(subs["id"], subs["student"]))
    case_statuses = {student[i]: set(group["status"]) for i, group in cases.groupby("submission_id")}
    for m in failing:
        assert m in case_statuses[f"case-{m}"]
    assert dict(zip(subs["student"], subs["status"]))[f"sub-{SubmissionStatus.BUILD_FAILED}"] == "build_failed"
    assert {r.student: r.status for r in subs.itertuples() if r.student.startswith("sub-")} == \
        {f"sub-{m}": m for m in SubmissionStatus}
    assert {student[r.submission_id]: r.status for r in tools.itertuples()} == \
        {f"tool-{m}": m for m in SanitizerStatus}
    every = [*subs["status"], *cases["status"], *tools["status"]]
    assert all(type(s) is str for s in every)  # plain text back, never a pickled member
