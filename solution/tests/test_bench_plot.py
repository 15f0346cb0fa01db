"""make bench's table and plots (starter/bench/plot_bench.py), on SYNTHETIC
bench.json files made by bench_fixtures.py: no GPU, no measured numbers."""
from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest

from bench_fixtures import BENCH_DIR, SYNTHETIC_DEVICE, load_plot_bench, synthetic_bench

plot_bench = load_plot_bench()
SCHEMA = json.loads((BENCH_DIR / "bench.schema.json").read_text())
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def write(path, doc):
    path.write_text(json.dumps(doc))
    return path


def is_png(path):
    return path.exists() and path.read_bytes()[:8] == PNG_MAGIC and path.stat().st_size > 10_000


def test_the_synthetic_bench_matches_the_published_schema():
    for doc in (synthetic_bench(), synthetic_bench("student", own_missing=True)):
        jsonschema.validate(doc, SCHEMA)
        assert plot_bench.schema_errors(doc, SCHEMA) == []


def broken_variants():
    def edit(change):
        doc = synthetic_bench()
        change(doc)
        return doc
    return {
        "no device": edit(lambda d: d.pop("device")),
        "empty device name": edit(lambda d: d["device"].update(name="")),
        "label neither student nor solution": edit(lambda d: d.update(label="teacher")),
        "date not ISO": edit(lambda d: d.update(date="21 Nov 2026")),
        "unknown impl": edit(lambda d: d["rows"][0].update(impl="cudnn")),
        "size as text": edit(lambda d: d["rows"][0].update(size="256")),
        "ms negative": edit(lambda d: d["rows"][0].update(ms=-1.0)),
        "row missing its note": edit(lambda d: d["rows"][0].pop("note")),
        "row with an extra key": edit(lambda d: d["rows"][0].update(status="ok")),
        "unit unknown": edit(lambda d: d["rows"][0].update(unit="TFLOP/s")),
        "transfer memory unknown": edit(lambda d: d["transfers"][0].update(memory="managed")),
        "transfer bytes boolean": edit(lambda d: d["transfers"][0].update(bytes=True)),
    }


@pytest.mark.parametrize("name", list(broken_variants()))
def test_the_scripts_own_checker_refuses_what_jsonschema_refuses(name):
    doc = broken_variants()[name]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMA)
    assert plot_bench.schema_errors(doc, SCHEMA), name


def test_a_bad_row_is_named_and_the_script_exits_2(tmp_path, capsys):
    doc = synthetic_bench()
    doc["rows"][3]["impl"] = "cudnn"
    assert plot_bench.main([str(write(tmp_path / "bench.json", doc))]) == 2
    assert "bench.json.rows[3].impl: \"cudnn\" is not one of" in capsys.readouterr().err
    assert not (tmp_path / "bench.md").exists()


def test_a_file_that_is_not_json_is_named(tmp_path, capsys):
    (tmp_path / "bench.json").write_text('{"device": NaN')
    assert plot_bench.main([str(tmp_path / "bench.json")]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_a_missing_file_says_make_bench_writes_it(tmp_path, capsys):
    assert plot_bench.main([str(tmp_path / "bench.json")]) == 2
    assert "no such file (make bench writes it)" in capsys.readouterr().err


def test_the_solutions_bench_gets_a_table_and_three_plots(tmp_path, capsys):
    bench = write(tmp_path / "bench.json", synthetic_bench())
    assert plot_bench.main([str(bench)]) == 0
    for name in ("matmul.png", "memory.png", "transfers.png"):
        assert is_png(tmp_path / name), name
    md = (tmp_path / "bench.md").read_text()
    assert md == capsys.readouterr().out.split("wrote ")[0].rstrip() + "\n"  # printed as written
    assert SYNTHETIC_DEVICE in md and "2000-01-01T00:00:00Z" in md
    assert "| matmul_fast (solution) | 12,800 | 25,600 | 51,200 |" in md
    assert "| cuBLAS SGEMM, FP32 (pedantic, no TF32) | 25,600 | 51,200 | 102,400 |" in md
    assert "| matmul_fast (solution) as % of cuBLAS SGEMM, FP32 | 50% | 50% | 50% |" in md
    assert "| CPU, simple triple loop (1 thread) | 0.50 | 0.50 | skipped |" in md
    # Each memory-bound task has its own copy row, though they share a name.
    assert md.count("| device copy of the same bytes (cudaMemcpy) | 512 | 1,024 | 2,048 |") == 3
    assert "### transpose (float32)" in md and "| transpose (solution) as % of device copy of the same bytes | 90% |" in md
    assert "| implementation | 2^16 | 2^18 | 2^20 |" in md  # dot's sizes
    assert "| pinned, device-to-host | 20.0 | 20.0 |" in md
    assert "- CPU, simple triple loop (1 thread) at 1024³: skipped: one run would take about 3 s" in md
    assert "recorded" not in md and plot_bench.NO_REFERENCE not in md  # the solution's own bench


def test_a_students_bench_without_a_reference_says_there_are_no_solution_numbers(tmp_path):
    bench = write(tmp_path / "bench.json", synthetic_bench("student"))
    assert plot_bench.main([str(bench), "--reference", str(tmp_path / "absent.json")]) == 0
    md = (tmp_path / "bench.md").read_text()
    assert "Solution: no recorded solution numbers" in md
    assert "| matmul_naive (student) |" in md and "(solution" not in md


def test_a_students_bench_shows_the_recorded_solution_with_its_device_and_date(tmp_path):
    reference = synthetic_bench("solution", date="1999-12-31T23:00:00Z")
    reference["device"]["name"] = "SYNTHETIC grading device"
    ref = write(tmp_path / "reference.json", reference)
    bench = write(tmp_path / "bench.json", synthetic_bench("student"))
    assert plot_bench.main([str(bench), "--reference", str(ref)]) == 0
    md = (tmp_path / "bench.md").read_text()
    assert "Solution: recorded on SYNTHETIC grading device, 1999-12-31 (reference.json)" in md
    assert "| matmul_fast (solution, recorded on SYNTHETIC grading device, 1999-12-31) | 12,800 |" in md
    assert "| matmul_fast (student) as % of cuBLAS SGEMM, FP32 | 50% |" in md
    # The reference's own baselines (measured on another GPU) are not mixed in.
    assert md.count("| cuBLAS SGEMM, FP32 (pedantic, no TF32) |") == 1
    assert is_png(tmp_path / "matmul.png")


def test_the_recorded_solution_is_shown_only_for_the_tasks_the_student_benched(tmp_path):
    ref = write(tmp_path / "reference.json", synthetic_bench("solution"))
    doc = synthetic_bench("student", groups=("memory",))
    doc["rows"] = [r for r in doc["rows"] if r["task"] == "dot"]
    assert plot_bench.main([str(write(tmp_path / "bench.json", doc)), "--reference", str(ref)]) == 0
    md = (tmp_path / "bench.md").read_text()
    assert "| dot (solution, recorded on" in md
    assert "matmul_fast" not in md and "### add" not in md
    assert not (tmp_path / "matmul.png").exists()


def test_stubs_show_not_implemented_and_still_plot_the_baselines(tmp_path):
    bench = write(tmp_path / "bench.json", synthetic_bench("student", own_missing=True))
    assert plot_bench.main([str(bench)]) == 0
    md = (tmp_path / "bench.md").read_text()
    assert "| matmul_tiled (student) | not implemented | not implemented | not implemented |" in md
    assert "as % of" not in md  # nothing to compare
    assert is_png(tmp_path / "matmul.png") and is_png(tmp_path / "memory.png")


def test_groups_that_were_not_measured_get_no_plot_and_a_stale_plot_is_removed(tmp_path):
    (tmp_path / "matmul.png").write_bytes(b"from an earlier run")
    bench = write(tmp_path / "bench.json", synthetic_bench(groups=("memory",)))
    assert plot_bench.main([str(bench)]) == 0
    assert is_png(tmp_path / "memory.png")
    assert not (tmp_path / "matmul.png").exists() and not (tmp_path / "transfers.png").exists()
    md = (tmp_path / "bench.md").read_text()
    assert md.count("Not measured in this run.") == 2  # matmul and transfers


def test_a_bench_of_one_memory_task_plots_one_panel(tmp_path):
    doc = synthetic_bench(groups=("memory",))
    doc["rows"] = [r for r in doc["rows"] if r["task"] == "dot"]
    assert plot_bench.main([str(write(tmp_path / "bench.json", doc)), "--out", str(tmp_path / "plots")]) == 0
    assert is_png(tmp_path / "plots" / "memory.png")
    assert "### dot (float32)" in (tmp_path / "plots" / "bench.md").read_text()


def test_without_matplotlib_the_table_is_printed_and_the_way_to_get_plots_said(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    bench = write(tmp_path / "bench.json", synthetic_bench())
    assert plot_bench.main([str(bench)]) == 0
    out = capsys.readouterr().out
    assert "| matmul_fast (solution) |" in out
    assert "matplotlib is not installed" in out and "sudo apt install python3-pandas python3-matplotlib" in out \
        and "--user" not in out
    assert (tmp_path / "bench.md").exists() and not list(tmp_path.glob("*.png"))


@pytest.mark.parametrize("doc, complaint", [
    (synthetic_bench("student"), "a student's bench; only the solution's"),
    (synthetic_bench("solution", own_missing=True), "no measured row of the solution"),
])
def test_only_a_measured_solutions_bench_can_be_the_reference(tmp_path, doc, complaint):
    """What make bench-reference (handout/record.py) asks of a bench before it stamps and records it."""
    bench = write(tmp_path / "bench.json", doc)
    with pytest.raises(plot_bench.BenchError, match=complaint):
        plot_bench.solution_bench(bench)
    assert plot_bench.solution_bench(write(tmp_path / "ok.json", synthetic_bench("solution")))["label"] == "solution"


PROVENANCE = {"solution_sha256": "0" * 64, "solution_files": {"add.cu": "1" * 64}, "harness_version": "2.0.0"}


def test_a_stamped_reference_is_plotted_beside_a_students_bench(tmp_path):
    """The recorded reference carries its provenance; the script that ships to students reads it all the same."""
    reference = dict(synthetic_bench("solution"), provenance=PROVENANCE)
    jsonschema.validate(reference, SCHEMA)
    ref = write(tmp_path / "reference.json", reference)
    bench = write(tmp_path / "bench.json", synthetic_bench("student"))
    assert plot_bench.main([str(bench), "--reference", str(ref)]) == 0
    assert "| matmul_fast (solution, recorded on" in (tmp_path / "bench.md").read_text()


@pytest.mark.parametrize("change", [
    lambda p: p.pop("harness_version"),
    lambda p: p.update(solution_sha256="not a hash"),
    lambda p: p.update(source="a guess"),
])
def test_a_malformed_provenance_is_refused(change):
    provenance = dict(PROVENANCE)
    change(provenance)
    doc = dict(synthetic_bench("solution"), provenance=provenance)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMA)
    assert plot_bench.schema_errors(doc, SCHEMA)


def test_a_reference_that_is_a_students_bench_is_refused(tmp_path, capsys):
    ref = write(tmp_path / "reference.json", synthetic_bench("student"))
    bench = write(tmp_path / "bench.json", synthetic_bench("student"))
    assert plot_bench.main([str(bench), "--reference", str(ref)]) == 2
    assert "a student's bench, not the solution's" in capsys.readouterr().err


def test_the_script_runs_as_a_program(tmp_path):
    bench = write(tmp_path / "bench.json", synthetic_bench())
    result = subprocess.run([sys.executable, str(BENCH_DIR / "plot_bench.py"), str(bench)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert f"wrote {tmp_path / 'matmul.png'}" in result.stdout


def test_no_reference_file_with_invented_numbers_is_committed():
    reference = BENCH_DIR / "reference.json"
    if reference.exists():
        doc = plot_bench.load_bench(reference)
        assert doc["label"] == "solution"
        assert "SYNTHETIC" not in doc["device"]["name"]
        assert not any("SYNTHETIC" in row["note"] for row in doc["rows"])


def test_the_students_results_folder_is_ignored_by_git():
    result = subprocess.run(["git", "check-ignore", "-q", "starter/results/bench/bench.json"],
                            cwd=BENCH_DIR.parents[1])
    assert result.returncode == 0


def test_the_script_needs_only_the_standard_library_pandas_numpy_and_matplotlib():
    import ast
    tree = ast.parse((BENCH_DIR / "plot_bench.py").read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported - set(sys.stdlib_module_names) <= {"pandas", "numpy", "matplotlib"}


def test_each_matmul_is_plotted_as_a_percentage_of_cublas_at_each_size(tmp_path):
    doc = synthetic_bench()
    frame = plot_bench.rows_frame(doc, None)
    ratios = plot_bench.percent_of(frame[frame["group"] == "matmul"], "cublas")
    fast = ratios[ratios["series"] == "matmul_fast (solution)"]
    assert list(fast["percent"]) == [50.0, 50.0, 50.0]  # the synthetic solution runs at half cuBLAS's rate
    assert "cuBLAS SGEMM, FP32 (pedantic, no TF32)" not in set(ratios["series"])
    with_cublas = write(tmp_path / "bench.json", doc)
    assert plot_bench.main([str(with_cublas)]) == 0
    tall = png_size(tmp_path / "matmul.png")
    doc["rows"] = [r for r in doc["rows"] if r["impl"] != "cublas"]
    without = tmp_path / "no-cublas"
    without.mkdir()
    assert plot_bench.main([str(write(without / "bench.json", doc))]) == 0
    short = png_size(without / "matmul.png")
    assert tall[1] > short[1] * 1.3  # the lower "% of cuBLAS" panel is drawn only when cuBLAS was measured


def png_size(path):
    header = path.read_bytes()[16:24]
    return int.from_bytes(header[:4], "big"), int.from_bytes(header[4:], "big")
