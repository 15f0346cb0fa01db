"""The bar chart of the ranked metric, as geometry for an inline SVG (no script, no fetch).

One horizontal bar per ranked entry, best at the top, with the solution's and
the device limit's (cuBLAS FP32 or copy bandwidth) throughput as vertical
reference lines. The template draws it; names are escaped there.

Two layouts of the same chart: the wide one (names left of the bars), and a
narrow one for a phone's width (NARROW units wide, drawn near 1:1 on a 390 px
screen, so its text keeps its size): each name and value on a line of its own
above a bar that spans the whole width. The page shows one or the other by
its width (leaderboard.css).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

WIDTH = 960
LABEL_WIDTH = 224  # rank and name, before the bars
VALUE_WIDTH = 64  # room for the value printed after the longest bar
REF_ROW = 16  # height of one row of reference-line labels
BOTTOM = 44  # ticks and the axis title
CHAR_WIDTH = 7.2  # an estimate of one character's width at the labels' size
LABEL_CHARS = 22
NARROW = 340  # the phone layout's width: a 390 px screen less the page's and the card's padding
NARROW_LABEL_CHARS = 30


@dataclass(frozen=True)
class Bar:
    y: float
    width: float
    rank: int
    label: str
    full_name: str
    value: str

    @property
    def value_width(self) -> float:
        """About how wide the printed value is, for the backdrop that keeps reference lines off it."""
        return round(CHAR_WIDTH * len(self.value), 1)


@dataclass(frozen=True)
class Reference:
    x: float
    label: str
    y: float  # the label's baseline; the line starts just below it
    kind: str  # "solution" or "limit"
    anchor: str  # "end": the label sits left of its line; "start": right of it


@dataclass(frozen=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    left: float
    plot_width: float
    plot_top: float
    plot_bottom: float
    bar_height: float
    bars: list[Bar]
    references: list[Reference]
    ticks: list[Tick]
    axis_title: str
    stacked: bool = False  # the narrow layout: each label above its bar


def _short(name: str, chars: int = LABEL_CHARS) -> str:
    return name if len(name) <= chars else name[: chars - 1].rstrip() + "…"


def nice_step(span: float, count: int = 6) -> float:
    """A round tick step (1, 2 or 5 times a power of ten) giving about `count` ticks over `span`."""
    raw = span / count
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def fmt(value: float) -> str:
    """A value as the chart prints it: whole numbers from 100 up, one decimal below."""
    return f"{value:,.0f}" if value >= 100 or value == 0 else f"{value:,.1f}"


def _label_rows(lines: list[tuple[str, float, str]], x, left: float = LABEL_WIDTH, width: float = WIDTH
                ) -> list[tuple[str, float, str, int, str]]:
    """Places the reference lines' labels, left to right: the first left of its line when it fits,
    the others right of theirs; a label that would run into the one before drops a row."""
    placed, right_edge = [], -math.inf
    for i, (kind, value, text) in enumerate(sorted(lines, key=lambda t: t[1])):
        pos = x(value)
        size = CHAR_WIDTH * len(text)
        anchor = "end" if i == 0 and len(lines) > 1 and pos - 5 - size >= left else "start"
        if anchor == "start" and pos + 5 + size > width:
            anchor = "end"
        start = pos - 5 - size if anchor == "end" else pos + 5
        row = 0 if start > right_edge + 8 else 1
        right_edge = start + size
        placed.append((kind, pos, text, row, anchor))
    return placed


def bar_chart(entries: list[tuple[int, str, float]], unit: str, solution: float | None, limit: float | None,
              limit_name: str, narrow: bool = False) -> Chart | None:
    """entries: (rank, name, value) in rank order. None when there is nothing to draw. `narrow`: the phone
    layout (NARROW wide, each rank, name and value on a line above its bar)."""
    if not entries:
        return None
    label_row = 15 if narrow else 0  # the narrow layout's line of text above each bar
    row = (24 if len(entries) <= 30 else 16) + label_row
    bar_height = (row - label_row) * 0.68
    top_value = max([v for _, _, v in entries] + [x for x in (solution, limit) if x])
    domain = top_value * 1.04
    width = NARROW if narrow else WIDTH
    left = 8 if narrow else LABEL_WIDTH  # (room for the first tick label, centred on 0)
    plot_width = width - left - (16 if narrow else VALUE_WIDTH)
    step = nice_step(domain, 3 if narrow else 6)

    def x(v: float) -> float:
        return round(left + plot_width * v / domain, 2)

    lines = [(kind, value, f"{label} {fmt(value)}")
             for kind, value, label in (("solution", solution, "solution"), ("limit", limit, limit_name)) if value]
    placed = _label_rows(lines, x, left, width)
    rows = 1 + max((p[3] for p in placed), default=0)
    top = 8 + REF_ROW * rows
    plot_bottom = top + row * len(entries)
    references = [Reference(pos, text, REF_ROW * (row + 1), kind, anchor) for kind, pos, text, row, anchor in placed]
    bars = [Bar(y=round(top + i * row + label_row + (row - label_row - bar_height) / 2, 2),
                width=round(x(v) - left, 2), rank=rank,
                label=_short(name, NARROW_LABEL_CHARS if narrow else LABEL_CHARS), full_name=name, value=fmt(v))
            for i, (rank, name, v) in enumerate(entries)]
    ticks = [Tick(x(i * step), fmt(i * step)) for i in range(int(domain // step) + 1)]
    return Chart(width=width, height=int(plot_bottom + BOTTOM), left=left, plot_width=plot_width, plot_top=top,
                 plot_bottom=plot_bottom, bar_height=round(bar_height, 2), bars=bars, references=references,
                 ticks=ticks, axis_title=unit, stacked=narrow)
