"""A submission's time budget: how long its code may hold the GPU (on the CPU backend, the grading worker),
relative to the solution's time for the same work.

Every request that runs the student's code (a correctness check, a timed case's check and each of its timed
runs) is measured by wall clock, and all of them together may take at most

    [limits] time_budget_multiple x (the solution's time for the same requests) + time_budget_extra

seconds. Each request's own limit is the smaller of the case limit and what is left of the budget, so a request
that would pass the budget is stopped where it does: the submission holds the GPU for about its budget, never
for (cases x case limit). Its remaining cases are then not run (status `out_of_budget`, messages naming the case
where the budget ran out and the budget's numbers); compute-sanitizer does not run on it either.

The solution's side: a correctness request is sent to the solution's own process of that GPU worker, with the
same message (same seed, shape and runs), and timed once per grading run (SolutionTimes); a timed case's
solution requests are the paired runs themselves, credited as they happen. The solution's correctness times are
measured only once the budget could run out within the next request (before that, they cannot change anything),
or before a timed case (whose case the solution's process holds from its check to its last pair), so a
submission well inside its extra seconds that reaches no timed case costs no solution run, and the measurements
are shared by the grading run's later submissions.

Starting a process of the student's is not counted: no student code runs before its harness answers `hello`
(the build gate refuses static constructors), and a submission whose cases crash gets a new process for each of
them (in the sandbox, with a new CUDA context), which would otherwise count against it.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Callable

from grader.run.server import Server
from grader.outcomes.build_result import NEEDS_GPU
from grader.core.errors import GraderError
from grader.run.runner import HarnessFailure
from grader.core.status import CaseStatus


class SolutionTimes:
    """The solution's wall time for each correctness request, measured once per grading run, on one worker's
    solution process (`solution`: its harness server)."""

    def __init__(self, solution, timeout: float, clock: Callable[[], float] = time.monotonic):
        self.solution, self.timeout, self.clock = solution, timeout, clock
        self.seconds: dict[str, float] = {}
        # Seconds spent measuring, all requests together: the submission that asked first paid them on its device,
        # every later one of the run reuses the times (the service's ETA leaves them out of its pace).
        self.measuring = 0.0

    def of(self, message: dict, make_room: Callable[[], None]) -> float | None:
        """Seconds, or None where the solution cannot run the request on this backend (on the CPU backend, a
        solution file that needs a GPU): such a request counts on neither side."""
        key = json.dumps(message, sort_keys=True)
        if key not in self.seconds:
            start = self.clock()
            try:
                self.seconds[key] = self._measure(message, make_room)
            finally:
                self.measuring += self.clock() - start
        return self.seconds[key]

    def _measure(self, message: dict, make_room: Callable[[], None]) -> float | None:
        """The solution's time for `message`; its failure is the grader's, never the submission's."""
        for _ in range(2):
            start = self.clock()
            try:
                reply = self.solution.request(message, self.timeout)
                took = self.clock() - start
                self.solution.request({"op": "release"}, self.timeout)
            except HarnessFailure as e:
                raise GraderError(f"the solution's process failed at {case_words(message)} (measuring a "
                                  f"submission's time budget): {e}") from None
            if reply.get("status") in (CaseStatus.OK, CaseStatus.GPU_ONLY):
                return took
            if reply.get("message", "").startswith(NEEDS_GPU):  # the CPU backend cannot run the solution's file
                return None
            # The GPU is shared with the student's process: if it holds the memory, the solution cannot run.
            make_room()
        raise GraderError(f"the solution failed its own check at {case_words(message)} (measuring a submission's "
                          f"time budget): {reply}")


class Credited(Server):
    """A solution server whose requests that run the same work as the student's (a timed case's check and
    timed runs) are timed and credited to the student's budget."""

    def __init__(self, solution: Server, budget: TimeBudget, clock: Callable[[], float] = time.monotonic):
        self.solution, self.budget, self.clock = solution, budget, clock

    def request(self, message: dict, timeout: float) -> dict:
        start = self.clock()
        reply = self.solution.request(message, timeout)
        if message.get("op") in ("check", "time"):
            self.budget.credit(self.clock() - start)
        return reply

    def close(self):
        """Nothing: the solution's process is its grading worker's, which closes it once all its submissions are
        graded."""


def case_words(message: dict) -> str:
    return f"{message['task']} {message['dtype']} {message['shape']}"


@dataclass
class _Check:
    """A correctness request of the student's, matched by the solution's time for the same message."""
    message: dict
    student: float = 0.0
    solution: float | None = None  # None: not measured yet
    exempt: bool = False  # the solution cannot run it on this backend: neither side's time counts


class TimeBudget:
    """One submission's budget (module doc): charged with its requests' times, credited with the solution's."""

    def __init__(self, multiple: float, extra: float, solution: SolutionTimes | None):
        self.multiple, self.extra, self.solution = multiple, extra, solution
        self.checks: list[_Check] = []  # its correctness requests, in order
        self.timed_student = 0.0  # seconds of its timed cases' requests (checks and timed runs)
        self.timed_solution = 0.0  # the solution's seconds for the same, as they ran
        self.timed_requests = 0  # the solution's requests in its timed cases
        self.current: _Check | None = None  # the correctness request the next charge is for
        self.ran_out_at = ""  # the case during which the budget ran out ("add float32 1031x977")

    @classmethod
    def from_rubric(cls, limits, solution: SolutionTimes | None) -> TimeBudget:
        return cls(limits.time_budget_multiple, limits.time_budget_extra, solution)

    @property
    def spent(self) -> float:
        """Seconds of the student's requests that count."""
        return self.timed_student + sum(c.student for c in self.checks if not c.exempt)

    @property
    def credited(self) -> float:
        """The solution's seconds for the same requests, as far as they are measured."""
        return self.timed_solution + sum(c.solution for c in self.checks if c.solution is not None)

    @property
    def requests(self) -> int:
        """The requests the solution's time covers (or will, once measured)."""
        return self.timed_requests + sum(not c.exempt for c in self.checks)

    @property
    def pending(self) -> list[_Check]:
        return [c for c in self.checks if c.solution is None and not c.exempt]

    @property
    def allowed(self) -> float:
        """The budget for the requests so far (as far as the solution's times are measured)."""
        return self.multiple * self.credited + self.extra

    @property
    def ran_out(self) -> bool:
        return bool(self.ran_out_at)

    def same_as_solution(self, message: dict):
        """The next request is a correctness check: the solution's time for the same message counts."""
        self.current = _Check(message)
        self.checks.append(self.current)

    def credit(self, seconds: float):
        """The solution ran the same request as the student's (a timed case's check or timed run)."""
        self.timed_solution += seconds
        self.timed_requests += 1

    def charge(self, seconds: float):
        """The student's last request took `seconds` (once per request, 0 when it never started)."""
        if self.current is not None:
            self.current.student += seconds
            self.current = None
        else:
            self.timed_student += seconds

    def limit(self, timeout: float, pause: Callable[[], None], make_room: Callable[[], None]) -> float:
        """How long the next request of the student's code may take: `timeout` (the case limit), or what is
        left of the budget when that is less (0 or below: nothing is left). `pause` stops the student's
        processes while the solution is measured; `make_room` ends them, if the solution cannot run beside
        them."""
        if self.spent + timeout <= self.allowed:  # the solution's pending times can only add to the budget
            return timeout
        if self.pending:
            pause()
            self.settle(make_room)
        if self.current is not None and self.current.exempt:
            return timeout
        return min(timeout, self.allowed - self.spent)

    def settle(self, make_room: Callable[[], None] = lambda: None):
        """Measures the solution's time for every correctness request not measured yet."""
        for check in self.pending:
            seconds = self.solution.of(check.message, make_room)
            check.exempt, check.solution = seconds is None, seconds

    def run_out(self, case: str) -> str:
        """Records that the budget ran out during `case`; the message of that case."""
        self.ran_out_at = case
        return (f"stopped: your code had used up its time budget here, after {self.spent:.1f} s of running "
                f"({self.terms()}); this case and the rest of this submission were not run to the end")

    def terms(self) -> str:
        return (f"the budget is {self.multiple:g} x the reference solution's {self.credited:.2f} s for the same "
                f"{self.requests} request{'s' if self.requests != 1 else ''}, plus {self.extra:g} s: "
                f"{self.allowed:.1f} s")

    def not_run(self) -> str:
        """The message of every case after the one where the budget ran out."""
        return (f"not run: your code had used up this submission's time budget at {self.ran_out_at} "
                f"({self.terms()})")

