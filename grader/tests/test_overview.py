"""results/overview.html, the staff's page of how the class did: read from the demo class's store (and a small
class with a late and a suspiciously fast submission), then opened in a real browser."""
from __future__ import annotations

import base64
import os
import re
import urllib.parse
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path

import pytest

from grader.cli import main
from grader.grading.grade import GradeOptions, grade
from grader.reports.overview import write_overview
from grader.reports.folder import write_reports
from grader.intake.roster import Person
from grader.core.rubric import load_rubric
from grader.tests.browser import Browser, find_browser
from grader.tests.conftest import small_rubric_text, write_submission
from grader.tests.demo_class import grade_demo
from grader.tests.fakes import FakeBackend

BROWSER, DRIVER = find_browser()
REQUIRED = os.environ.get("REQUIRE_BROWSER_TESTS", "") not in ("", "0")


@pytest.fixture(scope="module")
def demo(tmp_path_factory, rubric, registry) -> Path:
    """The sample class graded on the fake backend, with every report written (the overview among them)."""
    results = grade_demo(tmp_path_factory.mktemp("overview"), rubric, registry)
    write_reports(results, rubric)
    return results


class Page(HTMLParser):
    """The overview's sections (by h2 id), their table rows as cell texts, its links and images."""

    def __init__(self, text: str):
        super().__init__()
        self.sections: dict[str, list[list[str]]] = {}
        self.links: list[str] = []
        self.images: list[str] = []
        self.section = None
        self.row = None
        self.cell = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "h2":
            self.section = attrs.get("id")
            self.sections[self.section] = []
        elif tag == "tr" and self.section:
            self.row = []
        elif tag in ("td", "th") and self.row is not None:
            self.cell = ""
        elif tag == "a":
            self.links.append(attrs["href"])
        elif tag == "img":
            self.images.append(attrs["src"])

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.row.append(self.cell.strip())
            self.cell = None
        elif tag == "tr" and self.row is not None:
            if self.row and all(c for c in self.row[:1]) and self.row[0] != "student" and self.row[0] != "task":
                self.sections[self.section].append(self.row)
            self.row = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def page(results: Path) -> Page:
    return Page((results / "overview.html").read_text())


def test_grading_writes_the_overview_with_the_other_reports(demo):
    assert (demo / "overview.html").is_file()
    assert (demo / "feedback" / "s08-fast.html").is_file()


def test_histograms_of_the_total_and_each_task_are_embedded_pngs(demo, rubric):
    images = page(demo).images
    assert len(images) == 1 + len(rubric.tasks)
    for src in images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    text = (demo / "overview.html").read_text()
    assert "src=\"http" not in text and "<script" not in text  # self-contained, nothing fetched, nothing run


def test_the_task_table_counts_full_marks_and_zeros(demo, rubric):
    rows = {r[0]: r for r in page(demo).sections["distribution"]}
    assert set(rows) == {t.id for t in rubric.tasks}
    # matmul_fast: only s08-fast submitted it, at full marks; the other 7 have nothing.
    assert rows["matmul_fast"][4:6] == ["1", "7"]


def rate_table(text: str, task: str) -> str:
    start = text.index(f'id="rates-{task}"')
    return text[start:text.index("</table>", start)]


def test_pass_rates_are_one_table_per_task_a_row_per_shape_a_column_per_type(demo, rubric):
    text = (demo / "overview.html").read_text()
    assert text.count('<table class="rate"') == len(rubric.tasks)
    for t in rubric.tasks:
        table = rate_table(text, t.id)
        assert table.count("<tr>") == 1 + len(t.shapes) and table.count('<th class="num">') == len(t.dtypes)


def test_pass_rates_count_only_those_who_tried_the_task(demo, rubric):
    text = (demo / "overview.html").read_text()
    add, fast = (next(t for t in rubric.tasks if t.id == name) for name in ("add", "matmul_fast"))
    # add: s05-hang and s08-fast pass every case, s06-crash faults in each; s01's untouched stub is no try.
    assert rate_table(text, "add").count("2/3 · 67%") == len(add.dtypes) * len(add.shapes)
    assert rate_table(text, "matmul_fast").count("1/1 · 100%") == len(fast.dtypes) * len(fast.shapes)


def test_a_case_most_fail_is_highlighted(demo):
    text = (demo / "overview.html").read_text()
    tiled = rate_table(text, "matmul_tiled")  # s03's k guard and s04's race fail most of its shapes
    assert 'class="num low"' in tiled and 'class="num low"' not in rate_table(text, "add")


def test_a_hang_and_a_crash_are_listed_once_per_task_with_their_first_line(demo):
    rows = page(demo).sections["failed-runs"]
    assert [(r[0], r[1], r[2]) for r in rows] == [("s05-hang", "fill", "timed out"), ("s06-crash", "add", "error")]
    crash = rows[1]
    assert int(crash[3]) > 1 and "illegal memory access" in crash[5]


def test_sanitizer_findings_name_the_student_task_and_tool(demo):
    rows = page(demo).sections["sanitizer"]
    assert sorted((r[0], r[1], r[2]) for r in rows) == [("s03-tiled-off-by-one", "matmul_tiled", "memcheck"),
                                                        ("s04-race", "matmul_tiled", "racecheck"),
                                                        ("s06-crash", "add", "memcheck")]
    assert any("matmul_tiled.cu:16" in r[4] for r in rows)


def test_a_file_that_does_not_compile_is_a_build_failure(demo):
    rows = page(demo).sections["build-failures"]
    assert [(r[0], r[1]) for r in rows] == [("s07-compile-error", "transpose")]
    assert "does not compile" in rows[0][3]


def test_every_student_links_to_a_feedback_page_that_exists(demo):
    p = page(demo)
    students = [r[0] for r in p.sections["students"]]
    assert len(students) == 8
    for link in p.links:
        assert (demo / urllib.parse.unquote(link)).is_file(), link
    assert {urllib.parse.unquote(link) for link in p.links} >= {f"feedback/{s}.html" for s in students}


def test_the_counts_line_matches_the_lists(demo):
    text = re.sub(r"\s+", " ", (demo / "overview.html").read_text())
    assert "8 submissions;" in text
    assert "1 task with a timeout, 1 with a crash or a failed run, 3 sanitizer findings, 1 build failure, " \
           "0 flagged for review, 0 late." in text


@pytest.fixture(scope="module")
def late_and_fast(tmp_path_factory, rubric, registry) -> Path:
    """Under a late policy: one on time, one two days late, one suspiciously fast, an archive that is not one,
    and a student on the roster who submitted nothing."""
    tmp = tmp_path_factory.mktemp("late")
    (tmp / "late.toml").write_text(small_rubric_text(rubric) + '\n[late]\ndue = "2026-11-20T23:59:59"\n'
                                   'timezone = "UTC"\npenalty = 10\nper = "day"\ncap = 50\n')
    late_rubric = load_rubric(tmp / "late.toml", registry)
    subs = tmp / "submissions"
    due = datetime(2026, 11, 20, 23, 59, 59, tzinfo=timezone.utc).timestamp()
    for student, speed, when in (("ontime", 1.0, due - 60), ("tardy", 1.0, due + 86400 + 5),
                                 ("quick", 1.6, due - 60)):
        folder = write_submission(subs, student, {t.file: f"// fake: ok speed={speed}\n" for t in registry.tasks})
        for path in [*folder.iterdir(), folder]:
            os.utime(path, (when, when))
    (subs / "broken.tar.gz").write_bytes(b"not an archive")
    os.utime(subs / "broken.tar.gz", (due - 60, due - 60))
    roster = [Person(s, s.title(), (s,)) for s in ("ontime", "tardy", "quick", "broken", "absent")]
    results = tmp / "results"
    grade(GradeOptions(subs, results, [None], jobs=1, progress=False, seed=7, roster=roster), late_rubric, registry,
          FakeBackend())
    write_overview(results, late_rubric)
    return results


def test_late_submissions_are_listed_with_their_penalty(late_and_fast):
    rows = page(late_and_fast).sections["late"]
    assert [r[0] for r in rows] == ["tardy"]
    assert "(20%)" in rows[0][2] and "late" in rows[0][3]


def test_a_suspiciously_fast_submission_is_flagged_for_review(late_and_fast):
    rows = page(late_and_fast).sections["review"]
    assert rows and {r[0] for r in rows} == {"quick"} and all(r[3] == "review" for r in rows)


def test_a_rejected_archive_is_listed_with_the_reason(late_and_fast):
    rows = page(late_and_fast).sections["build-failures"]
    assert [(r[0], r[2]) for r in rows] == [("broken", "rejected at intake")] and rows[0][3]


def test_a_student_on_the_roster_without_a_submission_is_listed_without_a_link(late_and_fast):
    p = page(late_and_fast)
    rows = {r[0]: r for r in p.sections["students"]}
    assert rows["absent"][1] == "no submission" and rows["absent"][2] == ""
    assert "feedback/absent.html" not in p.links and "feedback/tardy.html" in p.links
    assert "5 submissions" not in (late_and_fast / "overview.html").read_text()  # 4 submitted, 1 on the roster


def test_the_command_rewrites_the_overview_and_a_missing_store_is_one_line(demo, tmp_path, capsys):
    (demo / "overview.html").unlink()
    assert main(["overview", "--results", str(demo)]) == 0
    assert (demo / "overview.html").is_file()
    assert main(["overview", "--results", str(tmp_path / "nothing")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no grades store" in err


# --- in a real browser --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    if BROWSER is None or DRIVER is None:
        why = "Chromium and chromedriver are not installed (Debian: chromium chromium-driver; `make deps-browser`)"
        if REQUIRED:
            pytest.fail(f"{why}, and REQUIRE_BROWSER_TESTS is set: the browser test must run here")
        pytest.skip(why)
    with Browser(BROWSER, DRIVER, width=1360, height=900, logging=True) as b:
        yield b


def test_the_page_loads_offline_without_console_errors_and_its_images_render(demo, browser):
    browser.open((demo / "overview.html").as_uri())
    assert browser.title().endswith("class overview (staff)")
    assert browser.console_errors() == []
    sizes = browser.run("return Array.from(document.images).map(function (i) { return i.naturalWidth; });")
    assert len(sizes) >= 2 and all(w > 100 for w in sizes), sizes
    requested = browser.run("return performance.getEntriesByType('resource').map(function (e) { return e.name; });")
    assert requested == []
    browser.screenshot(Path(demo) / "overview.png")


def test_each_link_opens_the_students_feedback_page(demo, browser):
    browser.open((demo / "overview.html").as_uri())
    hrefs = browser.run("return Array.from(new Set(Array.from(document.links).map(function (a) "
                        "{ return a.href; })));")
    assert len(hrefs) == 8
    for href in hrefs:
        browser.open(href)
        student = urllib.parse.unquote(href.rsplit("/", 1)[1])[:-len(".html")]
        assert student in browser.title(), (href, browser.title())
        assert browser.console_errors() == []
