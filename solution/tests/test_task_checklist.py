"""Every task of the registry is written in every place docs/adding-a-task.md lists: the harness's task list, the
student's contract (tasks.h), the rubric, the starter's stub, the solution, the data generator and its stored cases,
the handout's hints and the README's table. One line per gap, naming the task and the place. Reads files only (no
build); each check also runs on a scratch copy with one place emptied, so each can be seen to fail.
"""
from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT
from grader.core.registry import Registry
from grader.core.rubric import load_rubric
from handout.contract import ContractError, declaration

REGISTRY = Path("starter/harness/registry.json")
TASK_LIST = Path("starter/harness/task_list.h")
TASKS_H = Path("starter/include/tasks.h")
RUBRIC = Path("grader/rubric.toml")
STARTER_KERNELS = Path("starter/kernels")
SOLUTION_KERNELS = Path("solution/kernels")
GENERATOR = Path("data/generate.py")
MANIFEST = Path("data/manifest.json")
HINTS = Path("handout/hints.md")
README = Path("README.md")
# What each check reads: a scratch copy holds these and nothing else.
READ = (REGISTRY, TASK_LIST, TASKS_H, RUBRIC, STARTER_KERNELS, SOLUTION_KERNELS, GENERATOR, MANIFEST, HINTS, README)


def load_generator(root: Path):
    spec = importlib.util.spec_from_file_location("checklist_generate", root / GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def generator_knows(generator, task: dict) -> bool:
    """The generator computes the task's expected output (on a shape of ones: the code path, not the numbers)."""
    dims = [1] * len(generator.parse_shape(task["shape_sets"]["data"][0]))
    inputs = [np.zeros(shape) for shape in generator.input_shapes(task, dims)]
    try:
        generator.expected_output(task["id"], dims, inputs)
    except SystemExit:  # its own "does not know how to compute task" refusal
        return False
    return True


def declares(header: Path, task_id: str) -> bool:
    """tasks.h declares the launcher as the handout quotes it."""
    try:
        declaration(task_id, header)
    except ContractError:
        return False
    return True


def missing_places(root: Path) -> list[str]:
    """One line per (task, place) the task is missing from, in registry order."""
    registry = Registry.from_file(root / REGISTRY)
    rubric_ids = {t.id for t in load_rubric(root / RUBRIC, registry).tasks}
    listed = set(re.findall(r"^\s*(?:PLAIN|TEMPLATED)\((\w+),", (root / TASK_LIST).read_text(), re.M))
    generator = load_generator(root)
    stored = {case["task"] for case in json.loads((root / MANIFEST).read_text())["cases"]}
    hints = (root / HINTS).read_text()
    readme = (root / README).read_text()

    gaps = []
    for spec, raw in zip(registry.tasks, registry.raw["tasks"]):
        places = {
            f"{TASK_LIST} (a PLAIN or TEMPLATED entry)": spec.id in listed,
            f"{TASKS_H} (the launcher's declaration)": declares(root / TASKS_H, spec.id),
            f"{RUBRIC} (a [tasks.{spec.id}] table)": spec.id in rubric_ids,
            f"{STARTER_KERNELS / spec.file} (the stub)": (root / STARTER_KERNELS / spec.file).is_file(),
            f"{SOLUTION_KERNELS / spec.file} (the solution)": (root / SOLUTION_KERNELS / spec.file).is_file(),
            f"{GENERATOR} (expected_output)": generator_knows(generator, raw),
            f"{MANIFEST} (its stored cases: make data)": spec.id in stored,
            f"{HINTS} (a '## {spec.id}' section)": re.search(rf"^##\s+{re.escape(spec.id)}\s*$", hints, re.M) is not None,
            f"{README} (a row of the task table)": f"| `{spec.id}` |" in readme,
        }
        gaps += [f"task '{spec.id}' is missing from {place}" for place, present in places.items() if not present]
    return gaps


def test_every_registry_task_is_in_every_place_of_the_checklist():
    gaps = missing_places(ROOT)
    assert not gaps, "see docs/adding-a-task.md:\n" + "\n".join(gaps)


@pytest.fixture
def scratch(tmp_path) -> Path:
    for path in READ:
        source, copy = ROOT / path, tmp_path / path
        copy.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copyfile)(source, copy)
    return tmp_path


def _drop_lines(path: Path, pattern: str) -> None:
    lines = path.read_text().splitlines(keepends=True)
    kept = [line for line in lines if not re.search(pattern, line)]
    assert len(kept) < len(lines), f"{path}: nothing matched {pattern!r}"
    path.write_text("".join(kept))


def _drop_rubric_table(path: Path, task: str) -> None:
    text = path.read_text()
    assert f"[tasks.{task}]" in text
    path.write_text(re.sub(rf"^\[tasks\.{task}\]\n(?:[^\[\n].*\n)*", "", text, flags=re.M))


def _drop_hints(path: Path, task: str) -> None:
    path.write_text(re.sub(rf"^## {task}\n(?:(?!## ).*\n)*", "", path.read_text(), flags=re.M))


def _drop_generator_case(path: Path, task: str) -> None:
    text = path.read_text()
    assert f'if task_id == "{task}":' in text
    path.write_text(text.replace(f'if task_id == "{task}":', 'if task_id == "no such task":'))


def _drop_stored_cases(path: Path, task: str) -> None:
    manifest = json.loads(path.read_text())
    manifest["cases"] = [c for c in manifest["cases"] if c["task"] != task]
    path.write_text(json.dumps(manifest))


# Each place emptied for one task (dot: the last, and a plain launcher), and the line that must name it.
REMOVALS = {
    "task list": (lambda root: _drop_lines(root / TASK_LIST, r"PLAIN\(dot,"), "task_list.h"),
    "declaration": (lambda root: _drop_lines(root / TASKS_H, r"^void dot\("), "tasks.h"),
    "rubric": (lambda root: _drop_rubric_table(root / RUBRIC, "dot"), "[tasks.dot]"),
    "stub": (lambda root: (root / STARTER_KERNELS / "dot.cu").unlink(), "starter/kernels/dot.cu"),
    "solution": (lambda root: (root / SOLUTION_KERNELS / "dot.cu").unlink(), "solution/kernels/dot.cu"),
    "generator": (lambda root: _drop_generator_case(root / GENERATOR, "dot"), "expected_output"),
    "stored cases": (lambda root: _drop_stored_cases(root / MANIFEST, "dot"), "make data"),
    "hints": (lambda root: _drop_hints(root / HINTS, "dot"), "'## dot'"),
    "readme": (lambda root: _drop_lines(root / README, r"^\| `dot` \|"), "README.md"),
}


@pytest.mark.parametrize("place", REMOVALS)
def test_a_task_missing_from_one_place_is_named_with_that_place(scratch, place):
    remove, named = REMOVALS[place]
    remove(scratch)
    gaps = missing_places(scratch)
    assert len(gaps) == 1 and gaps[0].startswith("task 'dot' is missing from ") and named in gaps[0], gaps

