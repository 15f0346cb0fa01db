"""The student tarball (make dist): reproducible, complete, leak-free, and it builds on its own.

The tarball is built from the working tree with a synthetic measured record,
stamped as today's solution's, for its handout and its starter/bench/reference.json
(synthetic_bench.py; CI has no GPU run to quote). Where pandoc
is missing (the GPU machines), a tarball built elsewhere can be passed in
STARTER_TARBALL for the build and `make test` checks; otherwise those tests are
skipped and listed.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from conftest import ROOT, SOLUTION_KERNELS, summary_line
from synthetic_bench import write_synthetic_record

from grader.backends import gpu
from grader.core.registry import Registry
from grader.core.rubric import DEFAULT_RUBRIC, load_rubric
from grader.tests.conftest import made_once, sandbox_unavailable
from release import dist, leaks

HARNESS = ROOT / "starter" / "build" / "starter" / "harness"
PANDOC = shutil.which("pandoc") is not None
needs_builder = pytest.mark.skipif(not PANDOC, reason="pandoc is not installed: the tarball's handout cannot be "
                                                      "rendered here (make deps installs it where apt works)")


def clean_env(**extra: str) -> dict:
    """The environment of a student's shell: no DEPS_INCLUDE (the tarball must bring its own headers), and none of
    the outer make's job-server settings."""
    env = {k: v for k, v in os.environ.items() if k not in ("DEPS_INCLUDE", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    return {**env, **extra}


def make_dist(out: Path, record: Path, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "release", "dist", "--out", str(out), "--record", str(record),
               "--harness", str(HARNESS), *args]
    if os.environ.get("DEPS_INCLUDE"):
        command += ["--deps-include", os.environ["DEPS_INCLUDE"]]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def build_tarball(out: Path, record: Path) -> Path:
    result = make_dist(out, record)
    assert result.returncode == 0, result.stdout + result.stderr
    return next(out.glob("*-starter.tar.gz"))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def top_folder() -> str:
    import tomllib
    return tomllib.loads(DEFAULT_RUBRIC.read_text())["assignment"]["name"] + "-starter"


@pytest.fixture(scope="session")
def record(tmp_path_factory, registry) -> Path:
    return write_synthetic_record(tmp_path_factory.mktemp("record") / "reference.json", registry, DEFAULT_RUBRIC)


@pytest.fixture(scope="session")
def tarball(tmp_path_factory, record) -> Path:
    if os.environ.get("STARTER_TARBALL"):
        return Path(os.environ["STARTER_TARBALL"]).resolve()
    if not PANDOC:
        pytest.skip("pandoc is not installed and STARTER_TARBALL is not set: no tarball to test")
    return build_tarball(tmp_path_factory.mktemp("dist"), record)


def members(tarball: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(tarball, "r:gz") as tar:
        return {info.name: info for info in tar.getmembers()}


def extract(tarball: Path, into: Path) -> Path:
    with tarfile.open(tarball, "r:gz") as tar:
        try:
            tar.extractall(into, filter="data")
        except TypeError:  # a Python from before extraction filters; the tarball is our own
            tar.extractall(into)
    return into / top_folder()


def leak_check(target: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "release", "leaks", str(target)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


# --- reproducible --------------------------------------------------------------------------------

@needs_builder
def test_the_same_sources_give_the_same_tarball(tarball, record, tmp_path):
    time.sleep(1.1)  # anything that reads the clock would now differ
    again = build_tarball(tmp_path, record)
    assert sha256(again) == sha256(tarball)


@needs_builder
def test_entries_are_sorted_owned_by_root_and_dated_by_the_last_commit(tarball):
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH") or subprocess.run(
        ["git", "-C", str(ROOT), "log", "-1", "--format=%ct"], capture_output=True, text=True).stdout)
    with tarfile.open(tarball, "r:gz") as tar:
        infos = tar.getmembers()
    names = [i.name for i in infos]
    assert names == sorted(names, key=lambda n: n.split("/")), "entries must come in a fixed, sorted order"
    for info in infos:
        assert (info.uid, info.gid, info.uname, info.gname) == (0, 0, "", ""), info.name
        assert info.mtime == epoch, info.name
        assert info.mode in (0o644, 0o755), info.name
        assert info.isdir() or info.isfile(), info.name
    header = tarball.read_bytes()[:10]
    assert int.from_bytes(header[4:8], "little") == epoch, "the gzip header's time must be the fixed one"
    assert not header[3] & 0x08, "the gzip header must not carry a file name"


# --- complete ----------------------------------------------------------------------------------

def test_tarball_holds_the_starter_as_the_working_tree_has_it(tarball):
    top = top_folder()
    shipped = members(tarball)
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "starter"], capture_output=True,
                             text=True).stdout.split()
    assert tracked
    held_back = [n for n in tracked if n.startswith(dist.NOT_SHIPPED)]
    assert held_back, "the CPU backend's tests (which hold textbook solutions) are tracked under starter/cpu/tests/"
    assert not any(f"{top}/{name}" in shipped for name in held_back)
    with tarfile.open(tarball, "r:gz") as tar:
        for name in tracked:
            if name in held_back:
                continue
            assert f"{top}/{name}" in shipped, f"{name} is missing from the tarball"
            if name != dist.RECORD_MEMBER:  # the record the handout quotes: the next test
                assert tar.extractfile(f"{top}/{name}").read() == (ROOT / name).read_bytes(), name


@needs_builder
def test_tarball_ships_the_record_its_handout_quotes(tarball, record):
    with tarfile.open(tarball, "r:gz") as tar:
        shipped = tar.extractfile(f"{top_folder()}/{dist.RECORD_MEMBER}").read()
        page = tar.extractfile(f"{top_folder()}/handout/assignment.html").read().decode()
    assert shipped == record.read_bytes()
    assert json.loads(shipped)["device"]["name"] in page


def test_make_dist_refuses_a_record_of_another_solution_and_writes_nothing(tmp_path, registry):
    kernels = tmp_path / "kernels"
    shutil.copytree(SOLUTION_KERNELS, kernels)
    stale = write_synthetic_record(tmp_path / "reference.json", registry, DEFAULT_RUBRIC, kernels=kernels)
    (kernels / "transpose.cu").write_text("// last term's transpose\n")
    result = make_dist(tmp_path / "out", stale, "--kernels", str(kernels))
    assert result.returncode == 1
    assert f"make dist: {stale} measured another solution" in result.stderr
    assert "(changed: transpose.cu)" in result.stderr and "make bench && make bench-reference" in result.stderr
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def test_tarball_holds_the_public_data_the_suite_reads(tarball):
    top = top_folder()
    shipped = members(tarball)
    manifest = json.loads((ROOT / "data" / "manifest.json").read_text())
    assert f"{top}/data/manifest.json" in shipped
    for case in manifest["cases"]:
        for file in case["files"]:
            assert f"{top}/data/{case['dir']}/{file}" in shipped
    data = {n for n in shipped if n.startswith(f"{top}/data/") and shipped[n].isfile()}
    assert all(n == f"{top}/data/manifest.json" or n.startswith(f"{top}/data/cases/") for n in data), \
        "only the reference cases and their manifest go to students"


def test_tarball_holds_the_header_libraries_handout_and_stub_sums(tarball):
    top = top_folder()
    shipped = members(tarball)
    for header in ("doctest/doctest.h", "nlohmann/json.hpp", "CLI/CLI.hpp"):
        assert f"{top}/starter/third_party/include/{header}" in shipped
    assert f"{top}/handout/assignment.html" in shipped and f"{top}/README.md" in shipped
    with tarfile.open(tarball, "r:gz") as tar:
        page = tar.extractfile(f"{top}/handout/assignment.html").read().decode()
        sums = tar.extractfile(f"{top}/starter/tools/pristine-stubs.sha256").read().decode()
        stubs = {Path(n).name: tar.extractfile(n).read() for n in shipped
                 if n.startswith(f"{top}/starter/kernels/") and n.endswith(".cu")}
    assert page.count('src="data:image/png;base64,') == 3
    assert sorted(sums.splitlines()) == sorted(f"{hashlib.sha256(data).hexdigest()}  {name}"
                                               for name, data in stubs.items())


def test_tarball_holds_nothing_private_by_name(tarball):
    private = re.compile(r"/(solution|grader|sample-submissions|planted|hostile|results)/|\.sqlite$|rubric\.toml$")
    assert [n for n in members(tarball) if private.search(n)] == []


# --- the leak check: passes on the tarball, and catches what it is there to catch ------------------

def test_leak_check_passes_on_the_tarball(tarball):
    result = leak_check(tarball)
    assert result.returncode == 0, result.stderr
    assert "no leak" in result.stdout


@pytest.fixture
def extracted(tarball, tmp_path) -> Path:
    return extract(tarball, tmp_path)


def test_leak_check_catches_a_solution_file_under_another_name(extracted):
    shutil.copy(ROOT / "solution" / "kernels" / "matmul_tiled.cu", extracted / "starter" / "harness" / "tile_util.cu")
    result = leak_check(extracted)
    assert result.returncode == 1
    assert re.search(r"LEAK starter/harness/tile_util\.cu: holds 100% of solution/kernels/matmul_tiled\.cu",
                     result.stderr), result.stderr


def rename_identifiers(code: str) -> str:
    """What a careless copy might look like: comments gone, every name changed, the layout squashed."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", code, flags=re.S)
    keep = {"const", "int", "float", "double", "void", "for", "if", "return", "template", "typename", "include",
            "struct", "static", "constexpr", "__global__", "__shared__", "__syncthreads", "namespace"}
    code = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: m.group() if m.group() in keep else f"q_{m.group()[::-1]}", code)
    return re.sub(r"[ \t]+", " ", code)


def test_leak_check_catches_a_copy_with_every_name_changed(extracted):
    source = (ROOT / "solution" / "kernels" / "matmul_fast.cu").read_text()
    (extracted / "starter" / "kernels" / "matmul_fast.cu").write_text(rename_identifiers(source))
    result = leak_check(extracted)
    assert result.returncode == 1
    assert "LEAK starter/kernels/matmul_fast.cu: holds" in result.stderr
    assert "solution/kernels/matmul_fast.cu" in result.stderr


def first_kernel(code: str) -> str:
    """The first __global__ function of a file, signature to closing brace."""
    start = code.index("__global__")
    depth, i = 0, code.index("{", start)
    while True:
        depth += {"{": 1, "}": -1}.get(code[i], 0)
        if depth == 0:
            return code[start:i + 1]
        i += 1


def test_leak_check_catches_one_kernel_pasted_into_a_large_file(extracted):
    kernel = first_kernel((ROOT / "solution" / "kernels" / "matmul_fast.cu").read_text())
    target = extracted / "starter" / "harness" / "case_runner.cpp"
    target.write_text(target.read_text() + "\n" + kernel + "\n")
    result = leak_check(extracted)
    assert result.returncode == 1
    assert re.search(r"LEAK starter/harness/case_runner\.cpp: holds \d+% of solution/kernels/matmul_fast\.cu",
                     result.stderr), result.stderr


def test_leak_check_catches_a_sample_submission_and_a_planted_bug(extracted):
    shutil.copy(ROOT / "data" / "sample-submissions" / "s08-fast" / "dot.cu", extracted / "starter" / "kernels")
    shutil.copy(ROOT / "solution" / "tests" / "planted" / "race" / "dot.cu", extracted / "starter" / "dot_example.cu")
    result = leak_check(extracted)
    assert result.returncode == 1
    assert "LEAK starter/kernels/dot.cu: holds 100% of data/sample-submissions/s08-fast/dot.cu" in result.stderr
    assert "LEAK starter/dot_example.cu: holds 100% of solution/tests/planted/race/dot.cu" in result.stderr


def test_leak_check_catches_private_paths(extracted):
    (extracted / "grader").mkdir()
    (extracted / "grader" / "notes.txt").write_text("nothing secret in here, but the path is\n")
    (extracted / "data" / "sample-submissions" / "s99").mkdir(parents=True)
    (extracted / "data" / "sample-submissions" / "s99" / "fill.cu").write_text("// empty\n")
    (extracted / "data" / "generate.py").write_text("# not for students\n")
    result = leak_check(extracted)
    assert result.returncode == 1
    assert "LEAK grader/notes.txt: its path names a private place" in result.stderr
    assert "LEAK data/sample-submissions/s99/fill.cu: its path names a private place" in result.stderr
    assert "LEAK data/generate.py: not a place student files live" in result.stderr


def test_the_untouched_stub_sample_is_not_a_secret():
    names = {fp.name for fp in leaks.secrets()}
    assert not any("s01-stubs" in n for n in names)
    assert "solution/kernels/matmul_fast.cu" in names and "data/sample-submissions/s08-fast/dot.cu" in names


@needs_builder
def test_dist_writes_nothing_when_the_tarball_would_leak(monkeypatch, tmp_path, record, registry):
    from grader.core.registry import Registry
    real = dist.repo_members

    def with_solution():
        members_, untracked = real()
        members_["starter/kernels/matmul_tiled.cu"] = dist.Member(
            (ROOT / "solution" / "kernels" / "matmul_tiled.cu").read_bytes())
        return members_, untracked

    monkeypatch.setattr(dist, "repo_members", with_solution)
    options = dist.DistOptions(registry=Registry.from_json(registry), out=tmp_path, record=record,
                               deps_include=Path(os.environ["DEPS_INCLUDE"]) if os.environ.get("DEPS_INCLUDE") else None)
    with pytest.raises(dist.DistError, match=r"(?s)would leak.*starter/kernels/matmul_tiled\.cu.*solution/kernels"):
        dist.build(options)
    assert list(tmp_path.iterdir()) == []


# --- extracted fresh, it builds, tests and submits on its own --------------------------------------

@pytest.fixture(scope="session")
def built_tree(tarball, tmp_path_factory, request) -> Path:
    """The tarball extracted into an empty folder and built with plain `make` (no -j), as a student would: for the
    GPU where this machine has one and nvcc, else (as in CI) for the CPU backend, which make chooses by itself.
    Without a GPU make chooses the CPU backend whether the toolkit is there or not, so the tree starts as a copy of
    the first `make test` without CUDA (times kept) and plain `make` goes on from there: one cold build of the
    tarball's CPU backend for both fixtures (two minutes of CI's)."""
    root = None
    if gpu.gpu_missing():
        try:
            first, _ = request.getfixturevalue("first_make_test_without_cuda")
        except pytest.skip.Exception:  # no bubblewrap here: the build starts cold
            first = None
        if first is not None:
            copy = tmp_path_factory.mktemp("student")
            shutil.copytree(first.parent, copy, symlinks=True, dirs_exist_ok=True)
            root = copy / first.name
    root = root or extract(tarball, tmp_path_factory.mktemp("student"))
    result = subprocess.run(["make"], cwd=root / "starter", capture_output=True, text=True,
                            timeout=1800, env=clean_env())
    assert result.returncode == 0, f"make in the extracted tarball failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return root


def build_folder(starter: Path) -> Path:
    """Where plain `make` built: build/ for the GPU, build/on-cpu/ for the CPU backend."""
    return starter / "build" / "on-cpu" if (starter / "build" / "on-cpu" / "starter").is_dir() else starter / "build"


def makeflags(starter: Path, *args: str) -> str:
    """The flags the starter's Makefile runs its recipes with, for `make ARGS`."""
    probe = starter.parent / "probe.mk"
    probe.write_text("probe-makeflags:\n\t@echo \"MAKEFLAGS=[$(MAKEFLAGS)]\"\n")
    result = subprocess.run(["make", "--no-print-directory", *args, "-f", "Makefile", "-f", str(probe),
                             "probe-makeflags"], cwd=starter, capture_output=True, text=True, timeout=60,
                            env=clean_env())
    assert result.returncode == 0, result.stderr
    return re.search(r"MAKEFLAGS=\[(.*)\]", result.stdout).group(1)


def test_a_students_make_runs_one_job_per_processor_unless_told_otherwise(extracted):
    processors = subprocess.run(["getconf", "_NPROCESSORS_ONLN"], capture_output=True, text=True).stdout.strip()
    assert re.search(rf"(^| )-j{processors}( |$)", makeflags(extracted / "starter"))
    assert re.search(r"(^| )-j1( |$)", makeflags(extracted / "starter", "-j1"))
    assert re.search(r"(^| )-j3( |$)", makeflags(extracted / "starter", "-j3"))


def logging_cxx(folder: Path) -> tuple[Path, Path]:
    """A C++ compiler that writes each call's arguments to a log, then compiles: who looks for the headers?"""
    log, cxx = folder / "cxx.log", folder / "logging-cxx"
    cxx.write_text(f"#!/bin/sh\necho \"$*\" >> {log}\nexec c++ \"$@\"\n")
    cxx.chmod(0o755)
    return cxx, log


def header_checks(log: Path) -> int:
    return sum("-fsyntax-only" in line for line in log.read_text().splitlines()) if log.exists() else 0


def test_the_header_libraries_are_looked_for_once_per_build_folder(built_tree, tmp_path):
    starter = student_copy(built_tree, tmp_path)
    cxx, log = logging_cxx(tmp_path)

    def make(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["make", f"CXX={cxx}", *args], cwd=starter, capture_output=True, text=True,
                              timeout=900, env=clean_env())

    built = build_folder(starter)  # the backend the first make chose: the same build folder again
    backend = f"CPU={int(built.name == 'on-cpu')}"
    assert make("harness", backend).returncode == 0
    make("test", "SANITIZE=0", backend)  # (the suite fails on the stubs, after the build)
    assert header_checks(log) == 0, "the first make looked for them; later ones must not"
    assert (built / "lib" / ".headers-found").read_text().strip() == "-isystem third_party/include"

    elsewhere = str(starter / "third_party" / "include")  # the same headers, named differently
    assert make("harness", backend, f"DEPS_INCLUDE={elsewhere}").returncode == 0
    assert header_checks(log) == 3, "a change of DEPS_INCLUDE looks for the three libraries again"
    assert (built / "lib" / ".headers-found").read_text().strip() == f"-isystem {elsewhere}"
    assert make("harness", backend, f"DEPS_INCLUDE={elsewhere}").returncode == 0
    assert header_checks(log) == 3


def test_a_missing_header_library_is_named_in_words_a_student_understands(built_tree, tmp_path):
    starter = student_copy(built_tree, tmp_path)
    shutil.rmtree(starter / "build")
    result = subprocess.run(["make", "harness", f"DEPS_INCLUDE={tmp_path / 'empty'}", "CXX=false"], cwd=starter,
                            capture_output=True, text=True, timeout=300, env=clean_env())
    assert result.returncode != 0
    assert "Missing header <doctest/doctest.h>. Install Debian's packages (sudo apt-get install doctest-dev" \
        in result.stderr
    assert "or set DEPS_INCLUDE=dir to a folder holding those headers." in result.stderr
    assert not list((starter / "build").rglob(".headers-found")) if (starter / "build").exists() else True


def test_extracted_tarball_builds_with_its_own_headers(built_tree, registry):
    starter = built_tree / "starter"
    built = build_folder(starter)
    assert (built / "starter" / "harness").is_file()
    assert (built / "starter" / "student_suite").is_file()
    # The build used the bundled headers, not whatever this machine has installed.
    again = subprocess.run(["make", "-n", "-B", f"CPU={int(built.name == 'on-cpu')}",
                            f"{built.relative_to(starter)}/lib/harness/main.cpp.o"], cwd=starter,
                           capture_output=True, text=True, env=clean_env())
    assert "-isystem third_party/include" in again.stdout
    listed = subprocess.run([str(built / "starter" / "harness"), "--list-tasks", "--json"], cwd=starter,
                            capture_output=True, text=True, timeout=60)
    assert [t["id"] for t in json.loads(listed.stdout)["tasks"]] == [t["id"] for t in registry["tasks"]]


def student_copy(built_tree: Path, tmp_path: Path) -> Path:
    """A private copy of the built tree (times kept, so make rebuilds only what a test changes)."""
    copy = tmp_path / "student"
    shutil.copytree(built_tree, copy, symlinks=True)
    return copy / "starter"


def make_submit(starter: Path, *args: str) -> subprocess.CompletedProcess:
    if not (starter / "tools" / "precheck.py").is_file():
        pytest.fail("starter/tools/precheck.py (the source-level rules pre-check, issue 5) is not in the tarball: "
                    "make submit runs it")
    return subprocess.run(["make", "submit", *args], cwd=starter, capture_output=True, text=True, timeout=900,
                          env=clean_env())


def intake(archive: Path, tmp_path: Path, registry: dict):
    """The grader's own intake, on the archive exactly as a student hands it in (renamed by student id)."""
    from grader.intake.submission import list_entries, read_submission
    folder = tmp_path / "submissions"
    folder.mkdir()
    shutil.copy(archive, folder / "s1234567.tar.gz")
    entries, skipped = list_entries(folder)
    assert skipped == [] and len(entries) == 1
    return read_submission(entries[0], [t["file"] for t in registry["tasks"]])


def test_submit_with_untouched_stubs_warns_and_the_grader_accepts_it(built_tree, tmp_path, registry):
    starter = student_copy(built_tree, tmp_path)
    result = make_submit(starter)
    assert result.returncode == 0, result.stdout + result.stderr
    files = [t["file"] for t in registry["tasks"]]
    for name in files:
        assert f"WARNING: {name} is the untouched stub" in result.stdout
    with tarfile.open(starter / "submission.tar.gz", "r:gz") as tar:
        assert sorted(tar.getnames()) == sorted(files)
    sub = intake(starter / "submission.tar.gz", tmp_path, registry)
    assert sub.rejected is None
    assert sorted(sub.files) == sorted(files)
    assert sub.files["fill.cu"] == (starter / "kernels" / "fill.cu").read_bytes()
    assert (sub.ignored, sub.notes, sub.nickname) == ([], [], None)


FILL = """// fill, written for the submit test
#include "cuda_check.h"
#include "tasks.h"

__global__ void fill_kernel(std::int32_t* out, int rows, int cols) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[r * cols + c] = r * cols + c;
}

void fill(std::int32_t* out, int rows, int cols) {
    const dim3 block(32, 8), grid((cols + 31) / 32, (rows + 7) / 8);
    fill_kernel<<<grid, block>>>(out, rows, cols);
    CUDA_CHECK_LAUNCH();
}
"""


def test_submit_packs_written_tasks_and_the_nickname_only(built_tree, tmp_path, registry):
    starter = student_copy(built_tree, tmp_path)
    (starter / "kernels" / "fill.cu").write_text(FILL)
    (starter / "kernels" / "scratch.txt").write_text("notes to self\n")
    (starter / "nickname.txt").write_text("Warp Drive\n")
    result = make_submit(starter)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "fill.cu is the untouched stub" not in result.stdout and "fill.cu still calls" not in result.stdout
    assert "WARNING: add.cu is the untouched stub" in result.stdout
    assert "not submitted (the grader reads only the task files): scratch.txt" in result.stdout
    sub = intake(starter / "submission.tar.gz", tmp_path, registry)
    assert sub.rejected is None and sub.ignored == []
    assert sub.nickname == "Warp Drive"
    assert sub.files["fill.cu"] == FILL.encode()


def test_submit_warns_about_a_stub_with_only_its_comment_changed(built_tree, tmp_path):
    starter = student_copy(built_tree, tmp_path)
    dot = starter / "kernels" / "dot.cu"
    dot.write_text("// started on this, honest\n" + dot.read_text())
    result = make_submit(starter)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING: dot.cu still calls NOT_IMPLEMENTED_YET()" in result.stdout


def test_submit_writes_nothing_when_the_precheck_fails(built_tree, tmp_path):
    starter = student_copy(built_tree, tmp_path)
    (starter / "submission.tar.gz").write_bytes(b"an old archive")
    result = make_submit(starter, "PRECHECK=false")
    assert result.returncode != 0
    assert not (starter / "submission.tar.gz").exists(), "a stale archive must not survive a failed pre-flight"


def test_submit_writes_nothing_when_a_kernel_does_not_compile(built_tree, tmp_path):
    starter = student_copy(built_tree, tmp_path)
    transpose = starter / "kernels" / "transpose.cu"
    transpose.write_text(transpose.read_text().replace("NOT_IMPLEMENTED_YET();", "NOT_IMPLEMENTED_YET()"))
    result = make_submit(starter)
    out = result.stdout + result.stderr
    assert result.returncode != 0
    assert "kernels/transpose.cu" in out  # the compiler's message, with the student's path
    assert "these files do not build, so their tasks would score 0: transpose.cu does not compile" in out
    assert not (starter / "submission.tar.gz").exists()


@pytest.mark.gpu
def test_extracted_tarball_reports_every_task_not_implemented(built_tree, registry):
    result = subprocess.run(["make", "test"], cwd=built_tree / "starter", capture_output=True, text=True,
                            timeout=1800, env=clean_env())
    ids = [t["id"] for t in registry["tasks"]]
    summary = f"0/{len(ids)} tasks pass; not implemented yet: {', '.join(ids)}"
    assert summary in result.stdout, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.returncode != 0  # make test fails until every task passes
    for task in ids:
        assert re.search(rf"^{task}\s+not implemented yet", result.stdout, re.M), task


# --- without any CUDA toolkit: make test builds with g++ and runs on the CPU ------------------------

# What of a CUDA installation could reach a build: the toolkit's folders, and its programs, headers and
# libraries where a distribution (or a copy, as in /usr/local/{bin,include,lib} on the GPU images) puts them.
CUDA_FOLDERS = ("/usr/local", "/opt/cuda", "/opt/nvidia", "/usr/lib/cuda", "/usr/lib/nvidia-cuda-toolkit")
CUDA_PROGRAMS = ("nvcc", "ptxas", "nvlink", "fatbinary", "cudafe++", "cuobjdump", "nvdisasm", "nvprune", "nvidia-smi")
CUDA_HEADERS = ("cuda", "cublas", "cufft", "curand", "cusparse", "cusolver", "cudnn", "cupti", "nvrtc", "nvJitLink", "npp",
                "nvml", "crt/", "thrust/", "cub/", "cccl/", "nvtx3/", "cooperative_groups")
CUDA_LIBRARIES = ("libcuda", "libcublas", "libcufft", "libcurand", "libcusparse", "libcusolver", "libcudnn", "libcupti",
                  "libnvrtc", "libnvJitLink", "libnpp", "libnvidia", "libnvvm", "libnvptx")
# (folder, names that start so) for each place a distribution puts them.
CUDA_PLACES = (("/usr/bin", CUDA_PROGRAMS), ("/usr/include", CUDA_HEADERS)) + tuple(
    (lib, CUDA_LIBRARIES) for lib in ("/usr/lib", "/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu"))
CUDA_ENVIRONMENT = ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDACXX", "NVCC", "LIBRARY_PATH", "LD_LIBRARY_PATH",
                    "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "CUDA_VISIBLE_DEVICES")


def without_cuda(tree: Path) -> tuple[list[str], dict]:
    """bubblewrap's command (before the program) and the environment for a view of this machine with no CUDA
    toolkit: its folders empty, its files elsewhere in place but empty (a header or library that holds nothing),
    no /dev/nvidia*, and no variable that names it. `tree` alone is writable."""
    hide = []
    for folder in CUDA_FOLDERS:
        if Path(folder).is_dir():
            hide += ["--tmpfs", folder]
    for place, names in CUDA_PLACES:
        for entry in sorted(Path(place).iterdir()) if Path(place).is_dir() else []:
            name = entry.name + ("/" if entry.is_dir() else "")
            if name.startswith(names):
                hide += ["--tmpfs", str(entry)] if entry.is_dir() else ["--ro-bind", "/dev/null", str(entry)]
    # The tests' Python (make test runs python3: standard library only) stays visible, wherever it lives.
    python = Path(sys.base_prefix).resolve()
    keep = ["--ro-bind", str(python), str(python)] if str(python).startswith("/usr/local/") else []
    command = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *hide, *keep, "--tmpfs", "/tmp",
               "--bind", str(tree), str(tree), "--die-with-parent", "--unshare-net"]
    env = {k: v for k, v in clean_env().items() if k not in CUDA_ENVIRONMENT}
    env["PATH"] = f"{Path(sys.executable).parent}:/usr/bin:/bin"
    return command, env


# Each says why the view still holds some of CUDA; all must succeed for it to hold none.
NO_CUDA_CHECKS = {
    "nvcc is on PATH": "! command -v nvcc",
    "nvidia-smi is on PATH": "! command -v nvidia-smi",
    "a /dev/nvidia* device exists": "! ls /dev/nvidia* 2>/dev/null",
    "a CUDA variable is set": '[ -z "${CUDA_HOME:-}${CUDA_PATH:-}${LIBRARY_PATH:-}${CPATH:-}" ]',
    "the toolkit's folder /usr/local/cuda has files": '[ -z "$(ls -A /usr/local/cuda 2>/dev/null)" ]',
    "g++ finds CUDA's own runtime header": "! printf '#include <cuda_runtime_api.h>\\nint main() { void* p; return "
                                           "cudaMalloc(&p, 4); }\\n' | g++ -x c++ -fsyntax-only - 2>/dev/null",
    "the linker finds CUDA's runtime library": "! printf 'int main() { return 0; }\\n' | g++ -x c++ - -lcudart "
                                               "-o /tmp/probe 2>/dev/null",
}


def no_cuda_view(tree: Path) -> tuple[list[str], dict]:
    """without_cuda(tree), or the test skipped where bubblewrap cannot make the view."""
    if not shutil.which("bwrap"):
        sandbox_unavailable("bubblewrap is not installed (make deps installs it)")
    command, env = without_cuda(tree)
    probe = subprocess.run([*command, "true"], capture_output=True, text=True, timeout=60, env=env)
    if probe.returncode != 0:
        pytest.skip(f"bubblewrap cannot make a sandbox here: {probe.stderr.strip()}")
    return command, env


@pytest.fixture
def no_cuda(extracted) -> tuple[list[str], dict]:
    return no_cuda_view(extracted.parent)


def made_without_cuda(tarball: Path, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """A student's first `make test` in the extracted tarball on a machine without CUDA: the tree (built for the
    CPU backend) and what make said. Made once per test run for these bytes (conftest's made_once, keyed by the
    tarball's digest), whichever test file asks first: the tests below and the README's tarball commands
    (test_readme_commands.py, whose clone writes the same bytes) each go on in a copy of it, so the tarball's cold
    CPU build is made once in a run, not twice."""
    def make(folder: Path):
        root = extract(tarball, folder)
        command, env = no_cuda_view(folder)
        result = subprocess.run([*command, "make", "test"], cwd=root / "starter", capture_output=True, text=True,
                                timeout=1800, env=env)
        (folder / "make-test.json").write_text(json.dumps({"args": result.args, "returncode": result.returncode,
                                                           "stdout": result.stdout, "stderr": result.stderr}))
    folder = made_once(tmp_path_factory, f"no-cuda-{sha256(tarball)[:16]}", make)
    said = json.loads((folder / "make-test.json").read_text())
    return folder / top_folder(), subprocess.CompletedProcess(said["args"], said["returncode"], said["stdout"],
                                                              said["stderr"])


@pytest.fixture(scope="session")
def first_make_test_without_cuda(tarball, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """made_without_cuda of this run's tarball: read only (the student's loop goes on in a copy of it)."""
    return made_without_cuda(tarball, tmp_path_factory)


def test_the_sandbox_without_cuda_holds_none_of_it(no_cuda):
    command, env = no_cuda
    for what, check in NO_CUDA_CHECKS.items():
        result = subprocess.run([*command, "sh", "-c", check], capture_output=True, text=True, timeout=120, env=env)
        assert result.returncode == 0, f"inside the sandbox {what}: {result.stdout[-500:]}{result.stderr[-500:]}"


def test_extracted_tarball_builds_and_tests_on_the_cpu_with_no_cuda_toolkit(first_make_test_without_cuda, registry):
    """A student's machine without CUDA: `make test` builds everything with g++ (the tarball brings the header
    libraries and the CPU backend), says first that it runs on the CPU, and reports every stub not implemented."""
    extracted, result = first_make_test_without_cuda
    out = result.stdout
    print(out[out.find("Running on the CPU"):])
    assert out.splitlines()[0] == ("make test runs on the CPU: nvcc, the CUDA compiler, is not installed. Correctness "
                                   "only (times need a GPU); CPU=0 insists on the GPU."), out[:500] + result.stderr[-2000:]
    assert "python3 cpu/cudacpu.py compile" in out and not re.search(r"^nvcc ", out, re.M)
    assert (extracted / "starter" / "build" / "on-cpu" / "starter" / "student_suite").is_file()
    ids = [t["id"] for t in registry["tasks"]]
    assert summary_line(out) == f"0/{len(ids)} tasks pass; not implemented yet: {', '.join(ids)}", \
        out[-3000:] + result.stderr[-3000:]
    assert result.returncode != 0  # make test fails until every task passes
    for task in ids:
        assert re.search(rf"^{task}\s+not implemented yet$", out, re.M), task


def test_a_student_without_the_cuda_toolkit_builds_tests_checks_and_hands_in(first_make_test_without_cuda, registry,
                                                                           tmp_path):
    """The whole loop of a student with only make, a C++ compiler and python3 (no nvcc, no GPU), after their first
    `make test` (the fixture's, in a copy of its tree, times kept): every command works on the CPU backend or says
    in one line what needs a GPU. Two tasks written (the solution's fill and dot), the rest stubs; then the classic
    reduction bug, which the CPU's race checker must name."""
    first, _ = first_make_test_without_cuda
    shutil.copytree(first.parent, tmp_path / "student", symlinks=True)
    command, env = no_cuda_view(tmp_path / "student")
    starter = tmp_path / "student" / first.name / "starter"

    def make(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*command, "make", *args], cwd=starter, capture_output=True, text=True, timeout=1800,
                              env=env)

    for task in ("fill", "dot"):
        shutil.copy(ROOT / "solution" / "kernels" / f"{task}.cu", starter / "kernels" / f"{task}.cu")
    built = make()
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert built.stdout.splitlines()[0].startswith("make builds for the CPU backend: nvcc, the CUDA compiler, is not "
                                                   "installed"), built.stdout[:500]
    assert (starter / "build" / "on-cpu" / "starter" / "harness").is_file()

    tested = make("test", "TASK=fill,dot")
    assert tested.returncode == 0, tested.stdout[-3000:] + tested.stderr[-3000:]
    assert summary_line(tested.stdout) == "2/2 tasks pass", tested.stdout[-3000:]

    checked = make("precheck")
    assert checked.returncode == 0 and f"{len(registry['tasks'])} files clean" in checked.stdout, checked.stdout
    for tool in ("memcheck", "racecheck"):
        result = make(tool, "TASK=dot")
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        assert f"{tool} on the CPU backend" in result.stdout and "compute-sanitizer" not in result.stdout + result.stderr
        assert re.search(r"^\d+ cases: (\d+) ok, 0 wrong, 0 not implemented, 0 errors", result.stdout, re.M), result.stdout

    submitted = make("submit")
    assert submitted.returncode == 0, submitted.stdout[-3000:] + submitted.stderr[-3000:]
    with tarfile.open(starter / "submission.tar.gz", "r:gz") as tar:
        assert sorted(tar.getnames()) == sorted(t["file"] for t in registry["tasks"])
        assert tar.extractfile("dot.cu").read() == (ROOT / "solution" / "kernels" / "dot.cu").read_bytes()

    for target, words in (("bench", "make bench times your kernels, which needs an NVIDIA GPU: nvcc, the CUDA "
                                    "compiler, is not installed."),
                          ("resources", "make resources asks the CUDA compiler how many registers")):
        result = make(target, "TASK=dot")
        assert result.returncode == 2, result.stdout + result.stderr
        said = [line for line in result.stderr.splitlines() if not line.startswith("make: ***")]
        assert len(said) == 1 and said[0].startswith(words), result.stderr
        assert "not found" not in result.stdout + result.stderr and "No such file" not in result.stdout + result.stderr

    shutil.copy(ROOT / "solution" / "tests" / "planted" / "race" / "dot.cu", starter / "kernels" / "dot.cu")
    raced = make("test", "TASK=dot")
    assert raced.returncode != 0
    assert "use atomicAdd" in summary_line(raced.stdout), raced.stdout[-3000:]
    raced = make("racecheck", "TASK=dot")
    assert raced.returncode != 0 and "data race on output[0] (global memory)" in raced.stdout, raced.stdout[-3000:]


# --- the grading service's address (make upload) ----------------------------------------------------

def rubric_with_service(folder: Path, url: str) -> Path:
    """The course's rubric with its [service] url set (the section added when there is none)."""
    text = DEFAULT_RUBRIC.read_text()
    section = re.search(r"(?ms)^\[service\][^\n]*\n(.*?)(?=^\[|\Z)", text)
    line = f'url = "{url}"\n'
    if section is None:
        text += f"\n[service]\n{line}"
    elif re.search(r"(?m)^url\s*=.*$", section.group(1)):
        body = re.sub(r"(?m)^url\s*=.*\n?", line, section.group(1), count=1)
        text = text[:section.start(1)] + body + text[section.end(1):]
    else:
        text = text[:section.start(1)] + line + text[section.start(1):]
    path = folder / "rubric.toml"
    path.write_text(text)
    return path


def service_url(rubric: Path) -> str:
    """The rubric's [service] url, as its loader reads it (grader/core/service_policy.py)."""
    return load_rubric(rubric, Registry.from_file()).service.url


def test_a_rubric_with_a_service_url_gives_students_its_address_and_the_assignment(tmp_path):
    member = dist.service_member(service_url(rubric_with_service(tmp_path, "https://grading.example.edu")),
                                 "cuda-kernels")
    assert json.loads(member.data) == {"url": "https://grading.example.edu", "assignment": "cuda-kernels"}


def test_a_rubric_with_an_empty_service_url_ships_no_service_json(tmp_path):
    assert dist.service_member(service_url(rubric_with_service(tmp_path, "")), "cuda-kernels") is None


def test_the_leak_check_lets_the_client_and_its_address_through(tmp_path):
    files = {dist.SERVICE_MEMBER: dist.service_member(service_url(rubric_with_service(tmp_path, "https://g.example.edu")),
                                                      "cuda-kernels").data,
             "starter/tools/service.py": (ROOT / "starter" / "tools" / "service.py").read_bytes()}
    assert leaks.check(files, leaks.secrets()) == []


def test_the_default_tarball_ships_the_client_and_a_service_json_only_with_a_service_url(tarball):
    shipped = members(tarball)
    assert f"{top_folder()}/starter/tools/service.py" in shipped
    assert (f"{top_folder()}/{dist.SERVICE_MEMBER}" in shipped) == bool(service_url(DEFAULT_RUBRIC))


@needs_builder
def test_make_dist_writes_service_json_when_the_rubric_names_a_service(tmp_path, record, registry):
    from grader.core.registry import Registry
    options = dist.DistOptions(registry=Registry.from_json(registry), out=tmp_path / "out", record=record,
                               rubric=rubric_with_service(tmp_path, "https://grading.example.edu"),
                               deps_include=Path(os.environ["DEPS_INCLUDE"]) if os.environ.get("DEPS_INCLUDE") else None)
    with tarfile.open(dist.build(options), "r:gz") as tar:
        address = json.loads(tar.extractfile(f"{top_folder()}/{dist.SERVICE_MEMBER}").read())
    assert address == {"url": "https://grading.example.edu", "assignment": "cuda-kernels"}


def test_the_tarballs_readme_tells_students_how_to_upload_only_when_the_course_runs_a_service(tmp_path):
    registry = Registry.from_file()
    served = dist.render_readme(load_rubric(rubric_with_service(tmp_path, "https://grading.example.edu"), registry),
                                registry)
    assert "make upload" in served and "https://grading.example.edu" in served and "make login TOKEN=" in served
    assert "make upload" not in dist.render_readme(load_rubric(rubric_with_service(tmp_path, ""), registry), registry)
