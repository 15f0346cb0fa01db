"""A case that runs into its limit is run once more, alone, before it is called a hang (grader/grading/cases.py,
_run_again_alone), where the limit is wall clock (a GPU's: a busy host can push a correct kernel past it). On the
fake backend with simulated time: the GPU's seconds and the budget's charge are counted, not waited for."""
from __future__ import annotations

from pathlib import Path

from grader.grading.cases import AGAIN_STILL, grade_submission
from grader.intake.submission import Submission
from grader.tests.fakes import FakeBackend, FakeServer, SimClock


class Counting(FakeBackend):
    """The fake backend, counting the student's processes it starts."""

    def __init__(self, case_clock: str = "wall"):
        super().__init__(sim=SimClock())
        self.started = 0
        self.case_clock = case_clock

    def student_server(self, build, gpu):
        self.started += 1
        return super().student_server(build, gpu)


def graded(registry, rubric, fill: str, case_clock: str = "wall"):
    backend = Counting(case_clock)
    files = {t.file: b"// fake: ok\n" for t in registry.tasks}
    files["fill.cu"] = fill.encode()
    sub = Submission("again", Path("."), files=files)
    result = grade_submission(sub, backend.build(sub, 10), backend, None, FakeServer(None, sim=backend.sim),
                              rubric, registry, seed=7)
    return result, backend, [c for c in result.cases if c.task == "fill" and c.kind == "correctness"]


def test_a_case_past_its_limit_once_passes_when_run_again_alone_and_its_task_goes_on(small_rubric, registry):
    first = small_rubric.task("fill").shapes[0]
    result, backend, fill = graded(registry, small_rubric, f"// fake: ok\n// fake-at: {first} hang-once\n")
    assert {c.status for c in fill} == {"ok"}, [(c.shape, c.status, c.message) for c in fill]
    assert fill[0].message.startswith("passed when run again alone, in a new process of its own, after its first "
                                      f"run found no result within the {small_rubric.limits.case:.0f} s limit")
    assert all(c.message == "" for c in fill[1:])  # the rest of the task ran as usual, once each
    # The one that hung was charged its limit; the run again was not (a hang costs the student what it did).
    assert small_rubric.limits.case <= result.budget.spent < small_rubric.limits.case + 5


def test_a_kernel_that_hangs_again_keeps_its_timeout_charged_once_and_the_rest_of_its_task_is_skipped(small_rubric,
                                                                                                    registry):
    result, backend, fill = graded(registry, small_rubric, "// fake: hang\n")
    assert fill[0].status == "timeout" and fill[0].message.endswith(AGAIN_STILL), fill[0].message
    assert "the kernel probably never finishes" in fill[0].message
    assert {c.status for c in fill[1:]} == {"skipped"}  # no third wait
    assert small_rubric.limits.case <= result.budget.spent < small_rubric.limits.case + 5
    # The run again is a process of its own: beside the processes a correct submission gets, the one that hung
    # (replaced after it) and the one that ran it again.
    _, plain, _ = graded(registry, small_rubric, "// fake: ok\n")
    assert backend.started == plain.started + 2, (backend.started, plain.started)


def test_no_run_again_past_the_submissions_time_limit(small_rubric, registry):
    from dataclasses import replace
    tight = replace(small_rubric, limits=replace(small_rubric.limits, submission=small_rubric.limits.case / 2))
    # (real seconds: the deadline is the wall clock's; the fake's hang spends only simulated ones)
    _, _, fill = graded(registry, tight, "// fake: hang\n")
    assert fill[0].status == "timeout" and AGAIN_STILL not in fill[0].message


def test_where_a_limit_counts_cpu_time_a_hang_is_not_run_again(small_rubric, registry):
    """The CPU backend's limit counts the CPU time a case got (grader/run/runner.py): load cannot push a correct
    kernel past it, so a second run would only hold the worker one limit longer."""
    _, backend, fill = graded(registry, small_rubric, "// fake: hang\n", case_clock="cpu")
    assert fill[0].status == "timeout" and AGAIN_STILL not in fill[0].message
    _, plain, _ = graded(registry, small_rubric, "// fake: ok\n", case_clock="cpu")
    assert backend.started == plain.started + 1
