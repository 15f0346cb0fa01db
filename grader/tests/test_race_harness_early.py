"""The CPU backend's race checker is a build of its own (the task files again, with --racecheck): grading starts it
beside the cases (Backend.prepare_checkers, before the first case) so that the checks and counters after them
find it built, and waits for it when the submission is done (release_checkers). Workspace's side: one build per
submission whoever asks first, every caller waiting on it up to its own limit, a build that ended without a
harness tried again by the next caller (as each tool did when it built its own). The build itself is stood in
for here; the real one runs in every CPU grading of the slow tier."""
from __future__ import annotations

import threading
import time
from pathlib import Path

from grader.backends.local import Workspace
from grader.grading.cases import grade_submission
from grader.intake.submission import Submission
from grader.tests.fakes import FakeBackend, FakeServer, SimClock


class Builds:
    """Stands in for Workspace._build_race_harness: each call takes `seconds` and gives `results` in turn."""

    def __init__(self, seconds: float, *results):
        self.seconds, self.results, self.threads = seconds, list(results), []

    def __call__(self, sub, timeout):
        self.threads.append(threading.current_thread().name)
        time.sleep(self.seconds)
        return self.results.pop(0)


def workspace(tmp_path: Path, builds: Builds) -> Workspace:
    ws = Workspace(tmp_path)
    ws._build_race_harness = builds
    return ws


def test_a_build_started_beside_the_cases_is_the_one_every_check_waits_for(tmp_path):
    builds = Builds(0.3, (Path("racecheck/harness"), ""))
    ws, sub = workspace(tmp_path, builds), Submission("early", Path("."), files={})
    ws.start_race_harness(sub, 60)
    got = []
    askers = [threading.Thread(target=lambda: got.append(ws.race_harness(sub, 60))) for _ in range(3)]
    for t in askers:
        t.start()
    for t in askers:
        t.join()
    assert got == [(Path("racecheck/harness"), "")] * 3
    assert builds.threads == ["race-harness-" + sub.key]  # built once, in its own thread
    ws.finish_race_harness(sub)
    assert ws._race_builds == {}


def test_a_check_waits_no_longer_than_its_own_limit_and_a_later_one_finds_the_build_done(tmp_path):
    builds = Builds(0.6, (Path("racecheck/harness"), ""))
    ws, sub = workspace(tmp_path, builds), Submission("slow", Path("."), files={})
    ws.start_race_harness(sub, 60)
    assert ws.race_harness(sub, 0.1) == (None, "building the race checker took longer than 0.1 s")
    assert ws.race_harness(sub, 60) == (Path("racecheck/harness"), "")
    assert len(builds.threads) == 1


def test_a_build_that_gave_no_harness_is_tried_again_by_the_next_check(tmp_path):
    builds = Builds(0.0, (None, "the race checker did not build: make: *** Error 1"), (Path("racecheck/harness"), ""))
    ws, sub = workspace(tmp_path, builds), Submission("again", Path("."), files={})
    assert ws.race_harness(sub, 60) == (None, "the race checker did not build: make: *** Error 1")
    assert ws.race_harness(sub, 60) == (Path("racecheck/harness"), "")
    ws.finish_race_harness(sub)  # nothing left running: returns at once


def test_finishing_a_submission_waits_for_a_build_no_check_asked_for(tmp_path):
    builds = Builds(0.3, (Path("racecheck/harness"), ""))
    ws, sub = workspace(tmp_path, builds), Submission("unasked", Path("."), files={})
    ws.start_race_harness(sub, 60)
    start = time.monotonic()
    ws.finish_race_harness(sub)
    assert time.monotonic() - start >= 0.25 and builds.threads  # it ran to its end before the grading did


class Ordered(FakeBackend):
    """The fake backend, writing down when grading asks for its checkers' builds and which cases it runs."""

    def __init__(self):
        super().__init__(sim=SimClock())
        self.events: list[str] = []

    def prepare_checkers(self, sub, build, timeout):
        self.events.append(f"prepare {timeout:g}")

    def release_checkers(self, sub):
        self.events.append("release")


def graded_in_order(monkeypatch, small_rubric, registry, files: dict[str, bytes]) -> tuple[list[str], object]:
    backend = Ordered()
    sub = Submission("order", Path("."), files=files)
    solution = FakeServer(None, sim=backend.sim)
    original = FakeServer.request

    def request(server, message, timeout):  # each case the student's process answers, by task
        if server is not solution and message.get("op") == "check":
            backend.events.append(f"case {message['task']}")
        return original(server, message, timeout)
    monkeypatch.setattr(FakeServer, "request", request)
    result = grade_submission(sub, backend.build(sub, 10), backend, None, solution, small_rubric, registry, seed=7)
    return backend.events, result


def test_the_checkers_build_starts_after_the_first_task_that_reaches_the_tools_and_ends_with_the_grading(
        monkeypatch, small_rubric, registry):
    files = {t.file: b"// fake: ok\n" for t in registry.tasks}
    files[small_rubric.tasks[0].id + ".cu"] = b"// fake: hang\n"  # its task never reaches the tools
    events, _ = graded_in_order(monkeypatch, small_rubric, registry, files)
    limit = min(small_rubric.limits.sanitizer, small_rubric.limits.submission)
    first, second = small_rubric.tasks[0].id, small_rubric.tasks[1].id
    prepared = events.index(f"prepare {limit:g}")
    assert events.count(f"prepare {limit:g}") == 1, events
    assert events[prepared - 1] == f"case {second}" and f"case {first}" in events[:prepared], events
    assert len([e for e in events[prepared + 1:] if e.startswith("case ")]) > 0  # the other tasks' cases after it
    assert events[-1] == "release" and events.count("release") == 1, events


def test_a_submission_of_stubs_builds_no_checkers(monkeypatch, small_rubric, registry):
    events, result = graded_in_order(monkeypatch, small_rubric, registry,
                                     {t.file: b"// fake: not_implemented\n" for t in registry.tasks})
    assert not [e for e in events if e.startswith("prepare")], events
    assert {c.status for c in result.cases} == {"not_implemented"}, {c.status for c in result.cases}
