"""The late policy ([late]): on time to the second, one second late, extensions, late days, the cap."""
from __future__ import annotations

import pandas as pd
import pytest

from grader.grading.grade import GradeOptions, grade
from grader.core.late import LateError, lateness, parse_late, read_extensions
from grader.reports.folder import write_reports
from grader.core.rubric import RubricError, load_rubric
from grader.tests.conftest import opened, small_rubric_text
from grader.tests.fakes import FakeBackend
from grader.tests.test_lms import canvas_tar

DUE_UTC = "2026-11-21T04:59:59+00:00"  # 2026-11-20 23:59:59 in New York (EST, UTC-5)


def policy(tmp_path, extensions: str | None = None, **overrides):
    section = {"due": "2026-11-20T23:59:59", "timezone": "America/New_York", "penalty": 10, "per": "day",
               "cap": 50, **overrides}
    if extensions is not None:
        (tmp_path / "extensions.csv").write_text(extensions)
        section["extensions"] = "extensions.csv"

    def fail(where, why):
        raise RubricError(f"{where}: {why}")
    return parse_late(section, tmp_path / "rubric.toml", fail)


def test_received_at_the_due_second_is_on_time(tmp_path):
    late = lateness(policy(tmp_path), "alice", DUE_UTC)
    assert late.percent == 0 and late.note.startswith("on time: received 2026-11-20 23:59:59 EST")


def test_one_second_late_is_one_started_day_late(tmp_path):
    late = lateness(policy(tmp_path), "alice", "2026-11-21T05:00:00+00:00")
    assert late.percent == 10 and "received 1 s after the due date" in late.note and "-10% of the score" in late.note


def test_per_hour_counts_started_hours(tmp_path):
    p = policy(tmp_path, per="hour", penalty=2)
    assert lateness(p, "a", "2026-11-21T05:00:00+00:00").percent == 2
    assert lateness(p, "a", "2026-11-21T05:59:59+00:00").percent == 2
    assert lateness(p, "a", "2026-11-21T06:00:00+00:00").percent == 4


def test_one_day_and_one_second_late_is_two_days(tmp_path):
    assert lateness(policy(tmp_path), "a", "2026-11-22T05:00:00+00:00").percent == 20


def test_the_penalty_stops_at_the_cap(tmp_path):
    late = lateness(policy(tmp_path), "a", "2026-12-05T00:00:00+00:00")
    assert late.percent == 50 and "(the cap)" in late.note
    assert late.penalty(80.0) == 40.0


def test_an_extension_moves_the_due_date_for_that_student_only(tmp_path):
    p = policy(tmp_path, "student,due\nalice,2026-11-22T23:59:59\n")
    on_the_second = "2026-11-23T04:59:59+00:00"
    assert lateness(p, "alice", on_the_second).percent == 0
    assert "(extension)" in lateness(p, "alice", on_the_second).note
    assert lateness(p, "alice", "2026-11-23T05:00:00+00:00").percent == 10
    assert lateness(p, "bob", on_the_second).percent == 20  # exactly two days past the class due date


def test_late_days_are_spent_before_any_penalty(tmp_path):
    p = policy(tmp_path, late_days=2)
    within = lateness(p, "a", "2026-11-22T07:00:00+00:00")  # 26 h late: 2 days of the budget
    assert within.percent == 0 and "2 of 2 late days used: no penalty" in within.note


def test_once_the_late_day_budget_is_exhausted_the_penalty_starts(tmp_path):
    p = policy(tmp_path, late_days=2)
    assert lateness(p, "a", "2026-11-23T04:59:59+00:00").percent == 0  # exactly 48 h: the budget covers it
    past = lateness(p, "a", "2026-11-23T05:00:00+00:00")  # 48 h and a second
    assert past.percent == 10 and "2 of 2 late days used" in past.note


def test_the_extensions_file_can_set_a_students_remaining_late_days(tmp_path):
    p = policy(tmp_path, "student,due,late_days\ncarol,,0\n", late_days=2)
    assert lateness(p, "carol", "2026-11-21T05:00:00+00:00").percent == 10
    assert lateness(p, "dave", "2026-11-21T05:00:00+00:00").percent == 0


def test_without_a_late_policy_nothing_is_taken(tmp_path):
    late = lateness(None, "a", "2030-01-01T00:00:00+00:00")
    assert late.percent == 0 and late.note == ""


@pytest.mark.parametrize("text, message", [("", "the extensions file is empty"),
                                           ("name,date\nalice,2026-11-22\n", "the header must be 'student,due'"),
                                           ("student,due\nalice\n", "line 2 has 1 fields"),
                                           ("student,due\nalice,soon\n", "line 2: 'soon' is not a date"),
                                           ("student,due\nalice,2026-11-22\nalice,2026-11-23\n",
                                            "line 3: 'alice' has an extension already")])
def test_a_bad_extensions_file_is_named_in_one_line(tmp_path, text, message):
    from zoneinfo import ZoneInfo
    (tmp_path / "ext.csv").write_text(text)
    with pytest.raises(LateError, match=message) as caught:
        read_extensions(tmp_path / "ext.csv", ZoneInfo("UTC"))
    assert "\n" not in str(caught.value) and "ext.csv" in str(caught.value)


@pytest.mark.parametrize("change, message", [({"per": "week"}, "'per' must be 'hour' or 'day'"),
                                             ({"timezone": "Mars/Olympus"}, "is not a time zone"),
                                             ({"cap": 150}, "at most 100"),
                                             ({"due": "tomorrow"}, "'due'"),
                                             ({"grace": 5}, "unknown key 'grace'")])
def test_a_bad_late_policy_is_refused_with_the_entry_named(tmp_path, change, message):
    with pytest.raises(RubricError, match=message):
        policy(tmp_path, **change)


def test_the_scores_table_shows_raw_penalty_and_final_stored_with_the_submission(tmp_path, registry, rubric):
    text = small_rubric_text(rubric) + ('\n[late]\ndue = "2026-11-20T23:59:59"\ntimezone = "America/New_York"\n'
                                        'penalty = 25\nper = "day"\ncap = 50\n')
    (tmp_path / "late.toml").write_text(text)
    late_rubric = load_rubric(tmp_path / "late.toml", registry)
    ok = {f"hw/{t.file}": b"// fake: ok speed=1.0\n" for t in registry.tasks}
    subs = tmp_path / "download"
    subs.mkdir()
    due = pd.Timestamp(DUE_UTC).timestamp()
    canvas_tar(subs / "ontime_11111_22222_hw.tar.gz", ok, mtime=due + 86400)
    canvas_tar(subs / "tardy_LATE_33333_44444_hw.tar.gz", ok, mtime=due - 86400)
    times = tmp_path / "times.csv"  # Canvas's own times: the ones inside the archives are the students'
    one_second_late = pd.Timestamp(DUE_UTC) + pd.Timedelta(seconds=1)
    times.write_text(f"user_id,submitted_at\n11111,{DUE_UTC}\n33333,{one_second_late}\n")
    results = tmp_path / "results"
    grade(GradeOptions(subs, results, [None], jobs=1, progress=False, seed=5, source="canvas", lms_times=times),
          late_rubric, registry, FakeBackend())
    write_reports(results, late_rubric)
    grades = pd.read_csv(results / "grades.csv").set_index("student")
    full = late_rubric.max_points
    assert list(grades.columns[:6]) == ["nickname", "status", "raw_total", "penalty", "total", "max_total"]
    assert (grades.loc["ontime", "raw_total"], grades.loc["ontime", "penalty"], grades.loc["ontime", "total"]) == \
        (full, 0, full)
    assert (grades.loc["tardy", "raw_total"], grades.loc["tardy", "penalty"], grades.loc["tardy", "total"]) == \
        (full, full / 4, full * 3 / 4)
    with opened(results) as store:
        stored = store.latest_submissions().set_index("student")
    assert stored.loc["tardy", "late_percent"] == 25
    assert "received 1 s after the due date" in stored.loc["tardy", "late"]
    page = (results / "feedback" / "tardy.md").read_text()
    assert "**Late policy**: received 1 s after the due date" in page and f"final {full * 3 / 4:.1f}" in page
