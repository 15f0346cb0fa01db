"""The harness's task registry: the only list of tasks, element types and shape sets the grader knows.

It comes from `harness --list-tasks --json`, checked in as starter/harness/registry.json
(`make registry` rewrites it; a test keeps it equal to what the harness prints), so the
grader, its tests, the handout and `make dist` read it without building anything.
Nothing here names a task.
"""
from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

REGISTRY_FILE = Path(__file__).resolve().parents[2] / "starter" / "harness" / "registry.json"
SHAPE_SETS = ("graded", "test", "timed", "sanitize", "sweep", "data", "profile")
SHAPE_FORMS = {"matrix": r"[1-9][0-9]*x[1-9][0-9]*", "gemm": r"[1-9][0-9]*x[1-9][0-9]*x[1-9][0-9]*",
               "vector": r"[1-9][0-9]*"}


class RegistryError(RuntimeError):
    pass


@dataclass(frozen=True)
class TaskSpec:
    id: str
    summary: str
    file: str  # the student's file name, e.g. "matmul_tiled.cu"
    shape_kind: str
    dtypes: tuple[str, ...]
    metric: str  # "GFLOP/s" or "GB/s"
    shape_sets: dict[str, tuple[str, ...]]  # the registry's named sets: graded, test, timed, sanitize, sweep, data, profile

    def shapes(self, name: str) -> tuple[str, ...]:
        return self.shape_sets[name]

    def valid_shape(self, text: str) -> bool:
        return re.fullmatch(SHAPE_FORMS[self.shape_kind], text) is not None


@dataclass(frozen=True)
class Registry:
    harness_version: str
    tasks: tuple[TaskSpec, ...]
    raw: dict  # the harness's JSON, as stored with each grading run

    def task(self, task_id: str) -> TaskSpec | None:
        return next((t for t in self.tasks if t.id == task_id), None)

    @property
    def ids(self) -> list[str]:
        return [t.id for t in self.tasks]

    @classmethod
    def from_json(cls, data: dict) -> "Registry":
        try:
            tasks = tuple(TaskSpec(t["id"], t["summary"], t["file"], t["shape_kind"], tuple(t["dtypes"]), t["metric"],
                                   {name: tuple(t["shape_sets"][name]) for name in SHAPE_SETS})
                          for t in data["tasks"])
            return cls(data["harness_version"], tasks, data)
        except (KeyError, TypeError) as e:
            raise RegistryError(f"the harness's registry is malformed: missing {e}") from e

    @classmethod
    def from_file(cls, path: Path = REGISTRY_FILE) -> "Registry":
        """The checked-in registry (starter/harness/registry.json)."""
        try:
            return cls.from_json(json.loads(Path(path).read_text()))
        except FileNotFoundError:
            raise RegistryError(f"{path}: no such file; `make registry` writes it from a built harness") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise RegistryError(f"{path}: not valid JSON ({e}); `make registry` writes it again") from None

    @classmethod
    def from_harness(cls, harness: Path) -> "Registry":
        try:
            out = subprocess.run([str(harness), "--list-tasks", "--json"], capture_output=True, text=True,
                                 check=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError) as e:
            raise RegistryError(f"could not read the task registry from {harness}: {e}") from e
        return cls.from_json(json.loads(out))
