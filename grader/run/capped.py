"""Reading a child's output without letting it fill the grader's memory.

Student code can print without end (a loop around printf, a gigabyte of
device printf). Each stream is drained as fast as it comes, so the child
never blocks on a full pipe; the first `cap` bytes are kept and the rest is
only counted, and the text says where it was cut.
"""
from __future__ import annotations

import threading

DEFAULT_CAP = 1024 * 1024  # bytes kept of one stream


def cut_note(dropped: int, cap: int) -> str:
    return f"\n[... {dropped} more bytes cut: output is capped at {cap} bytes]"


class CappedReader(threading.Thread):
    """Drains a binary stream in the background, keeping its first `cap` bytes."""

    def __init__(self, stream, cap: int = DEFAULT_CAP):
        super().__init__(daemon=True)
        self.stream = stream
        self.cap = cap
        self.kept = bytearray()
        self.dropped = 0

    def run(self):
        try:
            # read1: what has arrived, at once. A plain read(n) waits for n bytes or the end of the stream,
            # so output would sit unread while a process that escaped still held the pipe open.
            read = getattr(self.stream, "read1", self.stream.read)
            for chunk in iter(lambda: read(65536), b""):
                room = self.cap - len(self.kept)
                self.kept += chunk[:max(room, 0)]
                self.dropped += max(0, len(chunk) - max(room, 0))
        except (OSError, ValueError):  # the stream was closed under us: what was read is kept
            pass

    def text(self) -> str:
        out = self.kept.decode("utf-8", errors="replace")
        if self.dropped:
            out += cut_note(self.dropped, self.cap)
        return out
