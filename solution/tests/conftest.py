"""Shared fixtures for the project's own tests (make check). The `gpu` marker
and its skipping live in the repository's top conftest.py."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STARTER = ROOT / "starter"
SOLUTION_KERNELS = ROOT / "solution" / "kernels"
DATA = ROOT / "data"
NPROC = os.cpu_count() or 2


@dataclass
class Build:
    """A harness and student suite built against one kernels directory."""
    tag: str
    kernels: Path
    harness: Path
    suite: Path

    def run_harness(self, *args: str, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.harness), *args], cwd=STARTER, capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, **(env or {})})

    def run_suite(self, *args: str, timeout: float = 900, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.suite), f"--data-dir={DATA}", *args], cwd=STARTER, capture_output=True,
                              text=True, timeout=timeout, env={**os.environ, **(env or {})})


    def make(self, target: str, *args: str) -> subprocess.CompletedProcess:
        """Runs a target of starter/Makefile against this build's kernels."""
        return subprocess.run(["make", "-C", str(STARTER), target, f"KERNELS={self.kernels}", f"KTAG={self.tag}",
                               f"DATA={DATA}", "CPU=0", *args], capture_output=True, text=True, timeout=900)


def make_starter(*args: str) -> None:
    # CPU=0: these are GPU builds (nvcc), also where there is no GPU to run them (the student's commands would
    # choose the CPU backend there by themselves).
    result = subprocess.run(["make", "-C", str(STARTER), f"-j{NPROC}", "CPU=0", *args], capture_output=True, text=True)
    if result.returncode != 0:
        pytest.fail(f"make {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}", pytrace=False)


def build(kernels: Path, tag: str) -> Build:
    make_starter("all", f"KERNELS={kernels}", f"KTAG={tag}")
    out = STARTER / "build" / tag
    return Build(tag, kernels, out / "harness", out / "student_suite")


@pytest.fixture(scope="session")
def starter_build() -> Build:
    return build(STARTER / "kernels", "starter")


@pytest.fixture(scope="session")
def solution_build() -> Build:
    return build(SOLUTION_KERNELS, "solution")


def build_with(tmp_root: Path, name: str, replacement: Path) -> Build:
    """The solution's kernels with one file replaced. The solution's objects are
    reused (copied with their times), so only the replaced file is compiled."""
    solution_objects = STARTER / "build" / "solution" / "kernels"
    kernels = tmp_root / name / "kernels"
    kernels.mkdir(parents=True)
    for source in SOLUTION_KERNELS.iterdir():
        if source.name != replacement.name:
            (kernels / source.name).symlink_to(source)
    shutil.copy(replacement, kernels / replacement.name)
    tag = f"planted_{name}"
    objects = STARTER / "build" / tag / "kernels"
    objects.mkdir(parents=True, exist_ok=True)
    for obj in solution_objects.glob("*.o"):
        if obj.stem != replacement.stem:
            shutil.copy2(obj, objects / obj.name)
    return build(kernels, tag)


def summary_line(output: str) -> str:
    """make test's last word: the line that counts the tasks that pass (make's own lines come after it)."""
    lines = [line for line in output.splitlines() if re.match(r"\d+/\d+ tasks pass", line)]
    return lines[-1] if lines else ""


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def load_schema(name: str) -> dict:
    return json.loads((STARTER / "harness" / name).read_text())


@pytest.fixture(scope="session")
def registry(starter_build: Build) -> dict:
    result = starter_build.run_harness("--list-tasks", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)
