"""What keeps one submission from bending its own measurement or stalling the class run (issue 21), on the CPU:
a stand-in harness (probes/fake_harness.c) and a stand-in compute-sanitizer (probes/fake_sanitizer.py) that
waits for every process of its target, as the real one does. With them, the one tool run for all of a
submission's tasks (issue 29) in the sandbox, and its fallback to a run per task."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from grader.run.server import Server
from grader.backends.local import LocalBackend
from grader.outcomes.build_result import BuildResult
from grader.grading.caps import cap_stored, human_bytes
from grader.grading.session import await_gpu_memory
from grader.intake.submission import Submission
from grader.run.paired import time_pairs
from grader.outcomes.results import CaseOutcome, SanitizerOutcome, SubmissionResult
from grader.run.runner import HarnessServer, _stopped
from grader.run.sandbox import ResourceLimits, Sandbox, SandboxError, Unsandboxed, find_bwrap, missing_bwrap_message
from grader.tests.conftest import REPO, sandbox_unavailable

pytestmark = pytest.mark.slow  # builds stand-in harnesses with gcc and runs them in bubblewrap

PROBES = REPO / "grader" / "tests" / "probes"
LIMITS = ResourceLimits(cpu_seconds=60, file_size=8 * 2**20, processes=64)


@pytest.fixture(scope="module")
def fake_harness():
    if shutil.which("gcc") is None:
        pytest.fail("gcc is needed to build the stand-in harness", pytrace=False)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> Sandbox:
    bwrap = find_bwrap()
    if bwrap is None:
        pytest.fail(missing_bwrap_message(), pytrace=False)
    box = Sandbox(bwrap, LIMITS)
    try:
        box.check(tmp_path_factory.mktemp("check"))
    except SandboxError as e:
        sandbox_unavailable(f"bubblewrap cannot run here: {e}")
    return box


def harness_in_mode(mode: str, tmp_path: Path) -> Path:
    """The stand-in with its mode built in (the runner starts `HARNESS --serve`), named `harness`: the filter
    that the sandbox preloads under a tool is keyed to the executable, so a wrapper script would not do."""
    source = (PROBES / "fake_harness.c").read_text().replace('argc > 1 ? argv[1] : "plain"', f'"{mode}"')
    (tmp_path / f"{mode}.c").write_text(source)
    out = tmp_path / f"bin-{mode}" / "harness"
    out.parent.mkdir(exist_ok=True)
    subprocess.run(["gcc", "-O1", "-pthread", "-o", str(out), str(tmp_path / f"{mode}.c")], check=True)
    return out


def ticks(scratch: Path) -> int:
    try:
        return int((scratch / "ticks").read_text() or 0)
    except (OSError, ValueError):
        return 0


# ---------------------------------------------------------------------------
# Measurement: the student's processes are stopped while the solution's sample runs.

def test_a_paused_server_does_nothing_until_its_next_request(sandbox, tmp_path):
    server = HarnessServer(harness_in_mode("ticker", tmp_path), sandbox=sandbox, scratch=tmp_path / "scratch")
    try:
        server.request({"op": "check"}, 20)
        deadline = time.monotonic() + 10
        while ticks(tmp_path / "scratch") == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ticks(tmp_path / "scratch") > 0, "the background thread never ran"
        assert server.pause() >= 1
        assert all(_stopped(pid) for pid in server.processes())
        frozen = ticks(tmp_path / "scratch")
        time.sleep(0.5)
        assert ticks(tmp_path / "scratch") == frozen  # not one tick while stopped
        server.request({"op": "time"}, 20)  # the next request resumes it
        time.sleep(0.3)
        assert ticks(tmp_path / "scratch") > frozen
    finally:
        server.close()


def test_paired_timing_stops_the_student_while_the_solution_runs():
    """time_pairs pauses the student after each of its replies; the solution's request finds it paused."""
    seen = []

    class Student(Server):
        paused = False

        def request(self, message, timeout):
            self.paused = False  # a request resumes it
            return {"status": "ok", "samples_ms": [1.0]}

        def pause(self):
            self.paused = True

        def close(self):
            pass

    student = Student()

    class Solution(Server):
        def request(self, message, timeout):
            seen.append(student.paused)
            return {"status": "ok", "samples_ms": [1.0]}

        def close(self):
            pass

    from grader.core.rubric import TimingPolicy
    policy = TimingPolicy(min_pairs=3, max_pairs=5, target_relative_ci=0.5, budget=10, warmup=0,
                          submission_budget=60, review_speedup=1.5)
    result = time_pairs(student, Solution(), policy, 5, 0.1)
    assert len(result.pairs) >= 3 and seen == [True] * len(result.pairs)


# ---------------------------------------------------------------------------
# The detached background process: what stalled a class run for six minutes, and what bounds it now.

def fake_backend(work: Path, isolation, fake_harness: Path, monkeypatch) -> tuple[LocalBackend, BuildResult]:
    tool_dir = work / "tool"
    tool_dir.mkdir(parents=True)
    tool = tool_dir / "compute-sanitizer"
    shutil.copy(PROBES / "fake_sanitizer.py", tool)
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool_dir}:{os.environ['PATH']}")
    backend = LocalBackend.__new__(LocalBackend)
    backend.isolation = isolation
    from grader.backends.local import Workspace
    backend.workspace = Workspace(work / "ws", sandbox=isolation)
    return backend, BuildResult(True, fake_harness, 0.0)


def leftovers(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                    if state not in ("Z", "X"):
                        found.append(int(entry.name))
            except OSError:
                pass
    return found


def test_without_seccomp_a_detached_child_keeps_the_tool_waiting_and_is_cut_off_in_bounded_time(
        fake_harness, tmp_path, monkeypatch):
    """The stall, reproduced: with --unsafe-no-sandbox nothing stops the fork, the stand-in tool waits for the
    grandchild (as compute-sanitizer did for over six minutes: 180 s per tool); the grader waits what is left
    of the sanitizer's limit, then kills, and says why."""
    harness = harness_in_mode("detach", tmp_path)
    backend, build = fake_backend(tmp_path / "work", Unsandboxed(LIMITS), harness, monkeypatch)
    sub = Submission("someone", tmp_path)
    start = time.monotonic()
    try:
        outcome = backend.sanitize(sub, build, None, "memcheck", "dot", "float32", "1025", 1, timeout=6,
                                   shapes=["1", "2", "1000", "1025"])
        elapsed = time.monotonic() - start
    finally:
        for pid in leftovers(str(harness)):  # unsafe mode leaves the orphan: ours to clean up here
            os.kill(pid, signal.SIGKILL)
    assert elapsed < 15
    assert outcome.status == "failed" and "a process your code left running kept it waiting" in outcome.message


def test_in_the_sandbox_the_detached_child_is_never_born_and_the_tool_ends_at_once(fake_harness, sandbox, tmp_path,
                                                                                   monkeypatch):
    harness = harness_in_mode("detach", tmp_path)
    backend, build = fake_backend(tmp_path / "work", sandbox, harness, monkeypatch)
    start = time.monotonic()
    outcome = backend.sanitize(Submission("someone", tmp_path), build, None, "racecheck", "dot", "float32", "1025", 1,
                               timeout=60, shapes=["1", "2", "1000", "1025"])
    assert time.monotonic() - start < 20
    assert outcome.status == "clean", outcome
    assert leftovers(str(harness)) == []


def _counting_servers(monkeypatch) -> tuple[list, list]:
    """The harness processes the backend's tool runs start (each one's tool command and the tasks it was asked
    about) and every request they are sent, in order."""
    from grader.backends import local
    started, sent = [], []

    class Counting(HarnessServer):
        def __init__(self, *args, **kwargs):
            self.run = {"tool": kwargs.get("tool"), "tasks": set()}
            started.append(self.run)
            super().__init__(*args, **kwargs)

        def request(self, message, timeout):
            sent.append(message)
            self.run["tasks"].add(message["task"])
            return super().request(message, timeout)

    monkeypatch.setattr(local, "HarnessServer", Counting)
    return started, sent


def _tool_tasks():
    from grader.backends.base import ToolTask
    return [ToolTask("add", "float32", "37x211", ("1x1", "1x1000", "37x211", "1024x1024")),
            ToolTask("dot", "float32", "1025", ("1", "2", "1000", "1025", "16777216")),
            ToolTask("fill", "int32", "37x211", ("1x1", "37x211"))]


def test_one_tool_run_in_the_sandbox_sends_every_tasks_requests_in_turn(fake_harness, sandbox, tmp_path,
                                                                        monkeypatch):
    """One process under the tool for all the tasks, in the sandbox (the harness under the run profile's filter,
    which the run checks at its first request), each task's requests as its own run would send them."""
    harness = harness_in_mode("plain", tmp_path)
    backend, build = fake_backend(tmp_path / "work", sandbox, harness, monkeypatch)
    started, sent = _counting_servers(monkeypatch)
    outcomes = LocalBackend.sanitize_tasks(backend, Submission("someone", tmp_path), build, None, "memcheck",
                                           _tool_tasks(), 1, 30, lambda t: None)
    assert [(o.task, o.status) for o in outcomes] == [("add", "clean"), ("dot", "clean"), ("fill", "clean")]
    assert len(started) == 1 and started[0]["tool"] is not None  # one process, under the tool
    order = [m["task"] for m in sent]
    assert order == sorted(order, key=["add", "dot", "fill"].index)  # each task's requests together, in turn
    for task in _tool_tasks():
        shapes = [m["shape"] for m in sent if m["task"] == task.task]
        assert shapes == list(task.shapes[:len(shapes)]) and task.shape in shapes  # the start of a graded run
        assert all(m["fixed_placement"] and m["dtype"] == task.dtype for m in sent if m["task"] == task.task)


def test_a_finding_in_the_run_for_all_runs_each_task_alone(fake_harness, sandbox, tmp_path, monkeypatch):
    """A stand-in tool that reports 2 errors in every run: the run for all, then one run per task, each task's
    verdict its own run's."""
    harness = harness_in_mode("plain", tmp_path)
    backend, build = fake_backend(tmp_path / "work", sandbox, harness, monkeypatch)
    tool = tmp_path / "work" / "tool" / "compute-sanitizer"
    tool.write_text(tool.read_text().replace("ERROR SUMMARY: 0 errors", "ERROR SUMMARY: 2 errors"))
    started, sent = _counting_servers(monkeypatch)
    outcomes = LocalBackend.sanitize_tasks(backend, Submission("someone", tmp_path), build, None, "racecheck",
                                           _tool_tasks(), 1, 30, lambda t: None)
    assert [(o.task, o.status, o.errors) for o in outcomes] == [("add", "errors", 2), ("dot", "errors", 2),
                                                               ("fill", "errors", 2)]
    assert [r["tasks"] for r in started] == [{"add", "dot", "fill"}, {"add"}, {"dot"}, {"fill"}]


def test_a_task_slow_under_the_tool_costs_its_own_limit_in_the_run_for_all(fake_harness, sandbox, tmp_path,
                                                                             monkeypatch):
    """Each task has its own limit inside the run for all: dot's 4 requests of 2 s each overrun its 3 s there (the
    three tasks' 9 s together would have let it finish), so each task then runs alone and dot's own run times
    out; the others are clean."""
    harness = harness_in_mode("slow-dot", tmp_path)
    backend, build = fake_backend(tmp_path / "work", sandbox, harness, monkeypatch)
    started, _ = _counting_servers(monkeypatch)
    begun = time.monotonic()
    outcomes = LocalBackend.sanitize_tasks(backend, Submission("someone", tmp_path), build, None, "memcheck",
                                           _tool_tasks(), 1, 3, lambda t: None)
    assert [(o.task, o.status) for o in outcomes] == [("add", "clean"), ("dot", "timeout"), ("fill", "clean")]
    assert [r["tasks"] for r in started] == [{"add", "dot"}, {"add"}, {"dot"}, {"fill"}]  # stopped in dot's part
    assert time.monotonic() - begun < 20


def test_a_harness_whose_child_holds_its_pipes_is_closed_in_bounded_time(fake_harness, tmp_path, monkeypatch):
    """No sandbox, so the fork succeeds and the grandchild holds stdout (the reply pipe) and stderr: closing
    the server must not wait for it."""
    harness = harness_in_mode("detach", tmp_path)
    server = HarnessServer(harness, sandbox=Unsandboxed(LIMITS), scratch=tmp_path / "s")
    start = time.monotonic()
    try:
        assert server.request({"op": "check"}, 20)["status"] == "ok"
        server.close()
        assert time.monotonic() - start < 15
        assert "fork returned" in server.stderr  # what it printed before is kept, though the pipe is still open
    finally:
        for pid in leftovers(str(harness)):
            os.kill(pid, signal.SIGKILL)


# ---------------------------------------------------------------------------
# GPU memory after a submission, and what is stored of one.

class MemoryServer(Server):
    def __init__(self, frees):
        self.frees = list(frees)

    def request(self, message, timeout):
        assert message == {"op": "memory"}
        free = self.frees.pop(0) if len(self.frees) > 1 else self.frees[0]
        return {"op": "memory", "free_bytes": free, "total_bytes": 80 * 2**30}

    def close(self):
        pass


class Limits:
    gpu_memory_wait = 10.0
    gpu_memory_slack_mib = 512


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_the_grader_waits_for_the_gpus_memory_to_come_back():
    clock = FakeClock()
    server = MemoryServer([10 * 2**30, 40 * 2**30, 79 * 2**30])
    assert await_gpu_memory(server, 79 * 2**30, Limits, "alice", clock, clock.sleep) == ""
    assert clock.now == 0.5  # two more looks, a quarter second apart


def test_memory_that_never_comes_back_names_the_submission_after_the_limit():
    clock = FakeClock()
    note = await_gpu_memory(MemoryServer([2 * 2**30]), 79 * 2**30, Limits, "mallory", clock, clock.sleep)
    assert 10 <= clock.now <= 10.5
    assert note.startswith("after this submission's processes were ended, 77.0 GiB of the GPU's memory")
    assert note.endswith(": mallory") and "stayed taken for 10 s" in note


def test_a_solution_that_cannot_say_its_free_memory_is_not_waited_for():
    class Old(Server):
        def request(self, message, timeout):
            return {"op": "error", "error": "unknown op 'memory'"}

        def close(self):
            pass
    assert await_gpu_memory(Old(), None, Limits, "bob") == ""


def test_every_stored_message_is_capped_and_the_cut_says_how_much():
    flood = "x" * (4 * 2**20)
    cases = [CaseOutcome("add", "float32", f"{i}x{i}", "correctness", "error", flood, hint=flood, output=flood,
                         record={"message": flood, "nested": [flood]}) for i in range(60)]
    result = SubmissionResult(Submission("flood", Path(".")), "graded", cases=cases,
                              sanitizer=[SanitizerOutcome("add", "memcheck", "float32", "1x1", "failed",
                                                          message=flood)])
    cap_stored(result, message_bytes=16 * 1024, submission_bytes=1024 * 1024)
    import json
    total = sum(len(c.message) + len(c.hint) + len(c.output) + len(json.dumps(c.record)) for c in cases)
    assert total < 1024 * 1024 + 64 * 1024
    assert cases[0].message.endswith(f"… [cut: {human_bytes(4 * 2**20 - len(cases[0].message.split('…')[0]))} "
                                     "more]")
    assert "[cut: 4.0 MiB more]" in result.sanitizer[0].message or "[cut: 3.9" in result.sanitizer[0].message


def test_short_messages_are_stored_whole():
    case = CaseOutcome("add", "float32", "1x1", "correctness", "wrong", "3 of 561 elements are wrong", hint="bounds")
    result = SubmissionResult(Submission("ok", Path(".")), "graded", cases=[case])
    cap_stored(result, 16 * 1024, 1024 * 1024)
    assert (case.message, case.hint) == ("3 of 561 elements are wrong", "bounds")
