"""The command line: help for every command, usage errors, and clear failures."""
from __future__ import annotations

import subprocess
import sys

import pytest

from grader.tests.conftest import REPO

COMMANDS = ["grade", "report", "export", "gradescope", "autolab", "rubric", "leaderboard"]


def grader(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, capture_output=True, text=True)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command):
    result = grader(command, "--help")
    assert result.returncode == 0 and result.stdout.startswith(f"usage: python3 -m grader {command}")


def test_the_top_level_help_lists_every_command():
    out = grader("--help").stdout
    assert all(c in out for c in COMMANDS)


def test_a_bad_argument_is_a_usage_error():
    result = grader("grade")
    assert result.returncode == 2 and "submissions" in result.stderr


def test_report_without_a_store_says_to_grade_first(tmp_path):
    result = grader("report", "--results", str(tmp_path))
    assert result.returncode == 1 and "no grades store there; grade first" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "grades.sqlite").exists()


def test_bad_gpu_list_is_refused(tmp_path):
    result = grader("grade", str(tmp_path), "--gpus", "zero", "--results", str(tmp_path / "r"))
    assert result.returncode == 1 and "--gpus must be 'all' or a comma-separated list" in result.stderr


def test_the_rubric_command_checks_the_rubric_against_the_registry_without_building(registry, tmp_path):
    ok = grader("rubric")
    assert ok.returncode == 0 and "valid; 100 points" in ok.stdout
    bad = tmp_path / "r.toml"
    bad.write_text((REPO / "grader" / "rubric.toml").read_text().replace("[tasks.dot]", "[tasks.dott]"))
    result = grader("rubric", "--rubric", str(bad))
    assert result.returncode == 1 and "unknown task 'dott'" in result.stderr


def test_grade_report_export_and_leaderboard_run_end_to_end_on_the_simulated_backend(tmp_path, monkeypatch,
                                                                                     registry, small_rubric, capsys):
    """make demo's flow (grade, then leaderboard), and report and export after it, through main()."""
    from grader import cli
    from grader.tests.conftest import write_submission
    from grader.tests.fakes import FakeBackend
    monkeypatch.setattr(cli, "isolation", lambda args, work: None)
    monkeypatch.setattr(cli, "prepared_backend", lambda args, work, jobs, gpu, sandbox: (FakeBackend(), registry,
                                                                                          small_rubric))
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    write_submission(tmp_path / "subs", "alice", files)
    write_submission(tmp_path / "subs", "bob", {**files, "dot.cu": "// fake: wrong\n"})
    results = tmp_path / "results"
    common = ["--results", str(results), "--rubric", str(small_rubric.path)]
    assert cli.main(["grade", str(tmp_path / "subs"), *common, "--gpus", "0", "--no-progress", "--regrade"]) == 0
    for name in ("grades.sqlite", "grades.csv", "canvas.csv", "review.csv", "feedback/alice.md", "feedback/bob.html"):
        assert (results / name).exists(), name
    assert "results in" in capsys.readouterr().out
    (results / "grades.csv").unlink()
    assert cli.main(["report", *common]) == 0 and (results / "grades.csv").exists()
    assert cli.main(["export", *common]) == 0
    assert cli.main(["leaderboard", *common]) == 0 and (results / "leaderboard" / "index.html").exists()
    assert "(2 ranked, 0 not ranked)" in capsys.readouterr().out
