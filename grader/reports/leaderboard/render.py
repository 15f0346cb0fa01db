"""Writing a publish: index.html (self-contained), leaderboard.md and leaderboard.csv, all from one table.

Everything a student controls (a nickname) is escaped for where it lands:
HTML by jinja2's autoescaping, Markdown by a backslash before every ASCII
punctuation character (CommonMark shows it as written), CSV through the
grader's one guard for every CSV (grader/reports/spreadsheet.py: a cell a spreadsheet
would run as a formula gets a leading apostrophe). The page carries a
Content-Security-Policy that allows only its own inline script and style, by
hash, and no fetch of any kind: were something ever left unescaped, the
browser still would not run it.
"""
from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path

import jinja2
import pandas as pd
from markupsafe import Markup, escape

from grader.reports import page
from grader.reports.leaderboard.chart import fmt
from grader.reports.page import Page

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
_LOADER = jinja2.FileSystemLoader(TEMPLATES)
MD_SPECIAL = set("\\`*_{}[]()<>#+-.!|~&\"'$%,/:;=?^")


def md_escape(text) -> str:
    """Plain text for a Markdown table cell: every ASCII punctuation character backslash-escaped."""
    return "".join("\\" + ch if ch in MD_SPECIAL else ch for ch in str(text))


def _missing(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def number(value, decimals: int = 1) -> str:
    return "—" if _missing(value) else f"{value:,.{decimals}f}"


def short(value) -> str:
    """A headline number: whole from 100 up (as the chart prints it)."""
    return "—" if _missing(value) else fmt(value)


def breakable(text: str) -> Markup:
    """A task id a narrow column header may wrap after each underscore."""
    return Markup("_<wbr>").join(escape(part) for part in str(text).split("_"))


def when(value: pd.Timestamp | datetime | None) -> str:
    return "—" if _missing(value) or pd.isna(value) else f"{value:%b} {value.day}, {value:%H:%M}"


def epoch(value) -> str:
    return "" if _missing(value) or pd.isna(value) else f"{value.timestamp():.0f}"


def sort_key(value) -> str:
    """A numeric cell's data-sort value: empty (sorted last) when there is no number."""
    return "" if _missing(value) else repr(float(value))


def _environment(autoescape: bool) -> jinja2.Environment:
    env = jinja2.Environment(loader=_LOADER, autoescape=autoescape, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    env.filters.update(number=number, short=short, breakable=breakable, when=when, epoch=epoch, sort_key=sort_key,
                       md=md_escape, missing=_missing)
    return env


HTML = _environment(autoescape=True)
MD = _environment(autoescape=False)


def leaderboard_page(context: dict, live: int | None = None) -> Page:
    """The page and its Content-Security-Policy; `live`: served by the service, polling every `live` seconds
    (the context then has the `version` its polls compare)."""
    return page.render(HTML, "leaderboard.html.j2", context, "leaderboard.css", ("leaderboard.js",), live)


def render_html(context: dict) -> str:
    return leaderboard_page(context).html


def render_md(context: dict) -> str:
    return MD.get_template("leaderboard.md.j2").render(context)


