"""Stores for the leaderboard's tests, filled through grader.store.store's real API (start_run, save).

An `Entry` says how one submission did; `fill` grades nothing, it builds the
case outcomes and paired timings a grading run would have produced, with
throughputs of the order an H200 gives (so the page looks as it will), and
saves them with the real scoring.
"""
from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

from grader.outcomes.build_result import BuildResult
from grader.intake.submission import Submission
from grader.outcomes.isolation import Isolation
from grader.core.metrics import milliseconds
from grader.outcomes.paired import Pair, PairedResult
from grader.core.registry import Registry
from grader.outcomes.results import CaseOutcome, SubmissionResult
from grader.core.rubric import Rubric
from grader.scoring.chain import chain_for_result
from grader.core.status import NOT_TIMED_ON_CPU
from grader.store.store import Store

LIMITS = {"copy_bandwidth_gbps": 4100.0, "sgemm_fp32_gflops": 50200.0}
# The solution's throughput as a fraction of the device limit, about as on the recorded H200.
SOLUTION_FRACTION = {"matmul_naive": 0.05, "matmul_tiled": 0.2, "matmul_fast": 0.73}
MEMORY_FRACTION = 0.9
DEVICE = {"gpu": "0", "name": "NVIDIA H200", "sm_count": 132}
BYTES_PER_ELEMENT = {"fill": 4, "add": 12, "transpose": 8, "dot": 8}


@dataclass
class Entry:
    student: str
    speed: float | None = 1.0  # the leaderboard task's speed against the solution; None: its checks fail
    received: str = "2026-11-20T10:00:00+00:00"
    nickname: str | None = None
    status: str = "graded"  # or "rejected", "build_failed"
    failure: str = "wrong"  # the leaderboard task's correctness status when speed is None
    timed_status: str = "ok"  # the status of its timed runs ("wrong": fails only when timed)
    other_speed: float = 0.85  # every other task's speed against the solution
    spread: float = 0.01  # relative noise of the timed pairs
    timed_speeds: dict = field(default_factory=dict)  # the leaderboard task's speed at particular timed shapes
    failed_check: bool = False  # one correctness case of the leaderboard task failed, yet it was timed


def work(task: str, shape: str, unit: str) -> float:
    size = math.prod(int(d) for d in shape.split("x"))
    if unit == "GFLOP/s":
        return 2.0 * size
    return float(BYTES_PER_ELEMENT.get(task, 8) * size)


def _paired(solution_ms: float, speed: float, spread: float, rng: random.Random, n: int = 12) -> PairedResult:
    pairs = []
    for _ in range(n):
        sol = solution_ms * (1 + rng.uniform(-spread, spread))
        pairs.append(Pair(sol / speed * (1 + rng.uniform(-spread, spread)), sol, 1980, 1980, False))
    return PairedResult("ok", pairs=pairs, stop_reason="interval within 1%")


def result_for(entry: Entry, rubric: Rubric, registry: Registry) -> SubmissionResult:
    digest = hashlib.sha256(f"{entry.student}|{entry.received}|{entry.speed}".encode()).hexdigest()
    sub = Submission(entry.student, Path(entry.student), digest, entry.received, nickname=entry.nickname)
    if entry.status == "rejected":
        sub.rejected = "the submission holds a symbolic link (evil.cu); submit plain files"
        return SubmissionResult(sub, "rejected")
    if entry.status == "build_failed":
        build = BuildResult(False, None, 1.0, "error: nope", "your code does not compile")
        return SubmissionResult(sub, "build_failed", build)
    rng = random.Random(digest)
    cases = []
    for policy in rubric.tasks:
        unit = registry.task(policy.id).metric
        board = policy.id == rubric.leaderboard_task
        speed = entry.speed if board else entry.other_speed * rng.uniform(0.7, 1.15)
        status = "ok" if speed is not None else entry.failure
        for dtype in policy.dtypes:
            for shape in policy.shapes:
                cases.append(CaseOutcome(policy.id, dtype, shape, "correctness", status,
                                         "3 of 561 elements are wrong" if status == "wrong" else "", seed=1,
                                         unit=unit, work=work(policy.id, shape, unit)))
        if board and entry.failed_check:  # a store the grader never writes: timed after a failed check
            cases[-1].status, cases[-1].message = "wrong", "3 of 561 elements are wrong"
        if status != "ok":
            continue
        limit = LIMITS["sgemm_fp32_gflops" if unit == "GFLOP/s" else "copy_bandwidth_gbps"]
        for shape in policy.timed:
            w = work(policy.id, shape, unit)
            solution_ms = milliseconds(w, SOLUTION_FRACTION.get(policy.id, MEMORY_FRACTION) * limit)
            case = CaseOutcome(policy.id, policy.timed_dtype, shape, "timed", "ok", seed=1, unit=unit, work=w)
            if board and entry.timed_status != "ok":
                case.status, case.message = entry.timed_status, "a timed run gave a wrong result"
            else:
                at = entry.timed_speeds.get(shape, speed) if board else speed
                case.paired = _paired(solution_ms, at, entry.spread, rng)
            cases.append(case)
    return SubmissionResult(sub, "graded", BuildResult(True, Path("harness"), 1.0), cases)


def fill(path: Path, entries: list[Entry], rubric: Rubric, registry: Registry, limits: dict | None = None,
         device: dict | None = None, harness_version: str = "1.0.0-test", timed: bool = True) -> Path:
    """Saves each entry as one submission of one new grading run in the store at `path` (`timed`: the run
    timed its cases; else it says the CPU backend's reason)."""
    store = Store(path)
    try:
        run = store.start_run(7, harness_version, rubric.sha256, registry.raw, [device or DEVICE],
                              limits or LIMITS, Isolation("none", note="test"), "test", timed=timed,
                              untimed_reason="" if timed else NOT_TIMED_ON_CPU)
        for entry in entries:
            result = result_for(entry, rubric, registry)
            store.save(run, result, harness_version, rubric.sha256, rubric.max_points,
                       chain_for_result(rubric, result, timed))
        store.finish_run(run)
    finally:
        store.close()
    return path


def realistic_class() -> list[Entry]:
    """Fifteen students as a TA would see them mid-assignment: a spread of speeds, some not correct,
    nicknames (one of them hostile), and a few who submitted twice."""
    day = "2026-11-{:02d}T{:02d}:{:02d}:00+00:00"
    return [
        Entry("s1001", 1.18, day.format(19, 21, 14), nickname="warp drive"),
        Entry("s1002", 0.97, day.format(19, 9, 2)),
        Entry("s1003", 0.61, day.format(18, 23, 51), nickname="<script>alert(1)</script>"),
        Entry("s1004", 0.88, day.format(20, 8, 30), nickname="Tensor Tamer"),
        Entry("s1005", 0.22, day.format(17, 16, 5)),
        Entry("s1006", 1.05, day.format(20, 11, 45), nickname="coalesced & proud"),
        Entry("s1007", 0.43, day.format(19, 14, 20)),
        Entry("s1008", None, day.format(20, 2, 10), nickname="off by one"),
        Entry("s1009", 0.74, day.format(18, 10, 0), nickname="bank conflict free"),
        Entry("s1010", 0.35, day.format(16, 19, 33)),
        Entry("s1011", None, day.format(20, 6, 0), failure="not_implemented"),
        Entry("s1012", 0.91, day.format(19, 17, 48), nickname="SGEMM or bust"),
        Entry("s1013", 0.55, day.format(18, 13, 12), nickname="<img src=x onerror=alert(2)>"),
        Entry("s1014", 0.66, day.format(20, 12, 1), status="build_failed"),
        Entry("s1015", 0.12, day.format(15, 22, 40), nickname="<script>window.pwned=1</script>"),
    ]


def realistic_second_round() -> list[Entry]:
    """New submissions after the first publish: some climb, one newcomer, one breaks a kernel."""
    day = "2026-11-21T{:02d}:{:02d}:00+00:00"
    return [
        Entry("s1007", 1.09, day.format(9, 15)),  # big climb
        Entry("s1010", 0.79, day.format(8, 2)),
        Entry("s1014", 0.69, day.format(7, 40)),  # compiles now: new to the ranking
        Entry("s1008", 0.5, day.format(10, 5), nickname="off by one"),  # fixed
        Entry("s1005", None, day.format(11, 0)),  # broke it; the earlier correct one still counts
        Entry("s1016", 0.95, day.format(10, 30), nickname="Ada"),  # a newcomer
    ]
