"""The CPU compile's precompiled prelude (starter/cpu/driver/host_prelude.py): made once per compiler, flags and
headers in the build folder, read by the compiles after it, and the same object and the same messages as a compile
that reads the prelude itself. Real g++ compiles through the driver (slow tier)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STARTER = ROOT / "starter"
sys.path.insert(0, str(STARTER / "cpu"))
from driver import host_prelude, precompiled  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("g++") is None, reason="the precompiled prelude is g++'s")]

FLAGS = ["-std=c++17", "-O3", "-Xcompiler", "-Wall,-Wextra,-Wno-unused-parameter", "-I", str(STARTER / "include")]
# A task file g++ warns about (its comparison of signed and unsigned), and one it refuses.
WARNS = (ROOT / "data" / "sample-submissions" / "s08-fast" / "dot.cu").read_text()
REFUSED = """#include "cuda_check.h"
__global__ void add_one(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x
    if (i < n) x[i] += 1.0f;
}
void add_all(float* x, int n) { add_one<<<(n + 255) / 256, 256>>>(x, n); }
"""


def compile_file(source: Path, output: Path, build: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CUDACPU_BUILD": str(build), "CXX": "g++"}
    return subprocess.run([sys.executable, str(STARTER / "cpu" / "cudacpu.py"), "compile", *FLAGS, *extra, "-c",
                           str(source), "-o", str(output)], capture_output=True, text=True, env=env, cwd=STARTER)


def made(build: Path) -> list[Path]:
    return sorted(build.glob("nvcc-rules/host-*/kernel_prelude.h.gch"))


def what_it_compiled_to(obj: Path) -> dict[str, str]:
    """The code, the symbols and the line table (the file's own rows: which line each address is) of an object."""
    def out(*cmd: str) -> str:
        return subprocess.run([*cmd, str(obj)], capture_output=True, text=True, check=True).stdout
    lines = [r for r in out("readelf", "--debug-dump=decodedline").splitlines() if r.split()[:1] == ["add.cu"]
             or r.split()[:1] == ["dot.cu"]]
    return {"code": out("objdump", "-d", "--no-show-raw-insn").split("\n", 3)[3], "symbols": out("nm"),
            "lines": "\n".join(lines)}


@pytest.mark.parametrize("racecheck", [False, True], ids=["graded", "race checker"])
def test_a_task_file_compiles_to_the_same_object_and_messages_with_the_precompiled_prelude(tmp_path, racecheck):
    extra = ("--racecheck",) if racecheck else ()
    source = tmp_path / "dot.cu"
    source.write_text(WARNS)
    (tmp_path / "file").write_text("")
    without = compile_file(source, tmp_path / "without.o", tmp_path / "file" / "build", *extra)  # (cannot be made)
    first = compile_file(source, tmp_path / "first.o", tmp_path / "build", *extra)
    assert without.returncode == 0 and first.returncode == 0, without.stderr + first.stderr
    (gch,) = made(tmp_path / "build")
    # The compile after it reads the .gch, never the line beside it: a line that cannot compile proves it.
    gch.with_suffix("").write_text("#error the precompiled prelude was not read\n")
    second = compile_file(source, tmp_path / "second.o", tmp_path / "build", *extra)
    assert second.returncode == 0, second.stderr
    assert made(tmp_path / "build") == [gch]
    assert "comparison of integer expressions of different signedness" in without.stderr
    assert second.stderr == first.stderr == without.stderr
    compiled = what_it_compiled_to(tmp_path / "second.o")
    assert compiled == what_it_compiled_to(tmp_path / "without.o") and compiled["lines"].count("dot.cu") > 10


def test_a_refused_file_says_the_same_with_the_precompiled_prelude(tmp_path):
    source = tmp_path / "add.cu"
    source.write_text(REFUSED)
    (tmp_path / "file").write_text("")
    without = compile_file(source, tmp_path / "a.o", tmp_path / "file" / "build")
    compile_file(STARTER / "kernels" / "add.cu", tmp_path / "stub.o", tmp_path / "build")  # makes it
    assert made(tmp_path / "build")
    with_it = compile_file(source, tmp_path / "b.o", tmp_path / "build")
    assert without.returncode == with_it.returncode == 1
    assert re.search(r"add\.cu:4:\d+: error: expected ',' or ';' before 'if'", with_it.stderr), with_it.stderr
    assert with_it.stderr == without.stderr
    assert "kernel_prelude" not in with_it.stderr and "host-" not in with_it.stderr


def test_new_flags_or_headers_make_a_new_one_and_a_compiler_that_cannot_is_asked_once(tmp_path, monkeypatch):
    include = tmp_path / "include"
    shutil.copytree(STARTER / "cpu" / "include", include)
    cmd = ["g++", "-std=c++17", "-x", "c++", "-O2", "-isystem", str(include), "-include", host_prelude.PRELUDE,
           "-iquote", str(tmp_path), "-MMD", "-MP", "-c", "-", "-o", str(tmp_path / "x.o")]
    folder, env = tmp_path / "pch", dict(os.environ, LC_ALL="C")

    def prelude(flags: list[str]) -> str:
        used = host_prelude.with_precompiled(flags, folder, include, env)
        return used[used.index("-include") + 1]
    used = host_prelude.with_precompiled(cmd, folder, include, env)
    line = Path(prelude(cmd))
    assert used == [*cmd[:8], str(line), *cmd[9:]] and line.with_name("kernel_prelude.h.gch").is_file()
    assert not list(line.parent.glob("*.d"))  # (the compile's -MMD is not the header's)
    # Another source folder, another dependency list: the same one. Another flag, a changed header: another.
    other = [*cmd[:10], str(tmp_path / "elsewhere"), "-MMD", "-c", "-", "-o", str(tmp_path / "y.o")]
    assert prelude(other) == str(line)
    assert prelude([*cmd[:5], "-O1", *cmd[5:]]) != str(line)
    (include / "cudacpu" / "launch.h").write_text((include / "cudacpu" / "launch.h").read_text() + "\n// changed\n")
    precompiled.headers_digest.cache_clear()  # (read once per process, as each compile is one)
    assert prelude(cmd) != str(line)
    assert len(list(folder.glob("host-*/kernel_prelude.h.gch"))) == 3
    # A flag g++ refuses: tried once, said in the folder, and each compile after goes without it.
    refused = [*cmd[:5], "-fno-such-flag", *cmd[5:]]
    assert host_prelude.with_precompiled(refused, folder, include, env) == refused
    (failed,) = folder.glob(f"host-*/{host_prelude.FAILED}")
    assert "no-such-flag" in failed.read_text()
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: calls.append(a))
    assert host_prelude.with_precompiled(refused, folder, include, env) == refused and not calls
    assert json.dumps(host_prelude.with_precompiled(cmd, None, include, env)) == json.dumps(cmd)
