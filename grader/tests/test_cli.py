"""The command line: help for every command, usage errors, and clear failures."""
from __future__ import annotations

import subprocess
import sys

import pytest

from grader.tests.conftest import REPO, grade_on_fakes

pytestmark = pytest.mark.slow  # runs bin/grader grade, which starts bubblewrap to check its sandbox

COMMANDS = ["grade", "report", "export", "gradescope", "autolab", "rubric", "leaderboard"]


def grader(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, capture_output=True, text=True)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command):
    result = grader(command, "--help")
    assert result.returncode == 0 and result.stdout.startswith(f"usage: bin/grader {command}")


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
    (tmp_path / "alice").mkdir()
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
    grade_on_fakes(monkeypatch, registry, small_rubric)
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


# --- bad input to `grade`: one line naming what was wrong, before anything is built, nothing stored lost ------

def _refused(tmp_path, *args, expect: str):
    """`grade` with these arguments into a results folder that already holds a store: exit 1, one line that
    says `expect`, no traceback, no build folder made, and the store byte for byte as it was."""
    from grader.store.store import Store
    results = tmp_path / "results"
    Store(results / "grades.sqlite").close()
    before = (results / "grades.sqlite").read_bytes()
    result = grader("grade", *args, "--results", str(results))
    assert result.returncode == 1, result.stderr
    assert expect in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr and "building" not in result.stderr
    assert not (results / "work").exists() and (results / "grades.sqlite").read_bytes() == before
    return result.stderr


def test_a_missing_submissions_folder_is_named_before_anything_is_built(tmp_path):
    _refused(tmp_path, str(tmp_path / "nope"), expect=f"{tmp_path / 'nope'}: no such submissions folder")


def test_a_submissions_path_that_is_a_file_is_named_before_anything_is_built(tmp_path):
    (tmp_path / "subs.tar.gz").write_bytes(b"not a folder")
    _refused(tmp_path, str(tmp_path / "subs.tar.gz"), expect="subs.tar.gz: not a folder")


def test_an_empty_submissions_folder_is_an_error_not_a_recorded_run(tmp_path):
    (tmp_path / "subs").mkdir()
    _refused(tmp_path, str(tmp_path / "subs"), expect="no submissions in it (it is empty)")


def test_a_folder_of_nothing_but_skipped_entries_says_what_was_skipped(tmp_path):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "README.pdf").write_bytes(b"%PDF")
    _refused(tmp_path, str(tmp_path / "subs"), expect="no submissions in it (1 entry skipped, such as README.pdf")


def test_a_canvas_download_with_no_canvas_names_is_an_error(tmp_path):
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    _refused(tmp_path, str(tmp_path / "subs"), "--from", "canvas", expect="not named as Canvas names a download")


def test_a_gradescope_folder_without_its_metadata_is_named(tmp_path):
    (tmp_path / "subs" / "submission_1").mkdir(parents=True)
    _refused(tmp_path, str(tmp_path / "subs"), "--from", "gradescope", expect="no submission_metadata.yml in it")


def test_an_empty_roster_file_is_named(tmp_path):
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    (tmp_path / "roster.csv").write_text("")
    _refused(tmp_path, str(tmp_path / "subs"), "--roster", str(tmp_path / "roster.csv"),
             expect="roster.csv: the roster is empty")


def test_a_roster_without_student_ids_is_named(tmp_path):
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    (tmp_path / "roster.csv").write_text("name,email\nAlice,a@x.edu\n")
    _refused(tmp_path, str(tmp_path / "subs"), "--roster", str(tmp_path / "roster.csv"),
             expect="nor a 'student' column")


def test_a_missing_roster_file_is_named(tmp_path):
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    _refused(tmp_path, str(tmp_path / "subs"), "--roster", str(tmp_path / "class.csv"),
             expect="class.csv: no such roster file")


def _late_rubric(tmp_path, extensions_text: str | None):
    text = (REPO / "grader" / "rubric.toml").read_text()
    text += '\n[late]\ndue = "2026-11-20T23:59:59"\ntimezone = "America/New_York"\npenalty = 10\nper = "day"\n'
    if extensions_text is not None:
        (tmp_path / "extensions.csv").write_text(extensions_text)
        text += 'extensions = "extensions.csv"\n'
    (tmp_path / "rubric.toml").write_text(text)
    return str(tmp_path / "rubric.toml")


def test_an_empty_extensions_file_is_named(tmp_path):
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    _refused(tmp_path, str(tmp_path / "subs"), "--rubric", _late_rubric(tmp_path, ""),
             expect="extensions.csv: the extensions file is empty")


def test_a_malformed_extensions_row_is_named_with_its_line(tmp_path):
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    rubric = _late_rubric(tmp_path, "student,due\nalice,2026-11-22T23:59\nbob,next tuesday\n")
    _refused(tmp_path, str(tmp_path / "subs"), "--rubric", rubric,
             expect="extensions.csv: line 3: 'next tuesday' is not a date and time")


def test_a_student_not_in_the_folder_is_named_before_anything_is_built(tmp_path):
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    _refused(tmp_path, str(tmp_path / "subs"), "--student", "bob", expect="no submission of 'bob' in it")
