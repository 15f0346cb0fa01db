"""`bin/grader release`: one folder or zip per student with their feedback and nothing of anyone else's;
and Gradescope's and Autolab's outputs carry the same condensed text as the page."""
from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from grader.cli import main
from grader.exports import autolab, gradescope
from grader.reports.report import run_of, task_feedback, task_markdown
from grader.reports.folder import write_reports
from grader.store.store import Store
from grader.tests.demo_class import demo_files, grade_demo

FILES = {"feedback.html", "feedback.md", "speedup.png"}


@pytest.fixture(scope="module")
def demo(tmp_path_factory, rubric, registry) -> Path:
    results = grade_demo(tmp_path_factory.mktemp("release"), rubric, registry)
    write_reports(results, rubric)
    return results


@pytest.fixture(scope="module")
def students(registry) -> list[str]:
    return sorted(demo_files(registry))


def test_one_folder_per_student_with_the_page_its_markdown_and_the_plot(demo, students, tmp_path):
    out = tmp_path / "upload"
    assert main(["release", "--results", str(demo), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == students
    for student in students:
        names = {p.name for p in (out / student).iterdir()}
        timed = (demo / "feedback" / f"{student}.png").exists()
        assert names == (FILES if timed else FILES - {"speedup.png"}), student
        html = (out / student / "feedback.html").read_text()
        assert html == (demo / "feedback" / f"{student}.html").read_text()  # the page report writes, unchanged
        assert ("data:image/png;base64," in html) == timed  # the plot travels inside the page
        md = (out / student / "feedback.md").read_text()
        assert ("](speedup.png)" in md) == timed


def test_nobody_elses_feedback_is_in_a_students_folder(demo, students, tmp_path):
    out = tmp_path / "upload"
    main(["release", "--results", str(demo), "--out", str(out)])
    for student in students:
        text = (out / student / "feedback.html").read_text() + (out / student / "feedback.md").read_text()
        assert student in text
        assert not [other for other in students if other != student and other in text], student


def test_zip_gives_one_archive_per_student_the_same_bytes_each_time(demo, students, tmp_path):
    assert main(["release", "--results", str(demo), "--out", str(tmp_path / "a"), "--zip"]) == 0
    assert main(["release", "--results", str(demo), "--out", str(tmp_path / "b"), "--zip"]) == 0
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [f"{s}.zip" for s in students]
    for student in students:
        with zipfile.ZipFile(tmp_path / "a" / f"{student}.zip") as z:
            names = set(z.namelist())
            assert {n.split("/", 1)[0] for n in names} == {student}
            assert {n.split("/", 1)[1] for n in names} >= {"feedback.html", "feedback.md"}
            assert z.read(f"{student}/feedback.html").decode() == \
                (demo / "feedback" / f"{student}.html").read_text()
        assert (tmp_path / "a" / f"{student}.zip").read_bytes() == (tmp_path / "b" / f"{student}.zip").read_bytes()


def test_what_the_command_says_it_wrote_is_what_each_zip_holds(demo, students, tmp_path, capsys):
    """A file it names for everyone is in every zip; one it names "for N of them" is in exactly N."""
    out = tmp_path / "zips"
    assert main(["release", "--results", str(demo), "--out", str(out), "--zip"]) == 0
    said = capsys.readouterr().out.strip()
    assert said.startswith(f"wrote {len(students)} zips in {out}/, one per student: ")
    held = {}
    for student in students:
        with zipfile.ZipFile(out / f"{student}.zip") as z:
            held[student] = {n.split("/", 1)[1] for n in z.namelist()}
    named = said.split(": ", 1)[1].split(", ")
    plotted = sum("speedup.png" in files for files in held.values())
    assert 0 < plotted < len(students)  # the demo has students with and without timed cases
    assert named == ["feedback.html", "feedback.md", f"speedup.png for {plotted} of them"]
    assert all({"feedback.html", "feedback.md"} <= files for files in held.values())


def test_an_out_path_that_is_a_file_is_one_line(demo, tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    assert main(["release", "--results", str(demo), "--out", str(tmp_path / "file")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not a folder" in err


def test_gradescope_and_autolab_carry_the_condensed_feedback(demo, rubric):
    store = Store.existing(demo / "grades.sqlite")
    try:
        for student in ("s01-stubs", "s03-tiled-off-by-one", "s05-hang", "s06-crash", "s07-compile-error"):
            sub = store.submissions(student).iloc[-1]
            tasks = task_feedback(store, rubric, int(sub["id"]), run_of(store, int(sub["run_id"]))["limits"])
            outputs = [t["output"] for t in gradescope.results(store, rubric, student)["tests"]]
            lines = autolab.score_lines(store, rubric, student)
            for task, line in zip(tasks, lines):
                assert task_markdown(task) in outputs, (student, task["task"])  # the page's text, whole
                assert task["verdict"] in line
    finally:
        store.close()
