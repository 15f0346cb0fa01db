"""The Canvas-style sample class that device_run.sh's canvas_class step grades on a GPU, checked here."""
from __future__ import annotations

from grader.intake.submission import read_submission
from grader.core.late import lateness
from grader.intake.layouts import find_entries
from grader.intake.roster import match, read_roster
from grader.core.rubric import load_rubric
from grader.tests.canvas_class import STUDENTS, TIMES, build
from grader.tests.conftest import grade_on_fakes


def test_the_sample_class_as_a_canvas_download_reads_back_with_its_times_flags_and_late_penalties(tmp_path,
                                                                                                  registry):
    """Canvas's submission times decide; every file inside the archives is dated a week before the due date."""
    out = build(tmp_path / "week")
    rubric = load_rubric(out / "rubric.toml", registry)
    entries, skipped = find_entries(out / "download", "canvas", out / TIMES)
    assert skipped == [] and len(entries) == len(STUDENTS)
    subs = {s.student: s for s in (read_submission(e, [t.file for t in registry.tasks]) for e in entries)}
    percent = {k: lateness(rubric.late, k, s.received, s.received_from).percent for k, s in subs.items()}
    assert percent == {"s01stubs": 0, "s02naive": 0, "s03tiled": 0, "s04race": 10, "s05hang": 50,
                       "s06crash": 0, "s07compile": 0, "s08fast": 0}
    assert subs["s02naive"].received == "2026-11-21T04:59:59+00:00"
    assert any("marked LATE by Canvas" in n for n in subs["s03tiled"].notes)
    assert not any("LATE" in n for n in subs["s02naive"].notes)
    assert set(subs["s08fast"].files) == {t.file for t in registry.tasks}
    roster = read_roster(out / "roster.csv")
    assert all(match(roster, e.student, e.aliases) for e in entries) and len(roster) == len(STUDENTS) + 1


def fake_gpu_class(tmp_path, registry, monkeypatch):
    """The Canvas class written out, and the command line's backend replaced by the fake one (no build, no GPU)."""
    from grader import cli
    cc = build(tmp_path / "input")
    rubric = load_rubric(cc / "rubric.toml", registry)
    grade_on_fakes(monkeypatch, registry, rubric)
    return cli, cc, rubric


def test_device_run_canvas_class_commands_run_through_on_the_simulated_gpu(tmp_path, registry, monkeypatch, capsys):
    """The canvas_class step's commands, in its order, with the fake backend in place of the GPU."""
    import pandas as pd

    cli, cc, rubric = fake_gpu_class(tmp_path, registry, monkeypatch)
    results, common = tmp_path / "results", ["--rubric", str(cc / "rubric.toml")]
    grade = ["grade", str(cc / "download"), "--from", "canvas", "--lms-times", str(cc / TIMES), *common, "--roster",
             str(cc / "roster.csv"), "--results", str(results), "--no-progress", "--gpus", "0"]
    assert cli.main(grade) == 0
    assert "on the roster with no submission (1): s09absent" in capsys.readouterr().out
    assert cli.main([*grade, "--student", "s08fast"]) == 0
    assert cli.main(["override", "s03tiled", "matmul_tiled", "5", "--reason", "k guard: partial credit", "--by",
                     "device_run canvas_class", "--results", str(results), *common]) == 0
    assert cli.main(["rescore", str(results), *common]) == 0
    assert cli.main(["export", "--results", str(results), *common, "--roster", str(cc / "roster.csv"),
                     "--assignment-id", "5123"]) == 0
    grades = pd.read_csv(results / "grades.csv", keep_default_na=False).set_index("student")
    assert grades.loc["s09absent", "status"] == "no submission"
    assert float(grades.loc["s05hang", "penalty"]) == float(grades.loc["s05hang", "raw_total"]) / 2
    assert "matmul_tiled: 5 points set by device_run canvas_class" in grades.loc["s03tiled", "overrides"]
    header = (results / "canvas.csv").read_text().splitlines()[0]
    assert header.endswith(f",{rubric.title} (5123)")


def test_an_extension_granted_after_grading_is_refused_by_the_readers_until_rescore(tmp_path, registry, monkeypatch,
                                                                                     capsys):
    """The extensions file is read with the rubric but is not part of its bytes: a new extension must not reach
    the gradebook with the penalty it lifted still in it."""
    import pandas as pd

    cli, cc, _ = fake_gpu_class(tmp_path, registry, monkeypatch)
    results, common = tmp_path / "results", ["--rubric", str(cc / "rubric.toml")]
    assert cli.main(["grade", str(cc / "download"), "--from", "canvas", "--lms-times", str(cc / TIMES), *common,
                     "--results", str(results), "--no-progress", "--gpus", "0"]) == 0
    penalty = pd.read_csv(results / "grades.csv").set_index("student").loc["s04race", "penalty"]
    assert penalty > 0
    extensions = cc / "extensions.csv"
    extensions.write_text(extensions.read_text() + "s04race,2026-11-23T23:59:59\n")
    capsys.readouterr()
    assert cli.main(["export", "--results", str(results), *common]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"grader: {extensions} changed since grading: 1 stored submission(s) now have a different "
                          "late penalty (s04race: stored 'received ") and err.endswith(
        f"run `bin/grader rescore {results} --rubric {cc / 'rubric.toml'}` first"), err
    assert cli.main(["rescore", str(results), *common]) == 0
    assert cli.main(["export", "--results", str(results), *common]) == 0
    grades = pd.read_csv(results / "grades.csv").set_index("student")
    assert grades.loc["s04race", "penalty"] == 0 and grades.loc["s05hang", "penalty"] > 0
