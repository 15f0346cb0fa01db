"""The late policy reads the time the course system recorded, never a time from inside a student's archive.

The red team's case: a submission Canvas marked LATE, its archive's member times set back a week, was graded
on time while its honest twin (the same work, its member times as they were) lost 30%. Each test here hands
the grader such a backdated archive beside an honest twin and checks what the late policy read: Canvas's
LATE mark (no times given), Canvas's own times (--lms-times), Gradescope's created_at, the plain entry's own
file time, and the same through a Slurm batch's manifest.
"""
from __future__ import annotations

import csv
import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import pytest

from grader import cli
from grader.grading.grade import GradeOptions, grade
from grader.intake.submission import read_submission
from grader.core.late import lateness
from grader.intake.layouts import IntakeError, find_entries
from grader.reports.report import LATE_UNKNOWN
from grader.reports.folder import write_reports
from grader.core.rubric import load_rubric
from grader.tests.conftest import opened, small_rubric_text
from grader.tests.fakes import FakeBackend
from grader.tests.test_lms import canvas_tar, canvas_zip
from grader.tests.test_slurm_resume import slurm  # noqa: F401 (the fixture: Slurm's tools replaced)

DUE = datetime(2026, 11, 20, 23, 59, 59, tzinfo=timezone.utc)
BACKDATED = (DUE - timedelta(days=7)).timestamp()  # what `touch -d` makes of a late student's files
LATE_A_DAY = DUE + timedelta(hours=20)  # one started day late: 30%
POLICY = ('\n[late]\ndue = "2026-11-20T23:59:59"\ntimezone = "UTC"\npenalty = 30\nper = "day"\ncap = 100\n'
          'marked_late = "{marked}"\n')
TASKS = ["fill.cu", "add.cu", "dot.cu"]


def late_rubric(folder: Path, rubric, registry, marked: str = "one period"):
    path = folder / "late.toml"
    path.write_text(small_rubric_text(rubric) + POLICY.format(marked=marked))
    return load_rubric(path, registry)


def work(registry) -> dict[str, bytes]:
    return {f"hw/{t.file}": b"// fake: ok speed=1.0\n" for t in registry.tasks}


def twins(folder: Path, registry) -> Path:
    """Canvas's download: mallory's archive (members set back a week) and her honest twin's (members at the
    time they were really written, a day late); Canvas marked both LATE."""
    folder.mkdir(parents=True, exist_ok=True)
    canvas_tar(folder / "mallory_LATE_41001_910001_hw4.tar.gz", work(registry), mtime=BACKDATED)
    canvas_zip(folder / "honest_LATE_41002_910002_hw4.zip", work(registry),
               when=LATE_A_DAY.timetuple()[:6])
    return folder


def graded(tmp_path, registry, rubric, **options) -> pd.DataFrame:
    """The twins graded on the fake backend; their stored rows, by student."""
    results = tmp_path / "results"
    grade(GradeOptions(tmp_path / "download", results, [None], jobs=1, progress=False, seed=7, source="canvas",
                       **options), rubric, registry, FakeBackend())
    write_reports(results, rubric)
    with opened(results) as store:
        return store.latest_submissions().set_index("student")


def review_rows(results: Path) -> pd.DataFrame:
    return pd.read_csv(results / "review.csv", keep_default_na=False)


# --- Canvas, no times given: its LATE mark decides ------------------------------------------------------------

def test_a_canvas_late_entry_with_backdated_members_is_late_like_its_honest_twin(tmp_path, registry, rubric):
    twins(tmp_path / "download", registry)
    stored = graded(tmp_path, registry, late_rubric(tmp_path, rubric, registry))
    assert list(stored["late_percent"]) == [30, 30]  # one period (a started day), for both
    assert set(stored["received_from"]) == {"canvas-late"}
    for student in ("mallory", "honest"):
        assert stored.loc[student, "late"].startswith("late, time unknown: Canvas marked it LATE")
        assert stored.loc[student, "late"].endswith("counted as 1 started day late: -30% of the score")


def test_a_late_mark_without_a_time_is_listed_for_a_ta(tmp_path, registry, rubric):
    twins(tmp_path / "download", registry)
    graded(tmp_path, registry, late_rubric(tmp_path, rubric, registry))
    flagged = review_rows(tmp_path / "results")
    late = flagged[flagged["flag"] == LATE_UNKNOWN]
    assert sorted(late["student"]) == ["honest", "mallory"] and set(late["task"]) == {"(whole submission)"}
    overview = (tmp_path / "results" / "overview.html").read_text()
    flagged_section = overview[overview.index('id="review"'):overview.index('id="late"')]
    assert flagged_section.count(f"<td>{LATE_UNKNOWN}</td>") == 2 and "None" not in flagged_section


def test_the_feedback_and_grades_csv_say_the_time_is_unknown_and_why(tmp_path, registry, rubric):
    twins(tmp_path / "download", registry)
    graded(tmp_path, registry, late_rubric(tmp_path, rubric, registry))
    page = (tmp_path / "results" / "feedback" / "mallory.md").read_text()
    assert "received unknown: Canvas marked it LATE and its download records no time" in page
    assert "**Late policy**: late, time unknown: Canvas marked it LATE" in page
    grades = pd.read_csv(tmp_path / "results" / "grades.csv", keep_default_na=False).set_index("student")
    assert grades.loc["mallory", "received"] == ""
    assert grades.loc["mallory", "received_from"] == "unknown: Canvas marked it LATE and its download records no time"


def test_marked_late_review_takes_no_penalty_and_leaves_it_to_a_ta(tmp_path, registry, rubric):
    twins(tmp_path / "download", registry)
    stored = graded(tmp_path, registry, late_rubric(tmp_path, rubric, registry, marked="review"))
    assert list(stored["late_percent"]) == [0, 0] and list(stored["penalty"]) == [0, 0]
    assert all("no penalty taken until a TA decides" in note for note in stored["late"])
    assert len(review_rows(tmp_path / "results").query("flag == @LATE_UNKNOWN")) == 2


def test_one_period_spends_a_late_day_before_any_penalty(tmp_path, registry, rubric):
    twins(tmp_path / "download", registry)
    text = (small_rubric_text(rubric) + POLICY.format(marked="one period")).replace("cap = 100", "cap = 100\n"
                                                                                     "late_days = 2")
    (tmp_path / "days.toml").write_text(text)
    stored = graded(tmp_path, registry, load_rubric(tmp_path / "days.toml", registry))
    assert list(stored["late_percent"]) == [0, 0]
    assert stored.loc["mallory", "late"].endswith("counted as one day late; 1 of 2 late days used: no penalty")


def test_an_entry_canvas_did_not_mark_late_is_on_time_whatever_its_members_say(tmp_path, registry, rubric):
    download = tmp_path / "download"
    download.mkdir()
    canvas_zip(download / "carol_41003_910003_hw4.zip", work(registry), when=(2026, 11, 25, 12, 0, 0))
    stored = graded(tmp_path, registry, late_rubric(tmp_path, rubric, registry))
    assert stored.loc["carol", "late_percent"] == 0 and stored.loc["carol", "received_from"] == "canvas-unmarked"
    assert stored.loc["carol", "late"].startswith("on time: Canvas did not mark it LATE")
    assert LATE_UNKNOWN not in set(review_rows(tmp_path / "results")["flag"])


# --- Canvas with its own times (--lms-times) --------------------------------------------------------------------

def test_canvas_times_decide_for_the_backdated_entry_and_its_twin(tmp_path, registry, rubric):
    """Canvas's submissions export: both 26 h late (two started days, 60%), whatever is inside the archives;
    a student the file lacks falls back to Canvas's mark."""
    twins(tmp_path / "download", registry)
    canvas_tar(tmp_path / "download" / "trent_LATE_41004_910004_hw4.tar.gz", work(registry), mtime=BACKDATED)
    late = (DUE + timedelta(hours=26)).strftime("%Y-%m-%dT%H:%M:%SZ")
    (tmp_path / "times.csv").write_text(f"user_id,submitted_at\n41001,{late}\n41002,{late}\n")
    stored = graded(tmp_path, registry, late_rubric(tmp_path, rubric, registry), lms_times=tmp_path / "times.csv")
    assert stored.loc["mallory", "late_percent"] == stored.loc["honest", "late_percent"] == 60
    assert stored.loc["mallory", "received"] == "2026-11-22T01:59:59+00:00"
    assert stored.loc["mallory", "late"].startswith("received 1 d 2 h after the due date")
    assert (stored.loc["trent", "received_from"], stored.loc["trent", "late_percent"]) == ("canvas-late", 30)
    assert list(review_rows(tmp_path / "results").query("flag == @LATE_UNKNOWN")["student"]) == ["trent"]


CANVAS_API_JSON = [{"id": 77, "user_id": 41001, "assignment_id": 5123, "submitted_at": "2026-11-21T19:59:59Z",
                    "late": True, "seconds_late": 72000, "workflow_state": "submitted"},
                   {"id": 78, "user_id": 41009, "assignment_id": 5123, "submitted_at": None,
                    "workflow_state": "unsubmitted"}]
LATE_REPORT = ("Student Name,Student ID,Course Name,Course ID,Section Name,Assignment Name,Assignment ID,"
               "Points Possible,Due Date,Submitted Date,Graded Date,Posted Date\n"
               "\"Mallory, M\",41001,CS 4120,88,001,HW4,5123,100,2026-11-20,2026-11-21 14:59:59 -05:00,,\n")


@pytest.mark.parametrize("name, text", [
    ("submissions.json", json.dumps(CANVAS_API_JSON)),
    ("submissions.csv", "user_id,assignment_id,submitted_at\n41001,5123,2026-11-21T19:59:59Z\n41009,5123,\n"),
    ("late-assignments.csv", LATE_REPORT),
    ("by-hand.csv", "student,submitted_at\nmallory,2026-11-21T20:59:59+01:00\n")])
def test_canvas_times_are_read_as_canvas_and_a_ta_write_them(tmp_path, registry, name, text):
    twins(tmp_path / "download", registry)
    (tmp_path / name).write_text(text)
    entries, _ = find_entries(tmp_path / "download", "canvas", tmp_path / name)
    by = {e.student: e for e in entries}
    assert (by["mallory"].received, by["mallory"].received_from) == ("2026-11-21T19:59:59+00:00", "lms-times")
    assert by["honest"].received_from == "canvas-late"  # not in the file: Canvas's mark


@pytest.mark.parametrize("text, message", [
    ("user_id,submitted_at\n41001,2026-11-21 19:59:59\n", "is not a time with its UTC offset"),
    ("user_id,assignment_id,submitted_at\n41001,5123,2026-11-21T19:59:59Z\n41002,6000,2026-11-21T19:59:59Z\n",
     "holds the times of 2 assignments"),
    ("login,time\nmallory,2026-11-21T19:59:59Z\n", "no submission times in it"),
    ("user_id,submitted_at\n", "lists no submission"),
    ("user_id,submitted_at\n,2026-11-21T19:59:59Z\n", r"line 2: a time \(2026-11-21T19:59:59Z\) with no user_id")])
def test_a_times_file_that_cannot_be_used_is_one_line_naming_it(tmp_path, registry, text, message):
    twins(tmp_path / "download", registry)
    (tmp_path / "times.csv").write_text(text)
    with pytest.raises(IntakeError, match=message) as caught:
        find_entries(tmp_path / "download", "canvas", tmp_path / "times.csv")
    assert "\n" not in str(caught.value) and "times.csv" in str(caught.value)


def test_grade_refuses_a_bad_times_file_before_anything_is_built(tmp_path, registry, capsys):
    twins(tmp_path / "download", registry)
    assert cli.main(["grade", str(tmp_path / "download"), "--from", "canvas", "--lms-times",
                     str(tmp_path / "nope.csv"), "--results", str(tmp_path / "results")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nope.csv: no such submission times file" in err
    assert not (tmp_path / "results").exists()


# --- Gradescope, plain folders ----------------------------------------------------------------------------------

def test_gradescope_created_at_decides_not_backdated_files(tmp_path, registry, rubric):
    export = tmp_path / "export"
    (export / "submission_1").mkdir(parents=True)
    for name, data in work(registry).items():
        path = export / "submission_1" / Path(name).name
        path.write_bytes(data)
        os.utime(path, (BACKDATED, BACKDATED))
    (export / "submission_metadata.yml").write_text(
        "submission_1:\n  :submitters:\n  - :sid: 'mallory'\n  :created_at: 2026-11-21 15:59:59.000000000 -05:00\n")
    policy = late_rubric(tmp_path, rubric, registry).late
    (entry,), _ = find_entries(export, "gradescope")
    sub = read_submission(entry, TASKS)
    assert (sub.received, sub.received_from) == ("2026-11-21T20:59:59+00:00", "gradescope")
    assert lateness(policy, sub.student, sub.received, sub.received_from).percent == 30
    with pytest.raises(IntakeError, match="Gradescope's export records each submission's time"):
        find_entries(export, "gradescope", tmp_path / "times.csv")


def test_a_plain_entry_is_received_at_its_own_file_time_never_its_members(tmp_path, registry, rubric):
    folder = tmp_path / "subs"
    folder.mkdir()
    archive = canvas_tar(folder / "mallory.tar.gz", work(registry), mtime=BACKDATED)
    os.utime(archive, (LATE_A_DAY.timestamp(),) * 2)  # copied in a day late: the instructor's disk says so
    (entry,), _ = find_entries(folder, "plain")
    sub = read_submission(entry, TASKS)
    assert (sub.received, sub.received_from) == (LATE_A_DAY.isoformat(), "file")
    assert lateness(late_rubric(tmp_path, rubric, registry).late, "mallory", sub.received, "file").percent == 30
    (tmp_path / "times.csv").write_text("student,submitted_at\nmallory,2026-11-20T23:00:00Z\n")
    (entry,), _ = find_entries(folder, "plain", tmp_path / "times.csv")  # a course system's time, when given
    assert (entry.received, entry.received_from) == ("2026-11-20T23:00:00+00:00", "lms-times")


# --- a Slurm batch: the submit step decides, the manifest carries it --------------------------------------------

def test_a_slurm_batch_grades_the_twins_by_canvass_mark_as_grade_does(tmp_path, registry, rubric, slurm):  # noqa: F811
    from grader.slurm.batch import batches
    from grader.slurm.shard import run_shard
    twins(tmp_path / "download", registry)
    late_rubric(tmp_path, rubric, registry)
    results = tmp_path / "results"
    common = ["--rubric", str(tmp_path / "late.toml"), "--results", str(results)]
    assert cli.main(["grade", str(tmp_path / "download"), "--from", "canvas", "--slurm", "--device", "simulated",
                     *common]) == 0
    manifest = batches(results)[-1]
    assert {e["received_from"] for e in manifest.entries} == {"canvas-late"}
    assert all(e["received"] for e in manifest.entries)
    for index in range(len(manifest.shards)):
        run_shard(manifest.path, index, work=tmp_path / f"work-{index}", progress_seconds=60)
    assert cli.main(["merge", *common]) == 0
    with opened(results) as store:
        stored = store.latest_submissions().set_index("student")
    assert list(stored["late_percent"]) == [30, 30] and set(stored["received_from"]) == {"canvas-late"}
    with (results / "review.csv").open(newline="") as f:
        assert sorted(r["student"] for r in csv.DictReader(f) if r["flag"] == LATE_UNKNOWN) == ["honest", "mallory"]
