"""Running a harness in `--serve` mode, as a child process with limits.

The grader talks to a harness over its stdin and reply pipe, one JSON object a
line. Every request has a time limit: a request that outlives it, or a
process that dies, ends with an exception that says which, the whole process
group is killed, and the caller starts a fresh process for the next case. The
limit is wall-clock time, or (clock="cpu", the CPU backend's: its kernels run
on this machine's cores, which other work shares) the CPU time the process
got, within CPU_CLOCK_WALL_CAP times the limit of wall-clock time: a correct
kernel that a busy machine starves is not a hang.

The reply pipe is the harness's, not the code under test's: each request
carries a fresh random nonce that the harness echoes, the next request is sent
only once the last reply is in (so there is never a request waiting on stdin
for student code to read), and anything on the pipe that is not the reply to
the request just sent is a protocol failure: something else wrote there.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import selectors
import signal
import subprocess
import time
from pathlib import Path

from grader.core.status import CaseStatus
from grader.run.server import Server
from grader.run.capped import DEFAULT_CAP, CappedReader
from grader.run.sandbox import spawn

STDERR_CAP = DEFAULT_CAP  # bytes of a harness's stderr kept; the rest is counted and dropped
REPLY_CAP = 16 * 1024 * 1024  # a reply line longer than this is not the harness's
STOP_POLL_MS = 1  # how often a stop (SIGSTOP) is checked for having taken hold
# clock="cpu": a request whose process has not had its limit of CPU time yet waits on, to at most this many times
# the limit of wall-clock time (a process that sleeps or blocks, using no CPU, is stopped there).
CPU_CLOCK_WALL_CAP = 4.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
FORGED = ("something other than the harness wrote on the grader's private reply channel (code under test may "
          "print, but not write grading results)")


class HarnessFailure(RuntimeError):
    """The harness process ended the request without a reply."""

    def __init__(self, reason: str, kind: CaseStatus, stderr: str = ""):
        super().__init__(reason)
        self.kind = kind  # the case's status: TIMEOUT, CRASHED, PROTOCOL or OUT_OF_BUDGET
        self.stderr = stderr


SIGNAL_WORDS = {"SIGSEGV": "crashed with a segmentation fault (SIGSEGV)", "SIGABRT": "aborted (SIGABRT)",
                "SIGKILL": "was killed (SIGKILL)", "SIGFPE": "crashed with an arithmetic error (SIGFPE)",
                "SIGBUS": "crashed with a bus error (SIGBUS)", "SIGXCPU": "used up its CPU-time limit (SIGXCPU)",
                "SIGXFSZ": "tried to write a file larger than its limit (SIGXFSZ)"}
# AddressSanitizer (the CPU backend's harness runs under it) catches these signals itself, prints its report and
# exits with status 1: the signal, not the status, is what happened.
ASAN_REPORT = re.compile(r"ERROR: AddressSanitizer: ([\w-]+)")
ASAN_SIGNALS = {"SEGV": "SIGSEGV", "BUS": "SIGBUS", "FPE": "SIGFPE", "ABRT": "SIGABRT"}


def describe_exit(returncode: int, stderr: str = "") -> str:
    """How the harness process ended, in words; `stderr`: what it printed, for a report AddressSanitizer ended it
    with."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return SIGNAL_WORDS.get(name, f"was ended by {name}")
    report = ASAN_REPORT.search(stderr) if returncode > 0 else None
    if report and report.group(1) in ASAN_SIGNALS:
        return SIGNAL_WORDS[ASAN_SIGNALS[report.group(1)]][:-1] + ", caught by AddressSanitizer)"
    if report:
        return f"was stopped by AddressSanitizer: {report.group(1)} (its report is in the case's output)"
    return f"exited with status {returncode}"


def _stopped(pid: int) -> bool:
    """Whether every thread of a process is stopped (or it is gone)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"T", b"t", b"Z", b"X"):
            return False
    return True


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds (user and system, every thread, and the children it reaped) of a process and all its
    descendants, as /proc shows them now (the sandbox's processes descend from bubblewrap's)."""
    parents, used = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents.setdefault(int(fields[1]), []).append(int(entry))  # fields: state, ppid, ...
        used[int(entry)] = sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += used.get(p, 0)
        todo += parents.get(p, [])
    return total / CLOCK_TICKS


class HarnessServer(Server):
    """One `harness --serve` process (grader/backends/base.py's Server), in `sandbox` (grader.run.sandbox) when given, with `scratch` as its
    writable directory."""

    def __init__(self, harness: Path, gpu: str | None = None, cwd: Path | None = None, sandbox=None,
                 scratch: Path | None = None, tool: list[str] | None = None, env: dict | None = None,
                 clock: str = "wall"):
        """tool: a program (compute-sanitizer and its options) that runs the harness as its target; it
        runs under the sandbox's tool profile, the harness still under the run profile. env: variables the
        harness gets besides the sandbox's own (the CPU backend's CUDA_CPU_PROFILE). clock: what a request's
        limit counts, "wall" or "cpu" (the module's docstring)."""
        if clock not in ("wall", "cpu"):
            raise ValueError(f"unknown clock {clock!r}")
        self.clock = clock
        self.harness = Path(harness)
        argv = [str(self.harness), "--serve"]
        pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
        if sandbox is not None:
            # Under a tool, the tool starts the harness itself: the harness gets the run profile from the
            # sandbox's preloaded library (keyed to its executable), the tool the looser tool profile.
            argv, profile = ([*tool, *argv], "tool") if tool else (argv, "run")
            read_only = [self.harness] + ([Path(tool[0])] if tool and Path(tool[0]).is_absolute() else [])
            self.proc = spawn(sandbox, argv, read_only=read_only, writable=[scratch] if scratch else [], cwd=cwd,
                              gpu=gpu, profile=profile, confine_exe=self.harness if tool else None, env=env, **pipes)
            cap = sandbox.limits.output if sandbox.limits else STDERR_CAP
        else:
            environment = {**os.environ, **(env or {})}
            if gpu is not None:
                environment["CUDA_VISIBLE_DEVICES"] = gpu
            self.proc = subprocess.Popen([*(tool or []), *argv], env=environment, cwd=cwd, start_new_session=True,
                                         **pipes)
            cap = STDERR_CAP
        self.sandboxed = sandbox is not None
        # Under a tool, lines the tool itself prints on stdout are not replies; skipped, not held against anyone
        # (nothing a tool's run answers is graded).
        self.lenient = bool(tool)
        self._paused: list[int] = []
        self._stderr = CappedReader(self.proc.stderr, cap)
        self._stderr.start()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.proc.stdout, selectors.EVENT_READ)
        self._buffer = b""
        self.violation = ""  # set by close() when the channel held lines nobody asked for

    @property
    def stderr(self) -> str:
        return self._stderr.text()

    def request(self, message: dict, timeout: float) -> dict:
        if self.lenient:
            self._pending()
            self._buffer = b""
        if self._buffer.strip() or self._pending():
            self.kill()
            self._fail(CaseStatus.PROTOCOL, f"the harness's reply channel held a line no request asked for: {FORGED}")
        if self._paused:
            self.resume()  # a paused process cannot answer
        nonce = secrets.token_hex(16)
        try:
            self.proc.stdin.write((json.dumps({**message, "nonce": nonce}) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self._fail(CaseStatus.CRASHED, f"the harness {self._exit_words()} before the request")
        deadline = time.monotonic() + timeout
        self._started = (time.monotonic(), tree_cpu_seconds(self.proc.pid) if self.clock == "cpu" else 0.0)
        while True:
            reply = self._next_line(deadline, timeout)
            if reply.get("nonce") == nonce or not self.lenient:
                break
        if reply.get("nonce") != nonce:
            self.kill()
            self._fail(CaseStatus.PROTOCOL, f"a reply without this request's nonce: {FORGED}")
        return reply

    def _next_line(self, deadline: float, timeout: float) -> dict:
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not self._selector.select(left):
                later = self._starved_until(timeout)
                if later is not None:
                    deadline = later
                    continue
                spent = self._spent(timeout)  # (before the kill, which takes its CPU time with it)
                self.kill()
                self._fail(CaseStatus.TIMEOUT, f"no result after {spent}: the kernel probably never finishes (a "
                                      "loop that never ends, or a __syncthreads() not every thread reaches)")
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                self._fail(CaseStatus.CRASHED, f"the harness {self._exit_words()} while running your code")
            self._buffer += chunk
            if len(self._buffer) > REPLY_CAP and b"\n" not in self._buffer:
                self.kill()
                self._fail(CaseStatus.PROTOCOL, f"a reply longer than {REPLY_CAP} bytes: {FORGED}")
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            reply = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            if self.lenient:
                return {}
            self.kill()
            self._fail(CaseStatus.PROTOCOL, f"the harness's reply was not JSON: {FORGED}")
        if not isinstance(reply, dict):
            if self.lenient:
                return {}
            self.kill()
            self._fail(CaseStatus.PROTOCOL, f"a reply without this request's nonce: {FORGED}")
        return reply

    def _starved_until(self, timeout: float) -> float | None:
        """clock="cpu": the new deadline of a request whose process has had less than `timeout` CPU seconds since
        it was sent (the rest of its CPU time, at one core's pace, within the wall-clock cap); None: it is over."""
        if self.clock != "cpu":
            return None
        since, cpu = self._started
        now = time.monotonic()
        used = tree_cpu_seconds(self.proc.pid) - cpu
        cap = since + CPU_CLOCK_WALL_CAP * timeout
        if used >= timeout or now >= cap:
            return None
        return min(cap, now + max(0.2, timeout - used))

    def _spent(self, timeout: float) -> str:
        if self.clock != "cpu":
            return f"{timeout:.0f} s"
        since, cpu = self._started
        wall, used = time.monotonic() - since, tree_cpu_seconds(self.proc.pid) - cpu
        return (f"{used:.0f} s of CPU time" if used >= timeout
                else f"{wall:.0f} s ({used:.1f} s of it running: it waited, or the machine was busy)")

    def _pending(self) -> bool:
        """Whether the reply pipe holds data (EOF does not count: a dead process is found by the write)."""
        while self._selector.select(0):
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                return False
            self._buffer += chunk
            if self._buffer.strip():
                return True
        return False

    def _wait_exit(self) -> int:
        try:
            status = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            status = self.proc.wait()
        # bubblewrap reports a child killed by signal N as exit status 128 + N, as a shell does.
        return -(status - 128) if self.sandboxed and 128 < status < 128 + 65 else status

    def _exit_words(self) -> str:
        """How the process ended, once it has (and its stderr is read to the end)."""
        status = self._wait_exit()
        self._stderr.join(timeout=2)
        return describe_exit(status, self.stderr)

    def _fail(self, kind: CaseStatus, reason: str):
        self._stderr.join(timeout=2)
        raise HarnessFailure(reason, kind, self.stderr)

    def processes(self) -> list[int]:
        """The pids of every process this server started (the harness, and in a sandbox bubblewrap's own
        processes around it), found by walking /proc from the process it launched."""
        children: dict[int, list[int]] = {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
        found, todo = [], [self.proc.pid]
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo += children.get(pid, [])
        return found

    def seccomp_filters(self) -> int | None:
        """How many seccomp filters the harness process itself (found by its executable among this server's
        processes) runs under, or None when it is not found."""
        target = os.path.realpath(self.harness)
        for pid in self.processes():
            try:
                if os.path.realpath(f"/proc/{pid}/exe") != target:
                    continue
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            found = re.search(r"^Seccomp_filters:\s*(\d+)", status, re.M)
            return int(found.group(1)) if found else None
        return None

    def pause(self, settle: float = 1.0) -> int:
        """Stops (SIGSTOP) every process of this server, every thread of each, and waits until the kernel
        shows them stopped: nothing of it runs, on the CPU or by launching GPU work, until resume().
        Returns how many processes were stopped."""
        if self.proc.poll() is not None:
            return 0
        # Under the run profile no process of the sandbox can start another, so the list is taken once: the
        # stop then follows the reply within microseconds.
        pids = self._pids = getattr(self, "_pids", None) or self.processes()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        self._paused = pids
        deadline = time.monotonic() + settle
        while time.monotonic() < deadline and not all(_stopped(pid) for pid in pids):
            time.sleep(STOP_POLL_MS / 1000)
        return len(pids)

    def resume(self):
        for pid in self._paused:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self._paused = []

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()

    def finish(self, wait: float = 10) -> int | None:
        """Asks the harness to quit and waits up to `wait` seconds for the process (the sandbox, or the tool
        above the harness) to end; then kills the whole process group. Returns the exit status, or None
        when it had to be killed: something it started kept it from ending."""
        self.resume()
        status = self.proc.poll()
        if status is None:
            try:
                self.proc.stdin.write(b'{"op": "quit"}\n')
                self.proc.stdin.flush()
            except OSError:
                pass
            try:
                status = self.proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                status = None
        self.kill()
        return status

    def close(self):
        """Ends the process; sets `violation` if the reply pipe held lines after the last reply (a reply
        forged during a request is always followed by the harness's own, which lands here)."""
        self.finish(10)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and self._selector.select(max(0.0, deadline - time.monotonic())):
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                break
            self._buffer += chunk
        if self._buffer.strip() and not self.lenient:
            self.violation = f"the harness's reply channel held lines no request asked for: {FORGED}"
        self._selector.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
