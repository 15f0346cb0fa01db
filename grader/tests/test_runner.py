"""Running a harness process: replies, timeouts that kill the whole group, crashes, capped output."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from grader.run import runner
from grader.run.runner import STDERR_CAP, HarnessFailure, HarnessServer

FAKE = textwrap.dedent("""\
    #!/usr/bin/env python3
    import json, os, signal, subprocess, sys, time
    mode = os.environ.get("FAKE_MODE", "ok")
    if os.environ.get("FAKE_CORE"):  # one core, shared with the test's busy loops
        os.sched_setaffinity(0, {int(os.environ["FAKE_CORE"])})
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "quit":
            break
        if mode == "hang":
            child = subprocess.Popen(["sleep", "1000"])
            open(os.environ["CHILD_PID_FILE"], "w").write(str(child.pid))
            time.sleep(1000)
        if mode.startswith("burn="):  # a correct kernel that needs this many CPU seconds
            start = time.process_time()
            while time.process_time() - start < float(mode[len("burn="):]):
                pass
        if mode == "spin":  # a loop that never ends
            while True:
                pass
        if mode == "block":  # a wait that never ends, using no CPU
            time.sleep(1000)
        if mode == "segv":
            sys.stderr.write("about to crash\\n"); sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGSEGV)
        if mode.startswith("asan-"):  # what AddressSanitizer prints before it ends the process with status 1
            kind = mode[len("asan-"):]
            sys.stderr.write(f"==7==ERROR: AddressSanitizer: {kind} on unknown address 0x000000000000\\n")
            sys.stderr.flush()
            os._exit(1)
        if mode == "flood":
            sys.stderr.write("x" * (3 * 1024 * 1024)); sys.stderr.flush()
        if mode == "garbage":
            print("this is not json", flush=True)
            continue
        nonce = request.pop("nonce", None)
        if mode == "forge":  # a line written on the reply channel before the harness's own
            print(json.dumps({"op": request["op"], "status": "ok", "nonce": "0" * 32}), flush=True)
        print("stray text " * 3, end="", file=sys.stdout if mode == "stray" else sys.stderr, flush=True)
        print(json.dumps({"op": request["op"], "echo": request, "nonce": nonce}), flush=True)
        if mode == "extra":  # a line after the harness's reply: found at the next request
            print(json.dumps({"op": request["op"], "status": "ok", "nonce": nonce}), flush=True)
""")


def alive(pid: int) -> bool:
    """Running or sleeping; a killed process may linger as a zombie until its new parent reaps it."""
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


@pytest.fixture
def fake_harness(tmp_path):
    path = tmp_path / "harness"
    path.write_text(FAKE)
    path.chmod(0o755)
    return path


def server(path, monkeypatch, mode, clock="wall", **env):
    monkeypatch.setenv("FAKE_MODE", mode)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return HarnessServer(path, clock=clock)


def test_a_request_gets_its_reply(fake_harness, monkeypatch):
    with server(fake_harness, monkeypatch, "ok") as s:
        reply = s.request({"op": "hello", "n": 1}, 10)
        assert reply["echo"] == {"op": "hello", "n": 1} and len(reply["nonce"]) == 32
        assert s.request({"op": "check"}, 10)["op"] == "check"
    assert not s.violation


def test_every_request_carries_a_fresh_nonce(fake_harness, monkeypatch):
    with server(fake_harness, monkeypatch, "ok") as s:
        nonces = {s.request({"op": "hello"}, 10)["nonce"] for _ in range(5)}
    assert len(nonces) == 5


def test_a_reply_without_the_requests_nonce_is_a_protocol_failure_naming_the_forgery(fake_harness, monkeypatch):
    s = server(fake_harness, monkeypatch, "forge")
    with pytest.raises(HarnessFailure) as e:
        s.request({"op": "check"}, 10)
    assert e.value.kind == "protocol" and "nonce" in str(e.value)
    assert "something other than the harness wrote" in str(e.value)
    s.close()


def test_a_line_after_the_reply_is_found_at_the_next_request(fake_harness, monkeypatch):
    s = server(fake_harness, monkeypatch, "extra")
    s.request({"op": "check"}, 10)
    time.sleep(0.3)
    with pytest.raises(HarnessFailure) as e:
        s.request({"op": "check"}, 10)
    assert e.value.kind == "protocol" and "no request asked for" in str(e.value)
    s.close()


def test_a_line_after_the_last_reply_is_found_when_the_process_ends(fake_harness, monkeypatch):
    s = server(fake_harness, monkeypatch, "extra")
    s.request({"op": "check"}, 10)
    s.close()
    assert "no request asked for" in s.violation


def test_a_request_that_outlives_its_limit_kills_the_process_group(fake_harness, monkeypatch, tmp_path):
    pid_file = tmp_path / "child.pid"
    s = server(fake_harness, monkeypatch, "hang", CHILD_PID_FILE=str(pid_file))
    start = time.monotonic()
    with pytest.raises(HarnessFailure) as e:
        s.request({"op": "check"}, 2)
    assert e.value.kind == "timeout" and "no result after 2 s" in str(e.value)
    assert time.monotonic() - start < 10
    assert s.proc.poll() is not None
    child = int(pid_file.read_text())
    time.sleep(0.2)
    assert not alive(child)  # the grandchild went with the group
    s.close()


@pytest.fixture
def busy_core():
    """A core of this process's, with two busy loops on it: a process put there gets about a third of it."""
    core = min(os.sched_getaffinity(0))
    spin = f"import os, sys; os.sched_setaffinity(0, {{{core}}}); print('spinning', flush=True)\nwhile True: pass"
    # Each loop in a session of its own, as the harness's server starts it: with autogroup scheduling (Linux's
    # default) a session's processes share one weight, spread over the cores it is busy on, so loops left in the
    # test's session (with busy pytest workers on the other core) gave the harness 70% of the core, not a third.
    loops = [subprocess.Popen([sys.executable, "-c", spin], stdout=subprocess.PIPE, text=True, start_new_session=True)
             for _ in range(2)]
    for loop in loops:  # both on the core before the test starts (a loaded machine starts python in seconds)
        assert loop.stdout.readline().strip() == "spinning"
    yield core
    for loop in loops:
        loop.kill()
        loop.wait()


def test_on_the_cpu_clock_a_correct_case_a_busy_machine_starves_is_not_a_hang(fake_harness, monkeypatch, busy_core):
    """1.2 s of CPU work under a 2 s limit, on a core two busy loops share: about 3.6 s of wall-clock time. The wall
    clock calls it a hang (make demo on a loaded machine did, to the sample class's correct submission); the CPU
    clock waits for the CPU time it was owed."""
    with server(fake_harness, monkeypatch, "burn=1.2", FAKE_CORE=str(busy_core)) as s:
        with pytest.raises(HarnessFailure) as e:
            s.request({"op": "check"}, 2)
        assert e.value.kind == "timeout"
    with server(fake_harness, monkeypatch, "burn=1.2", clock="cpu", FAKE_CORE=str(busy_core)) as s:
        start = time.monotonic()
        assert s.request({"op": "check"}, 2)["op"] == "check"
        assert time.monotonic() - start > 2  # it was starved: past the wall clock's limit


def test_on_the_cpu_clock_a_loop_that_never_ends_stops_at_its_limit_of_cpu_time(fake_harness, monkeypatch):
    s = server(fake_harness, monkeypatch, "spin", clock="cpu")
    start = time.monotonic()
    with pytest.raises(HarnessFailure) as e:
        s.request({"op": "check"}, 1)
    assert e.value.kind == "timeout" and "no result after 1 s of CPU time: " in str(e.value), str(e.value)
    assert "never finishes" in str(e.value)
    assert time.monotonic() - start < runner.CPU_CLOCK_WALL_CAP * 1 + 1
    s.close()


def test_on_the_cpu_clock_a_wait_that_never_ends_stops_at_the_wall_clock_cap(fake_harness, monkeypatch):
    s = server(fake_harness, monkeypatch, "block", clock="cpu")
    start = time.monotonic()
    with pytest.raises(HarnessFailure) as e:
        s.request({"op": "check"}, 0.5)
    waited = time.monotonic() - start
    assert e.value.kind == "timeout" and "s of it running: it waited, or the machine was busy)" in str(e.value)
    assert runner.CPU_CLOCK_WALL_CAP * 0.5 <= waited < runner.CPU_CLOCK_WALL_CAP * 0.5 + 1.5, waited
    s.close()


def test_a_crash_is_reported_with_its_signal_and_last_output(fake_harness, monkeypatch):
    s = server(fake_harness, monkeypatch, "segv")
    with pytest.raises(HarnessFailure) as e:
        s.request({"op": "check"}, 10)
    assert e.value.kind == "crashed" and "segmentation fault (SIGSEGV)" in str(e.value)
    assert "about to crash" in e.value.stderr
    s.close()


@pytest.mark.parametrize("kind, words", [
    ("SEGV", "crashed with a segmentation fault (SIGSEGV, caught by AddressSanitizer)"),
    ("FPE", "crashed with an arithmetic error (SIGFPE, caught by AddressSanitizer)"),
    ("heap-use-after-free", "was stopped by AddressSanitizer: heap-use-after-free"),
])
def test_a_process_addresssanitizer_ends_is_described_by_what_it_caught_not_its_status(fake_harness, monkeypatch,
                                                                                         kind, words):
    """On the CPU backend AddressSanitizer catches the signal and exits with status 1: the student reads what
    happened (a segmentation fault), not "exited with status 1"."""
    s = server(fake_harness, monkeypatch, f"asan-{kind}")
    with pytest.raises(HarnessFailure) as e:
        s.request({"op": "check"}, 10)
    assert e.value.kind == "crashed" and words in str(e.value), str(e.value)
    assert "status 1" not in str(e.value)
    s.close()


def test_output_beyond_the_cap_is_dropped_and_the_cut_marked(fake_harness, monkeypatch):
    with server(fake_harness, monkeypatch, "flood") as s:
        assert s.request({"op": "check"}, 30)["op"] == "check"
        time.sleep(0.5)
        text = s.stderr
    assert len(text) < STDERR_CAP + 200
    assert "more bytes cut: output is capped" in text


def test_a_reply_that_is_not_json_is_a_protocol_failure(fake_harness, monkeypatch):
    s = server(fake_harness, monkeypatch, "garbage")
    with pytest.raises(HarnessFailure) as e:
        s.request({"op": "check"}, 10)
    assert e.value.kind == "protocol"
    s.close()
