"""Hidden cases (grader/core/visibility.py): before the rubric's date a student sees how many, never what they did;
after it, everything as without hidden shapes; staff always see everything."""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest

from grader.core import visibility
from grader.core.rubric import DEFAULT_RUBRIC, RubricError, load_rubric
from grader.exports import autolab, gradescope
from grader.reports.folder import write_reports
from grader.reports.release import release
from grader.reports.report import (UNKNOWN_RUN, feedback_context, grades_table, render_feedback, review_table, run_of,
                                   run_views, task_feedback)
from grader.reports.student_view import student_result
from grader.scoring.chain import chain_for_result
from grader.store.store import Store
from grader.tests.conftest import opened
from grader.tests.leaderboard_class import DEVICE, LIMITS, Entry, result_for
from grader.outcomes.isolation import Isolation

UNTIL = "2026-12-11T23:59:00+00:00"
BEFORE = datetime(2026, 12, 1, tzinfo=timezone.utc)
AFTER = datetime(2026, 12, 12, tzinfo=timezone.utc)
# Hidden here: one of dot's checks (its case holds the planted secret) and matmul_fast's largest timed shape (the
# leaderboard's default, so the board moves to the next largest).
HIDDEN_CHECK, HIDDEN_TIMED = "1048577", "4096x4096x4096"
SECRET = "PLANTED-SECRET message of the concealed case"
SECRET_HINT = "PLANTED-SECRET hint of the concealed case"
VISIBLE = "PLANTED-VISIBLE transpose message"


def rubric_text(hidden: str = f'hidden = ["{HIDDEN_TIMED}"]\n', section: str = f'\n[hidden]\nuntil = "{UNTIL}"\n',
                board: str = "", dot: str = f'hidden = ["{HIDDEN_CHECK}"]\n') -> str:
    text = re.sub(r"(?m)^\[tasks.matmul_fast\]\n", f"[tasks.matmul_fast]\n{hidden}", DEFAULT_RUBRIC.read_text())
    text = re.sub(r"(?m)^\[tasks.dot\]\n", f"[tasks.dot]\n{dot}", text)
    text = text.replace('leaderboard_task = "matmul_fast"\n', f'leaderboard_task = "matmul_fast"\n{board}')
    return text + section


def rubric_from(tmp_path: Path, registry, text: str, name: str = "rubric.toml"):
    path = tmp_path / name
    path.write_text(text)
    return load_rubric(path, registry)


@pytest.fixture
def hiding(tmp_path, registry):
    return rubric_from(tmp_path, registry, rubric_text())


@pytest.fixture
def plain(tmp_path, registry):
    """The same policy without hidden shapes (the leaderboard at the shape the hiding rubric picks for it)."""
    return rubric_from(tmp_path, registry, rubric_text("", "", 'leaderboard_shape = "2048x2048x2048"\n', ""), "plain.toml")


@pytest.fixture
def results(tmp_path, registry, hiding) -> Path:
    """A store of two students: s1 failed a hidden check of dot (a planted message and hint) and a visible
    transpose case; s2 passed everything."""
    folder = tmp_path / "results"
    folder.mkdir()
    store = Store(folder / "grades.sqlite")
    try:
        run = store.start_run(7, "1.0.0-test", hiding.sha256, registry.raw, [DEVICE], LIMITS,
                              Isolation("none", note="test"), "test", timed=True,
                              untimed_reason="")
        for student in ("s1", "s2"):
            result = result_for(Entry(student, 1.1), hiding, registry)
            if student == "s1":
                for case in result.cases:
                    if (case.task, case.shape, case.kind) == ("dot", HIDDEN_CHECK, "correctness"):
                        case.status, case.message, case.hint = "wrong", SECRET, SECRET_HINT
                    if (case.task, case.kind) == ("transpose", "correctness") and case.shape == "1x1":
                        case.status, case.message = "wrong", VISIBLE
            store.save(run, result, "1.0.0-test", hiding.sha256, hiding.max_points,
                       chain_for_result(hiding, result, True))
        store.finish_run(run)
    finally:
        store.close()
    return folder


def student_texts(results: Path, rubric, now: datetime, tmp_path: Path) -> dict[str, str]:
    """Everything s1 may be handed, at `now`: feedback/ pages, release's folder, Gradescope's and Autolab's exports,
    the service's result."""
    write_reports(results, rubric, now)
    out = release(results, rubric, tmp_path / f"release-{now:%d}", now=now).paths[0]
    texts = {f"feedback/s1.{kind}": (results / "feedback" / f"s1.{kind}").read_text() for kind in ("md", "html")}
    texts |= {f"release/{p.name}": p.read_text() for p in out.iterdir() if p.suffix in (".md", ".html")}
    with opened(results) as store:
        texts["gradescope"] = gradescope.export(store, rubric, "s1", now).text
        texts["autolab"] = autolab.export(store, rubric, "s1", now).text
        sid = int(store.submissions("s1")["id"].iloc[0])
        texts["service"] = json.dumps(student_result(store, rubric, sid, now))
    return texts


# --- the rubric ------------------------------------------------------------------------------------------------


def test_a_hidden_shape_the_task_does_not_grade_is_a_one_line_error(tmp_path, registry):
    with pytest.raises(RubricError, match=r"\[tasks.matmul_fast\]: hidden shape '3x3x3' is not one of matmul_fast's "
                                          r"graded or timed shapes") as e:
        rubric_from(tmp_path, registry, rubric_text('hidden = ["3x3x3"]\n'))
    assert "\n" not in str(e.value)


def test_hidden_shapes_without_a_date_are_an_error(tmp_path, registry):
    with pytest.raises(RubricError, match=r"\[hidden\]: missing: matmul_fast, dot list hidden shapes"):
        rubric_from(tmp_path, registry, rubric_text(section=""))


@pytest.mark.parametrize("until", ["2026-12-11T23:59:00", "next friday", "2026-12-11"])
def test_a_date_without_an_offset_or_not_a_date_is_an_error(tmp_path, registry, until):
    with pytest.raises(RubricError, match=r"\[hidden\]: 'until' must be an ISO 8601 time with its offset"):
        rubric_from(tmp_path, registry, rubric_text(section=f'\n[hidden]\nuntil = "{until}"\n'))


def test_a_date_with_nothing_hidden_is_an_error(tmp_path, registry):
    with pytest.raises(RubricError, match=r"'until' is set but no task lists hidden shapes"):
        rubric_from(tmp_path, registry, rubric_text(hidden="", dot=""))


def test_the_leaderboard_never_ranks_by_a_hidden_shape(tmp_path, registry, hiding):
    assert hiding.leaderboard_shape == "2048x2048x2048"  # the largest timed shape that is not hidden
    with pytest.raises(RubricError, match=r"'leaderboard_shape' '4096x4096x4096' is hidden"):
        rubric_from(tmp_path, registry, rubric_text(board=f'leaderboard_shape = "{HIDDEN_TIMED}"\n'))


def test_hiding_cases_or_moving_their_date_leaves_the_stored_rubric_digest_as_it_is(tmp_path, registry, rubric,
                                                                                   hiding):
    """Who sees what decides no stored score: the grades stay the rubric's (grader/core/rubric.py's
    grading_digest), with no rescore and no grading again."""
    same = rubric_from(tmp_path, registry, rubric_text("", "\n", dot=""), "same.toml")
    moved = rubric_from(tmp_path, registry, rubric_text(section='\n[hidden]\nuntil = "2027-01-04T09:00:00+00:00"\n'),
                        "moved.toml")
    assert same.hidden_until is None and all(not t.hidden for t in same.tasks)
    assert moved.hidden_until != hiding.hidden_until
    assert same.sha256 == hiding.sha256 == moved.sha256
    assert rubric.hidden_until is None and all(not t.hidden for t in rubric.tasks)


def test_is_hidden_turns_on_the_time_given(hiding):
    assert visibility.is_hidden(hiding, "dot", "float32", HIDDEN_CHECK, "correctness", BEFORE)
    assert visibility.is_hidden(hiding, "matmul_fast", "float32", HIDDEN_TIMED, "timed", BEFORE)
    assert not visibility.is_hidden(hiding, "dot", "float32", HIDDEN_CHECK, "correctness", AFTER)
    assert not visibility.is_hidden(hiding, "dot", "float32", "1025", "correctness", BEFORE)
    assert not visibility.is_hidden(hiding, "fill", "float32", HIDDEN_CHECK, "correctness", BEFORE)


def test_the_count_line_names_the_count_and_the_date(hiding):
    assert visibility.count_line(4, hiding) == "4 hidden cases: their results are shown after 2026-12-11 23:59 UTC"


# --- before the date -------------------------------------------------------------------------------------------


def test_before_the_date_no_student_output_holds_a_hidden_case(results, hiding, tmp_path):
    for name, text in student_texts(results, hiding, BEFORE, tmp_path).items():
        for secret in (SECRET, SECRET_HINT, HIDDEN_CHECK, HIDDEN_TIMED, "PLANTED-SECRET"):
            assert secret not in text, f"{name} shows {secret}"
        assert VISIBLE in text or name == "autolab", f"{name} lost the visible failure"  # (Autolab: verdicts only)


def test_before_the_date_every_student_output_says_how_many_are_hidden(results, hiding, tmp_path):
    for name, text in student_texts(results, hiding, BEFORE, tmp_path).items():
        assert "2 hidden cases" in text, name  # a correctness case of dot and a timed case of matmul_fast
        assert "2026-12-11 23:59 UTC" in text or "2026-12-11T23:59:00+00:00" in text, name


def test_before_the_date_a_task_with_hidden_cases_shows_no_points(results, hiding):
    with opened(results) as store:
        sub = store.submissions("s1").iloc[0]
        result = student_result(store, hiding, int(sub["id"]), BEFORE)
        tasks = {t["task"]: t for t in result["tasks"]}
        assert tasks["matmul_fast"]["points"] is None and tasks["matmul_fast"]["max"] == 30
        assert result["total"] == pytest.approx(sum(t["points"] for t in result["tasks"] if t["points"] is not None),
                                              abs=0.005)
        assert tasks["dot"]["points"] is None
        assert result["max_total"] == hiding.max_points - 30 - 12
        assert result["hidden"] == {"cases": 2, "until": UNTIL}
        page, _ = feedback_context(store, hiding, next(store.latest_submissions().itertuples()),
                                   run_views(store).get(int(sub["run_id"]), UNKNOWN_RUN), visibility.student(BEFORE))
    md = render_feedback(page, "md")
    assert re.search(r"\| matmul_fast \| withheld / 10 \| withheld / 20 \|", md)
    assert f"**Score: {result['total']:.1f} / {result['max_total']:.0f}** (the tasks without hidden cases)" in md


def test_gradescope_keeps_the_withheld_points_in_a_test_shown_after_the_due_date(results, hiding):
    with opened(results) as store:
        doc = gradescope.results(store, hiding, "s1", BEFORE)
        total = float(store.submissions("s1")["total"].iloc[0])
        staff = {t["task"]: t for t in _staff_tasks(store, hiding)}
    hidden = [t for t in doc["tests"] if t["name"] == "matmul_fast: hidden cases"]
    assert len(hidden) == 1 and hidden[0]["visibility"] == "after_due_date"
    assert hidden[0]["score"] == pytest.approx(staff["matmul_fast"]["points"], abs=0.0005)
    assert hidden[0]["max_score"] == 30
    others = [t for t in doc["tests"] if t["name"].startswith("matmul_fast:") and t is not hidden[0]]
    assert others and all("score" not in t and "max_score" not in t and t["visibility"] == "visible" for t in others)
    # Gradescope does not show a student the total while a test is hidden: the gradebook keeps the whole score.
    assert doc["score"] == pytest.approx(total)


def test_autolab_leaves_a_withheld_task_ungraded(results, hiding):
    with opened(results) as store:
        result = autolab.autoresult(store, hiding, "s1", BEFORE)
        lines = autolab.score_lines(store, hiding, "s1", BEFORE)
    assert "matmul_fast" not in result["scores"] and "dot" not in result["scores"] and "add" in result["scores"]
    assert result["scoreboard"][1] == pytest.approx(sum(result["scores"].values()), abs=0.005)
    assert any(line.startswith("matmul_fast: withheld / 30") for line in lines)


# --- after the date, and the staff -----------------------------------------------------------------------------


def test_after_the_date_students_see_what_they_see_without_hidden_shapes(results, hiding, plain, tmp_path):
    after = student_texts(results, hiding, AFTER, tmp_path)
    without = student_texts(results, plain, AFTER, tmp_path / "plain")
    assert after == without
    assert SECRET in after["feedback/s1.md"] and "hidden case" not in after["feedback/s1.md"]
    assert "withheld" not in after["gradescope"] and "hidden cases" not in after["gradescope"]


def test_staff_outputs_do_not_change_with_hiding(results, hiding, plain):
    write_reports(results, hiding, BEFORE)
    hidden_overview, hidden_csv = (results / "overview.html").read_text(), (results / "grades.csv").read_text()
    with opened(results) as store:
        grades, review = grades_table(store, hiding), review_table(store)
    write_reports(results, plain, BEFORE)
    assert (results / "overview.html").read_text() == hidden_overview
    assert (results / "grades.csv").read_text() == hidden_csv
    with opened(results) as store:
        assert grades.equals(grades_table(store, plain)) and review.equals(review_table(store))


def test_the_staff_view_is_the_default_of_the_readers_below_the_outputs(results, hiding):
    with opened(results) as store:
        tasks = {t["task"]: t for t in _staff_tasks(store, hiding)}
    assert not tasks["dot"]["withheld"] and tasks["dot"]["points"] is not None
    assert any(SECRET == g.message for g in tasks["dot"]["groups"])


def _staff_tasks(store, rubric):
    sub = store.submissions("s1").iloc[0]
    run = run_of(store, int(sub["run_id"]))
    return task_feedback(store, rubric, int(sub["id"]), run["limits"], run["untimed"])
