"""Running a harness in `--serve` mode, as a child process with limits.

The grader talks to a harness over its stdin and reply pipe, one JSON object a
line. Every request has a wall-clock limit: a request that outlives it, or a
process that dies, ends with an exception that says which, the whole process
group is killed, and the caller starts a fresh process for the next case.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import threading
import time
from pathlib import Path

STDERR_CAP = 1024 * 1024  # bytes of a harness's stderr kept; the rest is counted and dropped


class HarnessFailure(RuntimeError):
    """The harness process ended the request without a reply."""

    def __init__(self, reason: str, kind: str, stderr: str = ""):
        super().__init__(reason)
        self.kind = kind  # "timeout", "crashed" or "protocol"
        self.stderr = stderr


class _CappedReader(threading.Thread):
    """Drains a pipe so the child never blocks on it, keeping the first STDERR_CAP bytes."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream = stream
        self.kept = bytearray()
        self.dropped = 0

    def run(self):
        for chunk in iter(lambda: self.stream.read(65536), b""):
            room = STDERR_CAP - len(self.kept)
            self.kept += chunk[:room]
            self.dropped += max(0, len(chunk) - room)

    def text(self) -> str:
        out = self.kept.decode("utf-8", errors="replace")
        if self.dropped:
            out += f"\n[... {self.dropped} more bytes cut: output is capped at {STDERR_CAP} bytes]"
        return out


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return {"SIGSEGV": "crashed with a segmentation fault (SIGSEGV)", "SIGABRT": "aborted (SIGABRT)",
                "SIGKILL": "was killed (SIGKILL)", "SIGFPE": "crashed with an arithmetic error (SIGFPE)",
                "SIGBUS": "crashed with a bus error (SIGBUS)"}.get(name, f"was ended by {name}")
    return f"exited with status {returncode}"


class HarnessServer:
    """One `harness --serve` process."""

    def __init__(self, harness: Path, gpu: str | None = None, cwd: Path | None = None):
        self.harness = Path(harness)
        env = dict(os.environ)
        if gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = gpu
        self.proc = subprocess.Popen([str(self.harness), "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env,
                                     start_new_session=True)  # its own process group, killed as one
        self._stderr = _CappedReader(self.proc.stderr)
        self._stderr.start()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.proc.stdout, selectors.EVENT_READ)
        self._buffer = b""

    @property
    def stderr(self) -> str:
        return self._stderr.text()

    def request(self, message: dict, timeout: float) -> dict:
        try:
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self._fail("crashed", f"the harness {describe_exit(self._wait_exit())} before the request")
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not self._selector.select(left):
                self.kill()
                self._fail("timeout", f"no result after {timeout:.0f} s: the kernel probably never finishes "
                                      "(a loop that never ends, or a __syncthreads() not every thread reaches)")
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                self._fail("crashed", f"the harness {describe_exit(self._wait_exit())} while running your code")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            self.kill()
            self._fail("protocol", "the harness's reply was not JSON")

    def _wait_exit(self) -> int:
        try:
            return self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            return self.proc.wait()

    def _fail(self, kind: str, reason: str):
        self._stderr.join(timeout=2)
        raise HarnessFailure(reason, kind, self.stderr)

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b'{"op": "quit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
        self._selector.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
