"""The handout: rendered from the rubric, the registry and the solution's measured record, never from typed numbers.

Every test renders from a synthetic record (synthetic_bench.py) in a temporary
folder, stamped as having measured today's solution: the real record comes
from a GPU run (and the committed one may be stale until it is measured again)
and is not needed to check that the document shows what its sources say, or
that a record of another solution is refused.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT, SOLUTION_KERNELS
from synthetic_bench import COPY_GBPS, DEVICE, write_synthetic_bench, write_synthetic_record

from grader.core.registry import Registry
from grader.core.rubric import DEFAULT_RUBRIC, load_rubric
from handout import record as measured_record
from handout.bench import BenchError, load_bench
from handout.occupancy import load_gpu, occupancy
from handout.render import HandoutError, Inputs, build, number, render_markdown, render_plots

pytestmark = pytest.mark.slow  # renders the handout from the built harness's registry (make build)

needs_pandoc = pytest.mark.skipif(shutil.which("pandoc") is None,
                                  reason="pandoc is not installed (make deps installs it where apt works)")


@pytest.fixture(scope="module")
def reg(registry) -> Registry:
    return Registry.from_json(registry)


@pytest.fixture(scope="module")
def record(tmp_path_factory, registry) -> Path:
    return write_synthetic_record(tmp_path_factory.mktemp("record") / "reference.json", registry, DEFAULT_RUBRIC)


@pytest.fixture(scope="module")
def markdown(reg, record) -> str:
    return render_markdown(Inputs(registry=reg, record=record))


def edited(path: Path, change) -> Path:
    """A copy of the record at `path` with `change` applied to its JSON, beside it under another name."""
    data = json.loads(path.read_text())
    change(data)
    copy = path.with_name(f"edited-{len(list(path.parent.iterdir()))}.json")
    copy.write_text(json.dumps(data))
    return copy


def kernels_copy(tmp_path: Path) -> Path:
    """The solution's kernels, copied: a test edits the copy, never the solution."""
    copy = tmp_path / "kernels"
    shutil.copytree(SOLUTION_KERNELS, copy)
    return copy


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

def test_the_handout_and_the_tarballs_readme_give_one_account_of_what_a_build_needs(markdown, reg):
    """starter/cpu/NEEDS.md, word for word in both (they disagreed: the handout said python3 and nothing else, the
    tarball's README that macOS needs Boost.Context)."""
    from handout.contract import CPU_NEEDS
    from release.dist import render_readme
    needs = CPU_NEEDS.read_text().strip()
    assert "Boost.Context" in needs and "**required**" in needs and "BOOST_ROOT" in needs
    assert needs in markdown
    assert needs in render_readme(load_rubric(DEFAULT_RUBRIC, reg), reg)


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


def test_changing_the_rubric_changes_the_handout(tmp_path, reg, record, markdown):
    text = DEFAULT_RUBRIC.read_text()
    text = set_task_value(text, "matmul_fast", "performance_points", "27")
    text = set_task_value(text, "dot", "s_full", "0.66")
    text = re.sub(r"^case = \d+", "case = 37", text, flags=re.M)
    text = re.sub(r'^title = ".*"', 'title = "GPU kernels, term two"', text, flags=re.M)
    changed = tmp_path / "rubric.toml"
    changed.write_text(text)
    rubric = load_rubric(changed, reg)
    assert rubric.task("matmul_fast").performance_points == 27 and rubric.task("dot").s_full == 0.66

    after = render_markdown(Inputs(registry=reg, record=record, rubric=changed))
    assert after != markdown
    points = {r[0]: r[1:] for r in table(after, "| task | correctness | performance | total |")}
    assert points["`matmul_fast`"][1] == "27"
    assert points["**all tasks**"][2] == g(rubric.max_points)
    assert f"worth {g(rubric.max_points)} points" in after
    curve = {r[0]: r for r in table(after, "| task | timed in | timed shapes |")}
    assert curve["`dot`"][4] == "0.66"
    assert table(after, "| what | limit |")[1][1] == "37 s"
    assert 'title: "GPU kernels, term two: the assignment"' in after


def test_a_task_the_rubric_does_not_grade_is_said_to_be_ungraded(tmp_path, reg, record):
    text = DEFAULT_RUBRIC.read_text()
    start, end = task_block(text, "add")
    text = text[:start] + text[end:]
    text = re.sub(r'^add = "[^"]*"\n', "", text, flags=re.M)  # its small case in [sanitizer.shapes] goes too
    changed = tmp_path / "rubric.toml"
    changed.write_text(text)
    out = render_markdown(Inputs(registry=reg, record=record, rubric=changed))
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


def test_hints_must_name_exactly_the_registrys_tasks(tmp_path, reg, record):
    hints = (ROOT / "handout" / "hints.md").read_text()
    stale = tmp_path / "stale.md"
    stale.write_text(hints + "\n## matmul_tensor_core\n\n- a task that does not exist\n")
    with pytest.raises(HandoutError, match="matmul_tensor_core"):
        render_markdown(Inputs(registry=reg, record=record, hints=stale))
    missing = tmp_path / "missing.md"
    missing.write_text(re.sub(r"## dot\n.*", "", hints, flags=re.S))
    with pytest.raises(HandoutError, match="no '## <task>' section for dot"):
        render_markdown(Inputs(registry=reg, record=record, hints=missing))


# --- measured numbers: from the record, with the device and date ------------------------------------

def test_measured_numbers_come_from_the_benchmark_record(markdown, record):
    bench = json.loads(record.read_text())
    inverted = next(r for r in bench["rows"] if r["impl"] == "naive-inverted")
    coalesced = next(r for r in bench["rows"] if r["impl"] == "solution" and r["task"] == inverted["task"]
                     and r["dtype"] == inverted["dtype"] and r["shape"] == inverted["shape"])
    assert f"**{number(inverted['ms'] / coalesced['ms'], 2)} times slower**" in markdown
    assert f"{number(inverted['throughput'])} {inverted['unit']}" in markdown
    pageable = max((t for t in bench["transfers"] if t["memory"] == "pageable" and t["direction"] == "host-to-device"),
                   key=lambda t: t["bytes"])
    assert f"| host-to-device | {number(pageable['gbps'])} GB/s |" in markdown
    assert f"{number(COPY_GBPS)} GB/s" in markdown
    assert DEVICE in markdown and "1970-01-01" in markdown


def test_the_handout_names_the_solution_and_harness_the_record_measured(markdown, record):
    provenance = json.loads(record.read_text())["provenance"]
    assert f"harness {provenance['harness_version']}, the solution's kernels" in markdown
    assert f"with sha256 `{provenance['solution_sha256'][:16]}`" in markdown


def test_full_credit_throughput_is_s_full_times_the_solutions(markdown, reg, record):
    rubric = load_rubric(DEFAULT_RUBRIC, reg)
    bench = json.loads(record.read_text())
    t = rubric.task("matmul_fast")
    for shape in t.timed:
        row = next(r for r in bench["rows"] if r["impl"] == "solution" and r["task"] == t.id
                   and r["dtype"] == t.timed_dtype and r["shape"] == shape)
        assert (f"At `{shape}` the solution ran at {number(row['throughput'])} {row['unit']}, so full credit "
                f"needs about {number(t.s_full * row['throughput'])} {row['unit']}") in markdown


def test_record_missing_a_field_is_named(record):
    def drop_ms(data):
        del data["rows"][3]["ms"]
    with pytest.raises(BenchError, match=r"rows\[3\]: missing 'ms'"):
        load_bench(edited(record, drop_ms))


def test_record_without_the_inverted_experiment_is_refused(reg, record):
    def drop_inverted(data):
        data["rows"] = [r for r in data["rows"] if r["impl"] != "naive-inverted"]
    with pytest.raises(HandoutError, match="no 'naive-inverted' row"):
        render_markdown(Inputs(registry=reg, record=edited(record, drop_inverted)))


def test_a_record_from_another_gpu_is_refused(reg, record):
    other = edited(record, lambda data: data["device"].update(name="NVIDIA GeForce RTX 4090"))
    with pytest.raises(HandoutError, match="measured on 'NVIDIA GeForce RTX 4090'.*grading GPU"):
        render_markdown(Inputs(registry=reg, record=other))


def test_a_record_of_the_h200_is_refused_now_that_the_h100_grades(reg, record):
    other = edited(record, lambda data: data["device"].update(name="NVIDIA H200"))
    with pytest.raises(HandoutError, match="measured on 'NVIDIA H200', but .*'NVIDIA H100 80GB HBM3'"):
        render_markdown(Inputs(registry=reg, record=other))


# --- the record's provenance: it must have measured today's solution --------------------------------

REFRESH = "make bench && make bench-reference"


def test_the_solution_hash_is_what_sha256sum_prints_for_the_sorted_kernels():
    """The documented way (handout/record.py): anyone can check a record with coreutils."""
    by_hand = subprocess.run("LC_ALL=C sha256sum *.cu | sha256sum", shell=True, cwd=SOLUTION_KERNELS,
                             capture_output=True, text=True, check=True).stdout.split()[0]
    assert measured_record.solution_sha256(SOLUTION_KERNELS) == by_hand
    files = measured_record.solution_files(SOLUTION_KERNELS)
    assert sorted(files) == sorted(p.name for p in SOLUTION_KERNELS.glob("*.cu"))


def test_the_solution_hash_changes_with_a_files_contents_and_with_its_name(tmp_path):
    kernels = kernels_copy(tmp_path)
    before = measured_record.solution_sha256(kernels)
    (kernels / "dot.cu").write_text((kernels / "dot.cu").read_text() + "\n")
    after_edit = measured_record.solution_sha256(kernels)
    (kernels / "dot.cu").rename(kernels / "dot2.cu")
    after_rename = measured_record.solution_sha256(kernels)
    assert len({before, after_edit, after_rename}) == 3


def test_a_record_of_an_edited_solution_is_refused_naming_the_record_both_hashes_and_the_refresh(
        tmp_path, reg, record):
    kernels = kernels_copy(tmp_path)
    recorded = json.loads(record.read_text())["provenance"]["solution_sha256"]
    (kernels / "matmul_fast.cu").write_text((kernels / "matmul_fast.cu").read_text() + "// faster now\n")
    today = measured_record.solution_sha256(kernels)
    with pytest.raises(HandoutError) as refused:
        render_markdown(Inputs(registry=reg, record=record, solution_kernels=kernels))
    message = str(refused.value)
    assert str(record) in message and recorded in message and today in message and recorded != today
    assert "(changed: matmul_fast.cu)" in message
    assert f"`{REFRESH}`" in message and "commit" in message and "NVIDIA H100 80GB HBM3" in message


def test_a_record_that_measured_the_solution_renders(tmp_path, reg, registry):
    kernels = kernels_copy(tmp_path)
    stamped = write_synthetic_record(tmp_path / "reference.json", registry, DEFAULT_RUBRIC, kernels=kernels)
    assert "# Getting started" in render_markdown(Inputs(registry=reg, record=stamped, solution_kernels=kernels))


def test_a_record_without_provenance_is_refused(reg, record):
    bare = edited(record, lambda data: data.pop("provenance"))
    with pytest.raises(HandoutError, match=rf"{re.escape(str(bare))} carries no provenance.*"
                                           rf"{measured_record.solution_sha256()}.*{re.escape(REFRESH)}"):
        render_markdown(Inputs(registry=reg, record=bare))


def test_a_missing_record_is_named_with_the_command_that_writes_it(tmp_path, reg):
    with pytest.raises(HandoutError, match=rf"{re.escape(str(tmp_path / 'reference.json'))} is missing.*"
                                           rf"{re.escape(REFRESH)}"):
        render_markdown(Inputs(registry=reg, record=tmp_path / "reference.json"))


def make_record_step(target: str, results: Path, reference: Path) -> subprocess.CompletedProcess:
    """A target of the top-level Makefile, as an instructor runs it (no outer make's settings)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    return subprocess.run(["make", "--no-print-directory", target, f"RESULTS={results}", f"RECORD={reference}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)


def test_the_refresh_command_turns_a_stale_record_into_a_current_one(tmp_path, reg, registry, solution_build):
    """make bench's output faked (bench.json: synthetic; sources.json: make bench's own step, on the built
    solution), then make bench-reference, as the refusal says."""
    old = tmp_path / "old-kernels"
    shutil.copytree(SOLUTION_KERNELS, old)
    (old / "dot.cu").write_text("// last term's dot\n")
    reference = write_synthetic_record(tmp_path / "reference.json", registry, DEFAULT_RUBRIC, kernels=old)
    with pytest.raises(HandoutError, match=re.escape(REFRESH)):
        render_markdown(Inputs(registry=reg, record=reference))

    results = tmp_path / "results"
    write_synthetic_bench(results / "bench", registry, DEFAULT_RUBRIC)
    sources = make_record_step("bench-sources", results, reference)
    assert sources.returncode == 0, sources.stdout + sources.stderr
    saved = make_record_step("bench-reference", results, reference)
    assert saved.returncode == 0, saved.stdout + saved.stderr
    assert f"as {reference}: commit it" in saved.stdout

    provenance = json.loads(reference.read_text())["provenance"]
    assert provenance["solution_sha256"] == measured_record.solution_sha256()
    assert provenance["harness_version"] == registry["harness_version"]  # the built harness's --version
    assert "# Getting started" in render_markdown(Inputs(registry=reg, record=reference))


def test_bench_reference_refuses_a_solution_edited_since_make_bench(tmp_path, registry):
    kernels = kernels_copy(tmp_path)
    bench = write_synthetic_bench(tmp_path / "results" / "bench", registry, DEFAULT_RUBRIC).parent
    (bench / measured_record.SOURCES).write_text(json.dumps(
        measured_record.Provenance(measured_record.solution_sha256(kernels), measured_record.solution_files(kernels),
                                   "2.0.0").as_json()))
    (kernels / "add.cu").write_text((kernels / "add.cu").read_text() + "// edited after the bench\n")
    with pytest.raises(measured_record.RecordError, match=r"changed since make bench measured it.*changed: add\.cu"):
        measured_record.save(bench, tmp_path / "reference.json", kernels)
    assert not (tmp_path / "reference.json").exists()


def test_bench_reference_refuses_a_bench_without_make_benchs_sources(tmp_path, registry):
    bench = write_synthetic_bench(tmp_path / "results" / "bench", registry, DEFAULT_RUBRIC).parent
    with pytest.raises(measured_record.RecordError, match=r"sources\.json is missing: the top-level `make bench`"):
        measured_record.save(bench, tmp_path / "reference.json")
    assert not (tmp_path / "reference.json").exists()


def test_bench_reference_refuses_a_students_bench(tmp_path, registry):
    bench = write_synthetic_bench(tmp_path / "bench", registry, DEFAULT_RUBRIC)
    bench.write_text(bench.read_text().replace('"label": "solution"', '"label": "student"'))
    (tmp_path / "bench" / measured_record.SOURCES).write_text(json.dumps(
        measured_record.Provenance(measured_record.solution_sha256(), measured_record.solution_files(),
                                   "2.0.0").as_json()))
    with pytest.raises(measured_record.RecordError, match="a student's bench; only the solution's"):
        measured_record.save(tmp_path / "bench", tmp_path / "reference.json")


# --- occupancy: worked from gpu.toml's limits ----------------------------------------------------

def test_occupancy_for_the_grading_gpu():
    gpu = load_gpu()
    limits = tomllib.loads((ROOT / "starter" / "tools" / "gpu.toml").read_text())["sm"]
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


# --- the HTML: one self-contained file, its plots drawn from the record -------------------------------

def handout_cli(*args: str) -> subprocess.CompletedProcess:
    harness = ROOT / "starter" / "build" / "starter" / "harness"
    return subprocess.run([sys.executable, "-m", "handout", "--harness", str(harness), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)


@needs_pandoc
def test_make_handout_writes_one_self_contained_html_with_the_records_plots(tmp_path, registry, record):
    result = handout_cli("--record", str(record), "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "assignment.html").read_text()
    assert page.count('src="data:image/png;base64,') == 3
    for name in ("matmul.png", "memory.png", "transfers.png"):  # drawn by plot_bench.py, from the record
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (tmp_path / name).stat().st_size > 10_000
    assert DEVICE in (tmp_path / "bench.md").read_text()
    assert not re.search(r'(src|href)="(https?:)?//', page), "the page must not fetch anything"
    assert "<title>CUDA kernels: the assignment</title>" in page or "CUDA kernels: the assignment" in page
    assert 'id="occupancy"' in page and 'href="#grading"' in page


def test_make_handout_refuses_a_stale_record_and_writes_nothing(tmp_path, registry):
    kernels = kernels_copy(tmp_path)
    reference = write_synthetic_record(tmp_path / "reference.json", registry, DEFAULT_RUBRIC, kernels=kernels)
    (kernels / "fill.cu").write_text("// rewritten\n")
    result = handout_cli("--record", str(reference), "--kernels", str(kernels), "--out", str(tmp_path / "o"))
    assert result.returncode == 1
    assert f"make handout: {reference} measured another solution" in result.stderr
    assert "(changed: fill.cu)" in result.stderr and REFRESH in result.stderr
    assert not (tmp_path / "o" / "assignment.html").exists()


def test_make_handout_without_a_record_says_what_is_missing(tmp_path):
    result = handout_cli("--record", str(tmp_path / "reference.json"), "--out", str(tmp_path / "o"))
    assert result.returncode == 1
    assert f"{tmp_path / 'reference.json'} is missing" in result.stderr and REFRESH in result.stderr
    assert not (tmp_path / "o" / "assignment.html").exists()


def test_a_plot_the_record_cannot_give_is_named(tmp_path, record):
    no_transfers = edited(record, lambda data: data.update(transfers=[]))
    with pytest.raises(HandoutError, match="drew no transfers.png"):
        render_plots(no_transfers, tmp_path)


@needs_pandoc
def test_rendering_is_deterministic(tmp_path, reg, record):
    a = build(tmp_path / "a", Inputs(registry=reg, record=record))[1].read_bytes()
    b = build(tmp_path / "b", Inputs(registry=reg, record=record))[1].read_bytes()
    assert a == b
