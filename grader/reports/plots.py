"""The feedback's plot: what performance is graded on, per timed case.

One row per timed case: the median paired speedup against the solution with its 95% interval, on a
linear axis, over the rubric's curve for that task: no credit at or below `s_zero` (red), full credit
at or above `s_full` (green), partial in between. Credit is taken at the interval's upper end (a
diamond marks it), and each row ends with the points that case earned.
"""
from __future__ import annotations

import functools
import io
import json

ZERO, PARTIAL, FULL = "#f4c7c3", "#fde9b6", "#cfe8cf"


FIELDS = ("task", "shape", "speedup", "speedup_low", "speedup_high", "s_zero", "s_full", "points", "points_max")


def speedup_plot(timed: list[dict]) -> bytes | None:
    """PNG bytes of the plot for the timed cases that have a speedup (report.timed views); None when none has."""
    rows = [{k: v[k] for k in FIELDS} for v in timed if v.get("speedup") is not None]
    return _drawn(json.dumps(rows, default=float)) if rows else None


# What it plots names the PNG: a process that writes a class's pages again (rescore, override, export, the
# service's pages after each job) draws only what changed, where each plot is most of a second of matplotlib.
@functools.lru_cache(maxsize=256)
def _drawn(rows_json: str) -> bytes:
    rows = json.loads(rows_json)
    top = max(max(v["speedup_high"] for v in rows), max(v["s_full"] for v in rows)) * 1.15
    top = max(top, 1.2)
    # matplotlib only where a plot is drawn: it is a second of every command's start otherwise (grader/cli/'s
    # commands and the service's processes import this module through the reports)
    import matplotlib
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    fig, ax = plt.subplots(figsize=(7.2, 0.62 * len(rows) + 1.35), dpi=110)
    for i, v in enumerate(rows):
        y = len(rows) - 1 - i
        ax.barh(y, v["s_zero"], left=0, height=0.8, color=ZERO, zorder=0)
        ax.barh(y, v["s_full"] - v["s_zero"], left=v["s_zero"], height=0.8, color=PARTIAL, zorder=0)
        ax.barh(y, top - v["s_full"], left=v["s_full"], height=0.8, color=FULL, zorder=0)
        for x in (v["s_zero"], v["s_full"]):
            ax.plot([x, x], [y - 0.4, y + 0.4], color="#555", lw=1, zorder=1)
        low, mid, high = v["speedup_low"], v["speedup"], v["speedup_high"]
        ax.errorbar(mid, y, xerr=[[mid - low], [high - mid]], fmt="o", color="#1f3f8f", ms=5, capsize=4, lw=1.6,
                    zorder=3)
        ax.plot(high, y, marker="D", color="#1f3f8f", ms=4, zorder=3)
        earned = "withheld" if v["points"] is None else f"{v['points']:.1f}"  # (hidden cases, before the date)
        ax.text(top * 1.01, y, f"{earned} / {v['points_max']:.1f} pts", va="center", fontsize=8.5)
    ax.axvline(1.0, color="#888", lw=0.8, ls=":", zorder=2)
    ax.set_yticks(range(len(rows)), [f"{v['task']} {v['shape']}" for v in reversed(rows)], fontsize=8.5)
    ax.set_xlim(0, top)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlabel("speedup against the solution (its time / yours; 1 = as fast), median and 95% interval",
                  fontsize=8.5)
    ax.legend(handles=[Patch(color=ZERO, label="no credit (≤ s_zero)"), Patch(color=PARTIAL, label="partial"),
                       Patch(color=FULL, label="full credit (≥ s_full)"),
                       Line2D([], [], marker="D", color="#1f3f8f", ls="", ms=4, label="credit taken here")],
              fontsize=7.5, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()
