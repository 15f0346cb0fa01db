"""The CPU path's nvcc-rules check (starter/cpu/driver/frontend.py) gives nvcc's verdict on the corpus of
beginner mistakes (solution/tests/nvcc_corpus/, nvcc 13.0's verdicts in nvcc.json), with no CUDA toolkit in
sight, in the student's words and at nvcc's line; the task files themselves pass it."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STARTER = ROOT / "starter"
CORPUS = Path(__file__).resolve().parent / "nvcc_corpus"
RECORD = json.loads((CORPUS / "nvcc.json").read_text())["files"]
sys.path.insert(0, str(STARTER / "cpu"))
from driver import frontend, precompiled  # noqa: E402

# Words of nvcc's first message that the translated message must also have (the same problem).
KEYWORDS = {
    "01": ["calling a __host__ function", "'plus'", "__global__"],
    "02": ["calling a __host__ function", "'square'", "__global__"],
    "03": ["calling a __host__ function", "string", "__global__"],
    "04": ["calling a __host__ function", "vector", "__global__"],
    "05": ["calling a __host__ function", "ostream", "__global__"],
    "06": ["device code does not support exception handling"],
    "07": ["constant value"],
    "08": ["a __global__ function must have a void return type"],
    "09": ["calling a __device__ function", "'blocks_for'", "from a __host__ function"],
    "10": ["calling a __device__ function", "'__syncthreads'", "from a __host__ function"],
    "11": ["a variable length array cannot have static storage duration"],
    "14": ["__global__ function", "cannot be a member function"],
    "17": ["calling a __host__ function", "'min'", "__global__", "--expt-relaxed-constexpr"],
    "18": ["a __global__ function call must be configured"],
    "21": ["calling a __device__ function", "'k'", "from a __host__ function"],
    "22": ["a __global__ function call must be configured"],
    "23": ["calling a __host__ function", "std::function", "__global__"],
    "24": ["__shared__", "not allowed inside a __host__ function body"],
    "25": ["calling a __host__ function", "'apply'", "__global__"],
    "26": ["calling a __host__ function", "'cudaMemcpy'", "__global__"],
    "27": ["__global__ function", "cannot be a member function"],
    "28": ["calling a __host__ function", "'rand'", "__global__"],
    "29": ["function call cannot be configured", "'zero'"],
    "30": ["function call cannot be configured", "'zero_all<float>'"],
    "31": ["function call cannot be configured", "'set_one'"],
}
# What clang's front end cannot see, with why: the test expects this difference (and fails when it goes away).
KNOWN_MISSES: dict[str, str] = {}
INTERNAL_NAMES = ("cudacpu", "__clang_cuda", "frontend_prelude", "prelude.h", "LaunchSite", "cudacpu_kernel_key_",
                  "cudacpu/frontend")


def test_the_record_covers_every_corpus_file_and_every_rejection_has_keywords():
    files = sorted(p.name for p in CORPUS.glob("*.cu"))
    assert sorted(RECORD) == files, "rerun solution/tests/nvcc_corpus/record.py where nvcc exists"
    assert len(files) >= 30
    rejected = [f[:2] for f, r in RECORD.items() if not r["accepted"]]
    assert sorted(rejected) == sorted(KEYWORDS)
    assert sum(r["accepted"] for r in RECORD.values()) >= 5


def _diagnostic(message: str, notes=()) -> frontend.Diagnostic:
    return frontend.Diagnostic("k.cu", 3, 5, message, list(notes))


@pytest.mark.parametrize("clang_says, notes, expected", [
    ("reference to __host__ function 'plus<float>' in __global__ function", [],
     ["calling a __host__ function 'plus<float>' from a __global__ function is not allowed", "mark it __device__"]),
    ("no matching function for call to 'blocks_for'",
     [("k.cu", "candidate function not viable: call to __device__ function from __host__ function")],
     ["calling a __device__ function 'blocks_for' from a __host__ function is not allowed"]),
    ("no matching function for call to 'inner'",
     [("k.cu", "candidate function not viable: call to __global__ function from __global__ function")],
     ["a __global__ function call must be configured", "<<<"]),
    ("no viable conversion from 'const char[4]' to 'std::string' (aka 'basic_string<char>')",
     [("/usr/include/c++/12/bits/basic_string.h", "candidate constructor not viable: call to __host__ function "
                                                   "from __global__ function")],
     ["calling a __host__ function the constructor of 'std::string'", "library"]),
    ("kernel function type 'int (float *)' must have void return type", [],
     ["a __global__ function must have a void return type"]),
    ("cannot use 'throw' in __device__ function", [], ["device code does not support exception handling"]),
    ("call to global function 'k' not configured", [], ["must be configured", "k<<<grid, block>>>"]),
    ("kernel call to non-global function 'zero'", [],
     ["function call cannot be configured", "'zero' is not a __global__"]),
])
def test_clang_messages_are_said_as_nvcc_means_them(clang_says, notes, expected):
    said = frontend.translate(_diagnostic(clang_says, notes))
    for words in expected:
        assert words in said
    assert "reference to" not in said


@pytest.mark.parametrize("text, lines", [
    ("struct S { static __global__ void k(float* x) { x[0] = 1; } };\n", [1]),
    ("struct S {\n  __global__ void k(float* x);\n};\n", [2]),
    ("namespace n { template <class T> struct Outer { struct In {\n static __global__ void k(T*); }; }; }\n", [2]),
    ("class C { public:\n  template <typename T>\n  static __global__ void k(T* x);\n};\n", [3]),
    ("__global__ void k(float*);\nstruct S { friend __global__ void k(float*); int v; };\n", []),
    ("__global__ void k(float* x) { struct L { int q; } l{1}; x[0] = l.q; }\n", []),
    ("void f(struct S* s) { }\n__global__ void k(float* x) { x[0] = 0; }\n", []),
    ("enum class E { a, b };\nstruct S { int v = sizeof(E); };\n__global__ void k(float* x) { x[0] = 0; }\n", []),
    ("struct S { int v; } s = { 1 };\n__global__ void k(float* x) { x[0] = 0; }\n", []),
    ("struct S { void f() { if (1) { } } };\n__global__ void k(float* x) { x[0] = 0; }\n", []),
])
def test_a_kernel_a_class_declares_as_its_member_is_refused_and_nothing_else_is(text, lines):
    """nvcc refuses every member kernel; clang's front end takes a static one, so the file's tokens are read."""
    from driver.rewrite import member_kernels
    assert [line for line, _ in member_kernels(text)] == lines


def test_errors_that_are_not_about_cudas_rules_are_left_to_the_compile():
    assert frontend.translate(_diagnostic("use of undeclared identifier 'foo'")) is None
    assert frontend.translate(_diagnostic("no matching function for call to 'f'",
                                          [("k.cu", "candidate function not viable: requires 2 arguments")])) is None


def test_one_error_a_line_the_rule_before_the_call_and_nothing_outside_the_file(tmp_path):
    source = tmp_path / "k.cu"
    source.write_text("a\nb\n  if (x) throw E();\n")
    output = (f"{source}:3:19: error: no matching constructor for initialization of 'E'\n"
              f"{tmp_path}/e.h:1:1: note: candidate constructor not viable: call to __host__ function from "
              f"__global__ function\n"
              f"{source}:3:11: error: cannot use 'throw' in __global__ function\n"
              f"{tmp_path}/prelude.h:9:1: error: reference to __host__ function 'g' in __global__ function\n"
              f"{source}:2:1: error: reference to __device__ function '__fetch_builtin_x' in __host__ function\n")
    found = frontend.refusals(output, source)
    assert [(r.line, r.column) for r in found] == [(3, 11)]
    assert "exception handling" in found[0].message and found[0].text == "  if (x) throw E();"
    assert found[0].render("kernels/k.cu").startswith("kernels/k.cu:3:11: error: device code")


def test_without_clang_the_build_says_once_that_the_check_was_skipped_and_how_to_get_it(monkeypatch, tmp_path,
                                                                                        capsys):
    """A student with g++ alone: every task file's compile calls the check, each in its own process; the note is
    said by the first, once per build folder, and the build goes on (no error)."""
    from driver import toolchain
    from driver.flags import Options
    monkeypatch.setenv("CUDACPU_CLANG", str(tmp_path / "no-such-clang"))
    monkeypatch.setattr(toolchain, "DEFAULT_RUNTIME", tmp_path / "build" / "cpu" / "libcudacpu.a")
    monkeypatch.delenv("CUDACPU_BUILD", raising=False)
    source = tmp_path / "k.cu"
    source.write_text("int f(int x) { return x; }\n")
    for folder in (None, tmp_path / "build" / "on-cpu-clang"):  # the default build folder, then another (cpu.mk's)
        if folder:
            monkeypatch.setenv("CUDACPU_BUILD", str(folder))
        for _ in range(3):
            toolchain.nvcc_rules(Options(), source)
        said = capsys.readouterr().err.splitlines()
        assert len(said) == 1, said
        assert "was skipped: no clang" in said[0] and "apt-get install clang" in said[0]


def test_precheck_reads_the_prelude_where_make_tests_compiles_keep_it(monkeypatch, tmp_path):
    """make precheck and make submit check each file as the compiles do: with the build folder's precompiled
    prelude (toolchain.pch_folder: CUDACPU_BUILD's, else the starter's build/cpu)."""
    from driver import toolchain
    sys.path.insert(0, str(STARTER / "tools"))
    import precheck
    seen = []
    monkeypatch.setattr(frontend, "find_clang", lambda: "clang")
    monkeypatch.setattr(frontend, "run", lambda clang, source, flags, std="c++17", pch_folder=None:
                        seen.append(pch_folder) or [])
    monkeypatch.setenv("CUDACPU_BUILD", str(tmp_path / "build"))
    assert precheck.nvcc_rules([str(tmp_path / "a.cu"), str(tmp_path / "b.cu")]) == ([], "")
    assert seen == [tmp_path / "build" / "nvcc-rules"] * 2 == [toolchain.pch_folder()] * 2
    monkeypatch.delenv("CUDACPU_BUILD")
    assert toolchain.pch_folder() == STARTER / "build" / "cpu" / "nvcc-rules"


CHECK_ALL = """
import json, sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
sys.path.insert(0, "cpu")
from driver import frontend
clang = frontend.find_clang()
pch, files = Path(sys.argv[1]), sys.argv[2:]
def both(f):  # as make test's compiles run it (the prelude precompiled in the build folder), and without that
    return [frontend.check(clang, Path(f), f, ["-Iinclude", "-Iharness"], pch_folder=pch),
            frontend.check(clang, Path(f), f, ["-Iinclude", "-Iharness"])]
with ThreadPoolExecutor(2) as pool:
    found = list(pool.map(both, files))
print(json.dumps({"clang": clang, "files": dict(zip(files, found)), "pch": sorted(p.name for p in pch.iterdir())}))
"""


@pytest.fixture(scope="module")
def masked(tmp_path_factory):
    """The view without the toolkit (test_dist's without_cuda) and a copy of the starter, the corpus and the
    solution's kernels in the one folder it lets through: a checkout under /tmp (CI's clones) is hidden there."""
    from test_dist import without_cuda
    tree = tmp_path_factory.mktemp("nvcc-rules")
    shutil.copytree(STARTER, tree / "starter", ignore=shutil.ignore_patterns("build", "__pycache__"))
    shutil.copytree(CORPUS, tree / "corpus")
    shutil.copytree(ROOT / "solution" / "kernels", tree / "solution-kernels")
    prefix, env = without_cuda(tree)
    return tree, prefix, env


@pytest.mark.slow
def test_without_the_toolkit_the_check_gives_nvccs_verdict_on_every_corpus_file(masked):
    tree, prefix, env = masked
    files = [str(p) for p in sorted((tree / "corpus").glob("*.cu"))]
    task_files = [str(p) for p in sorted((tree / "solution-kernels").glob("*.cu"))] + \
        [str(p) for p in sorted((tree / "starter" / "kernels").glob("*.cu"))]
    done = subprocess.run([*prefix, "python3", "-c", CHECK_ALL, str(tree / "pch"), *files, *task_files],
                          cwd=tree / "starter", env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["clang"], "no clang: the check cannot run here"
    assert sorted(p.split(".")[-2] for p in result["pch"]) == ["device", "host"], result["pch"]  # made once, used
    different = {f: said for f, said in result["files"].items() if said[0] != said[1]}
    assert not different, f"the precompiled prelude changed what the check says: {different}"
    said = {f: both[0] for f, both in result["files"].items()}
    mismatches = []
    for f in files:
        name = Path(f).name
        nvcc, errors = RECORD[name], said[f]
        for e in errors:
            assert not any(n in e for n in INTERNAL_NAMES), e
            assert e.startswith(f + ":"), e
        if name[:2] in KNOWN_MISSES:
            assert not errors, f"{name} is now refused: remove it from KNOWN_MISSES"
            continue
        if nvcc["accepted"]:
            if errors:
                mismatches.append(f"{name}: nvcc accepts it, the check says {errors[0]}")
            continue
        if not errors:
            mismatches.append(f"{name}: nvcc refuses it (line {nvcc['line']}: {nvcc['message']}); the check passes it")
            continue
        first = errors[0].splitlines()[0]
        line = int(first.split(":")[1])
        if line != nvcc["line"]:
            mismatches.append(f"{name}: nvcc says line {nvcc['line']}, the check line {line}: {first}")
        missing = [k for k in KEYWORDS[name[:2]] if k not in first]
        if missing:
            mismatches.append(f"{name}: {first} lacks {missing} (nvcc: {nvcc['message']})")
    assert not mismatches, "\n".join(mismatches)
    assert all(said[f] == [] for f in task_files), {f: said[f] for f in task_files if said[f]}


@pytest.mark.slow
@pytest.mark.parametrize("cxx, corpus_file", [("g++", "01-host-template-in-kernel.cu"),
                                               ("clang++", "03-std-string-in-kernel.cu")])
def test_a_refused_file_fails_the_cpu_compile_like_a_compile_error(masked, cxx, corpus_file):
    tree, prefix, env = masked
    source = tree / "corpus" / corpus_file
    done = subprocess.run([*prefix, "python3", "cpu/cudacpu.py", "compile", f"--cxx={cxx}", "-Iinclude",
                           "-Iharness", "-c", str(source), "-o", str(tree / "k.o")], cwd=tree / "starter", env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert not (tree / "k.o").exists()
    first = done.stderr.splitlines()[0]
    assert first.startswith(f"{source}:{RECORD[corpus_file]['line']}:"), done.stderr
    assert all(k in first for k in KEYWORDS[corpus_file[:2]]), first
    assert not any(n in done.stderr for n in INTERNAL_NAMES), done.stderr


def test_the_precompiled_preludes_name_changes_with_the_clang_its_flags_and_the_headers(tmp_path):
    headers = tmp_path / "frontend"
    headers.mkdir()
    (headers / "prelude.h").write_text("#pragma once\n")
    flags = ["clang++-19", "-x", "cuda", "-std=c++17"]
    first = precompiled.paths(tmp_path, "clang++-19", "clang version 19.1.7", flags, headers)
    assert sorted(first) == ["device", "host"] and first["host"].parent == tmp_path
    assert precompiled.paths(tmp_path, "clang++-19", "clang version 19.1.7", flags, headers) == first
    assert precompiled.paths(tmp_path, "clang++-19", "clang version 19.1.6", flags, headers) != first
    assert precompiled.paths(tmp_path, "clang++-19", "clang version 19.1.7", flags[:-1] + ["-std=c++20"],
                             headers) != first
    precompiled.headers_digest.cache_clear()
    (headers / "prelude.h").write_text("#pragma once\n#define X 1\n")
    assert precompiled.paths(tmp_path, "clang++-19", "clang version 19.1.7", flags, headers) != first


def test_where_the_folder_cannot_be_made_there_is_no_precompiled_prelude_and_clang_is_not_run(tmp_path):
    (tmp_path / "file").write_text("")
    assert precompiled.made(tmp_path / "file" / "nvcc-rules", "no-such-clang", "v", ["no-such-clang"],
                            tmp_path / "prelude.h", {}) is None
    assert precompiled.made(None, "no-such-clang", "v", ["no-such-clang"], tmp_path / "prelude.h", {}) is None


@pytest.mark.slow  # runs clang
def test_a_precompiled_prelude_clang_refuses_is_checked_without_and_made_again(tmp_path):
    """A header clang will not read (another clang's, or garbage left at its name) costs a second run, never a
    different verdict, and the next check makes it again."""
    clang = frontend.find_clang()
    if clang is None:
        pytest.skip("no clang: the check does not run here")
    source, clean = CORPUS / "01-host-template-in-kernel.cu", ROOT / "solution" / "kernels" / "add.cu"
    flags = ["-I" + str(STARTER / "include"), "-I" + str(STARTER / "harness")]
    plain = frontend.check(clang, source, "k.cu", flags)
    assert plain and "calling a __host__ function 'plus'" in plain[0]
    folder = tmp_path / "nvcc-rules"
    assert frontend.check(clang, source, "k.cu", flags, pch_folder=folder) == plain
    made = sorted(folder.glob("*.pch"))
    assert [p.name.split(".")[-2] for p in made] == ["device", "host"]
    for pch in made:
        pch.write_bytes(b"not a precompiled header")
    assert frontend.check(clang, source, "k.cu", flags, pch_folder=folder) == plain  # (its host side fails)
    assert frontend.check(clang, clean, "add.cu", flags, pch_folder=folder) == []  # (both sides run)
    assert frontend.check(clang, clean, "add.cu", flags, pch_folder=folder) == []
    assert sorted(folder.glob("*.pch")) == made
    assert all(pch.read_bytes()[:4] == b"CPCH" for pch in made), "clang's precompiled headers, made again"
    # A macro on the command line could change the prelude: checked without the precompiled one, never refused
    for pch in made:
        pch.write_bytes(b"not a precompiled header")
    assert frontend.check(clang, clean, "add.cu", flags + ["-DCUDA_VERSION=11000"], pch_folder=folder) == []
    assert all(pch.read_bytes() == b"not a precompiled header" for pch in made)
