"""The published page in a real browser: headless Chromium opens index.html from disk (file://),
sorts by clicking headers, shows hostile nicknames as text without running them, and leaves a
screenshot at results/test-artifacts/leaderboard.png for a person (and CI) to look at.

Needs Debian's chromium and chromium-driver (`make deps-browser`). Without them the tests skip,
unless REQUIRE_BROWSER_TESTS is set (CI's .ci/run sets it): then a missing browser is a failure.
"""
from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone

import pytest

from grader.reports.leaderboard import PublishOptions, publish
from grader.tests.browser import Browser, find_browser
from grader.tests.conftest import REPO
from grader.tests.leaderboard_class import fill, realistic_class, realistic_second_round

pytestmark = pytest.mark.slow  # drives Chromium

BROWSER, DRIVER = find_browser()
REQUIRED = os.environ.get("REQUIRE_BROWSER_TESTS", "") not in ("", "0")
ARTIFACT = REPO / "results" / "test-artifacts" / "leaderboard.png"
T0 = datetime(2026, 11, 20, 18, 0, tzinfo=timezone.utc)
HOSTILE = ["<script>alert(1)</script>", "<script>window.pwned=1</script>", "<img src=x onerror=alert(2)>"]
TITLE = "CUDA kernels · Leaderboard"


@pytest.fixture(scope="module")
def page(tmp_path_factory, rubric, registry):
    """A realistic class published twice (so the change column has something to say), open in Chromium."""
    if BROWSER is None or DRIVER is None:
        why = "Chromium and chromedriver are not installed (Debian: chromium chromium-driver; `make deps-browser`)"
        if REQUIRED:
            pytest.fail(f"{why}, and REQUIRE_BROWSER_TESTS is set: the browser test must run here")
        pytest.skip(f"{why}; CI sets REQUIRE_BROWSER_TESTS=1, so there it runs")
    results = tmp_path_factory.mktemp("browser") / "results"
    fill(results / "grades.sqlite", realistic_class(), rubric, registry)
    publish(PublishOptions(results, now=T0), rubric)
    fill(results / "grades.sqlite", realistic_second_round(), rubric, registry)
    done = publish(PublishOptions(results, now=T0 + timedelta(hours=18)), rubric)
    with Browser(BROWSER, DRIVER, width=1440, height=1000) as browser:
        browser.open(done.html.as_uri())
        yield browser, done



def column(browser, index: int) -> list[str]:
    return browser.run("""var i = arguments[0];
        return Array.from(document.querySelectorAll('#ranking tbody tr'))
                    .map(function (tr) { return tr.cells[i].textContent.trim(); });""", index)


def header(browser, label: str) -> int:
    """The index of the ranking's column whose header starts with `label`."""
    labels = browser.run("return Array.from(document.querySelectorAll('#ranking thead th'))"
                         ".map(function (th) { return th.textContent.trim(); });")
    return next(i for i, text in enumerate(labels) if text.startswith(label))


def click(browser, index: int):
    browser.click(f"#ranking thead th:nth-child({index + 1}) button")


def test_clicking_a_header_sorts_rows_by_that_column_numerically(page):
    browser, _ = page
    name, metric, rank = header(browser, "Name"), header(browser, "matmul_fast"), header(browser, "Rank")
    ranking = column(browser, name)
    values = [float(v.replace(",", "")) for v in column(browser, metric)]
    assert values == sorted(values, reverse=True) and len(values) >= 10

    click(browser, metric)  # first click: highest first, the ranking's own order
    click(browser, metric)  # second click: lowest first
    shown = column(browser, metric)
    numbers = [float(v.replace(",", "")) for v in shown]
    assert numbers == sorted(numbers), "sorted as numbers"
    assert shown != sorted(shown), "not as text (which would put 18,349.1 before 4,386.6)"
    assert column(browser, name) == ranking[::-1]
    assert browser.run(f"return document.querySelectorAll('#ranking thead th')[{metric}].getAttribute('aria-sort')") \
        == "ascending"

    click(browser, name)
    names = column(browser, name)
    assert names != ranking and names == sorted(names, key=str.lower)

    click(browser, rank)
    assert column(browser, name) == ranking


def test_hostile_nicknames_are_shown_as_text_and_nothing_of_theirs_runs(page):
    browser, _ = page
    browser.open(page[1].html.as_uri())
    shown = browser.run("return Array.from(document.querySelectorAll('td.name'))"
                        ".map(function (td) { return td.textContent; });")
    for nickname in HOSTILE:
        assert nickname in shown
    assert browser.alert_text() is None, "an alert is open: a nickname's script ran"
    assert browser.run("return typeof window.pwned;") == "undefined"
    assert browser.title() == TITLE
    assert browser.run("return document.scripts.length;") == 1  # the page's own
    assert browser.run("return document.images.length;") == 0
    assert browser.run("return document.querySelectorAll('td.name *').length;") == 0  # text, no elements


def test_the_page_works_offline_with_its_own_script_allowed(page):
    browser, done = page
    browser.open(done.html.as_uri())
    # The CSP allows the script by its hash: sorting (above) proves it runs; nothing else was requested.
    requested = browser.run("return performance.getEntriesByType('resource').map(function (e) { return e.name; });")
    assert requested == []


def test_a_screenshot_of_the_page_is_kept(page):
    browser, done = page
    browser.open(done.html.as_uri())
    path = browser.screenshot(ARTIFACT)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000
    width = int.from_bytes(data[16:20], "big")
    height = int.from_bytes(data[20:24], "big")
    assert width >= 1400 and height > 1500, (width, height)
    print(f"screenshot: {path}")


PHONE = 390  # CSS pixels: a common phone's width
PHONE_ARTIFACT = REPO / "results" / "test-artifacts" / "leaderboard-phone.png"


@pytest.fixture(scope="module")
def phone(page):
    """The same published page, in a browser as wide as a phone."""
    _, done = page
    with Browser(BROWSER, DRIVER, width=PHONE, height=844, phone=True) as browser:
        browser.open(done.html.as_uri())
        yield browser, done


def test_on_a_phone_the_page_does_not_scroll_sideways(phone):
    browser, _ = phone
    width = browser.run("return window.innerWidth;")
    assert width <= PHONE + 20, width  # the window is phone-sized (the test means something)
    overflow = browser.run("return document.documentElement.scrollWidth - document.documentElement.clientWidth;")
    assert overflow <= 0, f"the page is {overflow} px wider than the screen"


def test_on_a_phone_the_chart_is_the_narrow_one_and_its_labels_are_readable(phone):
    browser, _ = phone
    shown = browser.run("return Array.from(document.querySelectorAll('svg.chart')).filter(function (s) "
                        "{ return getComputedStyle(s).display !== 'none'; }).map(function (s) "
                        "{ return s.getAttribute('class'); });")
    assert shown == ["chart narrow"]
    texts = browser.run("""var svg = document.querySelector('svg.chart.narrow'), box = svg.getBoundingClientRect();
        var scale = box.width / svg.viewBox.baseVal.width;
        return Array.from(svg.querySelectorAll('text')).map(function (t) {
            var r = t.getBoundingClientRect();
            return {text: t.textContent.trim(), px: parseFloat(getComputedStyle(t).fontSize) * scale,
                    left: r.left - box.left, right: box.right - r.right};
        });""")
    names = [t for t in texts if t["text"] and not t["text"].replace(",", "").replace(".", "").isdigit()]
    assert len(names) >= 10
    small = [t for t in texts if t["px"] < 10.5]
    assert not small, f"text drawn smaller than 10.5 px on a phone: {small[:3]}"
    outside = [t for t in texts if t["left"] < -1 or t["right"] < -1]
    assert not outside, f"labels cut off at the chart's edge: {outside[:3]}"


def test_a_screenshot_at_a_phones_width_is_kept(phone):
    browser, _ = phone
    browser.run("document.querySelector('svg.chart.narrow').scrollIntoView();")
    path = browser.screenshot(PHONE_ARTIFACT, full_page=False)  # the screen as the phone shows it (3 px per px)
    assert int.from_bytes(path.read_bytes()[16:20], "big") == 3 * PHONE
    print(f"screenshot: {path}")
