"""One broken task file costs its own task (no GPU needed): real nvcc objects linked the way
the harness is linked (starter/Makefile, tools/link_tasks.py), then a probe calls launchers
and prints what the fallback launchers say for the ones the build stood in for."""
from __future__ import annotations

import json
import subprocess

import pytest

from conftest import ROOT, SOLUTION_KERNELS, STARTER

PROBE = ROOT / "solution" / "tests" / "probes" / "launcher_probe.cpp"


@pytest.fixture(scope="module")
def broken_build(tmp_path_factory, starter_build):
    """The solution's fill and add, a matmul_naive.cu that instantiates only float (the textbook's first
    attempt), and a transpose.cu with a missing semicolon; linked into the probe."""
    kernels = tmp_path_factory.mktemp("kernels")
    for name in ("fill.cu", "add.cu"):
        (kernels / name).write_bytes((SOLUTION_KERNELS / name).read_bytes())
    naive = (SOLUTION_KERNELS / "matmul_naive.cu").read_text()
    (kernels / "matmul_naive.cu").write_text(naive.replace("MATMUL_TYPES(INSTANTIATE_MATMUL_NAIVE)",
                                                           "INSTANTIATE_MATMUL_NAIVE(float)"))
    transpose = (SOLUTION_KERNELS / "transpose.cu").read_text()
    (kernels / "transpose.cu").write_text(transpose + "\nvoid oops() { int missing_semicolon = 1 }\n")
    tag = "isolation-probe"
    made = subprocess.run(["make", "-C", str(STARTER), "-j2", "objects", "lib", f"KERNELS={kernels}", f"KTAG={tag}"],
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]  # a file that does not compile is no failure
    build = STARTER / "build"
    probe_obj = build / tag / "probe.o"
    subprocess.run(["nvcc", "-std=c++17", "-I", str(STARTER / "include"), "-I", str(STARTER / "harness"), "-c",
                    str(PROBE), "-o", str(probe_obj)], check=True, capture_output=True)
    report, binary = build / tag / "probe.tasks.json", build / tag / "probe"
    linked = subprocess.run(["python3", str(STARTER / "tools" / "link_tasks.py"), "--kernels", str(kernels),
                             "--objects", str(build / tag / "kernels"), "--report", str(report), "--",
                             "nvcc", "-o", str(binary), str(probe_obj), "@KERNELS@",
                             str(build / "lib" / "harness" / "fallback_launchers.cpp.o")],
                            capture_output=True, text=True)
    return {"make": made, "link": linked, "report": json.loads(report.read_text())["tasks"], "binary": binary}


def probe(build, *launchers: str) -> dict[str, str]:
    out = subprocess.run([str(build["binary"]), *launchers], capture_output=True, text=True, check=True).stdout
    return dict(line.split(": ", 1) for line in out.splitlines())


def test_a_file_that_does_not_compile_leaves_the_build_going(broken_build):
    assert "transpose.cu does not compile (the compiler's messages are above)" in broken_build["make"].stderr
    assert broken_build["link"].returncode == 0, broken_build["link"].stderr
    entry = broken_build["report"]["transpose"]
    assert not entry["built"] and entry["reason"].startswith("transpose.cu does not compile: transpose.cu(")
    assert "error" in entry["reason"]
    assert all(broken_build["report"][t]["built"] for t in ("fill", "add", "matmul_naive"))


def test_the_broken_files_launchers_report_the_compilers_message(broken_build):
    said = probe(broken_build, "transpose<float>")
    assert said["transpose<float>"].startswith("unavailable: transpose.cu does not compile: transpose.cu(")


def test_a_float_only_file_keeps_float_and_says_which_instantiations_are_missing(broken_build):
    said = probe(broken_build, "matmul_naive<double>", "matmul_naive<int32>")
    assert said["matmul_naive<double>"] == (
        "unavailable: matmul_naive.cu does not define matmul_naive<double>: the harness tests matmul_naive on "
        "float, double and std::int32_t, so the file must instantiate it for each (end it with "
        "MATMUL_TYPES(INSTANTIATE_MATMUL_NAIVE), as tasks.h shows)")
    assert said["matmul_naive<int32>"].startswith("unavailable: matmul_naive.cu does not define "
                                                  "matmul_naive<std::int32_t>")
    symbols = subprocess.run(["nm", "-C", str(broken_build["binary"])], capture_output=True, text=True).stdout
    assert "matmul_naive_kernel<float>" in symbols  # the student's own float launcher, kernel and all


def test_the_other_tasks_are_linked_from_the_students_files(broken_build):
    symbols = subprocess.run(["nm", "-C", str(broken_build["binary"])], capture_output=True, text=True).stdout
    assert "fill_kernel" in symbols and "add_vectors" in symbols
