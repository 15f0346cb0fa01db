"""A task's feedback, shortest first: one verdict line, then only what failed, each cause once, evidence first.

`condense` turns one task's stored cases and compute-sanitizer runs into what every feedback output
shows (the pages, Gradescope's and Autolab's per-task text; report.py renders it through
templates/feedback_task.md.j2 and feedback.html.j2):

- **verdict**: one line — "passed 27/27", "file missing", "not implemented", "does not build", "needs a GPU",
  "refused by the build gate", "21 of 27 cases wrong", "9 of 9 cases failed: 1 timed out, 8 not run".
- **evidence**, the most specific first: a build error's compiler line; compute-sanitizer's findings
  with the file:line they name; which shapes failed (the student suite's tile pattern, computed here
  from the stored cases, in diagnose.cpp's words).
- **groups**: failed cases with the same cause — the same status and the same hint (numbers aside),
  or without a hint the same message (numbers aside) — as one entry that lists the cases it covers
  ("float64 and int32 at 37x41x43, 515x509x521, … (6 cases)"), the first case's message, the hints
  the evidence leaves standing, and the commands that reproduce it in the student's starter/.

Precedence of evidence (strongest first), and which hint a stronger piece of evidence drops:

1. the compiler: a task file that does not build says only that, with its first error line;
2. compute-sanitizer on the task's small case: the line of an out-of-bounds access or of a race;
3. which shapes failed across the task (a tile width's pattern);
4. the harness's hint for one case, read from that case's output alone.

A hint of (4) is dropped where (2) contradicts it:

- "N elements were never written ... Does your grid cover every element? (Round the number of
  blocks up ...)" when memcheck found an out-of-bounds access in the task: values read from outside
  the arrays (NaN, or the guard region's fill) look like elements never written, and a grid that is
  rounded up cannot mend an access past an array's end;
- the race sentence ("Results that change from run to run usually mean a race ...") when memcheck
  found an out-of-bounds access and racecheck ran clean: what is read from outside the arrays
  depends on where the arrays were placed, which changes on every run, so outputs change between
  runs without any race.

A hint of (4) is dropped where (3) contradicts it:

- "Every element is wrong: check the index formula ..." for an element type whose shapes with every
  size a multiple of a tile width all passed: the index formula is right there, and what fails is
  the last, partial tile (the H100's run of the k-guard sample showed it for int32, where values
  read past a's end are wrong but finite).

Hint sentences are the harness's own (starter/harness/diagnose.cpp); grader/tests/test_feedback.py
checks that the ones matched here are still written there.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pandas as pd

from grader.core import metrics
from grader.shared.sanitizer import (CPU_TOOL_WORDS, MEMCHECK_FINDS, cpu_finding_words, cpu_location, location, meaning,
                              summary_sentence)
from grader.core.status import CaseStatus, ProfileStatus, SanitizerStatus, case_word, sanitizer_word

# diagnose.cpp's race_hint(), word for word: case_runner.cpp puts it before a case's own hint when
# the outputs of its check runs differ.
RACE_SENTENCE = ("Results that change from run to run usually mean a race: threads reading shared memory "
                 "before every thread has written it (a missing __syncthreads()), or several threads or blocks "
                 "updating the same location without atomics.")
# case_hint()'s two grid-coverage hints ("... never written (...). Does your grid cover every element? Round
# the number of blocks up: ..." and "... never written: does your grid cover every element?").
GRID_COVERAGE = re.compile(r"never written.*[Dd]oes your grid cover every element", re.S)
INDEX_FORMULA = re.compile(r"^Every element is wrong: check the index formula")
# tile_pattern_hint(): the widths diagnose.h's edge_tile() tries, and its sentence.
EDGE_TILES = (16, 32, 64, 128)
TILE_PATTERN = ("Only shapes with a size that is not a multiple of {t} failed (every shape whose sizes are all "
                "multiples of {t} passed): check the bounds in your last, partial tile (load 0 outside the matrix, "
                "store only where row < rows && col < cols).")

# Where a starter/ command runs; the harness's path there (starter/Makefile: $(BUILD)/starter/harness, BUILD being
# build for a GPU and build/on-cpu for the CPU backend, CPU=1; the CPU's race checker's harness in racecheck/ beside
# it). A one-case command builds the harness it runs first.
HARNESS = "./build/starter/harness"
CPU_HARNESS = "./build/on-cpu/starter/harness"
CPU_RACE_HARNESS = "./build/on-cpu/starter/racecheck/harness"
# How failures are ordered: what stopped the code first, consequences ("not run") last.
STATUS_ORDER = [CaseStatus.BUILD_ERROR, CaseStatus.NEEDS_GPU, CaseStatus.FORBIDDEN, CaseStatus.ERROR,
                CaseStatus.CRASHED, CaseStatus.TIMEOUT, CaseStatus.OUT_OF_BUDGET, CaseStatus.PROTOCOL, CaseStatus.WRONG,
                CaseStatus.IMPLAUSIBLE, CaseStatus.NOT_IMPLEMENTED, CaseStatus.MISSING, CaseStatus.SKIPPED]
SHAPES_SHOWN = 4
_NUMBER = re.compile(r"[-+]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?([eE][-+]?\d+)?|NaN|inf")


# describe_failure()'s count phrases ("all 1517 elements are wrong", "1 of 1 element is wrong", ...) say one thing.
_HOW_MANY = re.compile(r"^(all # elements are wrong|# of # elements? (is|are) wrong)")


def numbers_aside(text: str) -> str:
    """`text` with every number replaced: two cases whose messages differ only in counts and values say the same."""
    return _HOW_MANY.sub("# wrong", _NUMBER.sub("#", text or ""))


@dataclass
class Evidence:
    """One finding about the whole task, shown before the failed cases."""
    kind: str  # "build", "gate", "sanitizer", "pattern", "sanitizer-note", "performance" (feedback only)
    text: str
    report: str = ""  # the tool's own lines
    reproduce: str = ""  # a command for starter/


@dataclass(frozen=True)
class Reproduce:
    """Commands that repeat a failed case in the student's starter/: the task's suite with the grading run's seed
    (`make test` runs on a GPU where there is one, else on the CPU), and the one case on the harness, as a student
    with an NVIDIA GPU builds it and as one without does (the CPU backend); "" where there is no one case to run."""
    suite: str
    gpu: str = ""
    cpu: str = ""


@dataclass
class Group:
    """Failed cases with one cause."""
    status: str
    word: str
    covers: str  # "float32 and int32 at 1x1x1, 37x41x43, … (6 cases)"
    count: int
    first: str  # the case the message is from: "float32 37x41x43"
    message: str
    hints: list[str]  # the hints the evidence leaves standing
    dropped: list[str]  # hints the evidence contradicts: not shown (kept for tests and the staff)
    output: str  # what a process that hung or crashed printed last
    reproduce: Reproduce | None = None  # commands for starter/; None for a consequence (a case not run)


def _dims(shape: str) -> list[int]:
    return [int(d) for d in str(shape).split("x") if d.isdigit()]


def split_hint(hint: str) -> list[str]:
    """A harness hint as its sentences of evidence: the race sentence apart from the case's own hint."""
    hint = (hint or "").strip()
    if hint.startswith(RACE_SENTENCE):
        rest = hint[len(RACE_SENTENCE):].strip()
        return [RACE_SENTENCE] + ([rest] if rest else [])
    return [hint] if hint else []


def contradicted(hint: str, tools: dict[str, str], tile_pattern_holds: bool = False) -> bool:
    """Whether compute-sanitizer's verdicts on the task (`tools`: tool -> status), or a tile width's pattern holding
    for the case's element type, contradict a hint (module doc)."""
    if tile_pattern_holds and INDEX_FORMULA.search(hint):
        return True
    out_of_bounds = tools.get("memcheck") == SanitizerStatus.ERRORS
    if out_of_bounds and GRID_COVERAGE.search(hint):
        return True
    return out_of_bounds and tools.get("racecheck") == SanitizerStatus.CLEAN and hint == RACE_SENTENCE


def tile_pattern(cases: pd.DataFrame) -> tuple[str, list[str]]:
    """diagnose.cpp's tile_pattern_hint over the stored correctness cases, per element type: the sentence and the
    types it holds for ("" when the shapes tell no tile width)."""
    found: dict[int, list[str]] = {}
    for dtype, rows in cases[cases["kind"] == "correctness"].groupby("dtype", sort=False):
        outcomes = [(_dims(r.shape), r.status == CaseStatus.OK) for r in rows.itertuples()
                    if r.status in (CaseStatus.OK, CaseStatus.WRONG)]
        if all(passed for _, passed in outcomes):
            continue
        for t in EDGE_TILES:
            multiples = [passed for d, passed in outcomes if d and all(x % t == 0 for x in d)]
            if multiples and all(multiples):
                found.setdefault(t, []).append(dtype)
                break
    if not found:
        return "", []
    t, dtypes = next(iter(found.items()))
    return TILE_PATTERN.format(t=t), dtypes


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def covers(rows: pd.DataFrame, shapes: tuple[str, ...]) -> str:
    """Which cases a group holds, in few words: "float64 and int32 at 37x41x43, 515x509x521, … (6 cases)"."""
    by_type: dict[str, list[str]] = {}
    for r in rows.itertuples():
        label = r.dtype if r.kind == "correctness" else f"{r.dtype} (timed)"
        by_type.setdefault(label, []).append(r.shape)
    parts: dict[tuple, list[str]] = {}
    for dtype, own in by_type.items():
        parts.setdefault(tuple(own), []).append(dtype)

    def where(own: tuple) -> str:
        if len(own) > 1 and set(own) == set(shapes):
            return "at every shape"
        shown = ", ".join(own[:SHAPES_SHOWN]) + (", …" if len(own) > SHAPES_SHOWN else "")
        return f"at {shown}"
    text = "; ".join(f"{_and(dtypes)} {where(own)}" for own, dtypes in parts.items())
    return f"{text} ({len(rows)} case{'s' if len(rows) != 1 else ''})"


def reproduce(task: str, row, status: str) -> Reproduce | None:
    """Commands that repeat a failed case in starter/ (Reproduce), whatever the student's machine has: the same
    inputs come from the same seed on either backend."""
    if status == CaseStatus.BUILD_ERROR:
        return Reproduce(f"make test TASK={task}")
    if status not in (CaseStatus.WRONG, CaseStatus.ERROR, CaseStatus.CRASHED, CaseStatus.TIMEOUT,
                      CaseStatus.IMPLAUSIBLE):
        return None
    one = f"--task {task} --dtype {row.dtype} --shape {row.shape} --seed {int(row.seed)}"
    timed = row.kind != "correctness"  # a timed case runs timed on a GPU; the CPU backend checks it only
    return Reproduce(f"make test TASK={task} SEED={int(row.seed)}",
                     f"make harness && {HARNESS} {one}" + ("" if timed else " --check-only"),
                     f"make harness CPU=1 && {CPU_HARNESS} {one} --check-only")


def checker_name(checker: str, tool: str) -> str:
    """Who ran a tool's check: compute-sanitizer, or on the CPU backend its own checks in the tool's place."""
    return f"the CPU backend's {tool}" if checker == "cpu" else f"compute-sanitizer {tool}"


def _cpu_check_evidence(task: str, r, seed: int | None) -> Evidence:
    """A finding of the CPU backend's own check (AddressSanitizer, the race checker), and the command that repeats
    it on any machine with a C++ compiler: the harness that check runs, built for the CPU."""
    what, advice = cpu_finding_words(r.report)
    where = cpu_location(r.report)
    text = (f"{checker_name('cpu', r.tool)} ({CPU_TOOL_WORDS.get(r.tool, r.tool)}) found {what}"
            + (f" at {where}" if where else "") + f" ({r.dtype} {r.shape})" + (f": {advice}" if advice else ""))
    target, harness = ("harness", CPU_HARNESS) if r.tool == "memcheck" else ("race-harness", CPU_RACE_HARNESS)
    command = (f"make {target} CPU=1 && {harness} --task {task} --dtype {r.dtype} --shape {r.shape}"
               + (f" --seed {seed}" if seed is not None else "") + " --check-only --fixed-placement")
    return Evidence("sanitizer", text, r.report, command)


def _sanitizer_evidence(task: str, runs: pd.DataFrame, seed: int | None) -> list[Evidence]:
    found = []
    for r in runs.itertuples():
        checker = getattr(r, "checker", "compute-sanitizer")
        if r.status == SanitizerStatus.ERRORS and checker == "cpu":
            found.append(_cpu_check_evidence(task, r, seed))
        elif r.status == SanitizerStatus.ERRORS:
            where = location(r.report)
            text = summary_sentence(r.tool, int(r.errors)) + (f" at {where}" if where else "") + \
                f" ({r.dtype} {r.shape})" + (f": {meaning(r.report)}" if meaning(r.report) else "")
            finds = "".join(f" {o}" for o in MEMCHECK_FINDS) if r.tool == "memcheck" else ""
            command = (f"compute-sanitizer --tool {r.tool}{finds} {HARNESS} --task {task} --dtype {r.dtype} "
                       f"--shape {r.shape}" + (f" --seed {seed}" if seed is not None else "")
                       + " --check-only --fixed-placement")
            found.append(Evidence("sanitizer", text, r.report, command))
        elif r.status == SanitizerStatus.TOO_SLOW:  # a finding: charged
            found.append(Evidence("sanitizer", f"{checker_name(checker, r.tool)} on {r.dtype} {r.shape}: "
                                               f"{sanitizer_word(r.status)} ({r.message})"))
        elif r.status in (SanitizerStatus.TIMEOUT, SanitizerStatus.FAILED):  # on the student's code: no verdict
            found.append(Evidence("sanitizer-note", f"{checker_name(checker, r.tool)} on {r.dtype} {r.shape}: "
                                                    f"{sanitizer_word(r.status)}" + (f" ({r.message})" if r.message else "")))
    return found


def _verdict(rows: pd.DataFrame, timed: pd.DataFrame, total: int) -> str:
    statuses = list(rows["status"])
    if not statuses:
        return "not graded"
    for whole in (CaseStatus.MISSING, CaseStatus.FORBIDDEN, CaseStatus.BUILD_ERROR, CaseStatus.NEEDS_GPU):
        if all(s == whole for s in statuses):
            return case_word(whole)
    if statuses[0] == CaseStatus.NOT_IMPLEMENTED or all(s == CaseStatus.NOT_IMPLEMENTED for s in statuses):
        return "not implemented"
    passed = statuses.count(CaseStatus.OK)
    if passed == len(statuses):
        bad_timed = timed[timed["status"] != CaseStatus.OK]
        return f"passed {passed}/{total}" + (f"; {len(bad_timed)} timed case{'s' if len(bad_timed) > 1 else ''} "
                                             f"failed" if len(bad_timed) else "")
    failed = [s for s in statuses if s != CaseStatus.OK]
    counts = {s: failed.count(s) for s in STATUS_ORDER if s in failed}
    counts.update({s: failed.count(s) for s in failed if s not in counts})
    if len(counts) == 1:
        return f"{len(failed)} of {total} cases {_verb(failed[0])}"
    return f"{len(failed)} of {total} cases failed: " + ", ".join(f"{n} {_verb(s)}" for s, n in counts.items())


def _verb(status: str) -> str:
    """A status as what cases did ("21 of 27 cases wrong", "18 of 18 cases ended in an error")."""
    return {CaseStatus.ERROR: "ended in an error", CaseStatus.PROTOCOL: "not trusted"}.get(status, case_word(status))


def _groups(task: str, failed: pd.DataFrame, tools: dict[str, str], shapes: tuple[str, ...],
            patterned: list[str]) -> list[Group]:
    """The failed cases grouped by status and the hints left standing; `patterned`: the element types a tile width's
    pattern holds for."""
    keyed: dict[tuple, list] = {}
    for r in failed.itertuples():
        sentences = split_hint(r.hint)
        kept = [h for h in sentences if not contradicted(h, tools, r.dtype in patterned)]
        key = (r.status, tuple(numbers_aside(h) for h in kept) if kept else ("message", numbers_aside(r.message)))
        keyed.setdefault(key, []).append((r, kept, [h for h in sentences if h not in kept]))
    groups = []
    for (status, _), members in keyed.items():
        first, kept, dropped = members[0]
        rows = pd.DataFrame([m[0]._asdict() for m in members])
        groups.append(Group(status, case_word(status), covers(rows, shapes), len(members), f"{first.dtype} {first.shape}",
                            first.message, kept, sorted({h for m in members for h in m[2]}), first.output,
                            reproduce(task, first, status)))
    order = {s: i for i, s in enumerate(STATUS_ORDER)}
    return sorted(groups, key=lambda g: (order.get(g.status, len(order)), -g.count))


def condense(task: str, shapes: tuple[str, ...], cases: pd.DataFrame, tool_runs: pd.DataFrame,
             counted: pd.DataFrame | None = None) -> dict:
    """One task's verdict, evidence and groups of failed cases (module doc), from its stored rows; `counted`: the
    CPU backend's performance counters on the task (its findings come last, and change no verdict)."""
    gpu_only = cases[cases["status"] == CaseStatus.GPU_ONLY]
    cases = cases[cases["status"] != CaseStatus.GPU_ONLY]
    correctness = cases[cases["kind"] == "correctness"]
    timed = cases[cases["kind"] == "timed"]
    verdict = _verdict(correctness, timed, len(correctness))
    tools = dict(zip(tool_runs["tool"], tool_runs["status"]))
    failed = cases[cases["status"] != CaseStatus.OK]
    seed = int(cases["seed"].iloc[0]) if not cases.empty else None
    evidence: list[Evidence] = []
    groups: list[Group] = []
    whole = verdict in (case_word(CaseStatus.MISSING), case_word(CaseStatus.FORBIDDEN), "not implemented")
    if verdict == case_word(CaseStatus.BUILD_ERROR):  # the compiler's line, once for the task
        first = correctness.iloc[0]
        evidence.append(Evidence("build", first["message"], reproduce=f"make test TASK={task}"))
    elif verdict == case_word(CaseStatus.FORBIDDEN):  # the rule it broke, once for the task
        evidence.append(Evidence("gate", correctness.iloc[0]["message"], reproduce="make precheck"))
    elif verdict == case_word(CaseStatus.NEEDS_GPU):  # on the CPU: what in the file the CPU backend cannot run, once
        evidence.append(Evidence("needs-gpu", correctness.iloc[0]["message"] + " (the CPU backend cannot run it; "
                                 "graded on a GPU, this task's cases would run)"))
    elif not whole:
        evidence += _sanitizer_evidence(task, tool_runs, seed)
        pattern, dtypes = tile_pattern(cases)
        if pattern:
            evidence.append(Evidence("pattern", pattern if len(dtypes) == len(set(correctness["dtype"]))
                                     else f"{_and(dtypes)}: {pattern}"))
        groups = _groups(task, failed, tools, shapes, dtypes if pattern else [])
    if not gpu_only.empty:  # graded on the CPU: which shapes it left to a GPU, once
        evidence.append(Evidence("gpu-only", f"Not run on the CPU: {covers(gpu_only, shapes)}, over the CPU "
                                 "backend's per-case budget; left out of this score (a GPU run checks them)."))
        verdict = f"{verdict} · {len(gpu_only)} GPU only" if len(correctness) else case_word(CaseStatus.GPU_ONLY)
    if verdict.startswith("passed") and any(e.kind == "sanitizer" for e in evidence):
        verdict += " · " + "; ".join(f"{r.tool} found {int(r.errors)} error{'s' if r.errors != 1 else ''}"
                                      for r in tool_runs.itertuples() if r.status == SanitizerStatus.ERRORS)
    evidence += _performance_evidence(task, counted)
    return {"verdict": verdict, "evidence": evidence, "groups": groups,
            "details": bool(evidence or groups)}


def _performance_evidence(task: str, counted: pd.DataFrame | None) -> list[Evidence]:
    """make profile's findings, as the student's own make profile prints them (unscored)."""
    if counted is None or counted.empty:
        return []
    out = []
    for r in counted.itertuples():
        if r.status != ProfileStatus.COUNTED:
            continue
        for sentence in json.loads(r.findings):
            out.append(Evidence("performance", f"Performance (not scored; counted on the CPU for {r.dtype} {r.shape}"
                                f" as a GPU would run it): {sentence}", reproduce=f"make profile TASK={task}"))
    return out


def timed_views(task: str, cases: pd.DataFrame, limits: dict, policy) -> list[dict]:
    """Each timed case of a task as the performance table and plot show it: the speedup and its interval, the
    rubric's thresholds, the credit and the points it earned."""
    views = []
    per_case = policy.performance_points / len(policy.timed) if policy.timed else 0.0
    for r in cases[cases["kind"] == "timed"].itertuples():
        view = {"task": task, "dtype": r.dtype, "shape": r.shape, "status": r.status, "word": case_word(r.status),
                "s_zero": policy.s_zero, "s_full": policy.s_full, "points_max": per_case, "speedup": None,
                "credit": 0.0, "points": 0.0, "flag": getattr(r, "flag", "") or "", "message": r.message}
        if pd.notna(r.speedup):
            throughput = metrics.throughput(r.work, r.student_ms)
            credit = float(r.credit) if pd.notna(r.credit) else 0.0
            throttled = getattr(r, "throttled_pairs", None)
            view.update(speedup=float(r.speedup), speedup_low=float(r.speedup_low), speedup_high=float(r.speedup_high),
                        student_ms=float(r.student_ms), solution_ms=float(r.solution_ms), pairs=int(r.pairs),
                        unit=r.unit, throughput=throughput, credit=credit, points=credit * per_case,
                        percent_of_limit=metrics.percent_of_limit(throughput, metrics.device_limit(limits, r.unit)),
                        limit_name=metrics.limit_name(r.unit),
                        throttled=int(throttled) if throttled is not None and pd.notna(throttled) else 0)
        views.append(view)
    return views


# The note of every task of a run that timed nothing; a page that says it once above its table leaves it out of
# the rows.
NOT_TIMED_NOTE = "performance not timed on this run"


def points_note(task: dict, correctness_cases: pd.DataFrame) -> tuple[list[str], bool]:
    """Why a task has fewer points than its worth beyond its failed cases, from the stored numbers (never a
    "-0 points"), in parts: compute-sanitizer's deduction, and why performance earned nothing; and whether they name
    points taken off for something the code did (a deduction, an implausible time) rather than what was not
    measured."""
    parts, taken = [], False
    correctness_cases = correctness_cases[correctness_cases["status"] != CaseStatus.GPU_ONLY]
    total = len(correctness_cases)
    passed = int((correctness_cases["status"] == CaseStatus.OK).sum())
    if total:
        lost = task["correctness_max"] * passed / total - task["correctness"]
        if lost > 0.0005:
            parts.append(f"{'the CPU backend’s checks' if task.get('untimed') else 'compute-sanitizer'}: "
                         f"−{lost:.3g} points")
            taken = True
    if task.get("untimed"):  # a run that timed nothing (the CPU backend): not measured, whatever the cases did
        parts.append(NOT_TIMED_NOTE)
    elif task["performance_max"] > 0 and total and passed < total and task["verdict"] not in (
            "file missing", "not implemented", "does not build", "refused by the build gate", "needs a GPU"):
        parts.append("performance counts once every case passes")
    implausible = [v["shape"] for v in task["timed"] if v["status"] == CaseStatus.IMPLAUSIBLE]
    if implausible:
        parts.append(f"timed faster than the GPU can do the work at {', '.join(implausible)}: no performance "
                     "points, listed for review")
        taken = True
    return parts, taken


# Verdicts of a task none of whose cases could run on the grading run's backend: no verdict on the code.
NOT_RUN_VERDICTS = (case_word(CaseStatus.NEEDS_GPU), case_word(CaseStatus.GPU_ONLY))


def task_state(verdict: str, points_taken: bool) -> str:
    """How a task's result reads at a glance (the page colours it): "passed" when every case that ran passed and
    nothing was taken off (performance that was not measured takes nothing), "not run" when the backend could
    run none of it, else "failed"."""
    if verdict in NOT_RUN_VERDICTS:
        return "not run"
    return "passed" if verdict.startswith("passed") and not points_taken else "failed"
