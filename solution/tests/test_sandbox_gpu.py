"""On a GPU: student code graded inside the sandbox. The harness's reply channel is hidden and
nonce-checked; compute-sanitizer names a planted race and a planted out-of-bounds write in the
feedback (graded in the graded corpus's real run: grader/tests/gpu_corpus.py). The hostile corpus itself
(grader/tests/hostile/) is checked by grader/tests/test_hostile_corpus.py."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from conftest import ROOT
from grader.core.registry import Registry
from grader.core.rubric import load_rubric
from grader.tests.gpu_corpus import RACY, REAL_RUBRIC, ROUNDED_DOWN, WILD_WRITE

pytestmark = pytest.mark.gpu


def test_the_serve_channels_are_hidden_close_on_exec_and_nonce_checked(solution_build):
    from grader.run.runner import HarnessServer
    server = HarnessServer(solution_build.harness, "0")
    try:
        reply = server.request({"op": "hello"}, 120)
        assert len(reply["nonce"]) == 32
        fds = Path(f"/proc/{server.proc.pid}/fd")
        link = {int(fd.name): os.readlink(fd) for fd in fds.iterdir()}
        assert link[0] == "/dev/null"  # code under test reads nothing of the grader's on stdin
        assert link[1] == link[2]  # and prints onto stderr
        ours = {os.readlink(f"/proc/{os.getpid()}/fd/{server.proc.stdin.fileno()}"),
                os.readlink(f"/proc/{os.getpid()}/fd/{server.proc.stdout.fileno()}")}
        channels = [fd for fd, target in link.items() if target in ours]
        assert len(channels) == 2 and min(channels) >= 64, link
        for fd in channels:
            flags = int(Path(f"/proc/{server.proc.pid}/fdinfo/{fd}").read_text().split("flags:")[1].split()[0], 8)
            assert flags & os.O_CLOEXEC, (fd, oct(flags))
    finally:
        server.close()
    assert not server.violation


def sanitizer_runs(corpus, student: str, task: str) -> dict[str, tuple[str, int, str]]:
    runs = corpus.sanitizer_runs(student, task=task)
    return {tool: (status, errors, report) for tool, status, errors, report
            in zip(runs["tool"], runs["status"], runs["errors"], runs["report"])}


def test_the_grading_runs_record_that_code_ran_in_bubblewrap(graded_corpus):
    for run in (graded_corpus.fast, graded_corpus.real):
        with run.opened() as store:
            sandboxes = store.runs()["sandbox"].tolist()
        assert sandboxes and all("bubblewrap" in s for s in sandboxes), (run.name, sandboxes)
        assert "bubblewrap" in (run.results / "grades.csv").read_text()


def test_racecheck_names_the_missing_barrier_in_the_feedback(graded_corpus):
    runs = sanitizer_runs(graded_corpus, RACY, "matmul_tiled")
    status, errors, report = runs["racecheck"]
    assert status == "errors" and errors > 0, runs
    # The sandbox compiles the student's files by bare name: the report says "in matmul_tiled.cu:20".
    assert "Race reported" in report and re.search(r"\bmatmul_tiled\.cu:\d+", report), report
    feedback = (graded_corpus.results(RACY) / "feedback" / f"{RACY}.md").read_text()
    assert "compute-sanitizer racecheck (races on shared memory) found" in feedback
    assert "no __syncthreads() between them" in feedback


def test_a_launch_the_gpu_refused_is_charged_by_its_case_not_again_by_memcheck(graded_corpus):
    """A transpose whose grid is rounded down: its shapes under a tile are refused at launch (a zero grid
    dimension) and fail; memcheck reports those launches too, at the shape it happened at, a failed one, so it
    charges nothing more: the task keeps the correctness it earned (2048x2048, both types)."""
    statuses = dict(zip(graded_corpus.cases(ROUNDED_DOWN, task="transpose", kind="correctness")["shape"] + " "
                        + graded_corpus.cases(ROUNDED_DOWN, task="transpose", kind="correctness")["dtype"],
                        graded_corpus.statuses(ROUNDED_DOWN, "transpose")))
    passed = [case for case, status in statuses.items() if status == "ok"]
    assert passed and len(passed) < len(statuses), statuses
    runs = graded_corpus.sanitizer_runs(ROUNDED_DOWN, task="transpose")
    memcheck = runs[runs.tool == "memcheck"].iloc[0]
    assert memcheck.status == "errors", runs.to_dict("records")
    at = f"{memcheck['shape']} {memcheck['dtype']}"  # (a row's .shape would be the Series' own)
    assert statuses[at] != "ok", (at, statuses)  # where it happened
    score = graded_corpus.scores(ROUNDED_DOWN).loc["transpose"]
    rubric = load_rubric(REAL_RUBRIC, Registry.from_file())
    earned = rubric.task("transpose").correctness_points * len(passed) / len(statuses)
    assert score.correctness == pytest.approx(earned), score.to_dict()
    assert "are where a case already failed: no further penalty" in score.note, score.note


def test_memcheck_names_the_bad_write_in_the_feedback(graded_corpus):
    runs = sanitizer_runs(graded_corpus, WILD_WRITE, "add")
    status, errors, report = runs["memcheck"]
    assert status == "errors" and errors > 0, runs
    assert "Invalid __global__ write" in report and re.search(r"\badd\.cu:\d+", report), report
    feedback = (graded_corpus.results(WILD_WRITE) / "feedback" / f"{WILD_WRITE}.md").read_text()
    assert "compute-sanitizer memcheck (out-of-bounds and misaligned memory accesses) found" in feedback
    assert "wrote to global memory outside every array it was given" in feedback
