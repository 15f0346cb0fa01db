"""The task tables of the two documents a student opens first, the tarball's README.md and the handout, as pandoc
reads them (make handout and make dist render with pandoc's markdown reader): one row per task, in the
registry's order. A blank line between two rows of a pipe table ends the table there, and the rows after it
become a paragraph of pipes, which a test of the Markdown text alone does not see.

The handout renders from a synthetic record stamped as today's solution (synthetic_bench.py), as
test_handout.py's do.
"""
from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from synthetic_bench import write_synthetic_record

from grader.core.registry import Registry
from grader.core.rubric import DEFAULT_RUBRIC, load_rubric
from handout.render import Inputs, render_markdown
from release.dist import render_readme

pytestmark = pytest.mark.skipif(shutil.which("pandoc") is None,
                                reason="pandoc is not installed (make deps installs it where apt works)")


class Tables(HTMLParser):
    """Every <table> of an HTML page as its header cells and its body rows, each a list of cell texts."""

    def __init__(self):
        super().__init__()
        self.tables: list[dict] = []
        self.row: list[str] | None = None
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append({"header": [], "rows": []})
        elif tag == "tr" and self.tables:
            self.row = []
        elif tag in ("td", "th") and self.row is not None:
            self.cell = []

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.row.append(" ".join("".join(self.cell).split()))
            self.cell = None
        elif tag == "tr" and self.row is not None:
            table = self.tables[-1]
            if table["header"]:
                table["rows"].append(self.row)
            else:
                table["header"] = self.row
            self.row = None


def html_tables(markdown: str) -> list[dict]:
    html = subprocess.run(["pandoc", "--from", "markdown", "--to", "html5"], input=markdown, capture_output=True,
                          text=True, check=True, timeout=120).stdout
    parser = Tables()
    parser.feed(html)
    return parser.tables


def first_column(tables: list[dict], header: list[str]) -> list[str]:
    found = [t for t in tables if t["header"] == header]
    assert len(found) == 1, f"{len(found)} tables headed {header}; the tables: {[t['header'] for t in tables]}"
    return [row[0] for row in found[0]["rows"]]


@pytest.fixture(scope="module")
def reg(registry) -> Registry:
    return Registry.from_json(registry)


def test_the_tarball_readme_lists_every_task_in_one_table(reg, registry):
    readme = render_readme(load_rubric(DEFAULT_RUBRIC, reg), reg)
    ids = [t["id"] for t in registry["tasks"]]
    assert first_column(html_tables(readme), ["task", "file", "what you write"]) == ids


def test_the_handout_tables_list_every_task_once(tmp_path, reg, registry):
    record = write_synthetic_record(tmp_path / "reference.json", registry, DEFAULT_RUBRIC)
    tables = html_tables(render_markdown(Inputs(registry=reg, record=record)))
    rubric = load_rubric(DEFAULT_RUBRIC, reg)
    ids = [t["id"] for t in registry["tasks"]]
    graded = [t for t in ids if any(p.id == t for p in rubric.tasks)]
    assert first_column(tables, ["task", "rule"]) == ids
    assert first_column(tables, ["task", "correctness", "performance", "total"]) == graded + ["all tasks"]
    timed = [t for t in graded if rubric.task(t).timed]
    headed = next(t["header"] for t in tables if t["header"][:2] == ["task", "timed in"])
    assert first_column(tables, headed) == timed
