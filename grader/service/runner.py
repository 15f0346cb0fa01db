"""Where the service's jobs are graded, behind one interface: one worker process per GPU of this machine
(grader/service/supervisor.py), or batches handed to a Slurm cluster (grader/service/slurm_dispatch.py).
`serve` starts and stops it with the HTTP app; the app's ETA asks how many graders are alive."""
from __future__ import annotations

from abc import ABC, abstractmethod


class Runner(ABC):
    @abstractmethod
    def start(self) -> None:
        """Takes over (or gives back) what a previous life of the service left running, then starts grading."""

    @abstractmethod
    def stop(self) -> None:
        """The service's clean shutdown: returns once nothing of this process grades any more."""

    @abstractmethod
    def alive(self) -> int:
        """How many graders take jobs now (the ETA's divisor; 0: none)."""

    @abstractmethod
    def describe(self) -> str:
        """One phrase for the service's start line: what grades its jobs."""
