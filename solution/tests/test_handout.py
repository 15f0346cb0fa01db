"""The handout: rendered from the rubric, the registry and a benchmark record, never from typed numbers.

Every test renders from a synthetic benchmark record (synthetic_bench.py) in a
temporary folder: the real figures come from a GPU run and are not needed to
check that the document shows what its sources say.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT
from synthetic_bench import COPY_GBPS, DEVICE, LABEL, write_synthetic_figures

from grader.registry import Registry
from grader.rubric import DEFAULT_RUBRIC, load_rubric
from handout.bench import BenchError, load_bench
from handout.occupancy import load_gpu, occupancy
from handout.render import HandoutError, Inputs, build, number, render_markdown

needs_pandoc = pytest.mark.skipif(shutil.which("pandoc") is None,
                                  reason="pandoc is not installed (make deps installs it where apt works)")


@pytest.fixture(scope="module")
def reg(registry) -> Registry:
    return Registry.from_json(registry)


@pytest.fixture(scope="module")
def figures(tmp_path_factory, registry) -> Path:
    return write_synthetic_figures(tmp_path_factory.mktemp("figures"), registry, DEFAULT_RUBRIC)


@pytest.fixture(scope="module")
def markdown(reg, figures) -> str:
    return render_markdown(Inputs(registry=reg, figures=figures))


def table(markdown: str, header_start: str) -> list[list[str]]:
    """The body rows of the pipe table whose header row starts with `header_start`, cells stripped."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def task_block(text: str, task: str) -> tuple[int, int]:
    """Where [tasks.<task>] starts and ends in rubric.toml's text."""
    start = text.index(f"[tasks.{task}]")
    end = re.search(r"^\[", text[start + 1:], re.M)
    return start, (start + 1 + end.start()) if end else len(text)


def set_task_value(text: str, task: str, key: str, value: str) -> str:
    start, end = task_block(text, task)
    block, n = re.subn(rf"^{key} = .*$", f"{key} = {value}", text[start:end], flags=re.M)
    assert n == 1, (task, key)
    return text[:start] + block + text[end:]


def g(value: float) -> str:
    return f"{value:g}"


def section(markdown: str, key: str) -> str:
    """The section whose heading contains `key`, up to the next heading of the same or a higher level."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("#") and key in line)
    level = len(lines[start]) - len(lines[start].lstrip("#"))
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"#{1,%d} " % level, lines[i])), len(lines))
    return "\n".join(lines[start:end])


# --- every rubric number the handout shows is the rubric's -----------------------------------------

def test_points_table_is_the_rubrics(markdown, reg):
    rubric = load_rubric(DEFAULT_RUBRIC, reg)
    rows = table(markdown, "| task | correctness | performance | total |")
    assert [r[0] for r in rows[:-1]] == [f"`{t.id}`" for t in rubric.tasks]
    for row, t in zip(rows, rubric.tasks):
        assert row[1:] == [g(t.correctness_points), g(t.performance_points), g(t.max_points)]
    assert rows[-1][1:] == [g(sum(t.correctness_points for t in rubric.tasks)),
                            g(sum(t.performance_points for t in rubric.tasks)), g(rubric.max_points)]
    assert f"worth {g(rubric.max_points)} points" in markdown


def test_performance_curve_table_is_the_rubrics(markdown, reg):
    rubric = load_rubric(DEFAULT_RUBRIC, reg)
    rows = table(markdown, "| task | timed in | timed shapes |")
    timed = [t for t in rubric.tasks if t.timed]
    assert [r[0] for r in rows] == [f"`{t.id}`" for t in timed]
    for row, t in zip(rows, timed):
        assert row[1] == t.timed_dtype
        assert re.findall(r"`([^`]+)`", row[2]) == list(t.timed)
        assert (row[3], row[4]) == (g(t.s_zero), g(t.s_full))
        # "half credit at" is where the rubric's own curve gives one half
        assert t.performance_credit(float(row[5])) == pytest.approx(0.5, abs=0.01)


def test_limits_and_timing_tables_are_the_rubrics(markdown, reg):
    rubric = load_rubric(DEFAULT_RUBRIC, reg)
    limits = [r[1] for r in table(markdown, "| what | limit |")]
    assert limits == [f"{g(rubric.limits.build)} s", f"{g(rubric.limits.case)} s", f"{g(rubric.limits.submission)} s"]
    timing = [r[1] for r in table(markdown, "| setting | value |")]
    assert timing == [str(rubric.timing.warmup), str(rubric.timing.min_pairs), str(rubric.timing.max_pairs),
                      f"{g(rubric.timing.target_relative_ci * 100)}% of it", f"{g(rubric.timing.budget)} s"]


def test_each_task_lists_the_rubrics_graded_types_and_shapes(markdown, reg):
    rubric = load_rubric(DEFAULT_RUBRIC, reg)
    for t in rubric.tasks:
        text = section(markdown, f"`{t.id}`:")
        graded = re.search(r"\*\*Graded\*\* on (.*?) × shapes\s+(.*?):\s+(\S+) points for correctness", text, re.S)
        assert graded, t.id
        assert graded.group(1).split(", ") == list(t.dtypes)
        assert re.findall(r"`([^`]+)`", graded.group(2)) == list(t.shapes)
        assert graded.group(3) == g(t.correctness_points)
        if t.timed:
            timed = re.search(r"\*\*Timed\*\* in (\S+) at\s+(.*?):\s+(\S+) points for performance", text, re.S)
            assert timed.group(1) == t.timed_dtype
            assert re.findall(r"`([^`]+)`", timed.group(2)) == list(t.timed)
            assert timed.group(3) == g(t.performance_points)
            assert f"at least {g(t.s_full)} against" in text and f"nothing below {g(t.s_zero)}" in text


def test_changing_the_rubric_changes_the_handout(tmp_path, reg, figures, markdown):
    text = DEFAULT_RUBRIC.read_text()
    text = set_task_value(text, "matmul_fast", "performance_points", "27")
    text = set_task_value(text, "dot", "s_full", "0.66")
    text = re.sub(r"^case = \d+", "case = 37", text, flags=re.M)
    text = re.sub(r'^title = ".*"', 'title = "GPU kernels, term two"', text, flags=re.M)
    changed = tmp_path / "rubric.toml"
    changed.write_text(text)
    rubric = load_rubric(changed, reg)
    assert rubric.task("matmul_fast").performance_points == 27 and rubric.task("dot").s_full == 0.66

    after = render_markdown(Inputs(registry=reg, figures=figures, rubric=changed))
    assert after != markdown
    points = {r[0]: r[1:] for r in table(after, "| task | correctness | performance | total |")}
    assert points["`matmul_fast`"][1] == "27"
    assert points["**all tasks**"][2] == g(rubric.max_points)
    assert f"worth {g(rubric.max_points)} points" in after
    curve = {r[0]: r for r in table(after, "| task | timed in | timed shapes |")}
    assert curve["`dot`"][4] == "0.66"
    assert table(after, "| what | limit |")[1][1] == "37 s"
    assert 'title: "GPU kernels, term two: the assignment"' in after


def test_a_task_the_rubric_does_not_grade_is_said_to_be_ungraded(tmp_path, reg, figures):
    text = DEFAULT_RUBRIC.read_text()
    start, end = task_block(text, "add")
    text = text[:start] + text[end:]
    text = re.sub(r'^add = "[^"]*"\n', "", text, flags=re.M)  # its small case in [sanitizer.shapes] goes too
    changed = tmp_path / "rubric.toml"
    changed.write_text(text)
    out = render_markdown(Inputs(registry=reg, figures=figures, rubric=changed))
    assert "Not graded this time" in section(out, "`add`:")
    assert "`add`" not in [r[0] for r in table(out, "| task | correctness | performance | total |")]


# --- tasks, from the registry and the contract ---------------------------------------------------

def test_every_registry_task_has_its_section_declaration_and_shapes(markdown, registry):
    header = (ROOT / "starter" / "include" / "tasks.h").read_text()
    for t in registry["tasks"]:
        text = section(markdown, f"`{t['id']}`:")
        declaration = re.search(r"```cpp\n(.*?)\n```", text, re.S).group(1)
        assert declaration in header and f" {t['id']}(" in declaration
        tested = re.search(r"\*\*Tested by `make test`\*\* in (.*?), on shapes\s+(.*?)\(fresh", text, re.S)
        assert tested.group(1).split(", ") == t["dtypes"]
        assert re.findall(r"`([^`]+)`", tested.group(2)) == t["shape_sets"]["test"]
        assert "**Hints.**" in text


def test_hints_must_name_exactly_the_registrys_tasks(tmp_path, reg, figures):
    hints = (ROOT / "handout" / "hints.md").read_text()
    stale = tmp_path / "stale.md"
    stale.write_text(hints + "\n## matmul_tensor_core\n\n- a task that does not exist\n")
    with pytest.raises(HandoutError, match="matmul_tensor_core"):
        render_markdown(Inputs(registry=reg, figures=figures, hints=stale))
    missing = tmp_path / "missing.md"
    missing.write_text(re.sub(r"## dot\n.*", "", hints, flags=re.S))
    with pytest.raises(HandoutError, match="no '## <task>' section for dot"):
        render_markdown(Inputs(registry=reg, figures=figures, hints=missing))


# --- measured numbers: from bench.json, with the device and date ----------------------------------

def test_measured_numbers_come_from_the_benchmark_record(markdown, figures):
    bench = json.loads((figures / "bench.json").read_text())
    inverted = next(r for r in bench["rows"] if r["impl"] == "naive-inverted")
    coalesced = next(r for r in bench["rows"] if r["impl"] == "solution" and r["task"] == inverted["task"]
                     and r["dtype"] == inverted["dtype"] and r["shape"] == inverted["shape"])
    assert f"**{number(inverted['ms'] / coalesced['ms'], 2)} times slower**" in markdown
    assert f"{number(inverted['throughput'])} {inverted['unit']}" in markdown
    pageable = max((t for t in bench["transfers"] if t["memory"] == "pageable" and t["direction"] == "host-to-device"),
                   key=lambda t: t["bytes"])
    assert f"| host-to-device | {number(pageable['gbps'])} GB/s |" in markdown
    assert f"{number(COPY_GBPS)} GB/s" in markdown
    assert DEVICE in markdown and "1970-01-01" in markdown and LABEL in markdown


def test_full_credit_throughput_is_s_full_times_the_solutions(markdown, reg, figures):
    rubric = load_rubric(DEFAULT_RUBRIC, reg)
    bench = json.loads((figures / "bench.json").read_text())
    t = rubric.task("matmul_fast")
    for shape in t.timed:
        row = next(r for r in bench["rows"] if r["impl"] == "solution" and r["task"] == t.id
                   and r["dtype"] == t.timed_dtype and r["shape"] == shape)
        assert (f"At `{shape}` the solution ran at {number(row['throughput'])} {row['unit']}, so full credit "
                f"needs about {number(t.s_full * row['throughput'])} {row['unit']}") in markdown


def test_missing_benchmark_record_is_named(tmp_path, reg):
    with pytest.raises(HandoutError, match=re.escape(str(tmp_path / "bench.json")) + " is missing.*make bench"):
        render_markdown(Inputs(registry=reg, figures=tmp_path))


def test_missing_plot_is_named(tmp_path, reg, figures):
    shutil.copytree(figures, tmp_path / "f")
    (tmp_path / "f" / "memory.png").unlink()
    with pytest.raises(HandoutError, match="missing memory.png"):
        render_markdown(Inputs(registry=reg, figures=tmp_path / "f"))


def test_record_missing_a_field_is_named(tmp_path, figures):
    shutil.copytree(figures, tmp_path / "f")
    data = json.loads((tmp_path / "f" / "bench.json").read_text())
    del data["rows"][3]["ms"]
    (tmp_path / "f" / "bench.json").write_text(json.dumps(data))
    with pytest.raises(BenchError, match=r"rows\[3\]: missing 'ms'"):
        load_bench(tmp_path / "f" / "bench.json")


def test_record_without_the_inverted_experiment_is_refused(tmp_path, reg, figures):
    shutil.copytree(figures, tmp_path / "f")
    data = json.loads((tmp_path / "f" / "bench.json").read_text())
    data["rows"] = [r for r in data["rows"] if r["impl"] != "naive-inverted"]
    (tmp_path / "f" / "bench.json").write_text(json.dumps(data))
    with pytest.raises(HandoutError, match="no 'naive-inverted' row"):
        render_markdown(Inputs(registry=reg, figures=tmp_path / "f"))


def test_figures_from_another_gpu_are_refused(tmp_path, reg, figures):
    shutil.copytree(figures, tmp_path / "f")
    data = json.loads((tmp_path / "f" / "bench.json").read_text())
    data["device"]["name"] = "NVIDIA GeForce RTX 4090"
    (tmp_path / "f" / "bench.json").write_text(json.dumps(data))
    with pytest.raises(HandoutError, match="measured on 'NVIDIA GeForce RTX 4090'.*grading GPU"):
        render_markdown(Inputs(registry=reg, figures=tmp_path / "f"))


# --- occupancy: worked from gpu.toml's limits ----------------------------------------------------

def test_occupancy_for_the_grading_gpu():
    gpu = load_gpu()
    limits = tomllib.loads((ROOT / "handout" / "gpu.toml").read_text())["sm"]
    assert (gpu.sm.max_threads, gpu.sm.registers, gpu.sm.shared_memory_kb) == (
        limits["max_threads"], limits["registers"], limits["shared_memory_kb"])
    full = occupancy(gpu, 1024, 32, 8)  # 1024 threads x 32 registers = half the register file
    assert (full.blocks, full.limiter, full.percent(gpu)) == (2, "threads", 100.0)
    cliff = occupancy(gpu, 1024, 40, 8)  # 40 x 32 = 1280 registers a warp, 40960 a block: one block fits
    assert (cliff.registers_per_block, cliff.blocks, cliff.limiter, cliff.percent(gpu)) == (40960, 1, "registers", 50.0)
    rounded = occupancy(gpu, 256, 33, 0)  # 33 x 32 = 1056 registers a warp, rounded up to 1280
    assert rounded.registers_per_block == 1280 * 8 and rounded.by_registers == 6
    shared = occupancy(gpu, 128, 16, 100)  # 100 KB + the reserved 1 KB per block: two fit in 228 KB
    assert (shared.by_shared, shared.limiter) == (2, "shared memory")
    with pytest.raises(ValueError, match="1024"):
        occupancy(gpu, 2048, 32, 0)


def test_occupancy_table_matches_the_calculator(markdown):
    gpu = load_gpu()
    rows = table(markdown, "| kernel | threads/block |")
    assert len(rows) == 3
    for row in rows:
        threads, regs, shared = int(row[1]), int(row[2]), float(row[3].split()[0])
        o = occupancy(gpu, threads, regs, shared)
        assert row[7].startswith(f"{o.blocks} (limited by {o.limiter})")
        assert row[8] == f"{number(o.percent(gpu))}%"


# --- the HTML: one self-contained file --------------------------------------------------------------

@needs_pandoc
def test_make_handout_writes_one_self_contained_html(tmp_path, registry, figures):
    harness = ROOT / "starter" / "build" / "starter" / "harness"
    result = subprocess.run([sys.executable, "-m", "handout", "--figures", str(figures), "--out", str(tmp_path),
                             "--harness", str(harness)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "assignment.html").read_text()
    assert page.count('src="data:image/png;base64,') == 3
    assert not re.search(r'(src|href)="(https?:)?//', page), "the page must not fetch anything"
    assert "<title>CUDA kernels: the assignment</title>" in page or "CUDA kernels: the assignment" in page
    assert 'id="occupancy"' in page and 'href="#grading"' in page


def test_make_handout_without_figures_says_what_is_missing(tmp_path):
    harness = ROOT / "starter" / "build" / "starter" / "harness"
    result = subprocess.run([sys.executable, "-m", "handout", "--figures", str(tmp_path), "--out", str(tmp_path / "o"),
                             "--harness", str(harness)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    assert f"{tmp_path / 'bench.json'} is missing" in result.stderr
    assert not (tmp_path / "o" / "assignment.html").exists()


@needs_pandoc
def test_rendering_is_deterministic(tmp_path, reg, figures):
    a = build(tmp_path / "a", Inputs(registry=reg, figures=figures))[1].read_bytes()
    b = build(tmp_path / "b", Inputs(registry=reg, figures=figures))[1].read_bytes()
    assert a == b
