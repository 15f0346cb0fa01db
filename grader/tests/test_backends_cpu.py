"""`--device cpu` without building anything: what the CPU kind refuses, in one line each, and what every reader of
the store says about performance for a run that timed nothing. The run here is the fake backend made to look like
the CPU backend (timed = False, a device record with backend "cpu"); test_grade_cpu.py grades the sample class on
the real one."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from grader import backends
from grader.backends import gpu
from grader.backends.cpu import CpuKind, compiler_version, nvcc_rules_checker
from grader.backends.gpu import GpuKind

from grader import cli
from grader.core.errors import GraderError
from grader.exports import autolab, gradescope
from grader.reports.leaderboard.board import build_board
from grader.reports.report import run_views
from grader.grading.rescore import rescore
from grader.scoring.score import NOT_MEASURED
from grader.tests.test_score import score_task
from grader.outcomes.results import CaseOutcome
from grader.store.store import Store
from grader.tests.conftest import opened, write_submission
from grader.tests.cpu_like import grade_cpu_like

pytestmark = pytest.mark.slow  # asks g++ for its version (the CPU toolchain's record)


# --- the kind and its refusals -------------------------------------------------------------------------------------


def test_device_cpu_is_a_sandboxed_backend_that_asks_slurm_for_no_gpu():
    kind = backends.get("cpu")
    assert isinstance(kind, CpuKind)
    assert (kind.name, kind.sandboxed, kind.uses_gpus) == ("cpu", True, False)
    assert backends.get("gpu").uses_gpus


def test_device_auto_is_the_gpu_when_this_machine_can_run_cuda_else_the_cpu(monkeypatch, capsys):
    monkeypatch.setattr(gpu, "gpu_missing", lambda: "")
    assert isinstance(backends.get("auto"), GpuKind)
    monkeypatch.setattr(gpu, "gpu_missing", lambda: "nvidia-smi lists no GPU")
    assert isinstance(backends.get("auto"), CpuKind)
    assert capsys.readouterr().err == ("--device auto: nvidia-smi lists no GPU: grading correctness only, on the CPU "
                                       "backend\n")


def test_slurm_refuses_device_auto_in_one_line(tmp_path, capsys):
    write_submission(tmp_path / "subs", "ann", {"add.cu": "// x\n"})
    status = cli.main(["grade", str(tmp_path / "subs"), "--slurm", "--device", "auto", "--results", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert status == 2 and err == ("grader: --device auto decides by the machine it runs on, and with --slurm that is "
                                   "the login node, not the nodes that grade: say --device gpu or --device cpu\n")


def test_an_unknown_device_is_refused_naming_every_backend():
    with pytest.raises(GraderError) as e:
        backends.get("tpu")
    assert str(e.value) == ("--device tpu: no such backend (gpu: this machine's NVIDIA GPUs; cpu: correctness only, "
                            "on the CPU; auto: the GPU when there is one, else the CPU)")


def test_the_cpu_backend_grades_with_one_worker_and_refuses_gpu_indices():
    kind = CpuKind()
    assert kind.devices("all") == ["cpu"]
    with pytest.raises(GraderError) as e:
        kind.devices("0,1")
    assert "\n" not in str(e.value) and str(e.value).startswith("--gpus 0,1: --device cpu grades with one worker")


def test_the_cpu_backend_refuses_a_gpu_architecture_and_names_its_own():
    kind = CpuKind()
    assert kind.arch(None) == kind.arch("cpu") == "cpu"
    with pytest.raises(GraderError, match=r"^--arch sm_90 names a GPU architecture; --device cpu builds for this "
                                          r"machine's processor: leave --arch out$"):
        kind.arch("sm_90")


def test_the_cpu_toolchain_names_the_compiler_and_python_it_builds_with():
    found = CpuKind().toolchain()
    assert found["cxx"] == compiler_version() and "(" in found["cxx"]  # "g++ (Debian 12.2.0-14) 12.2.0"
    assert Path(found["python3"]).name.startswith("python3")


def test_grade_with_gpu_indices_on_the_cpu_is_one_line_before_any_build(tmp_path, capsys, registry):
    write_submission(tmp_path / "subs", "ann", {"add.cu": "// x\n"})
    status = cli.main(["grade", str(tmp_path / "subs"), "--device", "cpu", "--gpus", "0", "--unsafe-no-sandbox",
                       "--results", str(tmp_path / "r")])  # (no sandbox to check: the refusal comes right after)
    err = capsys.readouterr().err.splitlines()
    assert status == 1 and "Traceback" not in "\n".join(err)
    assert err[-1].startswith("grader: --gpus 0: --device cpu grades with one worker") and len(err) == 2
    assert not (tmp_path / "r" / "work" / "pristine").exists()


def test_slurm_with_a_gpu_gres_on_the_cpu_is_one_usage_line(tmp_path, capsys):
    write_submission(tmp_path / "subs", "ann", {"add.cu": "// x\n"})
    status = cli.main(["grade", str(tmp_path / "subs"), "--slurm", "--device", "cpu", "--gres", "gpu:a100:1",
                       "--results", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert err == ("grader: --gres gpu:a100:1: --device cpu grades on the CPUs each array task gets (--cpus-per-task) "
                   "and asks Slurm for no GPU; leave --gres out\n")


# --- scoring a run that times nothing ------------------------------------------------------------------------------


def test_a_correct_task_on_an_untimed_run_scores_correctness_and_says_performance_was_not_measured(small_rubric):
    policy = small_rubric.task("add")
    cases = [CaseOutcome("add", d, s, "correctness", "ok") for d in policy.dtypes for s in policy.shapes]
    score = score_task(policy, cases, measured=False)
    assert (score.correctness, score.performance, score.note) == (policy.correctness_points, 0.0, NOT_MEASURED)
    assert score_task(policy, cases).note != NOT_MEASURED  # a timed run that lacks its timed cases says otherwise


def test_a_task_that_needs_a_gpu_scores_nothing_and_says_why(small_rubric):
    policy = small_rubric.task("matmul_fast")
    why = "needs a GPU: uses inline PTX at matmul_fast.cu:12"
    cases = [CaseOutcome("matmul_fast", d, s, "correctness", "needs_gpu", why) for d in policy.dtypes
             for s in policy.shapes]
    score = score_task(policy, cases, measured=False)
    assert (score.correctness, score.performance) == (0.0, 0.0)
    assert score.note == f"not graded on the CPU: {why}; grade it on a GPU"


# --- what the store's readers say about a CPU run --------------------------------------------------------------------

@pytest.fixture
def cpu_run(tmp_path, registry, small_rubric):
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    return grade_cpu_like(tmp_path, small_rubric, registry, {
        "ann": files, "bob": {**files, "matmul_fast.cu": "// fake: needs-gpu\n", "dot.cu": "// fake: wrong\n"}})


def test_a_cpu_run_stores_no_timed_case_no_limits_its_device_and_its_own_checks_in_the_tools_place(cpu_run):
    with opened(cpu_run) as store:
        tools = store.sanitizer_runs_for()
        assert store.timed_cases().empty and not tools.empty and set(tools["checker"]) == {"cpu"}
        run = store.latest_run()
        assert json.loads(run["limits"]) == {}
        assert json.loads(run["devices"])[0]["backend"] == "cpu"
        views = run_views(store)
    (view,) = views.values()
    assert view["untimed"].startswith("not timed on this run: graded on the CPU backend")
    assert view["device"] == "CPU backend on lab-pc (Some CPU 3000, 8 cores; g++ (Debian) 12.2.0)"


def test_grades_csv_says_not_timed_in_every_performance_column_of_a_cpu_run(cpu_run, small_rubric):
    grades = pd.read_csv(cpu_run / "grades.csv")
    for policy in small_rubric.tasks:
        assert set(grades[f"{policy.id}_performance"]) == {"not timed"}
    assert grades.set_index("student").loc["ann", "total"] == sum(p.correctness_points for p in small_rubric.tasks)


def test_the_feedback_page_says_correctness_only_and_shows_no_performance_numbers(cpu_run, small_rubric):
    worth = sum(p.performance_points for p in small_rubric.tasks)
    for kind in ("md", "html"):
        page = (cpu_run / "feedback" / f"ann.{kind}").read_text()
        assert "Correctness only." in page and f"The {worth} performance points were not measured" in page
        assert "speedup" not in page and "alternating pairs" not in page
        assert "CPU backend on lab-pc" in page and "GPU: " not in page
    md = (cpu_run / "feedback" / "ann.md").read_text()
    assert "| add | 4.0 / 4 | not timed | passed 2/2 · performance not timed on this run |" in md


def test_the_feedback_gives_a_task_that_needs_a_gpu_its_own_verdict(cpu_run):
    md = (cpu_run / "feedback" / "bob.md").read_text()
    assert "| matmul_fast | 0.0 / 10 | not timed | needs a GPU · performance not timed on this run |" in md
    assert "- needs a GPU: uses inline PTX at matmul_fast.cu:3 (the CPU backend cannot run it" in md
    assert "| dot | 0.0 / 6 | not timed | 2 of 2 cases wrong · performance not timed on this run |" in md


def test_gradescope_has_no_performance_tests_for_a_cpu_run_and_says_why(cpu_run, small_rubric):
    with opened(cpu_run) as store:
        doc = gradescope.results(store, small_rubric, "ann")
    assert [t["name"] for t in doc["tests"]] == [f"{p.id}: correctness" for p in small_rubric.tasks]
    assert "Correctness only. Not timed on this run: graded on the CPU backend" in doc["output"]
    assert doc["score"] == sum(p.correctness_points for p in small_rubric.tasks)


def test_autolabs_lines_say_performance_was_not_timed(cpu_run, small_rubric):
    with opened(cpu_run) as store:
        lines = autolab.score_lines(store, small_rubric, "ann")
    assert lines[0] == "fill: 4.0 / 8: passed 2/2 (performance not timed on this run)"


def test_the_leaderboard_lists_a_cpu_graded_correct_student_as_correct_and_not_timed(cpu_run, small_rubric):
    with opened(cpu_run) as store:
        board = build_board(store, small_rubric)
    assert board.ranked.empty
    reasons = dict(zip(board.unranked["student"], board.unranked["reason"]))
    assert reasons == {"ann": "correct; not timed (graded on the CPU)", "bob": "needs a GPU"}
    assert board.untimed.startswith("not timed on this run: graded on the CPU backend")


def test_rescore_keeps_a_cpu_runs_scores_correctness_only(cpu_run, small_rubric):
    store = Store(cpu_run / "grades.sqlite")
    try:
        summary = rescore(store, small_rubric)
        scores = store.scores()
    finally:
        store.close()
    assert summary.rescored == 2 and not summary.changed
    assert scores["performance"].sum() == 0
    assert (scores[scores["correctness"] > 0]["note"] == NOT_MEASURED).all()


def test_the_toolchain_key_names_the_clang_of_the_nvcc_rules_check_or_none(tmp_path, monkeypatch):
    """The grader reads the check's clang through the driver's own frontend.py (loaded as a module of its package,
    whose modules import one another), so a build with the check never reuses an object built without it."""
    fake = tmp_path / "clang++-99"
    fake.write_text("#!/bin/sh\necho 'Debian clang version 99.0.1'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CUDACPU_CLANG", str(fake))
    assert nvcc_rules_checker() == "Debian clang version 99.0.1"
    monkeypatch.setenv("CUDACPU_CLANG", str(tmp_path / "no-such-clang"))
    assert nvcc_rules_checker() == ""
