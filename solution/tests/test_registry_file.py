"""The task registry is written once (starter/harness/tasks/) and read everywhere else from
starter/harness/registry.json: the file must be what the harness prints, and no other file
may type a shape list again."""
from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path

from conftest import ROOT, load_schema

REGISTRY_FILE = ROOT / "starter" / "harness" / "registry.json"
# Where shape lists are written (the registry's own sources) or merely measured and tested.
SHAPE_HOMES = ("starter/harness/tasks/", "starter/harness/registry.json", "data/", "docs/", "solution/lab/")
TEXT_SUFFIXES = {".py", ".toml", ".md", ".j2", ".cpp", ".cu", ".h", ".sh", ".json", ".html", ".mk"}
SHAPE = re.compile(r"\b\d+(?:x\d+){1,2}\b|\b\d{4,}\b")  # matrix and gemm shapes; vector lengths from 1000 up


def test_the_checked_in_registry_is_what_the_harness_prints(starter_build):
    printed = json.loads(starter_build.run_harness("--list-tasks", "--json").stdout)
    stored = json.loads(REGISTRY_FILE.read_text())
    assert stored == printed, "starter/harness/registry.json is stale: run `make registry` and commit it"


def test_the_checked_in_registry_matches_its_schema():
    import jsonschema
    jsonschema.validate(json.loads(REGISTRY_FILE.read_text()), load_schema("registry.schema.json"))


def test_the_rubric_types_no_shape_or_type_list():
    rubric = tomllib.loads((ROOT / "grader" / "rubric.toml").read_text())
    for task, entry in rubric["tasks"].items():
        for key in ("shapes", "timed", "dtypes"):
            assert not isinstance(entry.get(key), list), f"[tasks.{task}] lists '{key}': name a registry set instead"
    assert "shapes" not in rubric["sanitizer"], "[sanitizer.shapes] repeats the registry's sanitize set"


def _tracked_text_files() -> list[Path]:
    names = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True, check=True).stdout
    return [ROOT / n for n in names.splitlines()
            if Path(n).suffix in TEXT_SUFFIXES and not n.startswith(SHAPE_HOMES) and "/tests/" not in n]


def test_no_file_types_a_registry_shape_list_again():
    """A line holding three or more of one task's set of shapes (graded, test, timed, sweep) is a copy."""
    registry = json.loads(REGISTRY_FILE.read_text())
    sets = [set(t["shape_sets"][name]) for t in registry["tasks"] for name in ("graded", "test", "timed", "sweep")]
    copies = []
    for path in _tracked_text_files():
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            found = {m.group(0) for m in SHAPE.finditer(line)}
            if any(len(found & s) >= 3 for s in sets):
                copies.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    assert not copies, "shape lists typed outside the registry:\n" + "\n".join(copies)
