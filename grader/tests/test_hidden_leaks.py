"""Hidden cases do not leak through grading itself (issue 44): before the rubric's date a student learns nothing of
a hidden case, not its shape, not its verdict, whatever their task file does.

Two ways it leaked, each planted here with the fake backend (grader/tests/fakes.py) through the real grading flow
(grade_submission), the real store and every reader a student gets before the date (the feedback page, the
grading service's result, Gradescope's results.json):

- one harness process served a task's cases in turn, hidden and visible alike, so a task file that remembers the
  shapes it was asked printed a hidden one at a later visible case before crashing, and the feedback quotes what
  a crashed case printed (`// fake: remembers`);
- what a student sees was decided by hidden verdicts: the visible timed cases ran only when every correctness
  case passed, hidden ones included; a hidden case that hung skipped the task's tools ("a case of this task did
  not finish"); the CPU counters ran only when every case passed (`// fake-at: SHAPE wrong|hang`).

The honest control of each: the same files without the planted behaviour, whose every view is compared.
"""
from __future__ import annotations

import difflib
import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest

from grader.core import visibility
from grader.core.rubric import load_rubric
from grader.core.status import ProfileStatus
from grader.exports import gradescope
from grader.grading.caps import cap_stored
from grader.grading.cases import grade_submission
from grader.intake.submission import Submission
from grader.outcomes.isolation import Isolation
from grader.outcomes.results import CaseOutcome, ProfileOutcome, SanitizerOutcome, SubmissionResult
from grader.reports.report import feedback_context, render_feedback, run_of
from grader.reports.student_view import student_result
from grader.scoring.chain import chain_for_result
from grader.shared import sanitizer as tool_runs
from grader.store.store import Store
from grader.tests.conftest import small_rubric_text
from grader.tests.fakes import FakeBackend, FakeServer, SimClock
from grader.tests.leaderboard_class import DEVICE, LIMITS

UNTIL = "2026-12-11T23:59:00+00:00"
BEFORE = datetime(2026, 12, 1, tzinfo=timezone.utc)
AFTER = datetime(2026, 12, 12, tzinfo=timezone.utc)
HIDDEN = "1031x977"  # transpose's hidden shape: listed second, so a visible case follows it in the rubric's order
TRANSPOSE = ["1x1", HIDDEN, "37x211", "211x37"]
GRADED_AT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00")  # when it was stored: the clock's


def hiding_rubric(tmp_path, rubric, registry, hidden: list[str]):
    text = small_rubric_text(rubric, shapes={"transpose": TRANSPOSE})
    text = re.sub(r"(?m)^\[tasks.transpose\]\n", f'[tasks.transpose]\nhidden = {json.dumps(hidden)}\n', text)
    path = tmp_path / "hiding.toml"
    path.write_text(text + f'\n[hidden]\nuntil = "{UNTIL}"\n')
    return load_rubric(path, registry)


@pytest.fixture
def hiding(tmp_path, rubric, registry):
    """The small rubric with transpose's 1031x977 hidden until UNTIL (its tools and timed case visible)."""
    return hiding_rubric(tmp_path, rubric, registry, [HIDDEN])


@pytest.fixture(params=["a check", "a check and the timed case"])
def hidings(request, tmp_path, rubric, registry):
    """hiding, and the same with transpose's timed shape hidden too (stored only where it runs)."""
    return hiding_rubric(tmp_path, rubric, registry, [HIDDEN] + (["8192x8192"] if "timed" in request.param else []))


class Watched(FakeBackend):
    """The fake backend, recording the shapes each of the student's processes and each tool's run was sent, with
    counters (as the CPU backend's) on every task's profile case."""

    def __init__(self):
        super().__init__(sim=SimClock())
        self.processes: list[list[str]] = []  # per student process: the (task, shape) of each check, in order
        self.tool_runs: list[tuple[str, list[str]]] = []  # (task, the shapes its run was sent)
        self.counted: list[str] = []

    def student_server(self, build, gpu):
        seen = []
        self.processes.append(seen)

        class Server(FakeServer):
            def request(self, message, timeout):
                if message.get("op") == "check":
                    seen.append((message["task"], message["shape"]))
                return super().request(message, timeout)
        return Server(self._files[build.harness], self.delay, self.sim, self.solution_ms, name=str(build.harness))

    def sanitize(self, sub, build, gpu, tool, task, dtype, shape, seed, timeout, shapes=None):
        chosen = tool_runs.sanitized_shapes(list(shapes or [shape]), shape)
        self.tool_runs.append((task, chosen))
        outcome = super().sanitize(sub, build, gpu, tool, task, dtype, shape, seed, timeout, shapes)
        outcome.shape = chosen[-1]  # as the real backends store it: the last shape the run was sent
        return outcome

    def profile(self, sub, build, task, dtype, shape, seed, timeout):
        self.counted.append(task)
        return ProfileOutcome(task, dtype, shape, ProfileStatus.COUNTED, numbers={"launches": 1}, seconds=0.1,
                              findings=[f"{task}: 2.5 sectors per request where 1 would do"])


def graded(tmp_path: Path, rubric, registry, transpose: str, name: str,
           progress: list | None = None) -> tuple[Path, Watched]:
    """A submission whose transpose.cu is `transpose` (the other tasks correct), graded through grade_submission
    into a store of its own, as student "s"; the results folder and the backend that graded it."""
    backend = Watched()
    files = {t.file: b"// fake: ok\n" for t in registry.tasks}
    files["transpose.cu"] = transpose.encode()
    sub = Submission("s", Path("."), files=files)
    told = (lambda done, total: progress.append((done, total, backend.sim()))) if progress is not None else None
    result = grade_submission(sub, backend.build(sub, 10), backend, None, FakeServer(None, sim=backend.sim), rubric,
                              registry, seed=5, progress=told)
    folder = tmp_path / name
    folder.mkdir()
    store = Store(folder / "grades.sqlite")
    try:
        run = store.start_run(5, "fake-1", rubric.sha256, registry.raw, [DEVICE], LIMITS,
                              Isolation("none", note="test"), "test", timed=True, untimed_reason="")
        store.save(run, result, "fake-1", rubric.sha256, rubric.max_points, chain_for_result(rubric, result, True))
        store.finish_run(run)
    finally:
        store.close()
    return folder, backend


def what_s_reads(folder: Path, rubric, now: datetime) -> dict[str, str]:
    """Everything student "s" is handed at `now`: the feedback page (Markdown and HTML), the grading service's
    result, and what Gradescope shows of results.json (its tests visible now; the top-level score is not shown
    while a test is hidden, Gradescope's specification says, and neither is a hidden test's)."""
    store = Store(folder / "grades.sqlite")
    try:
        sub = next(store.latest_submissions().itertuples())
        context, _ = feedback_context(store, rubric, sub, run_of(store, sub.run_id), visibility.student(now))
        texts = {kind: render_feedback(context, kind) for kind in ("md", "html")}
        texts["service"] = json.dumps(student_result(store, rubric, int(sub.id), now), indent=1, sort_keys=True)
        exported = json.loads(gradescope.export(store, rubric, "s", now).text)
    finally:
        store.close()
    hidden_tests = any(t["visibility"] != "visible" for t in exported["tests"])
    shown = {"output": exported["output"], "score": None if hidden_tests else exported["score"],
             "tests": [t if t["visibility"] == "visible" else {k: v for k, v in t.items() if k != "score"}
                       for t in exported["tests"]]}
    texts["gradescope"] = json.dumps(shown, indent=1, sort_keys=True)
    return {kind: GRADED_AT.sub("(graded at)", text) for kind, text in texts.items()}


def test_a_task_file_that_remembers_shapes_never_runs_a_visible_case_after_a_hidden_one(tmp_path, hiding,
                                                                                           registry):
    """It crashes at the visible 211x37, printing every shape its process was asked before: in one process for
    all, that named the hidden 1031x977, and the feedback quotes what a crashed case printed. Now no process that
    serves a visible case was ever sent a hidden shape, nor is any tool's run whose findings are shown, and
    nothing a student reads before the date names the hidden shape; the crash and what it printed still show."""
    folder, backend = graded(tmp_path, hiding, registry, "// fake: ok\n// fake-at: 211x37 tells\n", "tells")
    for sent in backend.processes:
        hidden = {(t, s) for t, s in sent if s in hiding.task(t).hidden}
        assert not hidden or hidden == set(sent), sent  # a process sent a hidden shape is sent nothing else
    assert any(("transpose", HIDDEN) in sent for sent in backend.processes)  # (the hidden case did run)
    for task, shapes in backend.tool_runs:
        assert not set(shapes) & set(hiding.task(task).hidden), (task, shapes)
    texts = what_s_reads(folder, hiding, BEFORE)
    for kind, text in texts.items():
        assert HIDDEN not in text, (kind, text[text.find(HIDDEN) - 300:text.find(HIDDEN) + 100])
    assert re.search(r"shapes this process was asked before: [^\n]*1x1, 37x211\n", texts["md"])  # (all visible)


@pytest.mark.parametrize("planted", ["wrong", "hang"])
def test_a_hidden_case_that_fails_changes_nothing_a_student_reads_before_the_date(tmp_path, hidings, registry,
                                                                                   planted):
    """transpose wrong (or never finishing) at its hidden shape only, beside its honest control (the same file
    without that line): before the date the feedback page, the service's result and what Gradescope shows are
    the same, byte for byte (its visible timed case is timed, its tools run, its counters are shown, for both;
    with the timed shape hidden too, the count of hidden cases is the same: a hidden timed case not run is stored
    as skipped); after it, they differ (the test can see a difference where there is one)."""
    honest, _ = graded(tmp_path, hidings, registry, "// fake: ok\n", "honest")
    hostile, watched = graded(tmp_path, hidings, registry, f"// fake: ok\n// fake-at: {HIDDEN} {planted}\n", planted)
    before = what_s_reads(honest, hidings, BEFORE), what_s_reads(hostile, hidings, BEFORE)
    for kind in before[0]:
        assert before[0][kind] == before[1][kind], "\n".join(difflib.unified_diff(
            before[0][kind].splitlines(), before[1][kind].splitlines(), "honest", planted, lineterm="", n=0))
    assert "transpose" in watched.counted  # counted, as the honest one
    timed_row = "| transpose | float32 8192x8192 |" in before[1]["md"]  # its visible timed case, timed as the honest
    assert timed_row == ("8192x8192" not in hidings.task("transpose").hidden)
    after = what_s_reads(honest, hidings, AFTER), what_s_reads(hostile, hidings, AFTER)
    assert all(after[0][kind] != after[1][kind] for kind in after[0]), planted


def test_the_services_progress_does_not_move_while_hidden_cases_run(tmp_path, hiding, registry):
    """The grading service shows a job's progress ("12 of 40 cases") while it runs: every report before the hidden
    cases' stage ends is the same, at the same moment (simulated time), whether a hidden case passes, never
    finishes or crashes; that stage reports once, when it ends (when is what remains: docs/threat-model.md)."""
    seen = {}
    for planted in ("", f"// fake-at: {HIDDEN} hang\n", f"// fake-at: {HIDDEN} tells\n"):
        seen[planted] = []
        graded(tmp_path, hiding, registry, "// fake: ok\n" + planted, f"progress{len(seen)}", seen[planted])
    assert len({tuple(p[:-1]) for p in seen.values()}) == 1, seen
    assert len({tuple(p[-1][:2]) for p in seen.values()}) == 1, seen
    reported = seen[""]
    planned = reported[-1][1]
    assert reported[-1][:2] == (planned, planned) and reported[-2][0] == planned - 1  # (one hidden case, at the end)


def test_the_counters_wait_for_the_visible_cases_only(tmp_path, hiding, registry):
    """The CPU counters (feedback only, shown whatever the date) run when the visible cases the backend ran
    passed: a hidden case's verdict never decides whether a student sees them."""
    _, wrong_hidden = graded(tmp_path, hiding, registry, f"// fake: ok\n// fake-at: {HIDDEN} wrong\n", "hidden")
    _, wrong_visible = graded(tmp_path, hiding, registry, "// fake: ok\n// fake-at: 37x211 wrong\n", "visible")
    assert "transpose" in wrong_hidden.counted
    assert "transpose" not in wrong_visible.counted


def test_a_task_whose_every_shape_is_hidden_still_gets_its_tools_at_its_visible_small_case(tmp_path, rubric,
                                                                                          registry):
    """The tools' run whose findings are shown is judged on the visible cases; a task with none (every graded
    shape hidden, its small case not) is judged on its build, so hiding its shapes does not spare it the tools."""
    text = small_rubric_text(rubric, shapes={"transpose": ["1x1", HIDDEN]})
    text = re.sub(r"(?m)^\[tasks.transpose\]\n", f'[tasks.transpose]\nhidden = ["1x1", "{HIDDEN}"]\n', text)
    path = tmp_path / "all-hidden.toml"
    path.write_text(text + f'\n[hidden]\nuntil = "{UNTIL}"\n')
    every = load_rubric(path, registry)
    assert every.sanitizer.shape("transpose") not in every.task("transpose").hidden
    _, backend = graded(tmp_path, every, registry, "// fake: ok\n", "every")
    assert ("transpose", [every.sanitizer.shape("transpose")]) in backend.tool_runs, backend.tool_runs
    _, unbuilt = graded(tmp_path, every, registry, "#error no\n", "unbuilt")
    assert "transpose" not in [task for task, _ in unbuilt.tool_runs]


def test_cases_are_stored_in_the_rubrics_order_wherever_the_hidden_ones_ran(tmp_path, hiding, registry):
    folder, _ = graded(tmp_path, hiding, registry, "// fake: ok\n", "order")
    store = Store(folder / "grades.sqlite")
    try:
        cases = store.cases_for()
    finally:
        store.close()
    stored = list(zip(cases["task"], cases["kind"], cases["dtype"], cases["shape"]))
    expected = [(p.id, "correctness", d, s) for p in hiding.tasks for d in p.dtypes for s in p.shapes]
    expected += [(p.id, "timed", p.timed_dtype, s) for p in hiding.tasks for s in p.timed]
    assert stored == expected


def test_how_much_a_hidden_case_printed_never_decides_where_a_visible_message_is_cut():
    """All of a submission's stored texts are cut together near [limits] stored_kib: the visible part and the
    hidden part are cut apart, each within its share, so hidden cases that print a lot (or nothing) leave every
    visible message as it is."""
    def result(hidden_prints: int) -> SubmissionResult:
        r = SubmissionResult(Submission("s", Path("."), files={}), "graded", None)
        r.cases = [CaseOutcome("transpose", "float32", s, "correctness", "wrong", "x" * 9000, output="y" * 9000)
                   for s in ("1x1", "37x211", "211x37")]
        r.cases += [CaseOutcome("transpose", "float32", HIDDEN, "correctness", "wrong", "z" * hidden_prints)]
        r.sanitizer = [SanitizerOutcome("transpose", "memcheck", "float32", "37x211", "errors", 1, "r" * 9000)]
        return r
    hidden = lambda task, shape: shape == HIDDEN  # noqa: E731
    cuts = []
    for prints in (0, 16_000):
        r = result(prints)
        cap_stored(r, 16 * 1024, 40_000, hidden=hidden, hidden_share=0.25)
        cuts.append([(c.message, c.output) for c in r.cases if c.shape != HIDDEN] + [r.sanitizer[0].report])
        assert sum(len(c.message) + len(c.output) for c in r.cases) + len(r.sanitizer[0].report) < 45_000
    assert cuts[0] == cuts[1]
    assert len(cuts[0][0][0]) < 9000  # (cut at all: the visible part is over its share)
