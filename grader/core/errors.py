"""The grader's own failure: raised where it cannot go on, caught by the command line, which prints its one line.

Low in the import order (it imports nothing of the grader), so every layer can raise it without importing the
build (grader/backends/local.py re-exports it for the modules that import it from there)."""
from __future__ import annotations


class GraderError(RuntimeError):
    """The grader itself cannot go on (not a student's fault)."""
