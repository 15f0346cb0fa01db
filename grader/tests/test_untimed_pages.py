"""After a grading run that timed nothing (the CPU backend), every page and export says what was not measured
instead of calling a correct submission wrong or incomplete: the leaderboard, the feedback, the overview, the
release and the gradebook exports, which refuse unless told --correctness-only. The class is graded on the
CPU-like fake backend (cpu_like.py); test_grade_cpu.py asks the same of the sample class on the real one."""
from __future__ import annotations

import json
import re
import zipfile
from datetime import datetime, timezone
from html.parser import HTMLParser

import pandas as pd
import pytest

from grader import cli
from grader.cli.grading import write_outputs
from grader.grading.grade import GradeOptions, grade
from grader.reports.leaderboard import PublishOptions, publish
from grader.reports.leaderboard.board import CORRECT_NOT_TIMED, build_board
from grader.reports.release import release
from grader.core.rubric import load_rubric
from grader.tests.conftest import opened, small_rubric_text, write_submission
from grader.tests.cpu_like import grade_cpu_like
from grader.tests.fakes import FakeBackend

T0 = datetime(2026, 11, 27, 12, 0, tzinfo=timezone.utc)
REFUSAL = re.compile(r"^grader: .*grades\.sqlite: performance was not measured for (\d+) of (\d+) students? \(not "
                     r"timed on this run: graded on the CPU backend, which checks correctness only\): .*correctness "
                     r"points only, at most \d+ of \d+; grade on a GPU for the performance points, or export the "
                     r"correctness points as they are with --correctness-only$")


def ok_files(registry) -> dict[str, str]:
    return {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}


@pytest.fixture(scope="module")
def small(tmp_path_factory, rubric, registry):
    path = tmp_path_factory.mktemp("rubric") / "small_rubric.toml"
    path.write_text(small_rubric_text(rubric))
    return load_rubric(path, registry)


@pytest.fixture(scope="module")
def untimed(tmp_path_factory, small, registry):
    """ann: every task correct; bob: a file the CPU cannot run, a wrong dot; cyd: fill over the CPU's budget."""
    files = ok_files(registry)
    return grade_cpu_like(tmp_path_factory.mktemp("untimed"), small, registry, {
        "ann": files, "bob": {**files, "matmul_fast.cu": "// fake: needs-gpu\n", "dot.cu": "// fake: wrong\n"},
        "cyd": {**files, "fill.cu": "// fake: gpu-only\n"}})


class Cells(HTMLParser):
    """Each table cell's class and text, in order."""

    def __init__(self, text: str):
        super().__init__()
        self.cells: list[tuple[str, str]] = []
        self._open: list | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        if tag == "td":
            self._open = [dict(attrs).get("class") or "", ""]

    def handle_data(self, data):
        if self._open is not None:
            self._open[1] += data

    def handle_endtag(self, tag):
        if tag == "td" and self._open is not None:
            self.cells.append((self._open[0], self._open[1].strip()))
            self._open = None


# --- the leaderboard ------------------------------------------------------------------------------------------------


def test_the_leaderboard_of_an_untimed_run_says_nothing_was_timed_and_ranks_nobody(untimed, small):
    done = publish(PublishOptions(untimed, now=T0), small)
    html, md = done.html.read_text(), done.md.read_text()
    said = "Correctness only: graded without a GPU, so nothing was timed and nobody is ranked yet."
    assert said in html.replace("<strong>", "").replace("</strong>", "") and said in md.replace("**", "")
    for page in (html, md):
        assert "still has something to fix" not in page and "No correct entry yet" not in page
    assert "Reference solution" not in html and "Median entry" not in html  # no timing card with a dash


def test_a_correct_entry_of_an_untimed_run_is_listed_as_correct_not_as_something_to_fix(untimed, small):
    done = publish(PublishOptions(untimed, now=T0), small)
    table = pd.read_csv(done.csv)
    assert table["rank"].isna().all()
    # ann and cyd are correct (cyd's fill was left to a GPU); bob's matmul_fast needs one
    assert sorted(table["status"]) == sorted([CORRECT_NOT_TIMED, CORRECT_NOT_TIMED, "needs a GPU"])
    cells = Cells(done.html.read_text()).cells
    assert cells.count(("why correct", CORRECT_NOT_TIMED)) == 2 and ("why", "needs a GPU") in cells
    assert "Entries</dt><dd>3 · 2 correct, not timed" in done.html.read_text()


def test_a_timed_entry_still_ranks_beside_untimed_ones_and_the_page_says_ranked_as_before(tmp_path, small, registry):
    """A class timed on a GPU and one student graded again without one: the timed entry ranks, the board is not an
    untimed one, and the untimed student's row says correct and not timed."""
    write_submission(tmp_path / "gpu", "ann", ok_files(registry))
    results = tmp_path / "results"
    grade(GradeOptions(tmp_path / "gpu", results, [None], jobs=1, progress=False, seed=2), small, registry,
          FakeBackend())
    grade_cpu_like(tmp_path, small, registry, {"bob": ok_files(registry)})
    with opened(results) as store:
        board = build_board(store, small)
    assert board.untimed == "" and list(board.ranked["student"]) == ["ann"]
    assert dict(zip(board.unranked["student"], board.unranked["reason"])) == {"bob": CORRECT_NOT_TIMED}


# --- the feedback ---------------------------------------------------------------------------------------------------


def task_cells(untimed, student: str) -> dict[str, tuple[str, str]]:
    """The feedback page's task table (task, correctness, result: no performance column where nothing was timed):
    task -> (class, text) of its result cell."""
    text = (untimed / "feedback" / f"{student}.html").read_text()
    table = text[text.index('<table id="tasks">'):text.index("</table>")]
    assert "<th>performance</th>" not in table
    cells = Cells(table).cells
    return {cells[i][1]: cells[i + 2] for i in range(0, len(cells), 3)}


def test_a_passed_task_of_an_untimed_run_is_shown_as_passed_not_in_red(untimed, small):
    ann = task_cells(untimed, "ann")
    assert set(ann) == {t.id for t in small.tasks}
    assert all(cls == "ok" for cls, _ in ann.values()), ann
    assert ann["add"][1] == "passed 2/2"  # "not timed" is said once, above the table


def test_a_task_left_to_a_gpu_is_grey_and_a_wrong_one_red(untimed):
    bob, cyd = task_cells(untimed, "bob"), task_cells(untimed, "cyd")
    assert bob["matmul_fast"][0] == "muted" and bob["matmul_fast"][1].startswith("needs a GPU")
    assert bob["dot"][0] == "bad" and bob["add"][0] == "ok"
    assert cyd["fill"] == ("muted", "GPU only")


def test_the_score_line_says_correctness_only(untimed):
    md = (untimed / "feedback" / "ann.md").read_text()
    assert md.splitlines()[2].startswith("**Score: 48.0 / 100** (correctness only, performance not measured)")
    assert "correctness only, performance not measured" in (untimed / "feedback" / "ann.html").read_text()


# --- the overview ---------------------------------------------------------------------------------------------------


def rate_cells(untimed, task: str) -> list[str]:
    text = (untimed / "overview.html").read_text()
    start = text.index(f'id="rates-{task}"')
    return [c for _, c in Cells(text[start:text.index("</table>", start)]).cells]


def test_the_overview_leaves_cases_left_to_a_gpu_out_of_its_pass_rates_and_counts_them(untimed, small):
    fill, fast = small.task("fill"), small.task("matmul_fast")
    # cyd's fill is GPU only at every shape, bob's matmul_fast needs a GPU: each cell counts the two others
    for task in (fill, fast):
        cells = rate_cells(untimed, task.id)
        assert cells[1::len(task.dtypes) + 1] and \
            set(cells[1::len(task.dtypes) + 1]) == {"2/2 · 100% · 1 left to a GPU"}, cells
    gpu_only, needs_gpu = (len(t.dtypes) * len(t.shapes) for t in (fill, fast))
    assert (f"Left to a GPU and not counted: {gpu_only} cases GPU only (over the CPU backend's per-case budget), "
            f"{needs_gpu} cases in files that need a GPU (inline PTX, ...).") in (untimed / "overview.html").read_text()


def test_the_overview_says_correctness_only_and_counts_full_marks_of_what_was_measured(untimed, small):
    text = (untimed / "overview.html").read_text()
    assert '<p id="untimed"><b>Correctness only.</b> Performance not measured for 3 of 3 submissions' in text
    measured = sum(t.correctness_points for t in small.tasks)
    assert f"of {measured:g} measured ({small.max_points:g} with performance)" in text
    rows = {}
    start = text.index('id="tasks"')
    for i, (_, cell) in enumerate(cells := Cells(text[start:text.index("</table>", start)]).cells):
        if i % 6 == 0:
            rows[cell] = [c for _, c in cells[i:i + 6]]
    assert rows["add"][3:5] == [f"{small.task('add').correctness_points:g}", "3"]  # of 4, all three full marks


# --- the exports ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["canvas", "gradescope", "autolab"])
def test_a_gradebook_export_of_an_untimed_run_is_refused_in_one_line_naming_the_flag(untimed, small, target, capsys):
    student = [] if target == "canvas" else ["--student", "ann"]
    out = untimed / f"refused-{target}"
    status = cli.main(["export", "--to", target, *student, "--results", str(untimed), "--rubric", str(small.path),
                       "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert status == 1 and len(err.splitlines()) == 1 and REFUSAL.match(err), err
    assert REFUSAL.match(err).groups() == (("3", "3") if target == "canvas" else ("1", "1"))
    assert not out.exists()


def test_correctness_only_writes_the_export_and_says_so(untimed, small, capsys):
    out = untimed / "canvas-correctness.csv"
    assert cli.main(["export", "--correctness-only", "--assignment-id", "7", "--results", str(untimed), "--rubric",
                     str(small.path), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.startswith("warning: correctness only (--correctness-only): performance was not measured for 3 of 3 "
                          "students")
    table = pd.read_csv(out, dtype=str, keep_default_na=False).set_index("Student")
    assert table.loc["ann", f"{small.title} (7)"] == f"{sum(t.correctness_points for t in small.tasks):g}.0"
    json_out = untimed / "ann.results.json"
    assert cli.main(["export", "--to", "gradescope", "--student", "ann", "--correctness-only", "--results",
                     str(untimed), "--rubric", str(small.path), "--out", str(json_out)]) == 0
    assert "\nCorrectness only. Not timed on this run" in json.loads(json_out.read_text())["output"]  # in the file


def test_grading_without_a_gpu_writes_no_canvas_csv_and_says_how_to(tmp_path, small, registry, capsys):
    results = grade_cpu_like(tmp_path, small, registry, {"ann": ok_files(registry)})
    (results / "canvas.csv").write_text("an earlier grading's totals\n")
    write_outputs(results, small)
    out = capsys.readouterr().out
    assert not (results / "canvas.csv").exists()
    assert ("canvas.csv not written (the earlier one removed): performance was not measured for 1 of 1 student "
            "(not timed on this run") in out
    assert "(`bin/grader export --correctness-only` writes it so)" in out
    assert out.rstrip().endswith(f"results in {results}: grades.sqlite, grades.csv, review.csv and overview.html "
                                 "(for the staff), feedback/")


# --- the release ----------------------------------------------------------------------------------------------------


def test_the_release_of_an_untimed_class_promises_no_plot_and_holds_every_file_it_names(untimed, small, tmp_path):
    done = release(untimed, small, tmp_path / "upload", as_zip=True)
    said = done.summary()
    assert "speedup.png" not in said.split("(")[0] and "(no speedup.png: no student has a timed case)" in said
    named = re.findall(r"[\w.-]+\.(?:html|md|png)", said.split("(")[0])
    assert named == ["feedback.html", "feedback.md"]
    for path in done.paths:
        with zipfile.ZipFile(path) as z:
            assert sorted(n.split("/", 1)[1] for n in z.namelist()) == named
            md = z.read(f"{path.stem}/feedback.md").decode()
        assert "](speedup.png)" not in md
