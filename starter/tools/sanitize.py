"""compute-sanitizer on one small case per task, and what it found in plain words.

The grader and `make test` run the same command (command() below): after a
task's correctness cases, the harness runs that task's small case (the
registry's "sanitize" shape set, its first element type) under
`compute-sanitizer --tool memcheck` and `--tool racecheck`. An out-of-bounds
access or a shared-memory race is reported even when the output happened to
be right; the rubric's [sanitizer] penalty decides what it costs. The grader
runs it in its sandbox; the grader imports this file from starter/tools, so
there is one copy (standard library only: it ships with the starter).

The tool writes its report to a log file whose name and line prefix are
fresh random strings, so lines the code under test prints cannot pass for
the tool's (they go to stdout, and lack the prefix).

The grader runs the tool over `harness --serve` (serve_command, requests):
the harness under the tool gets the very requests a graded run of the task
gets, in the same order (the task's first element type, its graded shapes
from the first), up to a cut drawn at random at or after the task's small
case, so the process under the tool cannot tell itself apart from a graded
one by what it is asked. (`make test` still uses the one-case command below.)
"""
from __future__ import annotations

import json
import re
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

ERROR_EXIT = 9  # --error-exitcode: the tool's exit status when it found errors
PRINT_LIMIT = 10  # errors printed in full; the summary still counts them all
REPORT_LINES = 12  # lines of findings kept for feedback
LINE_CHARS = 300

# memcheck bounds an allocation by the size asked for, but cudaMalloc may start the next allocation right at
# an array's end, and a read one past it then lands inside that one, unseen (4096-byte and 4 MiB arrays on an
# H100, compute-sanitizer 2025.3.1, 2026-11-27: 0 errors without padding, the read reported with it; a
# 4100-byte one was reported either way). A padding buffer after every allocation is out of bounds for the
# tool, so nothing readable follows an array in exact placement (placement.h). 1 MiB is far more than the
# sanitizer's small cases overrun by a whole tile.
MEMCHECK_PADDING = 1 << 20
MEMCHECK_FINDS = ["--padding", str(MEMCHECK_PADDING)]  # the options that decide what memcheck finds

TOOL_WORDS = {"memcheck": "out-of-bounds and misaligned memory accesses",
              "racecheck": "races on shared memory"}

# What a finding means, for a student: the first pattern that matches a finding's first line.
MEANINGS = [
    (re.compile(r"Invalid __global__ write", re.I),
     "your kernel wrote to global memory outside every array it was given (an index past an end, or a missing "
     "bounds check)"),
    (re.compile(r"Invalid __global__ read", re.I),
     "your kernel read global memory outside every array it was given (an index past an end, or a missing "
     "bounds check)"),
    (re.compile(r"Invalid __shared__ (read|write)", re.I),
     "your kernel accessed a shared-memory array outside its bounds"),
    (re.compile(r"Invalid __local__ (read|write)", re.I),
     "your kernel accessed a local array outside its bounds"),
    (re.compile(r"misaligned", re.I),
     "your kernel accessed memory at an address that is not a multiple of the access size"),
    (re.compile(r"Race reported|(Potential )?(RAW|WAR|WAW) hazard", re.I),
     "two threads of a block used the same shared-memory location, at least one of them writing, with no "
     "__syncthreads() between them"),
    (re.compile(r"Program hit|Out-of-range|Hardware exception|illegal", re.I),
     "the GPU stopped your kernel at a bad memory access, and later CUDA calls failed because of it"),
]
_NOT_FINDINGS = re.compile(r"^(COMPUTE-SANITIZER|ERROR SUMMARY|RACECHECK SUMMARY|Target application returned"
                           r"|Saved host backtrace|Host Frame|LEAK SUMMARY)", re.I)
_RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
_ERROR_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?")


@dataclass
class Findings:
    errors: int | None  # None: the report has no summary (the tool did not finish)
    report: str  # the first findings, capped


def find_tool() -> str | None:
    """compute-sanitizer on PATH, else where the CUDA toolkit of `nvcc` keeps it."""
    found = shutil.which("compute-sanitizer")
    nvcc = shutil.which("nvcc")
    if not found and nvcc:
        home = Path(nvcc).resolve().parent.parent
        found = next((str(p) for p in (home / "bin" / "compute-sanitizer",
                                       home / "compute-sanitizer" / "compute-sanitizer") if p.is_file()), None)
    return found


def new_prefix() -> str:
    return f"==sanitizer-{secrets.token_hex(8)}=="


def case_arguments(task: str, dtype: str, shape: str, seed: int, case_timeout: float) -> list[str]:
    """The harness's options for the one small case. The CPU reference keeps the tool's view on the student's
    kernels alone; fixed placement puts every array alone in an allocation of exactly its size: a read or write
    past its end is out of bounds."""
    return ["--task", task, "--dtype", dtype, "--shape", shape, "--seed", str(seed), "--check-only", "--no-limits",
            "--reference", "cpu", "--check-runs", "1", "--case-timeout", f"{case_timeout:g}", "--fixed-placement"]


def command(sanitizer: str, tool: str, harness: str, task: str, dtype: str, shape: str, seed: int, log: str,
            prefix: str, case_timeout: float) -> list[str]:
    return serve_command(sanitizer, tool, log, prefix) + [harness, *case_arguments(task, dtype, shape, seed, case_timeout)]


def serve_command(sanitizer: str, tool: str, log: str, prefix: str) -> list[str]:
    """The tool and its options, to be followed by the target: `harness --serve`."""
    cmd = [sanitizer, "--tool", tool, "--error-exitcode", str(ERROR_EXIT), "--print-limit", str(PRINT_LIMIT),
           "--show-backtrace", "device", "--prefix", prefix, "--log-file", log]
    if tool == "memcheck":
        cmd += ["--leak-check", "no", *MEMCHECK_FINDS]
    elif tool == "racecheck":
        cmd += ["--racecheck-report", "analysis"]
    return cmd


def _size(shape: str) -> int:
    size = 1
    for d in shape.split("x"):
        size *= int(d)
    return size


SMALL_FACTOR = 64  # a graded shape this many times the small case's size is still quick under the tools


def sanitized_shapes(graded: list[str], small: str, pick=None) -> list[str]:
    """The graded shapes in grading's order, from the first up to a cut drawn at random at or after the
    task's small case (its sanitizer case) and before the first shape more than SMALL_FACTOR times its size:
    the run is the start of a graded one, it always reaches the small case (the one that finds an
    off-by-one at a partial tile), and where it stops is not fixed. pick(n) draws an index below n (default
    secrets.randbelow). A small case that is not a graded shape ends the run after the random cut."""
    prefix = []
    for shape in graded:
        if _size(shape) > SMALL_FACTOR * _size(small):
            break
        prefix.append(shape)
    draw = pick or secrets.randbelow
    if small in prefix:
        first = prefix.index(small)
        return prefix[:first + 1 + draw(len(prefix) - first)]
    return prefix[:draw(len(prefix) + 1)] + [small]


def requests(tool: str, task: str, dtype: str, shapes: list[str], seed: int, check_runs: int = 2) -> list[dict]:
    """The check requests a graded run sends for these shapes; memcheck's put every array alone in an
    allocation of exactly its size (a read or write past its end then leaves the allocation, where the tool,
    which pads every allocation, sees it)."""
    out = []
    for shape in shapes:
        message = {"op": "check", "task": task, "dtype": dtype, "shape": shape, "seed": seed, "check_runs": check_runs}
        if tool == "memcheck":
            message["fixed_placement"] = True
        out.append(message)
    return out


def parse(text: str, prefix: str) -> Findings:
    """The error count and first findings of a compute-sanitizer log, from the lines with our prefix only."""
    lines = [line[len(prefix):] for line in text.splitlines() if line.startswith(prefix)]
    errors = None
    for line in lines:
        race = _RACE_SUMMARY.search(line)
        if race:
            errors = int(race.group(2))
        elif (summary := _ERROR_SUMMARY.search(line)) and errors is None:
            errors = int(summary.group(1))
    report, in_finding = [], False
    for line in lines:
        body = _body(line)
        if not body.strip() or _NOT_FINDINGS.match(body.strip()):
            in_finding = False
            continue
        if _starts_finding(body):
            # After a kernel's fault every later CUDA call fails with it ("Program hit cudaErrorLaunchFailure
            # ... on CUDA API call to ..."): those lines repeat the first finding's consequence, not a new one.
            in_finding = not (report and body.startswith("Program hit"))
        if in_finding and len(report) < REPORT_LINES:
            report.append(body.rstrip()[:LINE_CHARS])
    return Findings(errors, "\n".join(report))


def _body(line: str) -> str:
    """A log line after the run's prefix, without the one space the tool puts after it."""
    return line[1:] if line.startswith(" ") else line


def _starts_finding(body: str) -> bool:
    """Whether a line (after the prefix) begins a finding: not blank, not the tool's banner or summaries, not
    indented (an indented line goes on the finding above it)."""
    return bool(body.strip()) and not _NOT_FINDINGS.match(body.strip()) and not body[0].isspace()


def first_finding_at(text: str, prefix: str) -> int | None:
    """The byte offset in a compute-sanitizer log (UTF-8) of the line where its first finding starts, as parse()
    reads findings (None: no finding)."""
    offset = 0
    for raw in text.encode("utf-8", "replace").splitlines(keepends=True):
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if line.startswith(prefix) and _starts_finding(_body(line[len(prefix):])):
            return offset
        offset += len(raw)
    return None


def meaning(report: str) -> str:
    """One sentence a student understands for the first finding of a report."""
    first = report.splitlines()[0] if report else ""
    return next((words for pattern, words in MEANINGS if pattern.search(first)), "")


_LOCATION = re.compile(r"([A-Za-z0-9_.+-]+\.cu):(\d+)")


def location(report: str) -> str:
    """The first task-file line a report names, e.g. "matmul_tiled.cu:22" ("" when none)."""
    found = _LOCATION.search(report)
    return f"{found.group(1)}:{found.group(2)}" if found else ""


def summary_sentence(tool: str, errors: int) -> str:
    found = f"{errors} error{'s' if errors != 1 else ''}" if tool == "memcheck" else \
        f"{errors} race{'s' if errors != 1 else ''}"
    return f"compute-sanitizer {tool} ({TOOL_WORDS.get(tool, tool)}) found {found}"


# --- Without a GPU: the CPU backend's own checks stand in for each tool ------------------------------------
# memcheck: the harness whose task files carry AddressSanitizer (every CPU build's); racecheck: the harness
# whose task files were compiled with --racecheck (every access checked against CUDA's ordering, between
# blocks too, which compute-sanitizer's racecheck does not look at). Each reports through the harness's own
# records: a case the backend stopped carries its report ("the CPU backend saw: ...").
CPU_TOOL_WORDS = {"memcheck": "out-of-bounds reads and writes and barriers",
                  "racecheck": "races on shared and global memory, within a block and between blocks"}
CPU_REPORT = "\n  the CPU backend saw: "


def cpu_command(harness: str, task: str, dtype: str, shape: str, seed: int, records: str,
                case_timeout: float) -> list[str]:
    """The tool's own harness on the small case, with the options command() gives a GPU's."""
    return [harness, *case_arguments(task, dtype, shape, seed, case_timeout), "--json", records]


def cpu_findings(answers: list[dict]) -> Findings:
    """The findings among the harness's answers for the checked cases (its case records, or its --serve replies):
    each case the CPU backend stopped with a report counts; a finding is shown once, however many cases it
    stopped."""
    reports = [str(a.get("message") or "").split(CPU_REPORT, 1)[1].strip()[:LINE_CHARS * 3] for a in answers
               if _stopped_with_report(a)]
    return Findings(len(reports), "\n".join(list(dict.fromkeys(reports))[:REPORT_LINES]))


def _stopped_with_report(answer: dict) -> bool:
    """Whether the CPU backend stopped this case with its report (a finding of its checks)."""
    return answer.get("status") == "error" and CPU_REPORT in str(answer.get("message") or "")


def first_cpu_finding(answers: list[dict]) -> int | None:
    """The index of the first answer the CPU backend stopped with a report (None: none did)."""
    return next((i for i, a in enumerate(answers) if _stopped_with_report(a)), None)


def parse_cpu(records: str) -> Findings:
    """The findings in the harness's records (JSON lines); errors None when no case was recorded."""
    cases = []
    for line in records.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("record") == "case":
            cases.append(record)
    return cpu_findings(cases) if cases else Findings(None, "")


_CPU_ACCESS = re.compile(r"(?<!launched at )\b([A-Za-z0-9_.+-]+\.cu):(\d+)")


def cpu_location(report: str) -> str:
    """The task-file line of the access a CPU backend report is about (not the line of the launch)."""
    found = _CPU_ACCESS.search(report)
    return f"{found.group(1)}:{found.group(2)}" if found else ""


def cpu_finding_words(report: str) -> tuple[str, str]:
    """What a CPU backend report found, in a few words, and what to do about it (or "")."""
    race = re.search(r"data race on (\S+) \((shared|global) memory\)", report)
    if race:
        if "Blocks run in no fixed order" in report:
            return f"a race between blocks on {race.group(1)} ({race.group(2)} memory)", "use atomicAdd"
        return (f"a race on {race.group(1)} ({race.group(2)} memory) between threads of a block",
                "a __syncthreads() is missing")
    if "__syncthreads()" in report:
        return "threads that do not all reach the same __syncthreads()", ""
    return "an out-of-bounds access", ""
