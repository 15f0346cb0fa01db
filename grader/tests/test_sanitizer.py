"""compute-sanitizer: reading its report (sample text, see sanitizer_samples/README.md), the command it
runs, the penalty, the store, and the feedback, on the fake backend."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from grader.shared import sanitizer
from grader.grading.grade import GradeOptions, grade
from grader.reports.folder import write_reports
from grader.outcomes.results import SanitizerOutcome
from grader.store.store import Store
from grader.core.rubric import load_rubric
from grader.tests.conftest import opened, small_rubric_text, write_submission
from grader.tests.old_stores import without_table
from grader.tests.fakes import FakeBackend

SAMPLES = Path(__file__).parent / "sanitizer_samples"
PREFIX = "==sanitizer-0123456789abcdef=="


def sample(name: str) -> str:
    """A sample report with the grader's own random prefix in place of the tool's default."""
    return (SAMPLES / name).read_text().replace("=========", PREFIX)


def test_memcheck_errors_are_counted_and_the_first_findings_kept():
    found = sanitizer.parse(sample("memcheck_out_of_bounds.txt"), PREFIX)
    assert found.errors == 3
    lines = found.report.splitlines()
    assert lines[0] == "Invalid __global__ write of size 4 bytes"
    assert lines[1].startswith("    at void add_kernel<float>") and lines[1].endswith("add.cu:12")
    assert "Address 0x7f3c9c000000 is out of bounds" in found.report
    assert "COMPUTE-SANITIZER" not in found.report and "ERROR SUMMARY" not in found.report
    assert sanitizer.meaning(found.report).startswith("your kernel wrote to global memory outside every array")


def test_the_first_findings_offset_in_a_log_is_where_its_first_finding_starts():
    """The byte offset the tool's log had reached when a request was answered tells which request's launches
    the first finding came from (grader/backends/local.py): it must be the finding's line, not the banner's."""
    for name, first in (("memcheck_out_of_bounds.txt", "Invalid __global__ write"),
                        ("racecheck_shared_race.txt", "Error: Race reported")):
        text = "é" + sample(name)  # a byte count, not a character count
        at = sanitizer.first_finding_at(text, PREFIX)
        assert at is not None
        assert text.encode()[at:].decode().startswith(PREFIX) and first in text.encode()[at:].decode().splitlines()[0]
    for clean in ("memcheck_clean.txt", "racecheck_clean.txt"):
        assert sanitizer.first_finding_at(sample(clean), PREFIX) is None


def test_the_cpu_checkers_finding_is_named_at_the_request_that_made_it():
    said = "index 7 is outside\n  the CPU backend saw: a write past the end of out"
    answers = [{"status": "ok"}, {"status": "error", "message": said}, {"status": "error", "message": said}]
    assert sanitizer.first_cpu_finding(answers) == 1
    assert sanitizer.first_cpu_finding([{"status": "error", "message": "no report"}]) is None


def test_the_api_errors_that_follow_a_fault_are_left_out_and_a_lone_one_is_kept():
    """A faulting kernel makes every later CUDA call fail: seven such lines buried the one finding that
    matters on a sample student's page."""
    fault = sample("memcheck_out_of_bounds.txt")
    after = "\n".join(f'{PREFIX} Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" '
                      f"on CUDA API call to cudaMemcpy.\n{PREFIX}" for _ in range(7))
    found = sanitizer.parse(fault.replace(f"{PREFIX} ERROR SUMMARY", after + f"\n{PREFIX} ERROR SUMMARY"), PREFIX)
    assert "Program hit" not in found.report and found.report.count("Invalid __global__ write") == 2
    lone = (f"{PREFIX} Program hit cudaErrorInvalidValue (error 1) due to \"invalid argument\" on CUDA API call to "
            f"cudaMemcpy.\n{PREFIX}\n{PREFIX} ERROR SUMMARY: 1 error\n")
    assert sanitizer.parse(lone, PREFIX).report.startswith("Program hit cudaErrorInvalidValue")


def test_a_racecheck_hazard_is_counted_as_an_error_and_explained():
    found = sanitizer.parse(sample("racecheck_shared_race.txt"), PREFIX)
    assert found.errors == 1
    assert found.report.splitlines()[0].startswith("Error: Race reported between Write access")
    assert "matmul_tiled.cu:22 [2048 hazards]" in found.report
    assert "__syncthreads()" in sanitizer.meaning(found.report)


@pytest.mark.parametrize("name", ["memcheck_clean.txt", "racecheck_clean.txt", "racecheck_warnings_only.txt"])
def test_a_clean_report_has_no_errors(name):
    assert sanitizer.parse(sample(name), PREFIX).errors == 0


def test_a_report_without_its_summary_has_no_verdict():
    found = sanitizer.parse(sample("memcheck_cut_off.txt"), PREFIX)
    assert found.errors is None and "Invalid __global__ read" in found.report


def test_lines_without_the_runs_own_prefix_are_ignored():
    """Code under test that prints a clean summary in the tool's default format cannot pass for the tool."""
    forged = "========= ERROR SUMMARY: 0 errors\n" + sample("memcheck_out_of_bounds.txt")
    assert sanitizer.parse(forged, PREFIX).errors == 3
    only_forged = (SAMPLES / "memcheck_clean.txt").read_text()  # the default prefix: not this run's
    assert sanitizer.parse(only_forged, PREFIX).errors is None


def test_the_report_kept_for_feedback_is_capped():
    long = sample("memcheck_out_of_bounds.txt").replace("Address", "Address " + "x" * 1000)
    found = sanitizer.parse(long * 20, PREFIX)
    lines = found.report.splitlines()
    assert len(lines) == sanitizer.REPORT_LINES and max(map(len, lines)) <= sanitizer.LINE_CHARS


def test_each_run_gets_a_fresh_prefix():
    assert len({sanitizer.new_prefix() for _ in range(20)}) == 20


def test_the_command_runs_one_case_of_the_students_harness_under_the_tool():
    cmd = sanitizer.command("/cuda/bin/compute-sanitizer", "racecheck", "/b/harness", "matmul_tiled", "float32",
                            "37x41x43", 7, "/s/x.log", PREFIX, 165)
    text = " ".join(cmd)
    assert cmd[:3] == ["/cuda/bin/compute-sanitizer", "--tool", "racecheck"]
    assert f"--prefix {PREFIX} --log-file /s/x.log" in text and "--error-exitcode 9" in text
    assert "--racecheck-report analysis" in text
    harness = cmd.index("/b/harness")
    assert cmd[harness + 1:] == ["--task", "matmul_tiled", "--dtype", "float32", "--shape", "37x41x43", "--seed",
                                 "7", "--check-only", "--no-limits", "--reference", "cpu", "--check-runs", "1",
                                 "--case-timeout", "165", "--fixed-placement"]
    assert "--leak-check" in sanitizer.command("cs", "memcheck", "h", "add", "float32", "1x1", 1, "l", PREFIX, 5)


def test_memcheck_pads_every_allocation_so_nothing_readable_follows_an_array():
    """cudaMalloc may start the next allocation right at an array's end, where memcheck would take a read one
    past it for a read of that allocation; a padding buffer after each is out of bounds for the tool."""
    one_case = sanitizer.command("cs", "memcheck", "h", "dot", "float32", "1025", 1, "l", PREFIX, 5)
    served = sanitizer.serve_command("cs", "memcheck", "l", PREFIX)
    for cmd in (one_case, served):
        at = cmd.index("--padding")
        assert cmd[at:at + 2] == ["--padding", "1048576"]
    assert one_case.index("--padding") < one_case.index("h")  # the tool's option, before its target
    assert "--padding" not in sanitizer.serve_command("cs", "racecheck", "l", PREFIX)


def test_the_rubric_names_a_small_case_for_every_task(rubric):
    assert set(rubric.sanitizer.tools) == {"memcheck", "racecheck"}
    assert 0 < rubric.sanitizer.penalty <= 1
    for task in rubric.tasks:
        assert rubric.sanitizer.shape(task.id) is not None


@pytest.fixture(scope="module")
def graded(tmp_path_factory, registry, small_rubric_once):
    """Graded once for the module's tests, which only read it."""
    tmp_path, small_rubric = tmp_path_factory.mktemp("sanitizer-class"), small_rubric_once
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    subs = tmp_path / "submissions"
    write_submission(subs, "clean", files)
    write_submission(subs, "racy", {**files, "matmul_tiled.cu": "// fake: ok\n// fake-sanitizer: racecheck=3\n"})
    write_submission(subs, "oob", {**files, "add.cu": "// fake: wrong\n// fake-sanitizer: memcheck=2\n"})
    write_submission(subs, "hangs", {**files, "dot.cu": "// fake: hang\n"})
    write_submission(subs, "stubs", {**files, "fill.cu": "// fake: not_implemented\n"})
    results = tmp_path / "results"
    grade(GradeOptions(subs, results, [None], jobs=2, progress=False, seed=5), small_rubric, registry, FakeBackend())
    write_reports(results, small_rubric)
    return results


def with_students(results, rows: pd.DataFrame) -> pd.DataFrame:
    """Rows keyed by submission_id, with each submission's student beside them."""
    with opened(results) as store:
        students = store.submissions().set_index("id")["student"]
    return rows.assign(student=rows["submission_id"].map(students))


def scores_of(results) -> pd.DataFrame:
    with opened(results) as store:
        scores = store.scores()
    return with_students(results, scores).set_index(["student", "task"])


def test_a_race_costs_the_rubrics_penalty_even_when_every_output_was_right(graded, small_rubric):
    scores = scores_of(graded)
    tiled = small_rubric.task("matmul_tiled")
    racy = scores.loc[("racy", "matmul_tiled")]
    assert racy.correctness == pytest.approx(tiled.correctness_points * (1 - small_rubric.sanitizer.penalty))
    assert "compute-sanitizer found errors (racecheck 3)" in racy.note
    assert scores.loc[("clean", "matmul_tiled")].correctness == tiled.correctness_points


def test_the_penalty_never_takes_a_task_below_zero(graded):
    oob = scores_of(graded).loc[("oob", "add")]
    assert oob.correctness == 0 and "memcheck 2" in oob.note


def test_every_tool_runs_on_every_task_that_ran_and_none_on_one_that_did_not(graded, small_rubric):
    with opened(graded) as store:
        runs = with_students(graded, store.sanitizer_runs_for())
    clean = runs[runs.student == "clean"]
    assert len(clean) == len(small_rubric.tasks) * 2 and set(clean.status) == {"clean"}
    fill = small_rubric.task("fill")
    assert (clean[clean.task == "fill"]["shape"] == small_rubric.sanitizer.shape("fill")).all()
    assert (clean[clean.task == "fill"]["dtype"] == fill.dtypes[0]).all()
    assert runs[(runs.student == "stubs") & (runs.task == "fill")].empty  # not implemented: nothing to check
    hung = runs[(runs.student == "hangs") & (runs.task == "dot")]
    assert list(hung.status) == ["skipped", "skipped"]  # it would only hang again


def test_feedback_says_what_the_tool_found_in_plain_words(graded):
    racy = (graded / "feedback" / "racy.md").read_text()
    assert "compute-sanitizer racecheck (races on shared memory) found 3 races" in racy
    assert "with no __syncthreads() between them" in racy and "Race reported between" in racy
    oob = (graded / "feedback" / "oob.md").read_text()
    assert "found 2 errors" in oob and "outside every array it was given" in oob
    assert "compute-sanitizer" not in (graded / "feedback" / "clean.md").read_text().split("---")[0]  # nothing to say
    assert "did not finish within its time limit" in (graded / "feedback" / "hangs.md").read_text()
    html = (graded / "feedback" / "racy.html").read_text()
    assert "found 3 races" in html and "__syncthreads()" in html


def test_the_summary_counts_submissions_with_sanitizer_findings(graded, small_rubric):
    from grader.reports.report import summary_table
    store = Store(graded / "grades.sqlite")
    row = summary_table(store, small_rubric).iloc[0]
    store.close()
    assert row["sanitizer findings"] == 2


def test_a_store_made_before_the_sanitizer_table_still_opens_and_gains_it(tmp_path, graded):
    with opened(graded) as store:
        subs_before = len(store.submissions())
    store = Store(without_table(graded / "grades.sqlite", tmp_path / "old.sqlite", "sanitizer_runs"))
    assert store.sanitizer_runs(1).empty
    assert len(store.submissions()) == subs_before
    store.close()


def test_an_unavailable_tool_costs_nothing():
    from grader.scoring.score import apply_sanitizer_penalty
    from grader.outcomes.results import TaskScore
    from grader.core.rubric import TaskPolicy
    policy = TaskPolicy("add", 4, 4, ("float32",), ("1x1",), (), 0.25, 0.8)
    score = TaskScore("add", 4, 4, 0, 4, 1, 1)
    runs = [SanitizerOutcome("add", "memcheck", "float32", "1x1", "unavailable"),
            SanitizerOutcome("add", "racecheck", "float32", "1x1", "timeout")]
    assert apply_sanitizer_penalty(score, policy, 0.25, runs).correctness == 4


def test_the_tool_is_found_beside_nvcc_when_it_is_not_on_path(tmp_path, monkeypatch):
    toolkit = tmp_path / "cuda"
    for tool in (toolkit / "bin" / "nvcc", toolkit / "compute-sanitizer" / "compute-sanitizer"):
        tool.parent.mkdir(parents=True, exist_ok=True)
        tool.write_text("#!/bin/sh\n")
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(toolkit / "bin"))
    assert sanitizer.find_tool() == str(toolkit / "compute-sanitizer" / "compute-sanitizer")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert sanitizer.find_tool() is None


def test_the_tools_run_is_the_start_of_a_graded_run_cut_at_random_at_or_after_the_small_case():
    graded = ["1x1", "1x1000", "1000x1", "37x211", "211x37", "1031x977", "2048x2048"]
    assert sanitizer.sanitized_shapes(graded, "37x211", pick=lambda n: 0) == graded[:4]  # the small case always
    assert sanitizer.sanitized_shapes(graded, "37x211", pick=lambda n: n - 1) == graded[:5]  # 211x37: as small
    drawn = {tuple(sanitizer.sanitized_shapes(graded, "37x211")) for _ in range(200)}
    assert drawn == {tuple(graded[:4]), tuple(graded[:5])}  # 1031x977 is 129 times 37x211: never
    gemm = ["1x1x1", "1x257x13", "257x1x13", "37x41x43", "96x160x96", "515x509x521"]
    assert {len(sanitizer.sanitized_shapes(gemm, "37x41x43")) for _ in range(200)} == {4, 5}
    # a small case that is not graded ends the run, after a random start of the graded ones
    assert sanitizer.sanitized_shapes(["4096x4096"], "37x211") == ["37x211"]
    assert sanitizer.sanitized_shapes(graded, "20x20", pick=lambda n: 2) == ["1x1", "1x1000", "20x20"]


def test_the_tool_is_sent_exactly_the_requests_a_graded_run_sends(small_rubric, registry):
    """The code under the tool sees what a graded process sees first: the same op, task, type, shapes in the same
    order, seed and check runs (memcheck adds fixed placement, which the tool needs to see past an array's end)."""
    from grader.grading.cases import grade_submission
    from grader.intake.submission import Submission
    from grader.tests.fakes import FakeBackend, FakeServer

    sent = []

    class Recording(FakeServer):
        def request(self, message, timeout):
            sent.append(message)
            return super().request(message, timeout)

    class Backend(FakeBackend):
        def student_server(self, build, gpu):
            return Recording(self._files[build.harness], name="student")

    backend = Backend()
    files = {t.file: b"// fake: ok\n" for t in registry.tasks}
    sub = Submission("rec", Path("."), files=files)
    build = backend.build(sub, 10)
    grade_submission(sub, build, backend, None, FakeServer(None), small_rubric, registry, seed=7)
    policy = small_rubric.task("dot")
    graded = [m for m in sent if m.get("task") == "dot" and m["op"] == "check"]
    for tool in ("memcheck", "racecheck"):
        shapes = sanitizer.sanitized_shapes(list(policy.shapes), small_rubric.sanitizer.shape("dot"))
        replay = sanitizer.requests(tool, "dot", policy.dtypes[0], shapes, seed=7)
        extra = {"fixed_placement": True} if tool == "memcheck" else {}
        for k, ours in enumerate(replay):
            if k < len(replay) - 1 or ours["shape"] == graded[k]["shape"]:
                assert ours == {**graded[k], **extra}  # the graded run's k-th request, exactly
            else:  # the small case, when the rubric's is not a graded shape: the same request but its shape
                assert ours == {**graded[k], **extra, "shape": small_rubric.sanitizer.shape("dot")}


def test_the_tools_run_after_every_tasks_correctness_and_before_any_timed_case(small_rubric, registry):
    """A timed case can use up the submission's time; the tools' runs come first, so slowing the timed cases
    down cannot skip them. Their outcomes are stored task by task, each task's tools in the rubric's order."""
    from grader.grading.cases import grade_submission
    from grader.intake.submission import Submission
    from grader.tests.fakes import FakeBackend, FakeServer

    events = []

    class Recording(FakeServer):
        def request(self, message, timeout):
            if message["op"] == "time" or message.get("check_runs") == 1:
                events.append("timed")
            elif message["op"] == "check":
                events.append("correctness")
            return super().request(message, timeout)

    class Backend(FakeBackend):
        def student_server(self, build, gpu):
            return Recording(self._files[build.harness], name="student")

        def sanitize_tasks(self, sub, build, gpu, tool, tasks, seed, timeout, skipped):
            events.append(f"{tool} x{len(tasks)}")
            return super().sanitize_tasks(sub, build, gpu, tool, tasks, seed, timeout, skipped)

    backend = Backend()
    files = {t.file: b"// fake: ok speed=1.0\n" for t in registry.tasks}
    sub = Submission("order", Path("."), files=files)
    result = grade_submission(sub, backend.build(sub, 10), backend, None, FakeServer(None), small_rubric, registry,
                              seed=3)
    tasks = [p.id for p in small_rubric.tasks]
    tools = [e for e in events if e.startswith(("memcheck", "racecheck"))]
    assert tools == [f"memcheck x{len(tasks)}", f"racecheck x{len(tasks)}"]  # each tool once, for every task
    first_tool, last_tool = events.index(tools[0]), events.index(tools[-1])
    assert "timed" in events and "correctness" in events
    assert max(i for i, e in enumerate(events) if e == "correctness") < first_tool
    assert min(i for i, e in enumerate(events) if e == "timed") > last_tool
    assert [(o.task, o.tool) for o in result.sanitizer] == [(t, tool) for t in tasks for tool in ("memcheck",
                                                                                                    "racecheck")]


def graded_with_slow_tools(tmp_path, registry, rubric, limits: dict, dots: dict[str, float]):
    """(the rubric, the results, the fake backend) of a small class graded with these [limits]: one student per
    entry of `dots`, whose dot.cu passes its cases and takes that many seconds under each tool."""
    small = tmp_path / "rubric.toml"
    small.write_text(small_rubric_text(rubric, limits=limits))
    small_rubric = load_rubric(small, registry)
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    subs = tmp_path / "submissions"
    for student, seconds in dots.items():
        write_submission(subs, student, {**files, "dot.cu": f"// fake: ok\n// fake-sanitizer: slow={seconds:g}\n"})
    results, backend = tmp_path / "results", FakeBackend()
    grade(GradeOptions(subs, results, [None], jobs=1, progress=False, seed=5), small_rubric, registry, backend)
    return small_rubric, results, backend


def test_a_tools_run_far_longer_than_the_graded_cases_is_a_finding_and_costs_the_penalty(tmp_path, registry,
                                                                                          rubric):
    """A task that spins only under the tool (it found the tool by its pace or its presence) is stopped at
    checker_multiple x its graded cases' time + checker_extra and charged as the tool's finding; one a little slow
    under the tool is clean. The limit is what the graded cases took, not the tool's own 180 s."""
    small_rubric, results, backend = graded_with_slow_tools(
        tmp_path, registry, rubric, {"checker_multiple": 50, "checker_extra": 10}, {"stalls": 170, "control": 5})
    write_reports(results, small_rubric)
    limits = {limit for task, _, limit in backend.tool_limits if task == "dot"}
    assert limits and all(10 <= limit < 12 for limit in limits), limits  # the fake's cases take milliseconds

    scores = scores_of(results)
    dot = small_rubric.task("dot")
    stalls = scores.loc[("stalls", "dot")]
    assert stalls.correctness == pytest.approx(dot.correctness_points * (1 - small_rubric.sanitizer.penalty))
    assert "memcheck and racecheck ran far longer than the graded cases" in stalls.note
    assert scores.loc[("control", "dot")].correctness == dot.correctness_points
    with opened(results) as store:
        runs = with_students(results, store.sanitizer_runs_for())
    assert set(runs[(runs.student == "stalls") & (runs.task == "dot")].status) == {"too_slow"}
    assert set(runs[runs.student == "control"].status) == {"clean"}
    page = (results / "feedback" / "stalls.md").read_text()
    assert "ran far longer than graded (still running after 10 s, where the graded run of the same cases took" \
        in page, page


def test_a_tools_run_cut_by_its_own_limit_is_still_no_verdict(tmp_path, registry, rubric):
    """Where checker_multiple x the graded time + checker_extra is not less than the tool's own limit, that limit
    cuts the run as before: a timeout, no verdict, no penalty."""
    small_rubric, results, backend = graded_with_slow_tools(
        tmp_path, registry, rubric, {"sanitizer": 60, "checker_extra": 60}, {"slow": 100})
    assert {limit for task, _, limit in backend.tool_limits if task == "dot"} == {60}
    with opened(results) as store:
        runs = store.sanitizer_runs_for()
    assert set(runs[runs.task == "dot"].status) == {"timeout"}
    assert scores_of(results).loc[("slow", "dot")].correctness == small_rubric.task("dot").correctness_points


class _OneRunBackend:
    """A LocalBackend whose compute-sanitizer run is replaced by `verdicts` (task -> status when run alone, and
    "*" for a run of several tasks), recording the tasks of each run."""

    def __init__(self, tmp_path, verdicts: dict[str, str]):
        from grader.backends.local import LocalBackend

        runs = self.runs = []

        class Backend(LocalBackend):
            def _tool_run(self, sub, build, gpu, tool, parts, seed, timeout):
                runs.append(([p.task for p in parts], timeout))
                status = verdicts["*"] if len(parts) > 1 else verdicts.get(parts[0].task, "clean")
                return [SanitizerOutcome(p.task, tool, p.dtype, p.shape, status, errors=int(status == "errors"),
                                         seconds=1.0) for p in parts]

        self.backend = Backend(tmp_path / "work")


def _tool_tasks(*names):
    from grader.backends.base import ToolTask
    return [ToolTask(n, "float32", "1x1", ("1x1", "2x2")) for n in names]


def test_a_clean_run_for_all_tasks_is_each_tasks_verdict(tmp_path):
    fake = _OneRunBackend(tmp_path, {"*": "clean"})
    out = fake.backend.sanitize_tasks(None, None, "0", "racecheck", _tool_tasks("add", "dot", "fill"), 1, 30.0,
                                      lambda t: None)
    assert fake.runs == [(["add", "dot", "fill"], 30.0)]  # one run, each task in its own limit
    assert [(o.task, o.status) for o in out] == [("add", "clean"), ("dot", "clean"), ("fill", "clean")]


@pytest.mark.parametrize("together", ["errors", "timeout", "failed"])
def test_a_run_for_all_that_is_not_clean_runs_each_task_alone(tmp_path, together):
    """A finding, a timeout or no verdict in the run for all: each task runs alone, as one run per task would
    have, so the finding is attributed to its own task and the others are clean."""
    fake = _OneRunBackend(tmp_path, {"*": together, "dot": "errors"})
    out = fake.backend.sanitize_tasks(None, None, "0", "memcheck", _tool_tasks("add", "dot", "fill"), 1, 30.0,
                                      lambda t: None)
    assert fake.runs == [(["add", "dot", "fill"], 30.0), (["add"], 30.0), (["dot"], 30.0), (["fill"], 30.0)]
    assert [(o.task, o.status) for o in out] == [("add", "clean"), ("dot", "errors"), ("fill", "clean")]


def test_no_run_starts_once_the_submissions_time_is_out(tmp_path):
    fake = _OneRunBackend(tmp_path, {"*": "errors", "dot": "errors"})
    out_of_time = SanitizerOutcome("?", "memcheck", "float32", "1x1", "skipped", message="not run: time")
    late = {"dot", "fill"}  # the time ran out after add's run alone
    out = fake.backend.sanitize_tasks(None, None, "0", "memcheck", _tool_tasks("add", "dot", "fill"), 1, 30.0,
                                      lambda t: out_of_time if t.task in late and fake.runs else None)
    assert fake.runs == [(["add", "dot", "fill"], 30.0), (["add"], 30.0)]
    assert [o.status for o in out] == ["clean", "skipped", "skipped"]
    fake.runs.clear()
    out = fake.backend.sanitize_tasks(None, None, "0", "memcheck", _tool_tasks("add", "dot"), 1, 30.0,
                                      lambda t: out_of_time)
    assert fake.runs == [] and [o.status for o in out] == ["skipped", "skipped"]


def test_racecheck_is_not_run_where_the_compiled_code_has_no_shared_memory_and_memcheck_still_is(tmp_path, registry,
                                                                                                   rubric):
    """Issue 43: racecheck looks only at shared memory; where the build gate read no shared memory access and no
    atomics in a file's device code, its task's racecheck is not run (saying why), and memcheck runs as before."""
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    files["add.cu"] += "// fake-gate: no-shared-memory\n"
    subs = tmp_path / "submissions"
    write_submission(subs, "s01", files)
    backend = FakeBackend()
    grade(GradeOptions(subs, tmp_path / "results", [None], jobs=1, progress=False, seed=5), rubric, registry, backend)
    ran = {(task, tool) for task, tool, _ in backend.tool_limits}
    assert ("add", "memcheck") in ran and ("add", "racecheck") not in ran and ("dot", "racecheck") in ran, ran
    with opened(tmp_path / "results") as store:
        tools = store.sanitizer_runs_for().set_index(["task", "tool"])
    assert tools.loc[("add", "racecheck"), "status"] == "skipped"
    assert tools.loc[("add", "racecheck"), "message"].startswith("not run: racecheck looks for races on shared memory")
    assert tools.loc[("add", "memcheck"), "status"] == tools.loc[("dot", "racecheck"), "status"] == "clean"


class ToolsAtOnce(FakeBackend):
    """A fake whose tools' runs must meet: each waits for the other before it answers."""
    tools_at_once = True

    def __init__(self):
        super().__init__()
        import threading
        self.met = threading.Barrier(2, timeout=20)

    def sanitize_tasks(self, sub, build, gpu, tool, tasks, seed, timeout, skipped):
        self.met.wait()  # a BrokenBarrierError when the other tool's run is not under way at the same time
        return super().sanitize_tasks(sub, build, gpu, tool, tasks, seed, timeout, skipped)


def test_where_the_backend_allows_the_tools_run_at_once_with_the_same_verdicts(tmp_path, registry, rubric):
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    files["dot.cu"] += "// fake-sanitizer: racecheck=2\n"
    subs = tmp_path / "submissions"
    write_submission(subs, "s01", files)
    grade(GradeOptions(subs, tmp_path / "results", [None], jobs=1, progress=False, seed=5), rubric, registry,
          ToolsAtOnce())
    with opened(tmp_path / "results") as store:
        tools = store.sanitizer_runs_for().set_index(["task", "tool"])
    assert tools.loc[("dot", "racecheck"), "status"] == "errors"
    assert (tools.drop(("dot", "racecheck"))["status"] == "clean").all(), tools["status"]
