"""The student's harness process for one submission (grader/grading/cases.py runs its cases through it): started
on the first request, restarted after every failure, every request that runs the student's code held to the
submission's time budget, and every reply it gave distrusted once its channel is found forged."""
from __future__ import annotations

import time
from typing import Callable

from grader.backends.base import Backend
from grader.core.status import CaseStatus
from grader.run.budget import TimeBudget, case_words
from grader.outcomes.build_result import BuildResult
from grader.outcomes.results import CaseOutcome
from grader.run.runner import HarnessFailure
from grader.run.server import Server


class StudentProcess(Server):
    """The student's harness process for one submission, restarted after every failure.

    A reply forged on the harness's channel is found at the latest when the process ends (the
    harness's own reply follows it); then no reply that process gave can be trusted, and every case
    it answered becomes a protocol failure.

    Every request that runs the student's code (check, time) is held to the submission's time budget
    (grader/run/budget.py): its limit is what is left of the budget when that is less than the case's, and a
    request stopped there fails as `out_of_budget`. A new process answers `hello` first, uncounted."""

    RUNS_CODE = ("check", "time")

    def __init__(self, backend: Backend, build: BuildResult, gpu: str | None, budget: TimeBudget | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.backend, self.build, self.gpu, self.budget, self.clock = backend, build, gpu, budget, clock
        self.server: Server | None = None
        self.answered: list[CaseOutcome] = []  # cases decided by the current process's replies
        self.case = ""  # the case the last check asked for, in words
        self.last_seconds = 0.0  # what the last request that got a reply took (wall clock)

    def request(self, message: dict, timeout: float) -> dict:
        counted = self.budget is not None and message.get("op") in self.RUNS_CODE
        if message.get("op") == "check":
            self.case = case_words(message)
        limit = self.budget.limit(timeout, self.pause, self.close) if counted else timeout
        if counted and limit <= 0:
            self.budget.charge(0.0)
            self.close()
            raise HarnessFailure(self.budget.run_out(self.case), CaseStatus.OUT_OF_BUDGET)
        charged = False
        try:
            if self.server is None:
                self.server = self.backend.student_server(self.build, self.gpu)
                self.server.request({"op": "hello"}, timeout)  # the process starting: no student code runs yet
            started = self.clock()
            try:
                reply = self.server.request(message, limit)
                self.last_seconds = self.clock() - started
            finally:
                if counted:
                    self.budget.charge(self.clock() - started)
                    charged = True
        except HarnessFailure as failure:
            if counted and not charged:
                self.budget.charge(0.0)
            if failure.kind == CaseStatus.PROTOCOL:
                self._distrust(str(failure))
            self.close()
            if counted and failure.kind == CaseStatus.TIMEOUT and limit < timeout:  # the budget's limit, not the case's
                raise HarnessFailure(self.budget.run_out(self.case), CaseStatus.OUT_OF_BUDGET, failure.stderr) from None
            raise
        if reply.get("context_lost"):
            self.close()  # the process exits after such a fault; the next case gets a new one
        return reply

    def pause(self):
        """Stops the student's processes until the next request (paired.py: while the solution runs)."""
        if self.server is not None:
            self.server.pause()

    def answered_by(self, case: CaseOutcome) -> CaseOutcome:
        self.answered.append(case)
        return case

    def _distrust(self, reason: str):
        for case in self.answered:
            if case.status != CaseStatus.PROTOCOL:
                case.status, case.message, case.hint = CaseStatus.PROTOCOL, reason, ""
                if case.paired is not None:
                    case.paired = None
        self.answered = []

    def release(self, timeout: float):
        """Frees the case's GPU memory, if the process is still there to hold it."""
        if self.server is not None:
            try:
                self.request({"op": "release"}, timeout)
            except HarnessFailure:
                pass

    def close(self):
        if self.server is not None:
            self.server.close()
            violation = self.server.violation
            self.server = None
            if violation:
                self._distrust(violation)
        self.answered = []
