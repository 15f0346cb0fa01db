"""On a GPU: student code graded inside the sandbox. The harness's reply channel is hidden and
nonce-checked; compute-sanitizer names a planted race and a planted out-of-bounds write in the
feedback. The hostile corpus itself (grader/tests/hostile/) is graded in one batch by
grader/tests/test_hostile_corpus.py."""
from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.gpu
PLANTED = ROOT / "solution" / "tests" / "planted"


def test_the_serve_channels_are_hidden_close_on_exec_and_nonce_checked(solution_build):
    from grader.runner import HarnessServer
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


@pytest.fixture(scope="module")
def planted_class(class_run):
    """A race and an out-of-bounds write, each handed in as a student's only file ("racy", "wild-write"),
    graded in the sandbox within the session's class run (class_run.py)."""
    return class_run.results


def sanitizer_runs(results: Path, student: str, task: str) -> dict[str, tuple[str, int, str]]:
    db = sqlite3.connect(results / "grades.sqlite")
    return {tool: (status, errors, report) for tool, status, errors, report in db.execute(
        "SELECT r.tool, r.status, r.errors, r.report FROM sanitizer_runs r JOIN submissions s "
        "ON s.id = r.submission_id WHERE s.student = ? AND r.task = ?", (student, task))}


def test_the_grading_run_records_that_code_ran_in_bubblewrap(planted_class):
    db = sqlite3.connect(planted_class / "grades.sqlite")
    assert "bubblewrap" in db.execute("SELECT sandbox FROM grading_runs").fetchone()[0]
    assert "bubblewrap" in (planted_class / "grades.csv").read_text()


def test_racecheck_names_the_missing_barrier_in_the_feedback(planted_class):
    runs = sanitizer_runs(planted_class, "racy", "matmul_tiled")
    status, errors, report = runs["racecheck"]
    assert status == "errors" and errors > 0, runs
    # The sandbox compiles the student's files by bare name: the report says "in matmul_tiled.cu:20".
    assert "Race reported" in report and re.search(r"\bmatmul_tiled\.cu:\d+", report), report
    feedback = (planted_class / "feedback" / "racy.md").read_text()
    assert "compute-sanitizer racecheck (races on shared memory) found" in feedback
    assert "no __syncthreads() between them" in feedback


def test_memcheck_names_the_bad_write_in_the_feedback(planted_class):
    runs = sanitizer_runs(planted_class, "wild-write", "add")
    status, errors, report = runs["memcheck"]
    assert status == "errors" and errors > 0, runs
    assert "Invalid __global__ write" in report and re.search(r"\badd\.cu:\d+", report), report
    feedback = (planted_class / "feedback" / "wild-write.md").read_text()
    assert "compute-sanitizer memcheck (out-of-bounds and misaligned memory accesses) found" in feedback
    assert "wrote to global memory outside every array it was given" in feedback
