"""The published leaderboard: ranking, ties, names, escaping, history, the three files, bad input.

Every store here is filled through grader.store.store's real API (leaderboard_class.fill)."""
from __future__ import annotations

import base64
import hashlib
import re
import stat
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser

import pandas as pd
import pytest

from grader.intake.submission import parse_nickname
from grader.reports.leaderboard import LeaderboardError, PublishOptions, publish
from grader.reports.leaderboard.chart import bar_chart, nice_step
from grader.reports.leaderboard.history import HISTORY_DIR
from grader.reports.leaderboard.pseudonyms import Pseudonyms, display_names, load_or_create_salt
from grader.reports.leaderboard.render import md_escape
from grader.core.rubric import RubricError, load_rubric
from grader.store.store import Store
from grader.tests.conftest import REPO
from grader.tests.leaderboard_class import Entry, fill, realistic_class, realistic_second_round
from grader.tests.test_rubric import broken

T0 = datetime(2026, 11, 20, 18, 0, tzinfo=timezone.utc)
HOSTILE = "<script>alert(1)</script>"


def day(d: int, h: int = 12) -> str:
    return f"2026-11-{d:02d}T{h:02d}:00:00+00:00"


@pytest.fixture
def results(tmp_path):
    return tmp_path / "results"


@pytest.fixture
def board(results, rubric, registry):
    """fill(entries) then pub(...) -> (Published, csv table)."""
    class Board:
        def fill(self, entries, **kw):
            fill(results / "grades.sqlite", entries, rubric, registry, **kw)
            return self

        def pub(self, now=T0, rubric_=None, **options):
            done = publish(PublishOptions(results, now=now, **options), rubric_ or rubric)
            return done, pd.read_csv(done.csv, dtype={"key": str})
    return Board()


def ranked(table: pd.DataFrame) -> list[str]:
    return list(table.loc[table["status"] == "ranked", "name"])


# --- ranking --------------------------------------------------------------------------------------------------


def test_correct_entries_are_ranked_by_the_metric_fastest_first(board):
    _, table = board.fill([Entry("a", 0.5, nickname="slow"), Entry("b", 1.2, nickname="fast"),
                           Entry("c", 0.9, nickname="middle")]).pub()
    assert ranked(table) == ["fast", "middle", "slow"]
    assert list(table["rank"]) == [1, 2, 3]
    metric = table["matmul_fast GFLOP/s"]
    assert metric.is_monotonic_decreasing and metric.iloc[0] > 0


def test_the_metric_is_the_throughput_at_the_rubrics_leaderboard_shape(board, rubric, registry, tmp_path):
    assert rubric.leaderboard_shape == "4096x4096x4096"  # the default: the task's largest timed shape
    entries = [Entry("a", 1.0, nickname="big", timed_speeds={"2048x2048x2048": 0.3}),
               Entry("b", 0.5, nickname="small", timed_speeds={"2048x2048x2048": 2.0})]
    _, table = board.fill(entries).pub()
    assert ranked(table) == ["big", "small"]
    at_2048 = load_rubric(broken(tmp_path, 'leaderboard_task = "matmul_fast"',
                                 'leaderboard_task = "matmul_fast"\nleaderboard_shape = "2048x2048x2048"'), registry)
    _, table = board.pub(rubric_=at_2048, now=T0 + timedelta(hours=1))
    assert ranked(table) == ["small", "big"]


def test_the_speedup_and_percent_of_the_limit_come_with_the_metric(board):
    _, table = board.fill([Entry("a", 0.8)]).pub()
    row = table.iloc[0]
    assert row["speedup_low"] <= row["speedup"] <= row["speedup_high"]
    assert row["speedup"] == pytest.approx(0.8, rel=0.02)
    assert row["% of cuBLAS FP32"] == pytest.approx(100 * row["matmul_fast GFLOP/s"] / 50200.0, abs=0.06)


def test_each_student_is_ranked_by_their_best_correct_submission(board):
    board.fill([Entry("a", 0.9, day(18), nickname="steady"), Entry("b", 0.7, day(18), nickname="other")])
    board.fill([Entry("a", 0.4, day(19), nickname="steady"),  # slower later: the earlier one counts
                Entry("a", None, day(20), nickname="steady")])  # broken later: still ranked by the best
    _, table = board.pub()
    assert ranked(table) == ["steady", "other"]
    assert table.iloc[0]["submitted"] == day(18)
    assert table.iloc[0]["speedup"] == pytest.approx(0.9, rel=0.02)


def test_a_tie_goes_to_the_earlier_submission(board):
    _, table = board.fill([Entry("late", 0.8, day(19), nickname="late", spread=0.0),
                           Entry("early", 0.8, day(18), nickname="early", spread=0.0),
                           Entry("fast", 0.9, day(20), nickname="fast", spread=0.0)]).pub()
    assert ranked(table) == ["fast", "early", "late"]
    assert table.iloc[1]["matmul_fast GFLOP/s"] == table.iloc[2]["matmul_fast GFLOP/s"]


def test_a_students_own_tie_shows_their_earlier_submission(board):
    _, table = board.fill([Entry("a", 0.8, day(19), spread=0.0), Entry("a", 0.8, day(17), spread=0.0)]).pub()
    assert list(table["submitted"]) == [day(17)]


def test_entries_that_are_not_correct_are_listed_below_with_the_reason(board):
    entries = [Entry("ok", 1.0, nickname="ok"),
               Entry("wrong", None, nickname="wrong"),
               Entry("todo", None, failure="not_implemented", nickname="todo"),
               Entry("missing", None, failure="missing", nickname="missing"),
               Entry("hang", None, failure="timeout", nickname="hang"),
               Entry("racy", 1.3, timed_status="wrong", nickname="racy"),
               Entry("nocompile", 1.0, status="build_failed", nickname="nocompile"),
               Entry("evil", 1.0, status="rejected", nickname="evil")]
    _, table = board.fill(entries).pub()
    assert ranked(table) == ["ok"]
    why = dict(zip(table["name"], table["status"]))
    assert why == {"ok": "ranked", "wrong": "wrong results", "todo": "not implemented yet",
                   "missing": "no matmul_fast.cu", "hang": "ran out of time",
                   "racy": "wrong results in its timed run", "nocompile": "does not build",
                   "evil": "rejected at intake"}
    assert table.loc[table["status"] != "ranked", "rank"].isna().all()
    assert table.loc[table["status"] != "ranked", "matmul_fast GFLOP/s"].isna().all()


def test_a_timed_run_does_not_rank_an_entry_whose_checks_failed(board, results):
    # The grader times only correct tasks; should a store ever hold both, the failed check wins.
    board.fill([Entry("a", 1.0, nickname="a", failed_check=True), Entry("b", 0.5, nickname="b")])
    _, table = board.pub()
    assert ranked(table) == ["b"] and dict(zip(table["name"], table["status"]))["a"] == "wrong results"


def test_an_unranked_students_reason_is_from_their_latest_submission(board):
    board.fill([Entry("a", None, day(18), failure="not_implemented"), Entry("a", None, day(19))])
    _, table = board.pub()
    assert list(table["status"]) == ["wrong results"]


# --- the rubric's leaderboard policy ------------------------------------------------------------------------


@pytest.mark.parametrize("new, complaint", [
    ('leaderboard_task = "matmul_fast"\nleaderboard_shape = "1024x1024x1024"',
     "'leaderboard_shape' '1024x1024x1024' is not one of matmul_fast's timed shapes"),
    ('leaderboard_task = "matmul_fast"\nleaderbord_shape = "4096x4096x4096"', "unknown key 'leaderbord_shape'"),
])
def test_a_bad_leaderboard_policy_is_refused(tmp_path, registry, new, complaint):
    with pytest.raises(RubricError, match=re.escape(complaint)):
        load_rubric(broken(tmp_path, 'leaderboard_task = "matmul_fast"', new), registry)


def test_the_default_leaderboard_shape_is_the_largest_timed_one(rubric):
    policy = rubric.task(rubric.leaderboard_task)
    assert rubric.leaderboard_shape == policy.largest_timed == max(
        policy.timed, key=lambda s: eval("*".join(s.split("x"))))


# --- names ------------------------------------------------------------------------------------------------


def test_pseudonyms_are_stable_and_depend_on_the_salt():
    a, b = Pseudonyms(b"1" * 32), Pseudonyms(b"2" * 32)
    assert a.generated("s1001") == Pseudonyms(b"1" * 32).generated("s1001")
    assert a.key("s1001") == Pseudonyms(b"1" * 32).key("s1001")
    names = [a.generated(f"s{i}") for i in range(200)]
    assert len(set(names)) > 190  # spread out
    assert sum(a.generated(f"s{i}") != b.generated(f"s{i}") for i in range(50)) > 45
    assert re.fullmatch(r"[A-Z][a-z]+ [A-Z][a-z]+ \d\d", a.generated("s1001"))


def test_the_salt_is_created_once_owner_only_and_reused(tmp_path):
    path = tmp_path / "course" / "pseudonym-salt"
    salt, warnings = load_or_create_salt(path)
    assert len(salt) == 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert any("back it up" in w for w in warnings)
    again, warnings = load_or_create_salt(path)
    assert again == salt and warnings == []


def test_a_damaged_salt_is_refused_and_a_readable_one_is_warned_about(tmp_path):
    path = tmp_path / "salt"
    path.write_text("not hex at all\n")
    with pytest.raises(LeaderboardError, match="not a pseudonym salt"):
        load_or_create_salt(path)
    path.write_text("ab" * 32)
    path.chmod(0o644)
    _, warnings = load_or_create_salt(path)
    assert any("chmod 600" in w for w in warnings)


def test_the_salt_may_not_be_published(board, results):
    board.fill([Entry("a", 1.0)])
    with pytest.raises(LeaderboardError, match="inside the published folder"):
        board.pub(salt_file=results / "leaderboard" / "salt")


def test_the_same_salt_gives_the_same_pseudonyms_on_every_publish(board, results):
    results.mkdir(parents=True)
    (results / "pseudonym-salt").write_text("ab" * 32)
    _, first = board.fill([Entry("s1", 1.0), Entry("s2", 0.5)]).pub()
    _, second = board.pub(now=T0 + timedelta(days=1))
    assert list(first["name"]) == list(second["name"])
    (results / "pseudonym-salt").write_text("cd" * 32)  # a new salt: new pseudonyms
    _, third = board.pub(now=T0 + timedelta(days=2))
    assert set(third["name"]).isdisjoint(first["name"])


def test_ids_are_never_published_unless_asked(board, results):
    board.fill([Entry("s9001", 1.0), Entry("s9002", 0.5, nickname="nick"), Entry("s9003", None)])
    done, table = board.pub(with_scores=True)
    files = [done.html, done.md, done.csv, *sorted((done.out / HISTORY_DIR).iterdir())]
    for path in files:
        assert "s900" not in path.read_text(), path
    done, table = board.pub(show_names=True, now=T0 + timedelta(hours=1))
    assert set(table["student"]) == {"s9001", "s9002", "s9003"}
    assert "s9001" in done.html.read_text() and "s9001" in done.md.read_text()
    for path in sorted((done.out / HISTORY_DIR).iterdir()):  # the history is keyed by the salted key, always
        assert "s900" not in path.read_text(), path


def test_a_nickname_is_its_first_line_of_at_most_32_printable_characters_trimmed():
    assert parse_nickname(b"  Warp \t Speed  \nsecond line") == "Warp Speed"
    assert parse_nickname(("x" * 31 + " yz").encode()) == "x" * 31
    assert parse_nickname("\ufeffBOM \u202eevil\u200b".encode()) == "BOM evil"  # no bidi or hidden marks
    assert parse_nickname(b"caf\xc3\xa9 \xff\xfe") == "café"
    assert parse_nickname("😀 emoji".encode()) == "😀 emoji"
    assert parse_nickname(b"\n\nlater lines do not count") is None
    assert parse_nickname(b"\x00\x01\x02") is None


def test_a_stored_nickname_is_cleaned_again_when_published(board, results):
    # A nickname stored by an older intake, or edited in the store: the published rules still hold.
    _, table = board.fill([Entry("a", 1.0, nickname="  " + "long\x1b[31m" * 10 + "\nsecond")]).pub()
    assert table.iloc[0]["name"] == ("long[31m" * 4)[:32]
    assert "\x1b" not in (results / "leaderboard" / "index.html").read_text()


def test_the_latest_nickname_a_student_gave_is_used(board):
    board.fill([Entry("a", 1.0, day(18), nickname="old name"), Entry("a", 0.5, day(19), nickname="new name"),
                Entry("a", 0.4, day(20))])
    _, table = board.pub()
    assert list(table["name"]) == ["new name"]


def test_no_two_students_show_the_same_name():
    p = Pseudonyms(b"k" * 32)
    names = display_names(["a", "b", "c", "d"], {"a": "Speedy", "b": "speedy", "c": p.generated("d"), "d": None}, p)
    assert len(set(n.casefold() for n in names.values())) == 4
    assert names["a"].startswith("Speedy (") and names["b"].startswith("speedy (")
    assert names["d"].startswith(p.generated("d") + " (")


# --- escaping -----------------------------------------------------------------------------------------------


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.data: list[str] = []
        self.scripts: list[str] = []
        self.styles: list[str] = []
        self._in = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in = tag

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        self.data.append(data)
        if self._in == "script":
            self.scripts.append(data)
        elif self._in == "style":
            self.styles.append(data)


def parse(html: str) -> Tags:
    t = Tags()
    t.feed(html)
    return t


HOSTILE_CLASS = [Entry("a", 1.0, nickname=HOSTILE), Entry("b", 0.9, nickname="<img src=x onerror=alert(2)>"),
                 Entry("c", 0.8, nickname='"><svg onload=alert(3)>'), Entry("d", 0.7, nickname="a | b *c* [x](y)"),
                 Entry("e", 0.6, nickname='=HYPERLINK("http://x.y","hi")'), Entry("f", None, nickname="-2+3")]


def test_a_hostile_nickname_is_text_on_the_page(board):
    done, _ = board.fill(HOSTILE_CLASS).pub()
    html = done.html.read_text()
    page = parse(html)
    assert [t for t, _ in page.tags].count("script") == 1  # ours only
    assert not any(t in ("img", "iframe", "link", "object", "embed") for t, _ in page.tags)
    assert not any(k.startswith("on") for _, attrs in page.tags for k in attrs)
    assert "svg" in [t for t, _ in page.tags]  # the chart's, and only the chart's: no onload anywhere
    text = "".join(page.data)
    assert HOSTILE in text and "<img src=x onerror=alert(2)>" in text and '"><svg onload=alert(3)>' in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_the_page_runs_only_its_own_script_and_fetches_nothing(board):
    done, _ = board.fill(HOSTILE_CLASS).pub()
    html = done.html.read_text()
    page = parse(html)
    csp = next(a["content"] for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")

    def digest(text):
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"
    assert "default-src 'none'" in csp
    assert f"script-src {digest(page.scripts[0])}" in csp and f"style-src {digest(page.styles[0])}" in csp
    for tag, attrs in page.tags:
        for key in ("src", "href", "action", "data", "poster"):
            value = attrs.get(key) or ""
            assert not re.match(r"\s*(https?:|//|javascript:)", value, re.I), (tag, key, value)
    assert not re.search(r"@import|url\(", page.styles[0])
    assert not re.search(r"fetch\(|XMLHttpRequest|import\(|\.src\s*=", page.scripts[0])


def test_markdown_shows_every_name_as_plain_text_in_its_own_cell(board):
    done, table = board.fill(HOSTILE_CLASS).pub()
    md = done.md.read_text()
    assert HOSTILE not in md and "\\<script\\>alert\\(1\\)\\<\\/script\\>" in md
    rows = [line for line in md.splitlines() if line.startswith("| 1 |") or line.startswith("| 4 |")]
    header = next(line for line in md.splitlines() if line.startswith("| Rank |"))
    cells = lambda line: len(re.split(r"(?<!\\)\|", line))  # noqa: E731
    assert rows and all(cells(r) == cells(header) for r in rows)
    assert md_escape("a|b") == "a\\|b" and md_escape("plain words 42") == "plain words 42"


def test_csv_cells_cannot_run_as_spreadsheet_formulas(board):
    done, table = board.fill(HOSTILE_CLASS).pub()
    names = set(table["name"])
    assert "'=HYPERLINK(\"http://x.y\",\"hi\")" in names and "'-2+3" in names and HOSTILE in names


# --- history --------------------------------------------------------------------------------------------------


def test_each_publish_is_kept_and_rows_show_their_change_since_the_last(board, results):
    first, before = board.fill(realistic_class()).pub(now=T0)
    board.fill(realistic_second_round())
    second, after = board.pub(now=T0 + timedelta(hours=18))
    assert first.history and second.history and first.history != second.history
    assert sorted(p.name for p in (results / "leaderboard" / HISTORY_DIR).iterdir()) == [
        "2026-11-20T18-00-00Z.csv", "2026-11-21T12-00-00Z.csv"]
    was = dict(zip(before["key"], before["rank"]))
    for row in after.itertuples():
        if row.status != "ranked":
            continue
        if pd.isna(was.get(row.key)):
            assert pd.isna(row.previous_rank) and pd.isna(row.rank_change)  # new to the ranking
        else:
            assert row.previous_rank == was[row.key] and row.rank_change == was[row.key] - row.rank
    climber = after[after["key"] == Pseudonyms(load_or_create_salt(results / "pseudonym-salt")[0]).key("s1007")]
    assert int(climber["rank_change"].iloc[0]) > 0
    html = second.html.read_text()
    assert "▲" in html and "▼" in html and ">new<" in html and "2026-11-20 18:00 UTC" in html


def test_a_publish_with_nothing_new_keeps_the_changes_and_adds_no_file(board, results):
    board.fill(realistic_class()).pub(now=T0)
    board.fill(realistic_second_round())
    _, second = board.pub(now=T0 + timedelta(hours=18))
    third, again = board.pub(now=T0 + timedelta(hours=20))
    assert third.history is None
    assert len(list((results / "leaderboard" / HISTORY_DIR).iterdir())) == 2
    pd.testing.assert_series_equal(second["rank_change"], again["rank_change"])
    assert "2026-11-20 18:00 UTC" in third.html.read_text()  # still compared with the first publish


def test_the_first_publish_has_no_changes_to_show(board):
    done, table = board.fill([Entry("a", 1.0), Entry("b", 0.5)]).pub()
    assert table["previous_rank"].isna().all() and "first publish" in done.html.read_text()


def test_two_publishes_in_one_second_are_both_kept(board, results):
    board.fill([Entry("a", 1.0)]).pub()
    board.fill([Entry("b", 2.0)])
    done, _ = board.pub()
    assert done.history.name == "2026-11-20T18-00-00Z+1.csv"


def test_an_unreadable_history_file_is_skipped_with_a_warning(board, results):
    board.fill([Entry("a", 1.0)]).pub()
    bad = results / "leaderboard" / HISTORY_DIR / "2026-11-20T19-00-00Z.csv"
    bad.write_text("this,is\nnot,ours\n")
    done, table = board.fill([Entry("b", 0.5)]).pub(now=T0 + timedelta(hours=2))
    assert any("left out of the history" in w for w in done.warnings)
    assert table["rank_change"].iloc[0] == 0


# --- the three files ----------------------------------------------------------------------------------------


def md_names(md: str) -> list[str]:
    """The Name cells of every Markdown table, in order, unescaped."""
    names, column = [], None
    for line in md.splitlines():
        if not line.startswith("|"):
            column = None
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if column is None:
            column = cells.index("Name")
        elif not set(cells[0]) <= set("-:"):
            names.append(re.sub(r"\\(.)", r"\1", cells[column]))
    return names


def test_the_page_markdown_and_csv_hold_the_same_rows(board):
    done, table = board.fill(realistic_class()).pub(with_scores=True)
    html = done.html.read_text()
    page_names = re.findall(r'<td class="name" title="[^"]*">([^<]*)</td>', html)
    unescape = lambda s: s.replace("&lt;", "<").replace("&gt;", ">").replace("&#34;", '"').replace(  # noqa: E731
        "&#39;", "'").replace("&amp;", "&")
    assert [unescape(n) for n in page_names] == list(table["name"])
    md = done.md.read_text()
    assert md_names(md) == list(table["name"])
    assert "Score" in md and "score" in table.columns and table["score"].notna().all()
    assert list(table.columns[:4]) == ["rank", "previous_rank", "rank_change", "name"]


def test_scores_appear_only_when_asked(board):
    done, table = board.fill([Entry("a", 1.0)]).pub()
    assert "score" not in table.columns and "Score" not in done.html.read_text() and "Score" not in done.md.read_text()


def test_the_page_header_names_the_device_date_harness_and_entries(board):
    done, _ = board.fill([Entry("a", 1.0), Entry("b", None)], harness_version="2.3.4").pub()
    text = "".join(parse(done.html.read_text()).data)
    for expected in ("NVIDIA H200", "2026-11-20 18:00 UTC", "2.3.4", "2 · 1 ranked", "4096×4096×4096"):
        assert expected in text, expected


def test_the_chart_draws_each_ranked_entry_and_both_reference_lines(board):
    done, table = board.fill([Entry("a", 1.2), Entry("b", 0.5), Entry("c", None)]).pub()
    svg = done.html.read_text().split("<svg", 1)[1].split("</svg>")[0]
    assert svg.count('class="bar') == 2
    assert 'class="ref solution"' in svg and 'class="ref limit"' in svg and "cuBLAS FP32 50,200" in svg


def test_chart_labels_of_close_reference_lines_do_not_collide():
    chart = bar_chart([(1, "x", 100.0)], "GFLOP/s", solution=98.0, limit=100.0, limit_name="cuBLAS FP32")
    (a, b) = chart.references
    assert a.y != b.y or a.anchor != b.anchor
    assert nice_step(60000) == 10000 and nice_step(7.3) == 2


# --- bad input ----------------------------------------------------------------------------------------------


def test_a_missing_store_is_a_clear_error_and_nothing_is_created(results, rubric):
    with pytest.raises(LeaderboardError, match="no grades store there; grade first"):
        publish(PublishOptions(results, now=T0), rubric)
    assert not results.exists()


def test_a_store_without_a_grading_run_is_a_clear_error(results, rubric):
    Store(results / "grades.sqlite").close()
    with pytest.raises(LeaderboardError, match="holds no grading run yet"):
        publish(PublishOptions(results, now=T0), rubric)


def test_a_store_with_no_submissions_gives_a_clear_empty_page(board):
    done, table = board.fill([]).pub()
    assert table.empty and done.ranked == 0 and done.unranked == 0
    assert "No submissions yet" in done.html.read_text() and "No submissions yet" in done.md.read_text()


def test_a_class_with_no_correct_entry_lists_everyone_below(board):
    done, table = board.fill([Entry("a", None), Entry("b", 1.0, status="build_failed")]).pub()
    assert done.ranked == 0 and done.unranked == 2
    html = done.html.read_text()
    assert "No correct entry yet" in html and 'id="unranked"' in html and "<svg" not in html


# --- the command line -----------------------------------------------------------------------------------------


def grader(*args):
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=REPO, capture_output=True, text=True)


def test_the_command_publishes_and_says_where(results, rubric, registry):
    fill(results / "grades.sqlite", realistic_class(), rubric, registry)
    out = results.parent / "site"
    run = grader("leaderboard", "--results", str(results), "--out", str(out), "--with-scores")
    assert run.returncode == 0, run.stderr
    assert f"wrote {out}/" in run.stdout and "(12 ranked, 3 not ranked)" in run.stdout
    assert "created the pseudonym salt" in run.stderr
    assert {p.name for p in out.iterdir()} == {"index.html", "leaderboard.md", "leaderboard.csv", HISTORY_DIR}
    assert (results / "pseudonym-salt").exists()
    again = grader("leaderboard", "--results", str(results), "--out", str(out), "--with-scores")
    assert again.returncode == 0 and "no new history file" in again.stdout


def test_the_command_without_a_store_fails_clearly(tmp_path):
    run = grader("leaderboard", "--results", str(tmp_path / "none"))
    assert run.returncode == 1 and "no grades store there" in run.stderr
    assert not (tmp_path / "none").exists()


# --- ranked entries only --------------------------------------------------------------------------------------


def test_ranked_only_leaves_the_entries_not_ranked_off_every_file(board):
    entries = [Entry("a", 1.0, nickname="quick"), Entry("b", 0.5, nickname="steady"),
               Entry("c", None, failure="missing", nickname="absent"),
               Entry("d", None, failure="not_implemented", nickname="todo")]
    done, table = board.fill(entries).pub(ranked_only=True)
    assert list(table["name"]) == ["quick", "steady"] and (table["status"] == "ranked").all()
    for path in (done.html, done.md):
        text = path.read_text()
        assert "quick" in text and "absent" not in text and "todo" not in text
        assert "no matmul_fast.cu" not in text
    assert (done.ranked, done.unranked) == (2, 2)  # counted, not published
    _, full = board.pub(now=T0 + timedelta(hours=1))
    assert set(full["name"]) == {"quick", "steady", "absent", "todo"}  # the default lists them, with the reason


def test_the_command_takes_ranked_only(board, results, capsys):
    from grader.cli import main
    board.fill([Entry("a", 1.0, nickname="quick"), Entry("c", None, failure="missing", nickname="absent")])
    assert main(["leaderboard", "--results", str(results), "--ranked-only"]) == 0
    assert "1 ranked, 1 not ranked, left off" in capsys.readouterr().out
    assert "absent" not in (results / "leaderboard" / "leaderboard.csv").read_text()


def test_the_phone_chart_puts_each_label_on_its_own_line_above_a_full_width_bar():
    from grader.reports.leaderboard.chart import NARROW
    entries = [(1, "a rather long nickname indeed, yes", 100.0), (2, "b", 50.0)]
    wide = bar_chart(entries, "GFLOP/s", solution=98.0, limit=120.0, limit_name="cuBLAS FP32")
    narrow = bar_chart(entries, "GFLOP/s", solution=98.0, limit=120.0, limit_name="cuBLAS FP32", narrow=True)
    assert narrow.width == NARROW and narrow.stacked and not wide.stacked
    assert narrow.plot_width / narrow.width > 0.9 > wide.plot_width / wide.width  # the bars get the width
    first, second = narrow.bars
    assert second.y - (first.y + narrow.bar_height) >= 14  # a line of text fits between two bars
    assert first.label.endswith("…") and len(first.label) <= 30


def test_the_page_carries_both_charts_and_shows_the_narrow_one_on_a_small_screen(board):
    done, _ = board.fill([Entry("a", 1.0, nickname="quick"), Entry("b", 0.5, nickname="steady")]).pub()
    html = done.html.read_text()
    assert html.count('<svg class="chart wide"') == 1 and html.count('<svg class="chart narrow"') == 1
    assert "@media (max-width: 600px) { svg.chart.wide { display: none; } svg.chart.narrow { display: block; } }" \
        in html
