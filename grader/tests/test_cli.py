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
