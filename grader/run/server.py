"""The interface of one process that runs harness requests: a student's or the solution's `harness --serve`, or a
stand-in (the tests' fakes, grading's own wrappers that count time or pause the student).

Declared apart from the backends (grader/backends/base.py) because everything that talks to such a process (the runner,
the time budget, paired timing) sits below the backends that start them.

    Server   request, close (abstract); pause (default: nothing to stop) and violation (default "": nothing
             forged on its reply channel)
"""
from __future__ import annotations

from abc import ABC, abstractmethod


class Server(ABC):
    """One process that answers the harness's protocol (starter/harness/serve.cpp): a JSON request, a JSON reply."""

    # Set when the process is closed, if its reply channel held lines no request asked for (a forged reply):
    # then no reply it gave can be trusted. "": nothing was forged.
    violation: str = ""

    @abstractmethod
    def request(self, message: dict, timeout: float) -> dict:
        """The reply to `message`; a HarnessFailure (grader/run/runner.py) when there is none within `timeout` s."""

    @abstractmethod
    def close(self) -> None:
        """Ends the process (and sets `violation` if it finds a forged reply)."""

    def pause(self) -> None:
        """Stops the process until its next request (while the solution is timed beside it). By default there is
        nothing to stop: a server whose code cannot run between requests."""
