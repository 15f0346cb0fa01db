"""Faults of the grading machine, not of a submission: its results folder's disk is full or read-only, or the grades
store is locked or cannot be opened. A grade computed meanwhile is not a verdict on the student (a compiler that
could not write its object file says "did not build"), so the service gives the job back to the queue without
counting an attempt, refuses uploads with a line that names the cause, and resumes by itself once the cause is
gone (docs/service.md, "Faults").

`fault_of(error)` says whether an exception is such a fault; `results_fault(folder)` looks at the folder now.
"""
from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path

# Below this many free bytes the results folder counts as full: a grade, a build and an upload each need more.
MIN_FREE_BYTES = 16 * 2**20

DISK_FULL = "disk is full"
READ_ONLY = "results folder is read-only"
LOCKED = "grades store is locked by another program"
UNREADABLE = "grades store cannot be opened or read"

_ERRNOS = {errno.ENOSPC: DISK_FULL, errno.EDQUOT: DISK_FULL, errno.EROFS: READ_ONLY}
_WORDS = (("no space left on device", DISK_FULL), ("database or disk is full", DISK_FULL),
          ("disk quota exceeded", DISK_FULL), ("read-only file system", READ_ONLY),
          ("readonly database", READ_ONLY), ("database is locked", LOCKED), ("database table is locked", LOCKED),
          ("unable to open database file", UNREADABLE), ("disk i/o error", UNREADABLE))


class MachineFault(RuntimeError):
    """Raised where a result may not be trusted because the machine failed under it; its text is the cause."""


def words_fault(text: str) -> str:
    """The fault a message names ("" for none): a compiler's or SQLite's own words for a full or read-only disk."""
    lowered = (text or "").lower()
    return next((cause for words, cause in _WORDS if words in lowered), "")


def fault_of(error: BaseException | None) -> str:
    """The machine's fault behind `error`, or its causes ("" when it is something else: a bug, a submission's)."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, MachineFault):
            return str(error)
        if isinstance(error, OSError) and error.errno in _ERRNOS:
            return _ERRNOS[error.errno]
        # SQLite's errors (by their module: SQL stays in grader/store/store.py) and the store's own
        if isinstance(error, OSError) or type(error).__module__.startswith("sqlite3") or \
                type(error).__name__ == "StoreError":
            found = words_fault(str(error))
            if found:
                return found
        error = error.__cause__ or error.__context__
    return ""


def results_fault(folder: Path, min_free: int = MIN_FREE_BYTES) -> str:
    """What stops grading in `folder` now ("" when nothing): too little free space, or no file can be written."""
    folder = Path(folder)
    try:
        stats = os.statvfs(folder)
    except OSError as e:
        return fault_of(e) or f"results folder cannot be read ({e.strerror})"
    free = stats.f_bavail * stats.f_frsize
    if free < min_free:
        return f"{DISK_FULL} ({free // 2**20} MiB free of the {min_free // 2**20} MiB grading needs)"
    probe = folder / f".write-probe-{secrets.token_hex(4)}"
    try:
        probe.write_bytes(b"x")
    except OSError as e:
        return fault_of(e) or f"results folder cannot be written ({e.strerror})"
    finally:
        try:
            probe.unlink()
        except OSError:
            pass
    return ""


def refusal(cause: str) -> tuple[int, str]:
    """The HTTP status and the one line a client gets while `cause` stops the service from keeping uploads."""
    if cause.startswith(DISK_FULL):
        return 507, "the grading machine's disk is full, so no upload can be kept now; the course staff can see it"
    return 503, f"the grading machine's {cause.split(' (')[0]}, so no upload can be kept now; the course staff can see it"
