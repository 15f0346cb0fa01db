#!/usr/bin/env python3
"""The table and plots of `make bench`.

    python3 bench/plot_bench.py results/bench/bench.json [--reference bench/reference.json] [--out DIR]

Reads bench.json (its layout: bench.schema.json, beside this file), then writes
into its folder (or --out):
  bench.md        throughput against size, one table per task group, printed too;
  matmul.png      the matmuls beside cuBLAS FP32, the inverted-indexing
                  experiment and the CPU, log-log;
  memory.png      fill, add, transpose and dot beside a device copy of as many bytes;
  transfers.png   host-device copies from pageable and pinned memory.
With --reference, the solution's rows of that file (a bench of the solution,
recorded on the grading GPU) are drawn beside a student's kernels, labeled with
the device and date they were measured on. That file, bench/reference.json, is
written by the course's own repository (`make bench && make bench-reference` on
the grading GPU), which also stamps it with the solution it measured.

Needs Python 3.8+ and pandas; matplotlib for the plots. Without matplotlib the
table is still written and printed, and this says how to get the plots.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

SCHEMA = Path(__file__).resolve().with_name("bench.schema.json")
# How to get pandas and matplotlib where `pip install --user` is refused (Debian 12, Ubuntu 23.04 and later:
# an "externally managed" Python, PEP 668).
INSTALL_HINT = ("On Debian or Ubuntu: sudo apt install python3-pandas python3-matplotlib\n"
                "Elsewhere, in a virtual environment: python3 -m venv ~/bench-venv && "
                "~/bench-venv/bin/pip install pandas matplotlib,\n"
                "then make bench PYTHON3=~/bench-venv/bin/python")
PLOT_FILES = {"matmul": "matmul.png", "memory": "memory.png", "transfers": "transfers.png"}

# How each implementation is named, and the order tables and legends list them in.
BASELINE_NAMES = {
    "naive-inverted": "matmul_naive, inverted indexing (threadIdx.x walks rows)",
    "cublas": "cuBLAS SGEMM, FP32 (pedantic, no TF32)",
    "copy": "device copy of the same bytes (cudaMemcpy)",
    "cpu-blocked": "CPU, cache-blocked (1 thread)",
    "cpu-pretransposed": "CPU, B pretransposed (1 thread)",
    "cpu-simple": "CPU, simple triple loop (1 thread)",
}
IMPL_ORDER = ["student", "solution", "recorded", *BASELINE_NAMES]
TASK_COLORS = {"matmul_naive": "tab:blue", "matmul_tiled": "tab:orange", "matmul_fast": "tab:green"}
BASELINE_STYLES = {
    "naive-inverted": dict(color="tab:red", linestyle=":", marker="v"),
    "cublas": dict(color="black", linestyle="-", marker="s", linewidth=2),
    "copy": dict(color="black", linestyle="-", marker="s", linewidth=2),
    "cpu-blocked": dict(color="0.25", linestyle="-.", marker="^"),
    "cpu-pretransposed": dict(color="0.45", linestyle="-.", marker="<"),
    "cpu-simple": dict(color="0.65", linestyle="-.", marker=">"),
}
NO_REFERENCE = "no recorded solution numbers"


class BenchError(Exception):
    """A bench.json that cannot be used, with what is wrong with it."""


# ---------------------------------------------------------------------------
# Reading bench.json, checked against bench.schema.json (the subset of JSON
# Schema it uses, so students need no jsonschema package).
# ---------------------------------------------------------------------------
def _has_type(value, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    python_types = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
    return isinstance(value, python_types[name])


def schema_errors(value, schema: dict, where: str = "bench.json") -> list:
    """Every way `value` breaks `schema`, each naming where: ["bench.json.rows[3].ms: ..."]."""
    if "type" in schema:
        allowed = [schema["type"]] if isinstance(schema["type"], str) else schema["type"]
        if not any(_has_type(value, t) for t in allowed):
            return [f"{where}: expected {' or '.join(allowed)}, found {json.dumps(value)[:60]}"]
    errors = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {json.dumps(value)[:60]} is not one of {', '.join(map(str, schema['enum']))}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{where}: must not be empty")
        if "pattern" in schema:
            import re
            if not re.search(schema["pattern"], value):
                errors.append(f"{where}: {value!r} does not have the expected form")
    if _has_type(value, "number"):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{where}: {value} is below {schema['minimum']}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            errors.append(f"{where}: {value} must be above {schema['exclusiveMinimum']}")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{where}: missing {key!r}")
        properties = schema.get("properties", {})
        for key, item in value.items():
            if key in properties:
                errors += schema_errors(item, properties[key], f"{where}.{key}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{where}: unexpected key {key!r}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors += schema_errors(item, schema["items"], f"{where}[{i}]")
    return errors


def _no_constants(name: str):
    raise ValueError(f"{name} is not a JSON number")


def load_bench(path: Path) -> dict:
    try:
        doc = json.loads(Path(path).read_text(), parse_constant=_no_constants)
    except FileNotFoundError:
        raise BenchError(f"{path}: no such file (make bench writes it)") from None
    except ValueError as e:
        raise BenchError(f"{path}: not valid JSON ({e})") from None
    errors = schema_errors(doc, json.loads(SCHEMA.read_text()), Path(path).name)
    if errors:
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        raise BenchError(f"{path} does not match {SCHEMA.name}: " + "; ".join(errors[:5]) + more)
    return doc


@dataclass
class Reference:
    """The solution's bench, recorded on the grading GPU, shown beside a student's."""
    path: Path
    device: str
    date: str
    rows: list

    @property
    def caption(self) -> str:
        return f"recorded on {self.device}, {self.date[:10]}"


def load_reference(path: Path | None) -> Reference | None:
    if path is None or not Path(path).exists():
        return None
    doc = load_bench(path)
    if doc["label"] != "solution":
        raise BenchError(f"{path}: a {doc['label']}'s bench, not the solution's")
    return Reference(Path(path), doc["device"]["name"], doc["date"],
                     [r for r in doc["rows"] if r["impl"] == "solution"])


# ---------------------------------------------------------------------------
# The rows as one table: which series each belongs to, in which group.
# ---------------------------------------------------------------------------
def group_of(task: str) -> str:
    return "matmul" if task.startswith("matmul") else "memory"


def series_name(task: str, impl: str, reference: Reference | None = None) -> str:
    if impl == "recorded":
        return f"{task} (solution, {reference.caption})"
    if impl in ("student", "solution"):
        return f"{task} ({impl})"
    return BASELINE_NAMES[impl]


def rows_frame(doc: dict, reference: Reference | None):
    import pandas as pd

    rows = [dict(r) for r in doc["rows"]]
    if reference is not None and doc["label"] == "student":
        benched = {r["task"] for r in rows if r["impl"] == "student"}  # make bench TASK=dot: dot only
        rows += [dict(r, impl="recorded") for r in reference.rows if r["task"] in benched]
    columns = ["task", "impl", "dtype", "shape", "size", "ms", "throughput", "unit", "note"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["throughput"] = pd.to_numeric(frame["throughput"])
    task_order = {t: i for i, t in enumerate(dict.fromkeys(frame["task"]))}
    frame["group"] = frame["task"].map(group_of)
    frame["series"] = [series_name(t, i, reference) for t, i in zip(frame["task"], frame["impl"])]
    frame["order"] = [(IMPL_ORDER.index(i), task_order[t]) for t, i in zip(frame["task"], frame["impl"])]
    return frame.sort_values(["order", "size"]).drop_duplicates(["task", "series", "size"], keep="last")


# ---------------------------------------------------------------------------
# bench.md
# ---------------------------------------------------------------------------
def format_number(v: float) -> str:
    if v >= 100:
        return f"{v:,.0f}"
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def short_note(note: str) -> str:
    """What an empty cell shows: the first words of the row's note."""
    for key in ("not implemented", "skipped", "wrong", "not run", "error"):
        if note.startswith(key):
            return key
    return "–"


def size_header(shape: str, size: int) -> str:
    dims = shape.count("x") + 1
    if dims == 3:
        return f"{size}³"
    if dims == 2:
        return f"{size}²"
    return f"2^{size.bit_length() - 1}" if size & (size - 1) == 0 else str(size)


def markdown_table(first: str, headers: list, body: list) -> str:
    lines = ["| " + " | ".join([first, *headers]) + " |", "|" + "---|" * (len(headers) + 1)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


def percent_of(frame, base_impl: str):
    """Each series' throughput as a percentage of `base_impl`'s at the same size, where both were measured
    (the table's ratio rows and the plot's lower panel read this one computation)."""
    base = frame[frame["impl"] == base_impl].dropna(subset=["throughput"]).set_index("size")["throughput"]
    rows = frame[(frame["impl"] != base_impl) & frame["size"].isin(base.index)].dropna(subset=["throughput"]).copy()
    rows["percent"] = [100 * t / base[s] for t, s in zip(rows["throughput"], rows["size"])]
    return rows


def throughput_table(frame, ratio_to: str | None, own: str) -> str:
    """Series against size; with ratio_to, a row per `own` series as % of that impl."""
    sizes = sorted(frame["size"].unique())
    headers = [size_header(frame.loc[frame["size"] == s, "shape"].iloc[0], int(s)) for s in sizes]
    def cell(row) -> str:
        if row is None:
            return ""  # this series was not run at this size
        return short_note(row.note) if math.isnan(row.throughput) else format_number(row.throughput)

    body = []
    for series, rows in frame.groupby("series", sort=False):
        by_size = {int(r.size): r for r in rows.itertuples()}
        body.append([series] + [cell(by_size.get(int(s))) for s in sizes])
    if ratio_to:
        ratios = percent_of(frame, ratio_to)
        for series, rows in ratios[ratios["impl"] == own].groupby("series", sort=False):
            by_size = rows.set_index("size")["percent"]
            cells = ["" if s not in by_size.index else f"{by_size[s]:.0f}%" for s in sizes]
            if any(cells):
                body.append([f"{series} as % of {BASELINE_NAMES[ratio_to].split(' (')[0]}"] + cells)
    return markdown_table("implementation", headers, body)


def notes_list(frame) -> list:
    lines = []
    for (series, note), rows in frame[frame["note"] != ""].groupby(["series", "note"], sort=False):
        sizes = ", ".join(size_header(r.shape, int(r.size)) for r in rows.itertuples())
        lines.append(f"- {series} at {sizes}: {note}")
    return lines


def device_line(doc: dict) -> str:
    d = doc["device"]
    clock = f"SM clock {d['sm_clock_mhz']} MHz" if d["sm_clock_mhz"] else "SM clock not readable"
    return (f"{d['name']} · measured {doc['date']} · {clock} · copy bandwidth {format_number(d['copy_gbps'])} GB/s"
            f" · cuBLAS FP32 {format_number(d['cublas_fp32_gflops'])} GFLOP/s at 4096³")


def reference_line(doc: dict, reference: Reference | None) -> str | None:
    if doc["label"] != "student":
        return None
    if reference is None:
        return (f"Solution: {NO_REFERENCE} (bench/reference.json is recorded on the grading GPU; "
                "until then only your kernels and the baselines are shown).")
    return f"Solution: {reference.caption} ({reference.path.name}), on that GPU, not yours."


def markdown(doc: dict, frame, reference: Reference | None) -> str:
    own = doc["label"]
    parts = [f"# make bench: the {own}'s kernels", "", device_line(doc)]
    line = reference_line(doc, reference)
    if line:
        parts += ["", line]
    matmul = frame[frame["group"] == "matmul"]
    parts += ["", "## Matrix multiply, float32, n×n×n: GFLOP/s", ""]
    parts.append(throughput_table(matmul, "cublas", own) if len(matmul) else "Not measured in this run.")
    memory = frame[frame["group"] == "memory"]
    parts += ["", "## Memory-bound tasks: GB/s (the fewest bytes each must move, per second)", ""]
    if not len(memory):
        parts.append("Not measured in this run.")
    for task, rows in memory.groupby("task", sort=False):
        parts += [f"### {task} ({rows['dtype'].iloc[0]})", "", throughput_table(rows, "copy", own), ""]
    parts += ["", "## Host-device transfers: GB/s", ""]
    parts.append(transfers_table(doc["transfers"]) if doc["transfers"] else "Not measured in this run.")
    notes = notes_list(frame)
    if notes:
        parts += ["", "## Notes", "", *notes]
    return "\n".join(parts).rstrip() + "\n"


def format_bytes(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


def transfers_table(transfers: list) -> str:
    sizes = sorted({t["bytes"] for t in transfers})
    body = []
    for key in dict.fromkeys((t["memory"], t["direction"]) for t in transfers):
        by_size = {t["bytes"]: t["gbps"] for t in transfers if (t["memory"], t["direction"]) == key}
        body.append([f"{key[0]}, {key[1]}"] + [format_number(by_size[s]) if s in by_size else "" for s in sizes])
    return markdown_table("memory, direction", [format_bytes(s) for s in sizes], body)


# ---------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------
def style_of(task: str, impl: str) -> dict:
    if impl in BASELINE_STYLES:
        return BASELINE_STYLES[impl]
    color = TASK_COLORS.get(task, "tab:blue")
    if impl == "student":
        return dict(color=color, linestyle="-", marker="o")
    return dict(color=color if task in TASK_COLORS else "tab:orange", linestyle="--", marker="x")


def title_of(what: str, doc: dict) -> str:
    return f"{what}\n{doc['device']['name']}, {doc['date'][:10]} ({doc['label']}'s make bench)"


def draw_series(ax, frame) -> list:
    """Draws every series that has a measurement; returns the notes of those that have none."""
    missing = []
    for series, rows in frame.groupby("series", sort=False):
        measured = rows.dropna(subset=["throughput"])
        if len(measured):
            ax.plot(measured["size"], measured["throughput"], label=series,
                    **style_of(rows["task"].iloc[0], rows["impl"].iloc[0]))
        else:
            missing.append(f"{series}: {short_note(rows['note'].iloc[0])}")
    return missing


def size_axis(ax, frame, label: str) -> None:
    sizes = sorted(int(s) for s in frame["size"].unique())
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([size_header(frame.loc[frame["size"] == s, "shape"].iloc[0], s) for s in sizes])
    ax.set_xlabel(label)
    ax.grid(True, which="both", alpha=0.3)


def footnote(fig, lines: list) -> None:
    if lines:
        fig.text(0.01, 0.005, "\n".join(lines), fontsize=8, va="bottom", ha="left", color="0.3")


def plot_matmul(plt, doc, frame, footer: list, path: Path) -> None:
    """Throughput against size above; below, each matmul as % of cuBLAS FP32 at that size (the handout's
    full-credit bar is a fraction of it), when cuBLAS was measured."""
    ratios = percent_of(frame, "cublas")
    ratios = ratios[~ratios["impl"].isin(list(BASELINE_STYLES))]
    if len(ratios):
        fig, (ax, low) = plt.subplots(2, 1, figsize=(11, 9.5), sharex=True, height_ratios=(3, 2))
    else:
        fig, ax = plt.subplots(figsize=(11, 6.5))
    missing = draw_series(ax, frame)
    size_axis(ax, frame, "n (square n×n×n)")
    ax.set_yscale("log")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(title_of("Matrix multiply, float32: throughput against size", doc))
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    if len(ratios):
        for series, rows in ratios.groupby("series", sort=False):
            low.plot(rows["size"], rows["percent"], label=series,
                     **style_of(rows["task"].iloc[0], rows["impl"].iloc[0]))
        low.axhline(100, color="black", linewidth=1)
        low.set_ylabel("% of cuBLAS FP32")
        low.set_ylim(bottom=0)
        size_axis(low, frame, "n (square n×n×n)")
        ax.set_xlabel("")
    footnote(fig, footer + ([f"not measured: {'; '.join(missing)}"] if missing else []))
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def plot_memory(plt, doc, frame, footer: list, path: Path) -> None:
    tasks = list(dict.fromkeys(frame["task"]))
    cols = min(2, len(tasks))
    rows = math.ceil(len(tasks) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.5 * cols, 4.5 * rows), squeeze=False)
    missing = []
    for ax, task in zip(axes.flat, tasks):
        part = frame[frame["task"] == task]
        missing += draw_series(ax, part)
        vector = part["shape"].iloc[0].count("x") == 0
        size_axis(ax, part, "n (vector of n)" if vector else "n (n×n matrix)")
        ax.set_yscale("log")
        ax.set_ylabel("GB/s")
        ax.set_title(f"{task} ({part['dtype'].iloc[0]})")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(tasks):]:
        ax.set_visible(False)
    fig.suptitle(title_of("Memory-bound tasks beside a device copy of the same bytes", doc))
    footnote(fig, footer + ([f"not measured: {'; '.join(missing)}"] if missing else []))
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def plot_transfers(plt, doc, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(8, 5))
    colors = {"pageable": "tab:red", "pinned": "tab:green"}
    styles = {"host-to-device": "-", "device-to-host": "--"}
    keys = dict.fromkeys((t["memory"], t["direction"]) for t in doc["transfers"])
    for memory, direction in keys:
        points = sorted((t["bytes"], t["gbps"]) for t in doc["transfers"]
                        if (t["memory"], t["direction"]) == (memory, direction))
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", color=colors[memory],
                linestyle=styles[direction], label=f"{memory}, {direction}")
    sizes = sorted({t["bytes"] for t in doc["transfers"]})
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([format_bytes(s) for s in sizes])
    ax.set_xlabel("bytes per cudaMemcpy")
    ax.set_ylabel("GB/s")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.set_title(title_of("Host-device transfers: pageable against pinned memory", doc))
    ax.legend()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def draw_plots(plt, doc: dict, frame, reference: Reference | None, out: Path) -> list:
    """Writes the plots that have data; removes a plot left by an earlier run that has none now."""
    footer = [] if doc["label"] != "student" else [
        f"solution: {reference.caption}" if reference else f"solution: {NO_REFERENCE}"]
    drawn = {}
    for group, plot in (("matmul", plot_matmul), ("memory", plot_memory)):
        part = frame[frame["group"] == group]
        if len(part):
            plot(plt, doc, part, footer, out / PLOT_FILES[group])
            drawn[group] = out / PLOT_FILES[group]
    if doc["transfers"]:
        plot_transfers(plt, doc, out / PLOT_FILES["transfers"])
        drawn["transfers"] = out / PLOT_FILES["transfers"]
    for group, name in PLOT_FILES.items():
        if group not in drawn and (out / name).exists():
            (out / name).unlink()
    return list(drawn.values())


# ---------------------------------------------------------------------------
def solution_bench(bench: Path) -> dict:
    """A bench.json that can be the recorded reference: the solution's, with at least one measured row
    (the repository's `make bench-reference` stamps and writes it)."""
    doc = load_bench(bench)
    if doc["label"] != "solution":
        raise BenchError(f"{bench}: a {doc['label']}'s bench; only the solution's (top-level make bench) "
                         "can be the reference")
    if not any(r["impl"] == "solution" and r["throughput"] is not None for r in doc["rows"]):
        raise BenchError(f"{bench}: no measured row of the solution")
    return doc


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description="The table (bench.md) and plots (*.png) of make bench.")
    parser.add_argument("bench", type=Path, help="bench.json, as the bench program wrote it")
    parser.add_argument("--reference", type=Path,
                        help="the solution's recorded bench.json, shown beside a student's kernels")
    parser.add_argument("--out", type=Path, help="folder for bench.md and the plots (default: bench.json's)")
    args = parser.parse_args(argv)
    try:
        doc = load_bench(args.bench)
        reference = load_reference(args.reference) if doc["label"] == "student" else None
    except BenchError as e:
        print(f"plot_bench.py: {e}", file=sys.stderr)
        return 2
    try:
        import pandas  # noqa: F401
    except ImportError:
        print(f"pandas is not installed, so there is no table or plot; the measurements are in {args.bench}.\n"
              f"{INSTALL_HINT}", file=sys.stderr)
        return 0
    out = args.out or args.bench.parent
    out.mkdir(parents=True, exist_ok=True)
    frame = rows_frame(doc, reference)
    text = markdown(doc, frame, reference)
    (out / "bench.md").write_text(text)
    print(text)
    print(f"wrote {out / 'bench.md'}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not installed, so no plots were drawn.\n{INSTALL_HINT}\n"
              f"(or draw them from this run: python3 bench/plot_bench.py {args.bench})")
        return 0
    for path in draw_plots(plt, doc, frame, reference, out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
