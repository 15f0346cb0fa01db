"""make demo's closing banner (grader/reports/demo.py): how the class was graded, read from the store's latest grading run,
and the pages that are there. Graded on the fake backends in a second; solution/tests/test_readme_commands.py runs
the real make demo from a fresh clone without a GPU."""
from __future__ import annotations

import re
import shutil

import pytest

from grader.reports import demo
from grader.grading.grade import GradeOptions, grade
from grader.reports.leaderboard import PublishOptions, publish
from grader.reports.folder import write_reports
from grader.core.rubric import load_rubric
from grader.tests.conftest import small_rubric_text, write_submission
from grader.tests.cpu_like import CPU_DEVICE, grade_cpu_like
from grader.tests.fakes import FakeBackend


@pytest.fixture(scope="module")
def small(tmp_path_factory, rubric, registry):
    path = tmp_path_factory.mktemp("rubric") / "small_rubric.toml"
    path.write_text(small_rubric_text(rubric))
    return load_rubric(path, registry)


def files(registry) -> dict[str, str]:
    return {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}


def published(results, rubric):
    publish(PublishOptions(results), rubric)
    return results


def test_after_a_run_on_the_cpu_it_says_correctness_only_and_names_every_page(tmp_path, small, registry):
    results = published(grade_cpu_like(tmp_path, small, registry, {"ann": files(registry), "bob": files(registry)}),
                        small)
    text = demo.banner(results)
    assert "for CORRECTNESS ONLY" in text and f"on the CPU backend on {CPU_DEVICE['host']}" in text
    assert "not timed on this run: graded on the CPU backend" in text  # grader/core/status.py's words, read from the run
    assert "the sample class (2 submissions)" in text
    for page in (results / "leaderboard" / "index.html", results / "overview.html"):
        assert str(page) in text
    assert re.search(rf"{re.escape(str(results / 'feedback'))}/ +one page per student \(2\)", text), text


def test_after_a_timed_run_it_says_timed_and_never_correctness_only(tmp_path, small, registry):
    write_submission(tmp_path / "subs", "ann", files(registry))
    results = tmp_path / "results"
    grade(GradeOptions(tmp_path / "subs", results, [None], jobs=1, progress=False, seed=2), small, registry,
          FakeBackend())
    write_reports(results, small)
    text = demo.banner(published(results, small))
    assert "checked, sanitized and timed against the solution" in text
    assert "CORRECTNESS ONLY" not in text and "CPU backend" not in text


def test_a_page_that_is_not_there_is_not_named(tmp_path, small, registry):
    results = grade_cpu_like(tmp_path, small, registry, {"ann": files(registry)})  # no leaderboard published
    shutil.rmtree(results / "feedback")
    text = demo.banner(results)
    assert "leaderboard" not in text and "feedback" not in text and str(results / "overview.html") in text


def test_without_a_store_it_says_so_in_one_line(tmp_path, capsys):
    assert demo.main([str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "no grades store" in err and "Traceback" not in err
