"""grader/rubric.toml: the grading policy, loaded and checked against the registry."""
from __future__ import annotations

import hashlib
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from grader.gate.policy import GatePolicy, parse_gate
from grader.registry import Registry

DEFAULT_RUBRIC = Path(__file__).resolve().parent / "rubric.toml"


class RubricError(ValueError):
    """A rubric that cannot be used; the message names the file and the entry."""


@dataclass(frozen=True)
class TaskPolicy:
    id: str
    correctness_points: float
    performance_points: float
    dtypes: tuple[str, ...]
    shapes: tuple[str, ...]
    timed: tuple[str, ...]
    s_zero: float
    s_full: float

    @property
    def timed_dtype(self) -> str:
        """Timed cases run in the task's first listed element type."""
        return self.dtypes[0]

    @property
    def max_points(self) -> float:
        return self.correctness_points + self.performance_points

    def performance_credit(self, speedup: float) -> float:
        """0 at s <= s_zero, 1 at s >= s_full, linear in log(s) between."""
        if speedup <= self.s_zero:
            return 0.0
        if speedup >= self.s_full:
            return 1.0
        return math.log(speedup / self.s_zero) / math.log(self.s_full / self.s_zero)


@dataclass(frozen=True)
class Limits:
    build: float
    case: float
    submission: float


@dataclass(frozen=True)
class TimingPolicy:
    min_pairs: int
    max_pairs: int
    target_relative_ci: float
    budget: float
    warmup: int


@dataclass(frozen=True)
class Rubric:
    path: Path
    sha256: str
    name: str
    title: str
    leaderboard_task: str
    limits: Limits
    timing: TimingPolicy
    tasks: tuple[TaskPolicy, ...]
    gate: GatePolicy  # the build gate's rules (grader/gate/)

    def task(self, task_id: str) -> TaskPolicy:
        return next(t for t in self.tasks if t.id == task_id)

    @property
    def max_points(self) -> float:
        return sum(t.max_points for t in self.tasks)


def load_rubric(path: Path, registry: Registry) -> Rubric:
    path = Path(path)
    try:
        raw = path.read_bytes()
        data = tomllib.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        raise RubricError(f"{path}: no such rubric file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise RubricError(f"{path}: not valid TOML: {e}") from None
    return _validate(path, hashlib.sha256(raw).hexdigest(), data, registry)


def _validate(path: Path, digest: str, data: dict, registry: Registry) -> Rubric:
    def fail(where: str, why: str):
        raise RubricError(f"{path}: {where}: {why}")

    def table(parent: dict, key: str, where: str) -> dict:
        value = parent.get(key)
        if not isinstance(value, dict):
            fail(where, f"missing the [{key}] table")
        return value

    def number(section: dict, key: str, where: str, positive: bool = False, integer: bool = False) -> float:
        value = section.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
            fail(where, f"'{key}' must be {'an integer' if integer else 'a number'}, got {value!r}")
        if value < 0 or (positive and value == 0):
            fail(where, f"'{key}' must be {'positive' if positive else 'non-negative'}, got {value}")
        return value

    def strings(section: dict, key: str, where: str, allow_empty: bool = False) -> tuple[str, ...]:
        value = section.get(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value) or (not value and not allow_empty):
            fail(where, f"'{key}' must be a {'' if allow_empty else 'non-empty '}list of strings")
        if len(set(value)) != len(value):
            fail(where, f"'{key}' lists an entry twice")
        return tuple(value)

    assignment = table(data, "assignment", "top level")
    limits_t = table(data, "limits", "top level")
    timing_t = table(data, "timing", "top level")
    tasks_t = table(data, "tasks", "top level")

    limits = Limits(*(number(limits_t, k, "[limits]", positive=True) for k in ("build", "case", "submission")))
    timing = TimingPolicy(number(timing_t, "min_pairs", "[timing]", positive=True, integer=True),
                          number(timing_t, "max_pairs", "[timing]", positive=True, integer=True),
                          number(timing_t, "target_relative_ci", "[timing]", positive=True),
                          number(timing_t, "budget", "[timing]", positive=True),
                          number(timing_t, "warmup", "[timing]", integer=True))
    if timing.min_pairs < 3:
        fail("[timing]", f"'min_pairs' must be at least 3 to give an interval, got {timing.min_pairs}")
    if timing.max_pairs < timing.min_pairs:
        fail("[timing]", f"'max_pairs' ({timing.max_pairs}) is smaller than 'min_pairs' ({timing.min_pairs})")

    policies = []
    for task_id, entry in tasks_t.items():
        where = f"[tasks.{task_id}]"
        spec = registry.task(task_id)
        if spec is None:
            fail(where, f"unknown task '{task_id}' (the harness's tasks: {', '.join(registry.ids)})")
        if not isinstance(entry, dict):
            fail(where, "must be a table")
        known = {"correctness_points", "performance_points", "dtypes", "shapes", "timed", "s_zero", "s_full", "gate"}
        for key in entry.keys() - known:
            fail(where, f"unknown key '{key}' (expected {', '.join(sorted(known))})")
        dtypes = strings(entry, "dtypes", where)
        for d in dtypes:
            if d not in spec.dtypes:
                fail(where, f"element type '{d}' is not one of the task's ({', '.join(spec.dtypes)})")
        shapes = strings(entry, "shapes", where)
        timed = strings(entry, "timed", where, allow_empty=True)
        for s in shapes + timed:
            if not spec.valid_shape(s):
                fail(where, f"'{s}' is not a {spec.shape_kind} shape")
        s_zero = number(entry, "s_zero", where, positive=True)
        s_full = number(entry, "s_full", where, positive=True)
        if not s_zero < s_full:
            fail(where, f"thresholds out of order: s_zero ({s_zero}) must be below s_full ({s_full})")
        policies.append(TaskPolicy(task_id, number(entry, "correctness_points", where),
                                   number(entry, "performance_points", where), dtypes, shapes, timed,
                                   s_zero, s_full))
    if not policies:
        fail("[tasks]", "no task is graded")

    name = assignment.get("name")
    if not isinstance(name, str) or not name:
        fail("[assignment]", "'name' must be a non-empty string")
    leaderboard = assignment.get("leaderboard_task")
    if leaderboard not in {p.id for p in policies}:
        fail("[assignment]", f"'leaderboard_task' {leaderboard!r} is not a graded task")
    if not next(p for p in policies if p.id == leaderboard).timed:
        fail("[assignment]", f"'leaderboard_task' {leaderboard!r} has no timed shapes")
    # Every task file is linked into the harness, graded or not, so the gate covers them all.
    gate = parse_gate(data, tasks_t, {t.file: t.id for t in registry.tasks}, fail)
    return Rubric(path, digest, name, str(assignment.get("title", name)), leaderboard, limits, timing, tuple(policies),
                  gate)
