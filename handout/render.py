"""Renders the handout: handout/assignment.md (a jinja2 template) -> build/assignment.md -> build/assignment.html.

Every number the document shows comes from where it is kept: grading numbers
from grader/rubric.toml, tasks, types and shapes from the harness's registry,
signatures from starter/include/tasks.h, measurements from the solution's
recorded bench, starter/bench/reference.json (refused unless it measured
today's solution: handout/record.py), hardware limits from starter/tools/gpu.toml.
The template never types one. The plots are drawn from the same record by
starter/bench/plot_bench.py, the script students' `make bench` runs. The HTML
is one self-contained file (figures and style embedded), made by pandoc.
"""
from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from grader.core.registry import Registry, TaskSpec
from grader.core.rubric import DEFAULT_RUBRIC, Rubric, TaskPolicy, load_rubric
from handout import contract, measured
from handout.bench import BenchError, BenchRun, Row, load_bench
from handout.occupancy import GPU_FILE, Gpu, load_gpu, occupancy
from handout.record import PLOT_BENCH, RECORD, SOLUTION_KERNELS, RecordError, check as check_record

HERE = Path(__file__).resolve().parent
TEMPLATE = HERE / "assignment.md"
STYLE = HERE / "style.css"
PLOTS = ("matmul.png", "memory.png", "transfers.png")  # what plot_bench.py draws and the template embeds


class HandoutError(RuntimeError):
    """The handout cannot be rendered; the message says what is missing or wrong."""


@dataclass(frozen=True)
class TimedFigure:
    shape: str
    solution: Row | None  # the solution's measured row at this shape and the timed type, if the record has it

    def needed(self, policy: TaskPolicy) -> float | None:
        """The throughput that earns full credit: s_full times the solution's (speedup = ratio of throughputs)."""
        return None if self.solution is None else policy.s_full * self.solution.throughput


@dataclass(frozen=True)
class TaskView:
    spec: TaskSpec
    raw: dict  # the registry's record: shape_sets, tolerance, int_range
    policy: TaskPolicy | None  # None: in the harness but not graded
    declaration: str
    stub_notes: str
    hints: str
    timed: tuple[TimedFigure, ...] = field(default=())

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def half_credit_speedup(self) -> float:
        """Credit is linear in log(speedup), so half credit sits at the geometric mean of the thresholds."""
        return math.sqrt(self.policy.s_zero * self.policy.s_full)


@dataclass
class Inputs:
    """Where each source is read from; tests point these at temporary copies."""
    registry: Registry
    rubric: Path = DEFAULT_RUBRIC
    record: Path = RECORD  # the solution's measured bench
    solution_kernels: Path = SOLUTION_KERNELS  # what the record must have measured
    gpu: Path = GPU_FILE
    template: Path = TEMPLATE
    tasks_h: Path = contract.TASKS_H
    kernels: Path = contract.KERNELS
    hints: Path = contract.HINTS


def number(value: float, digits: int = 3) -> str:
    """4.0 -> 4, 0.25 -> 0.25, 51242.7 -> 51,243: what a reader expects, never more digits than measured."""
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    if magnitude >= digits - 1:
        return f"{round(value):,}"
    text = f"{round(value, digits - 1 - magnitude):.{max(0, digits - 1 - magnitude)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def exact(value: float) -> str:
    """A rubric value exactly as written: 20, 0.25, 8 (no rounding: a grading number must not drift)."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def percent(fraction: float) -> str:
    return f"{fraction * 100:g}%"


def build_context(inputs: Inputs) -> dict:
    try:
        rubric: Rubric = load_rubric(inputs.rubric, inputs.registry)
        provenance = check_record(inputs.record, inputs.solution_kernels)
        bench: BenchRun = load_bench(inputs.record)
        gpu: Gpu = load_gpu(inputs.gpu)
        if gpu.match not in bench.device.name:
            raise HandoutError(
                f"{bench.path} was measured on '{bench.device.name}', but {inputs.gpu} describes the grading GPU as "
                f"'{gpu.name}': measure on the grading GPU, or describe the GPU you grade on in {inputs.gpu}")
        ids = inputs.registry.ids
        hints = contract.hints(ids, inputs.hints)
        raw = {t["id"]: t for t in inputs.registry.raw["tasks"]}
        tasks = []
        for spec in inputs.registry.tasks:
            policy = next((p for p in rubric.tasks if p.id == spec.id), None)
            timed = tuple(TimedFigure(s, measured.solution_at(bench, spec.id, policy.timed_dtype, s))
                          for s in (policy.timed if policy else ()))
            tasks.append(TaskView(spec, raw[spec.id], policy, contract.declaration(spec.id, inputs.tasks_h),
                                  contract.stub_notes(spec.file, inputs.kernels), hints[spec.id], timed))
        context = {
            "rubric": rubric,
            "tasks": tasks,
            "graded": [t for t in tasks if t.policy is not None],
            "registry": inputs.registry,
            "bench": bench,
            "provenance": provenance,
            "coalescing": measured.coalescing(bench),
            "transfers": measured.transfers(bench),
            "solution_figures": measured.solution_figures(bench, ids),
            "cpu": measured.cpu_comparison(bench),
            "cpu_needs": contract.CPU_NEEDS.read_text(encoding="utf-8"),  # also the tarball's README's words
            "gpu": gpu,
            "occupancy": lambda threads, regs, shared_kb: occupancy(gpu, threads, regs, shared_kb),
            "largest": lambda shapes: max(shapes, key=lambda s: math.prod(int(p) for p in s.split("x"))),
        }
    except (BenchError, RecordError, contract.ContractError, ValueError) as e:
        raise HandoutError(str(e)) from None
    return context


def render_markdown(inputs: Inputs) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(inputs.template.parent)),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True,
                             comment_start_string="{##", comment_end_string="##}")  # pandoc writes ids as {#id}
    env.filters.update(num=number, exact=exact, pct=percent)
    try:
        template = env.get_template(inputs.template.name)
        return template.render(**build_context(inputs))
    except jinja2.TemplateError as e:
        raise HandoutError(f"{inputs.template}: {type(e).__name__}: {e}") from None


def pandoc_embed_flags(pandoc: str) -> list[str]:
    """pandoc >= 2.19 says --embed-resources --standalone; older ones (Debian 12's 2.17) --self-contained."""
    help_text = subprocess.run([pandoc, "--help"], capture_output=True, text=True, check=True).stdout
    return ["--embed-resources", "--standalone"] if "--embed-resources" in help_text else ["--self-contained"]


def render_plots(record: Path, out: Path) -> list[Path]:
    """The record's plots, drawn into `out` by starter/bench/plot_bench.py (as students' make bench draws theirs)."""
    result = subprocess.run([sys.executable, str(PLOT_BENCH), str(record), "--out", str(out)],
                            capture_output=True, text=True, timeout=600)
    plots = [out / name for name in PLOTS]
    missing = [p.name for p in plots if not p.is_file()]
    if result.returncode != 0 or missing:
        said = (result.stderr.strip() or result.stdout.strip())[-2000:]
        raise HandoutError(f"{PLOT_BENCH.name} {record} (exit {result.returncode}) drew "
                           f"{'no ' + ', '.join(missing) if missing else 'its plots but failed'}: {said}")
    return plots


def render_html(markdown: Path, html: Path, figures: Path) -> None:
    pandoc = shutil.which("pandoc")
    if pandoc is None:
        raise HandoutError("pandoc is not installed: `make deps` installs Debian's package, "
                           "or install it yourself (https://pandoc.org)")
    command = [pandoc, str(markdown), "--from", "markdown", "--to", "html5", *pandoc_embed_flags(pandoc),
               "--toc", "--toc-depth=2", "--css", str(STYLE), "--resource-path", f"{figures}:{markdown.parent}",
               "--metadata", "lang=en", "--output", str(html)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise HandoutError(f"pandoc failed ({result.returncode}): {result.stderr.strip()}")
    leftovers = re.findall(r'<img[^>]+src="(?!data:)([^"]+)"', html.read_text(encoding="utf-8"))
    if leftovers:
        raise HandoutError(f"{html}: figures were not embedded: {', '.join(leftovers)}")


def build(out: Path, inputs: Inputs) -> tuple[Path, Path]:
    """Writes out/assignment.md, the record's plots and out/assignment.html; returns the two documents."""
    out.mkdir(parents=True, exist_ok=True)
    md = out / "assignment.md"
    md.write_text(render_markdown(inputs), encoding="utf-8")
    render_plots(inputs.record, out)
    html = out / "assignment.html"
    render_html(md, html, out)
    return md, html
