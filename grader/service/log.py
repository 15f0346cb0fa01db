"""The service's log: each entry reaches stderr in one write, newline included.

`print(..., file=sys.stderr)` writes the text and its newline separately (two writes when stderr is unbuffered, as
under PYTHONUNBUFFERED or a supervisor's pipe), so a reader tailing the log could see a line without its end, and
two threads logging at once could interleave as "AB\\n\\n". One write per entry keeps every line whole.
"""
from __future__ import annotations

import sys
from typing import TextIO


def say(line: str, out: TextIO | None = None):
    """Writes `service: <line>` and its newline in one write, then flushes."""
    stream = out or sys.stderr
    stream.write(f"service: {line}\n")
    stream.flush()
