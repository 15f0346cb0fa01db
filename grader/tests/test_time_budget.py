"""A submission's time budget (grader/run/budget.py), on a simulated GPU with simulated time (grader/tests/fakes.py):
its code may run [limits] time_budget_multiple x the solution's time for the same requests + time_budget_extra
seconds; the request that would pass it is stopped where the budget ends, and the rest is not run."""
from __future__ import annotations

from pathlib import Path

import pytest

from grader.run.budget import SolutionTimes, TimeBudget
from grader.grading.grade import GradeOptions, grade, grade_single
from grader.grading.student_process import StudentProcess
from grader.intake.submission import Submission
from grader.reports.report import write_feedback
from grader.core.rubric import RubricError, load_rubric
from grader.tests.conftest import opened, scores_of, small_rubric_text, write_submission
from grader.tests.fakes import (REQUEST_SECONDS, RUN_OVERHEAD_SECONDS, SOLUTION_MS, FakeBackend, FakeServer,
                                SimClock)

CASE_LIMIT = 5
MULTIPLE, EXTRA = 20, 10
ADD_SHAPES = ["1x1", "1x1000", "1000x1", "37x211", "211x37", "1031x977", "70000x3", "3x70000"]
SLEEP = 1.0  # seconds a run of the sleeping kernel takes


def check_seconds(kernel_ms: float, runs: int = 2) -> float:
    """What one check request takes on the fake GPU."""
    return REQUEST_SECONDS + runs * (kernel_ms / 1e3 + RUN_OVERHEAD_SECONDS)


SOLUTION_CHECK = check_seconds(SOLUTION_MS)
SLEEPER_CHECK = check_seconds(SOLUTION_MS + SLEEP * 1e3)


@pytest.fixture
def budget_rubric(tmp_path, rubric, registry):
    path = tmp_path / "budget_rubric.toml"
    path.write_text(small_rubric_text(rubric, shapes={"add": ADD_SHAPES},
                                      limits={"case": CASE_LIMIT, "time_budget_multiple": MULTIPLE,
                                              "time_budget_extra": EXTRA}))
    return load_rubric(path, registry)


def grade_on_sim(tmp_path, registry, rubric, files: dict[str, str], backend: FakeBackend | None = None):
    entry = write_submission(tmp_path / "subs", "student", files)
    backend = backend or FakeBackend(sim=SimClock())
    return grade_single(entry, tmp_path / "results", rubric, registry, backend, None, seed=1)


def add_cases(result):
    return [c for c in result.cases if c.task == "add" and c.kind == "correctness"]


def test_a_kernel_that_sleeps_in_every_case_is_stopped_once_its_budget_is_used(tmp_path, registry, budget_rubric):
    result = grade_on_sim(tmp_path, registry, budget_rubric, {"add.cu": f"// fake: ok sleep={SLEEP}\n"}).result
    # Case k may run while 2.01 s x k stays within 10 s + 20 x the solution's 0.01 s x k: five cases, and the
    # sixth is stopped where the budget ends.
    full = max(k for k in range(1, len(ADD_SHAPES) + 1) if SLEEPER_CHECK * k <= EXTRA + MULTIPLE * SOLUTION_CHECK * k)
    assert full == 5
    assert [c.status for c in add_cases(result)] == ["ok"] * full + ["out_of_budget"] * (len(ADD_SHAPES) - full)
    budget = result.budget
    assert budget.credited == pytest.approx(SOLUTION_CHECK * (full + 1))  # the solution, on the same six requests
    assert budget.allowed == pytest.approx(MULTIPLE * SOLUTION_CHECK * (full + 1) + EXTRA)
    assert budget.spent == pytest.approx(budget.allowed)  # stopped where the budget ends, not at the case limit
    assert budget.spent < 3 * CASE_LIMIT < len(ADD_SHAPES) * CASE_LIMIT


def test_the_case_that_ran_out_says_so_and_every_later_case_names_it(tmp_path, registry, budget_rubric):
    result = grade_on_sim(tmp_path, registry, budget_rubric, {"add.cu": f"// fake: ok sleep={SLEEP}\n"}).result
    stopped, *rest = [c for c in add_cases(result) if c.status == "out_of_budget"]
    assert stopped.shape == ADD_SHAPES[5]
    assert stopped.message.startswith("stopped: your code had used up its time budget here, after 11.2 s of running "
                                      "(the budget is 20 x the reference solution's 0.06 s for the same 6 requests, "
                                      "plus 10 s: 11.2 s)")
    assert rest and all(c.message == f"not run: your code had used up this submission's time budget at add float32 "
                                     f"{ADD_SHAPES[5]} (the budget is 20 x the reference solution's 0.06 s for the "
                                     "same 6 requests, plus 10 s: 11.2 s)" for c in rest)


def test_tasks_after_the_budget_ran_out_are_not_run_and_missing_files_stay_missing(tmp_path, registry, budget_rubric):
    files = {"add.cu": f"// fake: ok sleep={SLEEP}\n", "transpose.cu": "// fake: ok\n", "dot.cu": "// fake: ok\n"}
    result = grade_on_sim(tmp_path, registry, budget_rubric, files).result
    statuses = {(c.task, c.kind): {x.status for x in result.cases if (x.task, x.kind) == (c.task, c.kind)}
                for c in result.cases}
    assert statuses[("fill", "correctness")] == {"missing"}  # before add, and no file: as always
    assert statuses[("transpose", "correctness")] == statuses[("dot", "correctness")] == {"out_of_budget"}
    assert ("transpose", "timed") not in statuses and ("dot", "timed") not in statuses  # never correct, never timed


def test_cases_over_the_budget_count_as_failed(tmp_path, registry, budget_rubric):
    result = grade_on_sim(tmp_path, registry, budget_rubric, {"add.cu": f"// fake: ok sleep={SLEEP}\n"}).result
    add = next(s for s in scores_of(result, budget_rubric) if s.task == "add")
    assert (add.cases_passed, add.cases_total) == (5, len(ADD_SHAPES))
    assert add.correctness == pytest.approx(budget_rubric.task("add").correctness_points * 5 / len(ADD_SHAPES))
    assert add.performance == 0


def test_compute_sanitizer_does_not_run_once_the_budget_ran_out(tmp_path, registry, budget_rubric):
    result = grade_on_sim(tmp_path, registry, budget_rubric, {"add.cu": f"// fake: ok sleep={SLEEP}\n"}).result
    add = [f for f in result.sanitizer if f.task == "add"]
    assert [f.tool for f in add] == list(budget_rubric.sanitizer.tools)
    assert {f.status for f in add} == {"skipped"}
    assert {f.message for f in add} == {f"not run: this submission's time budget ran out at add float32 {ADD_SHAPES[5]}"}


def test_the_feedback_names_the_case_that_ran_out_and_the_budget(tmp_path, registry, budget_rubric):
    grade_on_sim(tmp_path, registry, budget_rubric, {"add.cu": f"// fake: ok sleep={SLEEP}\n"})
    with opened(tmp_path / "results") as store:
        write_feedback(store, budget_rubric, tmp_path / "feedback")
    page = (tmp_path / "feedback" / "student.md").read_text()
    assert "| add | 2.5 / 4 |" in page and "3 of 8 cases over its time budget" in page
    assert (f"**over its time budget**: float32 at {ADD_SHAPES[5]} (1 case): stopped: your code had used up its time "
            "budget here") in page
    assert f"not run: your code had used up this submission's time budget at add float32 {ADD_SHAPES[5]}" in page


def test_a_timed_run_that_would_pass_the_budget_is_stopped_where_it_ends(tmp_path, registry, rubric):
    """1.5 s a run at a shape with a dimension over 1000: the correctness check at 1031x977 (3 s) and the timed
    check at 8192x8192 (1.5 s) fit the budget of 5 s + 20 x the solution's time; the first timed run (1.5 s, no
    warm-up after so slow a check) would not, and is stopped where the budget ends."""
    path = tmp_path / "r.toml"
    path.write_text(small_rubric_text(rubric, shapes={"add": ["1x1", "1031x977", "37x211"]},
                                      limits={"case": CASE_LIMIT, "time_budget_multiple": MULTIPLE,
                                              "time_budget_extra": 5}))
    result = grade_on_sim(tmp_path, registry, load_rubric(path, registry),
                          {"add.cu": "// fake: sleeps-when-large sleep=1.5\n"}).result
    assert [c.status for c in add_cases(result)] == ["ok"] * 3
    (timed,) = [c for c in result.cases if c.task == "add" and c.kind == "timed"]
    assert timed.status == "out_of_budget" and timed.message.startswith("stopped: ")
    budget = result.budget
    # the solution's side: the three correctness checks and the timed check (the student's timed run never ended)
    assert budget.credited == pytest.approx(SOLUTION_CHECK * 3 + check_seconds(SOLUTION_MS, runs=1))
    assert budget.spent == pytest.approx(budget.allowed)


def test_the_solutions_check_and_paired_runs_of_a_timed_case_are_credited(tmp_path, registry, budget_rubric):
    result = grade_on_sim(tmp_path, registry, budget_rubric, {"add.cu": "// fake: ok speed=0.5\n"}).result
    (timed,) = [c for c in result.cases if c.task == "add" and c.kind == "timed"]
    pairs = len(timed.paired.pairs)
    assert timed.status == "ok" and pairs == budget_rubric.timing.min_pairs
    warmup = budget_rubric.timing.warmup
    solution_runs = check_seconds(SOLUTION_MS, runs=1) + check_seconds(SOLUTION_MS, runs=warmup + 1) \
        + (pairs - 1) * check_seconds(SOLUTION_MS, runs=1)
    # and the eight correctness checks', measured before the timed case
    assert result.budget.credited == pytest.approx(SOLUTION_CHECK * len(ADD_SHAPES) + solution_runs)
    assert result.budget.requests == len(ADD_SHAPES) + 1 + pairs


def test_a_submission_well_within_its_extra_seconds_and_untimed_runs_no_solution_request_for_the_budget(
        tmp_path, registry, rubric, all_task_files, monkeypatch):
    """On a backend that times nothing (the CPU's), a submission like the solution: every case runs; the solution's
    times are never needed (they could not change anything), so none is measured."""
    measured = []
    real = SolutionTimes._measure
    monkeypatch.setattr(SolutionTimes, "_measure", lambda self, message, make_room: measured.append(message)
                        or real(self, message, make_room))

    class Untimed(FakeBackend):
        timed = False
        untimed_reason = "not timed: this test's backend times nothing"

    result = grade_on_sim(tmp_path, registry, rubric, all_task_files, Untimed(sim=SimClock())).result
    assert {c.status for c in result.cases} - {"gpu_only"} == {"ok"} and result.cases
    assert measured == [] and result.budget.spent < rubric.limits.time_budget_extra


def test_the_solutions_times_are_measured_once_per_grading_run(tmp_path, registry, budget_rubric, monkeypatch):
    """Two submissions that reach a timed case in one grading run: the solution's correctness times, measured
    before the first one's timed case, are the second one's too."""
    measured = []
    real = SolutionTimes._measure
    monkeypatch.setattr(SolutionTimes, "_measure", lambda self, message, make_room: measured.append(message)
                        or real(self, message, make_room))
    for student in ("a", "b"):
        write_submission(tmp_path / "subs", student, {"add.cu": "// fake: ok\n"})
    options = GradeOptions(tmp_path / "subs", tmp_path / "results", gpus=[None], progress=False, seed=1)
    summary = grade(options, budget_rubric, registry, FakeBackend(sim=SimClock()))
    assert [c.status for r in summary.graded for c in r.cases if c.task == "add"] == ["ok"] * 2 * (len(ADD_SHAPES) + 1)
    assert len(measured) == len(ADD_SHAPES) == len({m["shape"] for m in measured})


def test_the_seconds_spent_measuring_the_solution_are_counted_once_per_request():
    """What the first submission of a run paid for the solution's times, which the later ones reuse (the service's
    ETA leaves it out of a job's device seconds: grader/store/jobs.py's recent_stages)."""
    sim = SimClock()
    times = SolutionTimes(FakeServer(None, sim=sim), CASE_LIMIT, sim)
    message = {"op": "check", "task": "add", "dtype": "float32", "shape": "1x1", "seed": 1, "check_runs": 2}
    first = times.of(message, lambda: None)
    assert times.measuring == pytest.approx(sim()) and times.measuring >= first > 0
    spent = times.measuring
    assert times.of(message, lambda: None) == first and times.measuring == spent  # reused: nothing measured
    times.of({**message, "shape": "1x1000"}, lambda: None)
    assert times.measuring == pytest.approx(sim()) and times.measuring > spent


def test_the_solutions_correctness_times_are_measured_before_a_timed_case_not_in_it(tmp_path, registry, rubric):
    """The solution's process holds the timed case from its check to its last pair: measuring another request there
    would replace it (the harness then refuses to time, or times the wrong case). Here the budget first could run
    out at the timed case's first timed run, after a 2.4 s check at 8192x8192."""
    path = tmp_path / "r.toml"
    path.write_text(small_rubric_text(rubric, shapes={"add": ["1x1", "37x211", "211x37"]},
                                      limits={"case": CASE_LIMIT, "time_budget_extra": 7}))
    result = grade_on_sim(tmp_path, registry, load_rubric(path, registry),
                          {"add.cu": "// fake: sleeps-when-large sleep=2.4\n"}).result
    (timed,) = [c for c in result.cases if c.task == "add" and c.kind == "timed"]
    assert timed.status == "ok" and timed.paired.stop_reason == "no_credit"
    assert timed.paired.pairs[0].solution_ms == pytest.approx(SOLUTION_MS)  # the solution timed its own case


def test_the_default_multiple_leaves_room_for_every_kernel_paired_timing_still_times(rubric):
    """paired.py stops timing a kernel slower than 2 / s_zero x the solution after one pair (no credit possible);
    every slower-but-timed kernel keeps its pairs within the multiple."""
    assert rubric.limits.time_budget_multiple >= max(2 / t.s_zero for t in rubric.tasks)


def test_a_kernel_as_slow_as_paired_timing_still_times_is_graded_in_full(tmp_path, registry, rubric, all_task_files):
    slowest = min(t.s_zero for t in rubric.tasks) / 2
    files = {name: f"// fake: ok speed={slowest}\n" for name in all_task_files}
    result = grade_on_sim(tmp_path, registry, rubric, files).result
    assert "out_of_budget" not in {c.status for c in result.cases}
    assert {c.status for c in result.cases if c.kind == "correctness"} == {"ok"}


def test_starting_a_process_of_the_students_is_not_counted(tmp_path, registry, budget_rubric):
    """A new process answers `hello` before its first case (no student code runs then): its start, however slow,
    is not the code's time; the check after it is."""
    sim = SimClock()

    class SlowStart(FakeServer):
        def request(self, message, timeout):
            if message["op"] == "hello":
                sim.advance(3.0)
            return super().request(message, timeout)

    class Backend(FakeBackend):
        def student_server(self, build, gpu):
            return SlowStart(self._files[build.harness], sim=sim, name="student")

    backend = Backend(sim=sim)
    build = backend.build(Submission("s", Path("."), files={"add.cu": b"// fake: ok\n"}), 10)
    budget = TimeBudget(MULTIPLE, EXTRA, SolutionTimes(FakeServer(None, sim=sim), CASE_LIMIT, sim))
    student = StudentProcess(backend, build, None, budget, sim)
    message = {"op": "check", "task": "add", "dtype": "float32", "shape": "1x1", "seed": 1, "check_runs": 2}
    for _ in range(2):
        budget.same_as_solution(message)
        assert student.request(message, CASE_LIMIT)["status"] == "ok"
        student.close()  # the next request starts a new process
    assert sim() == pytest.approx(2 * (3.0 + SOLUTION_CHECK))
    assert budget.spent == pytest.approx(2 * SOLUTION_CHECK)


def test_a_multiple_below_one_is_refused(tmp_path, rubric, registry):
    path = tmp_path / "r.toml"
    path.write_text(small_rubric_text(rubric, limits={"time_budget_multiple": 0.5}))
    with pytest.raises(RubricError, match="'time_budget_multiple' must be at least 1"):
        load_rubric(path, registry)


def test_requests_the_solution_cannot_run_on_this_backend_count_on_neither_side(tmp_path, registry, rubric):
    """On the CPU backend the solution's matmul_fast needs a GPU (inline PTX), so nothing gives the time the same
    work takes: a student's matmul_fast cases are held to the case limit alone, and cost nothing of the budget."""
    needs_gpu = "needs a GPU: uses inline PTX at matmul_fast.cu:112"

    class CpuSolution(FakeServer):
        def request(self, message, timeout):
            if message["op"] == "check" and message["task"] == "matmul_fast":
                return {"op": "check", "status": "build_error", "message": needs_gpu, "context_lost": False}
            return super().request(message, timeout)

    class CpuLike(FakeBackend):
        timed = False
        untimed_reason = "not timed: this test's backend times nothing"

        def solution_server(self, gpu):
            return CpuSolution(None, sim=self.sim)

    shapes = ["1x1x1", "1x257x13", "257x1x13", "37x41x43", "96x160x96", "70000x5x3", "5x70000x3", "515x509x521"]
    path = tmp_path / "r.toml"
    path.write_text(small_rubric_text(rubric, shapes={"matmul_fast": shapes, "add": ["1x1", "37x211"]},
                                      limits={"case": CASE_LIMIT, "time_budget_extra": EXTRA}))
    files = {"matmul_fast.cu": f"// fake: ok sleep={SLEEP}\n", "add.cu": f"// fake: ok sleep={SLEEP}\n"}
    result = grade_on_sim(tmp_path, registry, load_rubric(path, registry), files, CpuLike(sim=SimClock())).result
    assert {c.status for c in result.cases if c.task in ("matmul_fast", "add")} == {"ok"}  # 10 cases x 2 s, all run
    budget = result.budget
    assert [c.exempt for c in budget.checks] == [False, False] + [True] * len(shapes)  # add first, in rubric order
    assert budget.spent == pytest.approx(2 * SLEEPER_CHECK) and budget.requests == 2


def test_an_extra_below_the_case_limit_is_refused(tmp_path, rubric, registry):
    path = tmp_path / "r.toml"
    path.write_text(small_rubric_text(rubric, limits={"case": 20, "time_budget_extra": 10}))
    with pytest.raises(RubricError, match="one case that hangs would use up a submission's time budget"):
        load_rubric(path, registry)
