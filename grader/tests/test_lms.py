"""Submissions as Canvas and Gradescope deliver them: whose, when received, and which one counts."""
from __future__ import annotations

import os

import io
import tarfile
import zipfile
from datetime import datetime, timezone

import pytest

from grader.grading.grade import GradeOptions, grade
from grader.intake.submission import choose_latest, read_submission
from grader.intake.layouts import IntakeError, find_entries
from grader.tests.conftest import grade_on_fakes, opened
from grader.tests.fakes import FakeBackend

TASKS = ["fill.cu", "add.cu", "dot.cu"]
NOV20_2359 = datetime(2026, 11, 20, 23, 59, 59, tzinfo=timezone.utc).timestamp()


def canvas_tar(path, members: dict[str, bytes], mtime: float = NOV20_2359):
    """A .tar.gz as a student packs it: its members carry the time they were last changed."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), mtime
            tar.addfile(info, io.BytesIO(data))
    return path


def canvas_zip(path, members: dict[str, bytes], when=(2026, 11, 21, 8, 30, 0)):
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(zipfile.ZipInfo(name, date_time=when), data)
    return path


def read_all(folder, source):
    entries, skipped = find_entries(folder, source)
    return [read_submission(e, TASKS) for e in entries], skipped


def test_canvas_names_give_the_login_the_late_flag_and_both_ids(tmp_path):
    canvas_tar(tmp_path / "smithjohn_LATE_12345_67890_submission.tar.gz", {"hw4/fill.cu": b"// fill"})
    canvas_zip(tmp_path / "doejane_23456_78901_kernels.zip", {"fill.cu": b"// fill"})
    canvas_tar(tmp_path / "obrien_m_34567_89012_hw4-final.tgz", {"fill.cu": b"// f"})
    subs, skipped = read_all(tmp_path, "canvas")
    by = {s.student: s for s in subs}
    assert sorted(by) == ["doejane", "obrien_m", "smithjohn"] and skipped == []
    assert any("user id 12345, submission 67890, marked LATE by Canvas" in n for n in by["smithjohn"].notes)
    assert not any("LATE" in n for n in by["doejane"].notes)
    assert by["smithjohn"].files == {"fill.cu": b"// fill"}


def test_canvas_numbered_duplicates_resolve_to_the_higher_number_whatever_the_times_inside(tmp_path):
    """Canvas numbers a name it has seen before in the download (kernels-1.zip, -2): the highest is the last
    upload. The times inside each zip are the student's machine's, and decide nothing."""
    canvas_zip(tmp_path / "doejane_23456_78901_kernels.zip", {"fill.cu": b"first"}, when=(2026, 11, 22, 9, 0, 0))
    canvas_zip(tmp_path / "doejane_23456_78901_kernels-1.zip", {"fill.cu": b"second"})
    canvas_zip(tmp_path / "doejane_23456_78901_kernels-2.zip", {"fill.cu": b"third"}, when=(2026, 11, 19, 9, 0, 0))
    subs, _ = read_all(tmp_path, "canvas")
    kept, skipped = choose_latest(subs)
    assert len(kept) == 1 and kept[0].source.name == "doejane_23456_78901_kernels-2.zip"
    assert kept[0].files["fill.cu"] == b"third" and len(skipped) == 2


def test_a_file_canvas_did_not_name_is_skipped_with_a_reason(tmp_path):
    (tmp_path / "grades.csv").write_text("x")
    canvas_zip(tmp_path / "doejane_23456_78901_kernels.zip", {"fill.cu": b"a"})
    subs, skipped = read_all(tmp_path, "canvas")
    assert [s.student for s in subs] == ["doejane"]
    assert skipped == ["grades.csv: not named as Canvas names a download (login[_LATE]_userid_submissionid_file); "
                       "skipped"]


def test_files_uploaded_one_by_one_are_one_submission_under_the_names_the_student_gave(tmp_path):
    """Canvas downloads each uploaded file on its own, named login_userid_submissionid_name, and numbers a name
    uploaded twice (add-1.cu): the student's files are one submission, the highest number of a name graded."""
    for name, text, minute in [("fill.cu", "// fill", 10), ("add.cu", "// first add", 11),
                               ("add-1.cu", "// second add", 12), ("nickname.txt", "Speedy", 13)]:
        path = tmp_path / f"smithjohn_LATE_12345_67890_{name}"
        path.write_text(text)
        os.utime(path, (NOV20_2359 + 60 * minute,) * 2)
    (tmp_path / "doejane_23456_78901_dot.cu").write_text("// dot")
    subs, skipped = read_all(tmp_path, "canvas")
    assert skipped == []
    by = {s.student: s for s in subs}
    smith = by["smithjohn"]
    assert smith.files == {"fill.cu": b"// fill", "add.cu": b"// second add"} and smith.nickname == "Speedy"
    assert smith.received == "2026-11-21T00:12:59+00:00"  # the newest upload's time (nickname.txt)
    assert smith.notes[0] == ("Canvas: user id 12345, submission 67890, marked LATE by Canvas (4 files uploaded one "
                              "by one: smithjohn_LATE_12345_67890_add-1.cu, smithjohn_LATE_12345_67890_add.cu, "
                              "smithjohn_LATE_12345_67890_fill.cu, smithjohn_LATE_12345_67890_nickname.txt)")
    assert "add.cu was uploaded more than once: graded add-1.cu, ignored add.cu" in smith.notes
    assert by["doejane"].files == {"dot.cu": b"// dot"} and not by["doejane"].rejected
    # The same files read again are the same submission (a regrade finds it unchanged).
    again, _ = read_all(tmp_path, "canvas")
    assert {s.student: s.sha256 for s in again} == {s.student: s.sha256 for s in subs}


GRADESCOPE_YML = """\
submission_201:
  :submitters:
  - :name: Jane Doe
    :sid: '1001'
    :email: jdoe@example.edu
  :created_at: 2026-11-20 23:59:59.123456000 -05:00
  :score: 0.0
  :status: processed
submission_202:
  :submitters:
  - :name: Sam Roe
    :sid: ''
    :email: sroe@example.edu
  - :name: Ali Poe
    :sid: '1003'
    :email: apoe@example.edu
  :created_at: 2026-11-21 10:15:00.000000000 -05:00
submission_203:
  :submitters:
  - :name: Jane Doe
    :sid: '1001'
    :email: jdoe@example.edu
  :created_at: 2026-11-19 12:00:00.000000000 -05:00
"""


def gradescope_export(root):
    root.mkdir()
    (root / "submission_metadata.yml").write_text(GRADESCOPE_YML)
    for n, text in ((201, "new"), (202, "group"), (203, "old")):
        (root / f"submission_{n}").mkdir()
        (root / f"submission_{n}" / "fill.cu").write_text(f"// {text}")
    (root / "submission_999").mkdir()  # not in the metadata
    return root


def test_gradescope_metadata_gives_ids_names_and_created_times(tmp_path):
    subs, skipped = read_all(gradescope_export(tmp_path / "export"), "gradescope")
    first = next(s for s in subs if s.source.name == "submission_201")
    assert first.student == "1001" and first.received == "2026-11-21T04:59:59+00:00"
    assert any("created 2026-11-21T04:59:59+00:00, by Jane Doe" in n for n in first.notes)
    assert skipped == ["submission_999: not listed in submission_metadata.yml; skipped"]


def test_a_gradescope_group_submission_is_graded_for_each_submitter_by_sid_else_email(tmp_path):
    subs, _ = read_all(gradescope_export(tmp_path / "export"), "gradescope")
    group = sorted(s.student for s in subs if s.source.name == "submission_202")
    assert group == ["1003", "sroe@example.edu"]


def test_of_two_gradescope_submissions_the_one_created_last_counts(tmp_path):
    subs, _ = read_all(gradescope_export(tmp_path / "export"), "gradescope")
    kept, skipped = choose_latest(subs)
    jane = next(s for s in kept if s.student == "1001")
    assert jane.files["fill.cu"] == b"// new" and any(s.startswith("submission_203/") for s in skipped)


@pytest.mark.parametrize("text, message", [("", "holds no submissions"),
                                           ("submission_1: [unclosed", "not readable as YAML"),
                                           ("submission_1:\n  :created_at: yesterday\n", "is not a time")])
def test_broken_gradescope_metadata_is_named_in_one_line(tmp_path, text, message):
    (tmp_path / "submission_metadata.yml").write_text(text)
    (tmp_path / "submission_1").mkdir()
    with pytest.raises(IntakeError, match=message) as caught:
        find_entries(tmp_path, "gradescope")
    assert "\n" not in str(caught.value)


def test_a_class_from_a_canvas_download_is_graded_and_stored_with_canvas_times(tmp_path, registry, small_rubric):
    ok = {t.file: b"// fake: ok speed=1.0\n" for t in registry.tasks}
    subs = tmp_path / "download"
    subs.mkdir()
    canvas_tar(subs / "smithjohn_LATE_12345_67890_submission.tar.gz", {f"hw/{k}": v for k, v in ok.items()},
               mtime=NOV20_2359 - 86400)
    canvas_zip(subs / "doejane_23456_78901_kernels.zip", ok, when=(2026, 11, 25, 22, 0, 0))
    (tmp_path / "times.csv").write_text("user_id,submitted_at\n12345,2026-11-21T00:00:59Z\n"
                                        "23456,2026-11-20T22:00:00Z\n")
    results = tmp_path / "results"
    grade(GradeOptions(subs, results, [None], jobs=1, progress=False, seed=3, source="canvas",
                       lms_times=tmp_path / "times.csv"), small_rubric, registry, FakeBackend())
    with opened(results) as store:
        latest = store.latest_submissions().set_index("student")
    assert latest.loc["smithjohn", "received"] == "2026-11-21T00:00:59+00:00"
    assert latest.loc["doejane", "received"] == "2026-11-20T22:00:00+00:00"
    assert set(latest["received_from"]) == {"lms-times"}
    assert latest.loc["smithjohn", "total"] == small_rubric.max_points
    assert "marked LATE by Canvas" in latest.loc["smithjohn", "notes"]
    assert "received 2026-11-21T00:00:59+00:00: the submission time in times.csv" in latest.loc["smithjohn", "notes"]


def test_grading_an_empty_folder_is_an_error_and_records_no_run(tmp_path, registry, small_rubric):
    from grader.core.errors import GraderError
    (tmp_path / "subs").mkdir()
    with pytest.raises(GraderError, match="no submissions in it; no grading run recorded"):
        grade(GradeOptions(tmp_path / "subs", tmp_path / "results", [None], jobs=1, progress=False), small_rubric,
              registry, FakeBackend())
    assert not (tmp_path / "results" / "grades.sqlite").exists()


GRADESCOPE_JSON = {"id": 123456789, "created_at": "2026-11-20T21:00:01.482-08:00",
                   "assignment": {"due_date": "2026-11-20T23:59:00.000-08:00", "title": "HW4"},
                   "users": [{"email": "jdoe@example.edu", "id": 5551, "name": "Jane Doe", "sid": "1001"}]}


def test_the_gradescope_command_takes_the_submitter_and_time_from_submission_metadata_json(tmp_path, registry,
                                                                                         small_rubric, monkeypatch):
    import json

    from grader import cli
    from grader.tests.conftest import write_submission
    grade_on_fakes(monkeypatch, registry, small_rubric)
    entry = write_submission(tmp_path, "submission", {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks})
    (tmp_path / "submission_metadata.json").write_text(json.dumps(GRADESCOPE_JSON))
    assert cli.main(["gradescope", "--submission", str(entry), "--metadata", str(tmp_path / "submission_metadata.json"),
                     "--results-dir", str(tmp_path / "gs"), "--results", str(tmp_path / "kept"),
                     "--work", str(tmp_path / "work")]) == 0
    with opened(tmp_path / "kept") as store:
        sub = store.latest_submissions().iloc[0]
    assert (sub.student, sub.received) == ("1001", "2026-11-21T05:00:01+00:00")
    assert "Gradescope: created 2026-11-21T05:00:01+00:00, by Jane Doe" in sub.notes
    (tmp_path / "submission_metadata.json").write_text("{}")
    assert cli.main(["gradescope", "--submission", str(entry), "--metadata", str(tmp_path / "submission_metadata.json"),
                     "--results-dir", str(tmp_path / "gs"), "--work", str(tmp_path / "work")]) == 1
