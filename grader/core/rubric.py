"""grader/rubric.toml: the grading policy, loaded and checked against the registry."""
from __future__ import annotations

import hashlib
import json
import math
import tomllib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from grader.core.gate_policy import GatePolicy, parse_gate
from grader.core.late import LatePolicy, parse_late
from grader.core.service_policy import ServicePolicy, parse_service
from grader.core.registry import SHAPE_SETS, Registry

DEFAULT_RUBRIC = Path(__file__).resolve().parents[1] / "rubric.toml"


class RubricError(ValueError):
    """A rubric that cannot be used; the message names the file and the entry."""


def shape_size(shape: str) -> int:
    """The product of a shape's dimensions ("4096x4096x4096" -> 4096**3)."""
    return math.prod(int(d) for d in shape.split("x"))


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
    hidden: tuple[str, ...] = ()  # shapes whose results students see only after the rubric's hidden_until
    profile: str = ""  # the registry's "profile" shape: the CPU backend's performance counters (feedback only)

    @property
    def timed_dtype(self) -> str:
        """Timed cases run in the task's first listed element type."""
        return self.dtypes[0]

    @property
    def max_points(self) -> float:
        return self.correctness_points + self.performance_points

    @property
    def largest_timed(self) -> str | None:
        """The timed shape with the most elements (the most work), or None when nothing is timed."""
        return max(self.timed, key=shape_size, default=None)

    @property
    def largest_shown_timed(self) -> str | None:
        """The largest timed shape that is not hidden: what the public leaderboard may show of the task."""
        return max((s for s in self.timed if s not in self.hidden), key=shape_size, default=None)

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
    sanitizer: float
    cpu_seconds: float
    file_size_mib: float
    processes: int
    output_mib: float
    # Bounds on what a submission can make the grader itself do (each optional, with the default below).
    task_file_kib: float = 256  # a task file larger than this is refused unread (the pre-check's limit too)
    precheck_seconds: float = 20  # the source pre-check of one task file
    archive_mib: float = 10  # an archive's own (compressed) size
    unpacked_mib: float = 10  # all of a submission's files together, unpacked
    members: int = 2000  # entries of an archive or folder of any kind: files, folders, links, devices
    intake_seconds: float = 30  # reading one submission
    message_kib: float = 16  # each message, hint and output stored for a case or a sanitizer run
    stored_kib: float = 1024  # all of one submission's stored messages together
    gpu_memory_wait: float = 60  # seconds to wait, after a submission, for the GPU's memory to come back
    gpu_memory_slack_mib: float = 512  # what may stay missing from the free memory measured at the start
    # A submission's time budget (grader/run/budget.py): its code may run at most this multiple of the solution's
    # time for the same requests, plus these seconds.
    time_budget_multiple: float = 20
    time_budget_extra: float = 50
    # A tool's run on a task (compute-sanitizer, or the CPU backend's checks) may take at most this multiple of the
    # task's graded cases' time for the same shapes, plus these seconds (grader/grading/tools.py); past it the run
    # is stopped and charged as a finding, not let off as a timeout.
    checker_multiple: float = 50
    checker_extra: float = 30


LIMIT_KEYS = ("build", "case", "submission", "sanitizer", "cpu_seconds", "file_size_mib", "processes", "output_mib")
OPTIONAL_LIMITS = {"task_file_kib": False, "precheck_seconds": False, "archive_mib": False, "unpacked_mib": False,
                   "members": True, "intake_seconds": False, "message_kib": False, "stored_kib": False,
                   "gpu_memory_wait": False, "gpu_memory_slack_mib": False, "time_budget_multiple": False,
                   "time_budget_extra": False, "checker_multiple": False, "checker_extra": False}  # key -> must be an integer
MIN_PROCESSES = 16  # a build alone runs make, nvcc, cicc, ptxas, gcc and as


@dataclass(frozen=True)
class SanitizerPolicy:
    tools: tuple[str, ...]  # compute-sanitizer tools run on each task, in order
    penalty: float  # fraction of a task's correctness points lost when a tool reports an error
    shapes: tuple[tuple[str, str], ...]  # (task, shape) of the case each task is checked on

    def shape(self, task: str) -> str | None:
        return dict(self.shapes).get(task)


SANITIZER_TOOLS = ("memcheck", "racecheck")


@dataclass(frozen=True)
class TimingPolicy:
    min_pairs: int
    max_pairs: int
    target_relative_ci: float
    budget: float  # seconds per timed case, checks and warm-ups included
    warmup: int
    submission_budget: float  # seconds for all of a submission's timed cases
    review_speedup: float  # median speedups above it are listed for review


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
    sanitizer: SanitizerPolicy
    gate: GatePolicy  # the build gate's rules (grader/gate/)
    leaderboard_shape: str  # the leaderboard task's timed shape that ranks: by default its largest
    late: LatePolicy | None = None  # [late]: due date, penalty, late days, extensions (grader/core/late.py)
    service: ServicePolicy = ServicePolicy()  # [service]: the grading service's limits (grader/core/service_policy.py)
    hidden_until: datetime | None = None  # [hidden] until: before it students see hidden shapes' counts only

    def task(self, task_id: str) -> TaskPolicy:
        return next(t for t in self.tasks if t.id == task_id)

    def student_rules_text(self) -> str:
        """starter/tools/rules.json: what `make test` and `make precheck` apply as the grader would (the build
        gate's rules, and which compute-sanitizer tools run and what a finding costs)."""
        data = self.gate.to_json()
        data["generated"] = ("from grader/rubric.toml by `bin/grader rules --export starter/tools/rules.json`;"
                             " edit the rubric, not this file")
        data["sanitizer"] = {"tools": list(self.sanitizer.tools), "penalty": self.sanitizer.penalty}
        return json.dumps(data, indent=2) + "\n"

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
    return _validate(path, grading_digest(raw.decode("utf-8"), data), data, registry)


# Tables and keys that decide who sees what and how the service runs, never a stored score: the stored grades'
# rubric digest leaves them out, so raising the hourly upload limit or moving the hidden cases' date during the
# term neither asks for a rescore nor makes `grade` grade the class again.
NOT_GRADING_TABLES = ("service", "hidden")
NOT_GRADING_TASK_KEYS = ("hidden",)


def _without_visibility(data: dict) -> dict:
    kept = {k: v for k, v in data.items() if k not in NOT_GRADING_TABLES}
    if isinstance(kept.get("tasks"), dict):
        kept["tasks"] = {t: ({k: v for k, v in e.items() if k not in NOT_GRADING_TASK_KEYS} if isinstance(e, dict)
                             else e) for t, e in kept["tasks"].items()}
    return kept


def grading_digest(text: str, data: dict) -> str:
    """sha256 of the rubric's text without the [service] and [hidden] tables and the tasks' `hidden` lines (a
    rubric without them: of its bytes as they are, the digest stores made before these tables existed). The cut
    is checked by parsing what is left: if it does not read as the same rubric less those entries (a layout the
    cut does not know, such as a `hidden` array over several lines), the digest is of the whole text."""
    kept, table = [], ""
    for line in text.splitlines(keepends=True):
        bare = line.strip()
        if bare.startswith("[") and not bare.startswith("[["):
            table = bare[1:bare.index("]")].strip() if "]" in bare else ""
        top = table.split(".")[0]
        if top in NOT_GRADING_TABLES:
            continue
        if top == "tasks" and bare.split("=")[0].strip() in NOT_GRADING_TASK_KEYS and "=" in bare:
            continue
        kept.append(line)
    cut = "".join(kept)
    try:
        same = tomllib.loads(cut) == _without_visibility(data)
    except tomllib.TOMLDecodeError:
        same = False
    return hashlib.sha256((cut if same else text).encode("utf-8")).hexdigest()


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

    def shape_list(section: dict, key: str, default: str, spec, where: str, allow_empty: bool = False):
        value = section.get(key, default)
        if isinstance(value, str):
            if value not in SHAPE_SETS:
                fail(where, f"'{key}' names the shape set '{value}', which the registry does not have "
                            f"(its sets: {', '.join(SHAPE_SETS)})")
            return spec.shapes(value)
        return strings(section, key, where, allow_empty=allow_empty)

    assignment = table(data, "assignment", "top level")
    limits_t = table(data, "limits", "top level")
    timing_t = table(data, "timing", "top level")
    tasks_t = table(data, "tasks", "top level")

    for key in limits_t.keys() - set(LIMIT_KEYS) - set(OPTIONAL_LIMITS):
        fail("[limits]", f"unknown key '{key}' (expected {', '.join([*LIMIT_KEYS, *OPTIONAL_LIMITS])})")
    optional = {k: number(limits_t, k, "[limits]", positive=True, integer=integer)
                for k, integer in OPTIONAL_LIMITS.items() if k in limits_t}
    limits = Limits(*(number(limits_t, k, "[limits]", positive=True, integer=k == "processes") for k in LIMIT_KEYS),
                    **optional)
    if limits.time_budget_extra < limits.case:
        fail("[limits]", f"'time_budget_extra' ({limits.time_budget_extra:g} s) is less than 'case' "
                         f"({limits.case:g} s): one case that hangs would use up a submission's time budget")
    if limits.time_budget_multiple < 1:
        fail("[limits]", f"'time_budget_multiple' must be at least 1: below it the solution itself would run out "
                         f"of time (got {limits.time_budget_multiple})")
    if limits.processes < MIN_PROCESSES:
        fail("[limits]", f"'processes' must be at least {MIN_PROCESSES}: a build alone runs make, nvcc, cicc, "
                         f"ptxas, gcc and as (got {limits.processes})")
    timing = TimingPolicy(number(timing_t, "min_pairs", "[timing]", positive=True, integer=True),
                          number(timing_t, "max_pairs", "[timing]", positive=True, integer=True),
                          number(timing_t, "target_relative_ci", "[timing]", positive=True),
                          number(timing_t, "budget", "[timing]", positive=True),
                          number(timing_t, "warmup", "[timing]", integer=True),
                          number(timing_t, "submission_budget", "[timing]", positive=True),
                          number(timing_t, "review_speedup", "[timing]", positive=True))
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
        known = {"correctness_points", "performance_points", "dtypes", "shapes", "timed", "s_zero", "s_full", "gate",
                 "hidden"}
        for key in entry.keys() - known:
            fail(where, f"unknown key '{key}' (expected {', '.join(sorted(known))})")
        # Types and shapes are the registry's: by default every type of the task and its
        # "graded" and "timed" sets; a rubric may name another set, or (tests) list shapes.
        dtypes = strings(entry, "dtypes", where) if "dtypes" in entry else spec.dtypes
        for d in dtypes:
            if d not in spec.dtypes:
                fail(where, f"element type '{d}' is not one of the task's ({', '.join(spec.dtypes)})")
        shapes = shape_list(entry, "shapes", "graded", spec, where)
        timed = shape_list(entry, "timed", "timed", spec, where, allow_empty=True)
        for s in shapes + timed:
            if not spec.valid_shape(s):
                fail(where, f"'{s}' is not a {spec.shape_kind} shape")
        hidden = strings(entry, "hidden", where, allow_empty=True) if "hidden" in entry else ()
        for s in hidden:
            if s not in shapes + timed:
                fail(where, f"hidden shape '{s}' is not one of {task_id}'s graded or timed shapes "
                            f"({', '.join(dict.fromkeys(shapes + timed))})")
        s_zero = number(entry, "s_zero", where, positive=True)
        s_full = number(entry, "s_full", where, positive=True)
        if not s_zero < s_full:
            fail(where, f"thresholds out of order: s_zero ({s_zero}) must be below s_full ({s_full})")
        profile = spec.shape_sets.get("profile", ())
        policies.append(TaskPolicy(task_id, number(entry, "correctness_points", where),
                                   number(entry, "performance_points", where), dtypes, shapes, timed,
                                   s_zero, s_full, hidden, profile[0] if profile else ""))
    if not policies:
        fail("[tasks]", "no task is graded")
    timed_cases = sum(len(p.timed) for p in policies)
    if timed_cases * timing.budget > timing.submission_budget:
        fail("[timing]", f"{timed_cases} timed cases of {timing.budget:g} s each ('budget') would take "
                         f"{timed_cases * timing.budget:g} s, more than 'submission_budget' "
                         f"({timing.submission_budget:g} s): lower 'budget' or time fewer shapes")

    known = {"name", "title", "leaderboard_task", "leaderboard_shape"}
    for key in assignment.keys() - known:
        fail("[assignment]", f"unknown key '{key}' (expected {', '.join(sorted(known))})")
    sanitizer = _sanitizer_policy(table(data, "sanitizer", "top level"), policies, registry, fail, number, strings)

    name = assignment.get("name")
    if not isinstance(name, str) or not name:
        fail("[assignment]", "'name' must be a non-empty string")
    leaderboard = assignment.get("leaderboard_task")
    if leaderboard not in {p.id for p in policies}:
        fail("[assignment]", f"'leaderboard_task' {leaderboard!r} is not a graded task")
    if not next(p for p in policies if p.id == leaderboard).timed:
        fail("[assignment]", f"'leaderboard_task' {leaderboard!r} has no timed shapes")
    board_policy = next(p for p in policies if p.id == leaderboard)
    # The leaderboard is public before and after [hidden] until: it never ranks by a hidden shape.
    board_shape = assignment.get("leaderboard_shape", board_policy.largest_shown_timed)
    if board_shape is None:
        fail("[assignment]", f"every timed shape of 'leaderboard_task' {leaderboard!r} is hidden: the public "
                             "leaderboard needs one that is not")
    if board_shape not in board_policy.timed:
        fail("[assignment]", f"'leaderboard_shape' {board_shape!r} is not one of {leaderboard}'s timed shapes "
                             f"({', '.join(board_policy.timed)})")
    if board_shape in board_policy.hidden:
        fail("[assignment]", f"'leaderboard_shape' {board_shape!r} is hidden ([tasks.{leaderboard}] hidden): the "
                             "public leaderboard would show its results; name a timed shape that is not hidden")
    # Every task file is linked into the harness, graded or not, so the gate covers them all.
    gate = parse_gate(data, tasks_t, {t.file: t.id for t in registry.tasks}, fail,
                      file_kib=limits.task_file_kib, precheck_seconds=limits.precheck_seconds)
    late = parse_late(data.get("late"), path, fail)
    service = parse_service(data.get("service"), fail)
    hidden_until = _hidden_until(data.get("hidden"), policies, fail)
    return Rubric(path, digest, name, str(assignment.get("title", name)), leaderboard, limits, timing, tuple(policies),
                  sanitizer=sanitizer, leaderboard_shape=board_shape, gate=gate, late=late, service=service,
                  hidden_until=hidden_until)


def _hidden_until(section, policies: list[TaskPolicy], fail) -> datetime | None:
    """[hidden] until: the moment hidden shapes' results are shown to students (grader/core/visibility.py); required
    when a task lists hidden shapes, and only then."""
    hiding = [p.id for p in policies if p.hidden]
    if section is None:
        if hiding:
            fail("[hidden]", f"missing: {', '.join(hiding)} list{'s' if len(hiding) == 1 else ''} hidden shapes, so the rubric needs [hidden] until = "
                             "\"2026-12-11T23:59:00+00:00\" (when students see their results)")
        return None
    if not isinstance(section, dict):
        fail("[hidden]", "must be a table")
    for key in section.keys() - {"until"}:
        fail("[hidden]", f"unknown key '{key}' (expected until)")
    if not hiding:
        fail("[hidden]", "'until' is set but no task lists hidden shapes (a task's `hidden = [\"shape\", ...]`)")
    value = section.get("until")
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            fail("[hidden]", f"'until' must be an ISO 8601 time with its offset, such as "
                             f"\"2026-12-11T23:59:00+00:00\", got {section['until']!r}")
    if not isinstance(value, datetime) or value.tzinfo is None:
        fail("[hidden]", f"'until' must be an ISO 8601 time with its offset, such as \"2026-12-11T23:59:00+00:00\" "
                         f"(an offset says which day it is everywhere), got {section.get('until')!r}")
    return value


def _sanitizer_policy(section: dict, policies: list[TaskPolicy], registry: Registry, fail, number,
                      strings) -> SanitizerPolicy:
    where = "[sanitizer]"
    for key in section.keys() - {"tools", "penalty", "shapes"}:
        fail(where, f"unknown key '{key}' (expected tools, penalty, shapes)")
    tools = strings(section, "tools", where, allow_empty=True)
    for tool in tools:
        if tool not in SANITIZER_TOOLS:
            fail(where, f"unknown tool '{tool}' (compute-sanitizer tools the grader runs: {', '.join(SANITIZER_TOOLS)})")
    penalty = number(section, "penalty", where)
    if penalty > 1:
        fail(where, f"'penalty' is a fraction of a task's correctness points, at most 1, got {penalty}")
    # Each task's case is the registry's "sanitize" set unless the rubric names another shape.
    if not isinstance(section.get("shapes", {}), dict):
        fail("[sanitizer.shapes]", "must be a table of task = \"shape\"")
    shapes = {p.id: registry.task(p.id).shapes("sanitize")[0] for p in policies} | section.get("shapes", {})
    graded = {p.id for p in policies}
    for task, shape in shapes.items():
        if task not in graded:
            fail("[sanitizer.shapes]", f"'{task}' is not a graded task")
        if not isinstance(shape, str) or not registry.task(task).valid_shape(shape):
            fail("[sanitizer.shapes]", f"{task}: {shape!r} is not a {registry.task(task).shape_kind} shape")
    if tools:
        for task in sorted(graded - shapes.keys()):
            fail("[sanitizer.shapes]", f"no shape for task '{task}' (every graded task is checked on one small case)")
    return SanitizerPolicy(tools, penalty, tuple((p.id, shapes[p.id]) for p in policies if p.id in shapes))
