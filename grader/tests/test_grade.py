"""Grading a class end to end on the fake backend: verdicts, outputs, resume, regrade, and kill -9."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import time

import pandas as pd
import pytest

from grader.grading.grade import GradeOptions, grade
from grader.reports.report import run_of, summary_table, task_feedback, task_markdown
from grader.reports.folder import write_reports
from grader.store.store import Store, StoreError
from grader.tests.conftest import REPO, cases_of, opened, small_rubric_text, write_submission
from grader.tests.fakes import FakeBackend


def make_class(root, registry):
    """Submissions with every behaviour the grader must handle, keyed by the verdict expected."""
    files = {t.file: f"// fake: ok speed=1.0\n" for t in registry.tasks}
    write_submission(root, "alice", files)  # matches the solution: full marks
    write_submission(root, "bob", {**files, "matmul_fast.cu": "// fake: ok speed=0.2\n", "README.md": "hi"})
    write_submission(root, "carol", {**files, "transpose.cu": "// fake: wrong-large\n"})
    write_submission(root, "dave", {**files, "dot.cu": "// fake: hang\n"})
    write_submission(root, "erin", {**files, "add.cu": "#error nope\n"})
    write_submission(root, "frank", files)
    os.symlink("/etc/passwd", root / "frank" / "evil.cu")  # rejected at intake
    write_submission(root, "grace", {"fill.cu": "// fake: ok\n", "nickname.txt": "Gracie\n"})
    write_submission(root, "heidi", {**files, "add.cu": "// fake: wrong-when-timed\n", "fill.cu": "// fake: crash\n"})
    with tarfile.open(root / "ivan.tar.gz", "w:gz") as tar:  # an archive, graded like a folder
        tar.add(root / "alice", arcname="ivan")
    return root


def grade_class(root, registry, small_rubric):
    subs = make_class(root / "submissions", registry)
    results = root / "results"
    backend = FakeBackend()
    summary = grade(GradeOptions(subs, results, [None], jobs=2, progress=False, seed=7), small_rubric, registry,
                    backend)
    write_reports(results, small_rubric)
    return summary, results, backend


@pytest.fixture(scope="module")
def graded(tmp_path_factory, registry, small_rubric_once):
    """The class graded once for the module's tests that only read it (a test that grades it again: regraded)."""
    return grade_class(tmp_path_factory.mktemp("class"), registry, small_rubric_once)


@pytest.fixture
def regraded(tmp_path, registry, small_rubric):
    """The class graded in a folder of the test's own, which it may grade again."""
    return grade_class(tmp_path, registry, small_rubric)


def totals(results) -> dict[str, float]:
    grades = pd.read_csv(results / "grades.csv")
    return dict(zip(grades["student"], grades["total"]))


def test_every_submission_gets_the_verdict_its_code_earns(graded, small_rubric):
    _, results, _ = graded
    t = totals(results)
    full = small_rubric.max_points
    assert t["alice"] == full and t["ivan"] == full
    fast = small_rubric.task("matmul_fast")  # bob's is 0.2x the solution: partial credit on the curve
    assert t["bob"] == pytest.approx(full - fast.performance_points * (1 - fast.performance_credit(0.2)), abs=1e-3)
    assert t["erin"] == full - small_rubric.task("add").max_points and t["frank"] == 0  # add.cu did not compile
    assert t["grace"] == small_rubric.task("fill").max_points
    assert t["carol"] < full and t["dave"] < full and t["heidi"] < full


def test_statuses_and_reasons_are_stored_per_case(graded):
    _, results, _ = graded
    with opened(results) as store:
        status = dict(zip(*store.submissions()[["student", "status"]].T.values))
        pairs = len(store.samples_for())
    assert status["erin"] == "graded" and status["frank"] == "rejected" and status["alice"] == "graded"
    erin = cases_of(results, "erin", task="add", kind="correctness")
    assert set(erin["status"] + ":" + erin["message"]) == {
        "build_error:add.cu does not compile: add.cu(3): error: this does not compile"}
    dave = cases_of(results, "dave", task="dot", kind="correctness")
    assert dave["status"][0] == "timeout" and "never finishes" in dave["message"][0]
    assert len(dave) > 1 and (dave["status"][1:] == "skipped").all()  # no second wait
    assert dave["message"][1:].str.contains("did not finish").all()
    heidi = cases_of(results, "heidi")
    heidi = dict(zip(heidi["task"] + ":" + heidi["kind"], heidi["status"]))
    assert heidi["fill:correctness"] == "crashed" and heidi["add:timed"] == "wrong"
    assert heidi["dot:timed"] == "ok"  # the crash and the wrong timed run ended only their own cases
    assert pairs > 0


def test_a_hang_or_crash_leaves_the_next_submission_untouched(graded, small_rubric):
    _, results, _ = graded
    t = totals(results)
    assert t["ivan"] == small_rubric.max_points  # graded after dave (hang) and heidi (crash)


def test_feedback_names_what_went_wrong(graded):
    _, results, _ = graded
    fb = results / "feedback"
    erin = (fb / "erin.md").read_text()
    assert "## add: does not build" in erin and "add.cu does not compile: add.cu(3): error" in erin
    assert "kernels/add.cu(3): error" in erin  # the compiler's own output, in full
    assert "symbolic link" in (fb / "frank.md").read_text()
    assert "3 of 561 elements are wrong" in (fb / "carol.md").read_text()
    assert "| matmul_fast | 0.0 / 10 | 0.0 / 20 | file missing |" in (fb / "grace.md").read_text()
    alice = (fb / "alice.md").read_text()
    assert "| 1 (1–1) |" in alice and "100% | " in alice  # the speedup, its interval and the credit
    assert "README.md" in (fb / "bob.md").read_text()  # extra files are listed
    html = (fb / "alice.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "data:image/png;base64," in html
    assert (fb / "alice.png").read_bytes().startswith(b"\x89PNG")


def test_each_tasks_lines_on_the_page_come_from_task_feedback(graded, small_rubric):
    _, results, _ = graded
    with opened(results) as store:
        for student in ("alice", "carol", "dave", "heidi"):
            sub = store.submissions(student).iloc[-1]
            page = (results / "feedback" / f"{student}.md").read_text()
            tasks = task_feedback(store, small_rubric, int(sub["id"]), run_of(store, int(sub["run_id"]))["limits"])
            for task in tasks:
                assert f"| {task['task']} |" in page and task["verdict"] in page, (student, task["task"])
                if task["details"]:  # its section is Gradescope's text for the task, less the verdict line
                    details = task_markdown(task).split("\n", 2)[2]
                    assert f"## {task['task']}: {task['verdict']}\n\n{details}" in page, (student, task["task"])
    dave = (results / "feedback" / "dave.md").read_text()
    assert re.search(r"\*\*timed out\*\*: float32 at \d+ \(1 case\)", dave) and "**not run**: float32 at " in dave


def test_grades_csv_has_a_row_per_student_and_two_columns_per_task(graded, small_rubric):
    _, results, _ = graded
    grades = pd.read_csv(results / "grades.csv")
    assert sorted(grades["student"]) == ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan"]
    for t in small_rubric.tasks:
        assert f"{t.id}_correctness" in grades.columns and f"{t.id}_performance" in grades.columns
    assert grades.set_index("student").loc["grace", "nickname"] == "Gracie"


def test_summary_counts_failures_and_timeouts(graded, small_rubric):
    _, results, _ = graded
    store = Store(results / "grades.sqlite")
    row = summary_table(store, small_rubric).iloc[0]
    store.close()
    assert row["submissions"] == 9 and row["build failures"] == 0 and row["rejected"] == 1
    assert row["with files that do not build"] == 1
    assert row["with timeouts"] == 1


def test_grading_writes_canvas_csv_from_the_store(graded, small_rubric):
    _, results, _ = graded
    write_reports(results, small_rubric)
    from grader import cli
    assert cli.main(["export", "--rubric", str(small_rubric.path), "--results", str(results)]) == 0
    table = pd.read_csv(results / "canvas.csv", dtype=str, keep_default_na=False)
    assert list(table.columns) == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", small_rubric.title]
    assert table.iloc[0]["Student"] == "Points Possible"
    assert dict(zip(table["SIS Login ID"][1:], table[small_rubric.title][1:].astype(float))) == totals(results)


def test_a_second_run_skips_unchanged_submissions_and_regrade_does_not(regraded, registry, small_rubric):
    summary, results, _ = regraded
    subs = results.parent / "submissions"
    again = FakeBackend()
    second = grade(GradeOptions(subs, results, [None], progress=False), small_rubric, registry, again)
    assert not second.graded and again.builds == [] and len(second.skipped_same) == 9
    (subs / "alice" / "fill.cu").write_text("// fake: wrong\n")
    third = grade(GradeOptions(subs, results, [None], progress=False), small_rubric, registry, FakeBackend())
    assert [r.submission.student for r in third.graded] == ["alice"]
    fourth = grade(GradeOptions(subs, results, [None], regrade=True, progress=False), small_rubric, registry,
                   FakeBackend())
    assert len(fourth.graded) == 9
    with opened(results) as store:
        assert len(store.submissions("alice")) == 2  # two versions
    write_reports(results, small_rubric)
    assert totals(results)["alice"] < small_rubric.max_points  # the latest version counts


KILL_SCRIPT = """
import json, sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from grader.grading.grade import GradeOptions, grade
from grader.core.registry import Registry
from grader.core.rubric import load_rubric
from grader.tests.fakes import FakeBackend
registry = Registry.from_json(json.loads(Path({registry!r}).read_text()))
rubric = load_rubric(Path({rubric!r}), registry)
grade(GradeOptions(Path({subs!r}), Path({results!r}), [None], jobs=1, progress=False, seed=3), rubric, registry,
      FakeBackend(delay=0.01))
"""


def test_kill_minus_9_midway_loses_only_the_submission_in_flight(tmp_path, registry, rubric):
    subs = tmp_path / "submissions"
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    for i in range(8):
        write_submission(subs, f"student{i:02d}", files)
    (tmp_path / "registry.json").write_text(json.dumps(registry.raw))
    (tmp_path / "rubric.toml").write_text(small_rubric_text(rubric, min_pairs=5))
    results = tmp_path / "results"
    script = KILL_SCRIPT.format(repo=str(REPO), registry=str(tmp_path / "registry.json"),
                                rubric=str(tmp_path / "rubric.toml"), subs=str(subs), results=str(results))
    proc = subprocess.Popen([sys.executable, "-c", script])
    db_path = results / "grades.sqlite"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if db_path.exists():
            try:
                with opened(results) as store:
                    if len(store.submissions()) >= 2:
                        break
            except StoreError:  # the grader is still creating it
                pass
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    with opened(results) as store:
        kept, scores, cases = store.submissions(), store.scores(), store.cases_for()
    stored = len(kept)
    assert 2 <= stored < 8, "the kill should land midway"
    tasks = len(registry.tasks)
    n_scores = scores.groupby("submission_id").size().reindex(kept["id"], fill_value=0)
    n_cases = cases.groupby("submission_id").size().reindex(kept["id"], fill_value=0)
    assert (n_scores == tasks).all() and (n_cases == 3 * tasks).all()  # whole, never partial
    assert cases["submission_id"].isin(kept["id"]).all()

    from grader.core.registry import Registry
    from grader.core.rubric import load_rubric
    small = load_rubric(tmp_path / "rubric.toml", Registry.from_json(registry.raw))
    backend = FakeBackend()
    resumed = grade(GradeOptions(subs, results, [None], progress=False), small, registry, backend)
    assert len(resumed.skipped_same) == stored
    assert len(backend.builds) == 8 - stored
    with opened(results) as store:
        assert sorted(store.submissions()["student"]) == [f"student{i:02d}" for i in range(8)]


def test_two_gpus_get_a_worker_each_and_share_the_class(tmp_path, registry, small_rubric):
    subs = make_class(tmp_path / "submissions", registry)
    results = tmp_path / "results"

    class Recording(FakeBackend):
        def __init__(self):
            super().__init__(delay=0.002)
            self.gpus = []

        def student_server(self, build, gpu):
            self.gpus.append(gpu)
            return super().student_server(build, gpu)

    backend = Recording()
    summary = grade(GradeOptions(subs, results, ["0", "1"], jobs=4, progress=False), small_rubric, registry, backend)
    assert len(summary.graded) == 9
    assert set(backend.gpus) == {"0", "1"}
    write_reports(results, small_rubric)
    assert totals(results)["alice"] == small_rubric.max_points


def test_a_folder_and_an_archive_of_one_id_are_graded_once_the_newest_with_a_note(tmp_path, registry, small_rubric):
    """Both used to be accepted, graded twice and built at once in one folder: now the one received last counts."""
    subs = tmp_path / "subs"
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    write_submission(subs, "judy", {t.file: "// fake: wrong\n" for t in registry.tasks})
    write_submission(tmp_path / "newer", "judy", files)
    with tarfile.open(subs / "judy.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / "newer" / "judy", arcname="judy")
    os.utime(subs / "judy", (1_700_000_000, 1_700_000_000))
    os.utime(subs / "judy.tar.gz", (1_700_000_500, 1_700_000_500))
    backend = FakeBackend()
    summary = grade(GradeOptions(subs, tmp_path / "results", [None], jobs=2, progress=False), small_rubric, registry,
                    backend)
    assert backend.builds == ["judy"]
    [result] = summary.graded
    assert result.submission.source.name == "judy.tar.gz" and all(c.status == "ok" for c in result.cases
                                                                     if c.kind == "correctness")
    assert any("judy/ (received 2023-11-14T22:13:20+00:00) has the same student id" in n
               for n in result.submission.notes)
    assert any(s.startswith("judy/: another entry with the id judy") for s in summary.skipped_entries)


def test_a_gpu_run_distrusts_a_harness_that_leaves_a_case_to_a_gpu(tmp_path, registry, small_rubric):
    """Only the CPU backend's harness answers gpu_only (a shape over its budget): on a GPU run the answer would
    drop a case from the score, so it is taken for a forged reply."""
    subs = tmp_path / "subs"
    write_submission(subs, "mallory", {"fill.cu": "// fake: gpu-only\n"})
    grade(GradeOptions(subs, tmp_path / "results", [None], progress=False, seed=3), small_rubric, registry,
          FakeBackend())
    rows = cases_of(tmp_path / "results", "mallory", task="fill")
    assert set(rows["status"]) == {"protocol"}
    assert rows["message"].str.startswith("a GPU run's harness answered gpu_only for ").all()
