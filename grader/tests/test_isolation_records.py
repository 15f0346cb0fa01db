"""What the grader records about isolation, and how it treats a forged reply: every stored result of an
unsandboxed run says so; the command line refuses to start without bubblewrap unless told; a process
whose reply channel carried lines the harness did not write has none of its replies trusted."""
from __future__ import annotations

import subprocess
import sys

import pandas as pd

from grader.backends.local import LocalBackend
from grader.grading.grade import GradeOptions, grade
from grader.reports.report import summary_table
from grader.reports.folder import write_reports
from grader.outcomes.isolation import Isolation
from grader.run.sandbox import Unsandboxed
from grader.store.store import Store
from grader.tests.conftest import REPO, cases_of, opened, write_submission
from grader.tests.fakes import FakeBackend
from grader.tests.old_stores import damaged_isolation, isolation_in_words

# The words a grader before the isolation record stored for a bubblewrap run.
BUBBLEWRAP_WORDS = ("bubblewrap 0.8.0 (/usr/bin/bwrap): no network, read-only system, writable scratch only, own "
                    "pid/ipc/uts namespaces, uid 65534 in a user namespace, GPU device nodes passed through")
BUBBLEWRAP = Isolation("bubblewrap", version="0.8.0", binary="/usr/bin/bwrap", user="user-namespace", uid=65534,
                       limits={"cpu_seconds": 60, "file_size_mib": 256, "processes": 64, "output_kib": 1024})


def graded_class(tmp_path, registry, rubric, backend):
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    subs = tmp_path / "submissions"
    write_submission(subs, "alice", files)
    write_submission(subs, "mallory", {**files, "add.cu": "// fake: ok\n// forges replies\n"})
    results = tmp_path / "results"
    grade(GradeOptions(subs, results, [None], jobs=1, progress=False, seed=3), rubric, registry, backend)
    write_reports(results, rubric)
    return results


class Unsafe(FakeBackend):
    sandbox = Unsandboxed().description


class Sandboxed(FakeBackend):
    sandbox = BUBBLEWRAP


def test_an_unsandboxed_run_says_so_in_the_store_the_csv_the_feedback_and_the_summary(tmp_path, registry,
                                                                                       small_rubric):
    results = graded_class(tmp_path, registry, small_rubric, Unsafe())
    with opened(results) as store:
        [record] = store.isolations().values()
        assert record.kind == "none" and record.unsafe and not record.isolated
        assert store.runs()["sandbox"].iloc[0].startswith("NONE (--unsafe-no-sandbox)")  # the words, for people
    grades = pd.read_csv(results / "grades.csv")
    assert set(grades["sandbox"]) == {"NONE (--unsafe-no-sandbox)"}
    for student in ("alice", "mallory"):
        assert "Graded without a sandbox** (NONE (--unsafe-no-sandbox))" in \
            (results / "feedback" / f"{student}.md").read_text()
        assert "Graded without a sandbox" in (results / "feedback" / f"{student}.html").read_text()
    store = Store(results / "grades.sqlite")
    assert summary_table(store, small_rubric).iloc[0]["sandbox"] == "NONE (--unsafe-no-sandbox)"
    store.close()


def test_a_sandboxed_run_is_labelled_bubblewrap_and_warns_nobody(tmp_path, registry, small_rubric):
    results = graded_class(tmp_path, registry, small_rubric, Sandboxed())
    assert set(pd.read_csv(results / "grades.csv")["sandbox"]) == {"bubblewrap 0.8.0"}
    assert "without a sandbox" not in (results / "feedback" / "alice.md").read_text()


def test_the_isolation_record_is_stored_as_its_fields(tmp_path, registry, small_rubric):
    results = graded_class(tmp_path, registry, small_rubric, Sandboxed())
    with opened(results) as store:
        assert list(store.isolations().values()) == [BUBBLEWRAP]
        assert store.runs()["sandbox"].iloc[0] == BUBBLEWRAP.words
    assert BUBBLEWRAP.words == BUBBLEWRAP_WORDS + (
        " to runs, seccomp filters (student code: threads only, no processes, programs, sessions or sockets); limits "
        "per sandbox: 60 CPU-s per process, files up to 256 MiB, 64 processes, output 1024 KiB per stream")
    assert Isolation.from_json(BUBBLEWRAP.to_json()) == BUBBLEWRAP


def test_the_local_backend_describes_its_isolation(tmp_path):
    record = LocalBackend(tmp_path, isolation=Unsandboxed()).sandbox
    assert record.unsafe and record.label == "NONE (--unsafe-no-sandbox)"
    assert record.words.startswith("NONE (--unsafe-no-sandbox): student code ran as the grader's user")


def test_a_store_that_recorded_isolation_in_words_still_reports(tmp_path, registry, small_rubric):
    results = graded_class(tmp_path / "made", registry, small_rubric, Sandboxed())
    for words, label, warned in [(BUBBLEWRAP_WORDS, "bubblewrap 0.8.0", False),
                                 (Unsandboxed().description.words, "NONE (--unsafe-no-sandbox)", True),
                                 ("none (fake backend for tests)", "none (fake backend for tests)", True)]:
        old = tmp_path / label.split()[0]
        old.mkdir()
        isolation_in_words(results / "grades.sqlite", old / "grades.sqlite", words)
        write_reports(old, small_rubric)
        assert set(pd.read_csv(old / "grades.csv")["sandbox"]) == {label}
        feedback = (old / "feedback" / "alice.md").read_text()
        assert ("Graded without a sandbox" in feedback) == warned
        with opened(old) as store:
            [record] = store.isolations().values()
            assert record.text == words and store.runs()["sandbox"].iloc[0] == words  # nothing lost
            assert summary_table(store, small_rubric).iloc[0]["sandbox"] == label


def test_a_record_damaged_by_hand_shows_its_words(tmp_path, registry, small_rubric):
    results = graded_class(tmp_path, registry, small_rubric, Unsafe())
    damaged_isolation(results / "grades.sqlite", "{not json")
    write_reports(results, small_rubric)
    shown = pd.read_csv(results / "grades.csv")["sandbox"].iloc[0]
    assert shown.startswith("NONE (--unsafe-no-sandbox): student code ran as the grader's user")


class Forging(FakeBackend):
    """mallory's add kernel writes a forged reply on the channel: her process's channel then holds an
    extra line, which the real runner reports when the process ends (HarnessServer.violation)."""

    def student_server(self, build, gpu):
        server = super().student_server(build, gpu)
        if b"forges replies" in server.files.get("add.cu", b""):
            original = server.close

            def close():
                original()
                if any(m["task"] == "add" for m in seen):
                    server.violation = "the harness's reply channel held lines no request asked for: forged"
            seen = []
            request = server.request

            def tracked(message, timeout):
                if message.get("op") == "check":
                    seen.append(message)
                return request(message, timeout)
            server.request, server.close = tracked, close
        return server


def test_a_forged_reply_voids_every_case_its_process_answered(tmp_path, registry, small_rubric):
    results = graded_class(tmp_path, registry, small_rubric, Forging())
    voided = cases_of(results, "mallory", status="protocol")
    assert not voided.empty and voided["message"].str.contains("no request asked for").all()
    assert set(voided["task"]) >= {"add"}
    mallory = pd.read_csv(results / "grades.csv").set_index("student").loc["mallory"]
    assert mallory["add_correctness"] == 0
    with opened(results) as store:
        checked = store.sanitizer_runs_for(store.submissions("mallory")["id"].tolist())
    checked = checked[checked["task"] == "add"]
    assert not checked.empty and (checked["status"] == "skipped").all()  # no tool run on forgery
    assert checked["message"].str.contains("forged").all()
    page = (results / "feedback" / "mallory.md").read_text()
    assert "**not trusted**: " in page and "the harness's reply channel held lines no request asked for" in page
    alice = cases_of(results, "alice")
    assert not alice.empty and (alice["status"] == "ok").all()


def cli(*args, env):
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=REPO, capture_output=True, text=True, env=env)


def one_submission(tmp_path):
    """A submissions folder holding one student's (empty) folder: grade's input checks pass, so what follows is
    the sandbox's."""
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    return tmp_path / "subs"


def test_grade_refuses_to_start_without_bubblewrap(tmp_path):
    env = {"PATH": str(tmp_path), "PYTHONPATH": str(REPO)}  # no bwrap on PATH, no $BWRAP
    done = cli("grade", str(one_submission(tmp_path)), "--results", str(tmp_path / "r"), env=env)
    assert done.returncode == 1
    assert "bubblewrap (bwrap) is not installed" in done.stderr and "--unsafe-no-sandbox" in done.stderr
    assert not (tmp_path / "r" / "grades.sqlite").exists()


def test_a_bwrap_variable_that_points_nowhere_is_named(tmp_path):
    env = {"PATH": str(tmp_path), "BWRAP": str(tmp_path / "no-bwrap")}
    done = cli("grade", str(one_submission(tmp_path)), "--results", str(tmp_path / "r"), env=env)
    assert done.returncode == 1 and "no-bwrap (from $BWRAP) is not an executable file" in done.stderr


def test_unsafe_no_sandbox_goes_on_with_a_warning(tmp_path):
    env = {"PATH": str(tmp_path)}
    done = cli("grade", str(one_submission(tmp_path)), "--results", str(tmp_path / "r"), "--unsafe-no-sandbox",
               env=env)
    assert "WARNING: --unsafe-no-sandbox" in done.stderr
    assert "no GPU found" in done.stderr  # past the sandbox check: on this machine, the GPU is what is missing


def test_every_command_that_runs_student_code_takes_the_sandbox_options():
    for command in ("grade", "gradescope", "autolab"):
        out = subprocess.run([sys.executable, "-m", "grader", command, "--help"], cwd=REPO, capture_output=True,
                             text=True).stdout
        assert "--bwrap PATH" in out and "--unsafe-no-sandbox" in out, command


class Hoarding(FakeBackend):
    """mallory's dot passes its checks, then, once checked for timing (check_runs 1), holds the GPU's
    memory: the solution's check beside it fails until her process is gone."""

    def __init__(self):
        super().__init__()
        self.hoarders = set()

    def student_server(self, build, gpu):
        server = super().student_server(build, gpu)
        if b"hoards" in server.files.get("dot.cu", b""):
            check = server.request

            def request(message, timeout):
                if message.get("op") == "check" and message.get("check_runs") == 1:
                    self.hoarders.add(id(server))
                return check(message, timeout)
            server.request, server.close = request, lambda: self.hoarders.discard(id(server))
        return server

    def solution_server(self, gpu):
        server = super().solution_server(gpu)
        answer = server.request

        def request(message, timeout):
            if message.get("op") == "check" and self.hoarders:
                return {"op": "error", "error": "cudaMalloc failed: out of memory"}
            return answer(message, timeout)
        server.request = request
        return server


def test_a_process_that_hoards_gpu_memory_when_timed_loses_its_timing_not_the_grading_run(tmp_path, registry,
                                                                                          small_rubric):
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    subs = tmp_path / "submissions"
    write_submission(subs, "mallory", {**files, "dot.cu": "// fake: ok speed=1.0\n// hoards\n"})
    write_submission(subs, "zed", files)
    results = tmp_path / "results"
    summary = grade(GradeOptions(subs, results, [None], jobs=1, progress=False, seed=3), small_rubric, registry,
                    Hoarding())
    assert len(summary.graded) == 2
    timed = cases_of(results, "mallory", task="dot", kind="timed").iloc[0]
    assert timed["status"] == "error" and "the solution could not run beside it" in timed["message"]
    zed = cases_of(results, "zed")
    assert not zed.empty and (zed["status"] == "ok").all()
