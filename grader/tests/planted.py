"""What the real harness replies for the bugs students really write, for the fake backend (fakes.py).

A task file holding `// fake-harness: NAME` gets, case by case, the status, message and hint that
the harness gives that bug: the strings are those of starter/harness/diagnose.cpp (describe_failure,
case_hint, race_hint, cuda_error_hint) and case_runner.cpp (a race hint put before the case's own
hint when outputs change between runs), with numbers of the size a real run gives; the expectations
of solution/tests/test_planted_bugs.py say which bug gets which. compute-sanitizer's findings are
in its own report format (grader/tests/sanitizer_samples/). Which shapes fail follows the bug:
the `<=` k guard of the sample class's s03 fails wherever k is not a multiple of 32, and so on.

A case the bug leaves right returns None: the fake's ordinary correct behaviour answers it.
"""
from __future__ import annotations

import re

from grader.outcomes.results import SanitizerOutcome

# diagnose.cpp's race_hint(), word for word.
RACE = ("Results that change from run to run usually mean a race: threads reading shared memory "
        "before every thread has written it (a missing __syncthreads()), or several threads or blocks "
        "updating the same location without atomics.")
# case_hint()'s grid-coverage sentence (unwritten == wrong), for n elements.
NEVER_WRITTEN = ("{n} elements were never written (they still hold the value the harness puts in the output "
                 "before each run). Does your grid cover every element? Round the number of blocks up: "
                 "(cols + block.x - 1) / block.x.")
NEVER_WRITTEN_ONE = ("1 element was never written (it still holds the value the harness puts in the output before "
                     "each run). Does your grid cover every element? Round the number of blocks up: "
                     "(cols + block.x - 1) / block.x.")
EVERY_ELEMENT = ("Every element is wrong: check the index formula (row * cols + col for row-major) and which "
                 "thread computes which element.")
NONFINITE = ("{n} {results} NaN or infinite: reading shared memory nothing wrote, or reading past the end of "
             "an array?")
TRANSPOSED = "Your output is the transpose of the right answer: the row and column indices are swapped."
LOST_SUM = ("The result is only {p}% of the expected sum: partial sums were lost. Several blocks adding to *result "
            "without atomicAdd is a race in which updates get lost; also check that every thread's sum reaches its "
            "block's total.")
ILLEGAL = ("Your kernel read or wrote memory outside the arrays it was given: an index past an end, or a missing "
           "bounds check (`make memcheck TASK={task}` names the line).")
INT_THROUGH_FLOAT = ("Where the values are large the result is off by a little (expected {e}, got {g}): the int32 "
                     "values went through float, which holds whole numbers exactly only up to 16,777,216. Keep "
                     "int32 data in the template's type T (no float tiles, accumulators or casts).")
TYPE_NAMES = {"float32": "float", "float64": "double", "int32": "int"}

_MARKER = re.compile(rb"// fake-harness: ([a-z0-9_-]+)")


def marker(source: bytes | None) -> str | None:
    found = _MARKER.search(source or b"")
    return found.group(1).decode() if found else None


def dims(shape: str) -> list[int]:
    return [int(d) for d in shape.split("x")]


def outputs(shape: str) -> tuple[int, int]:
    """Rows and columns of the output: m x n of a matmul (MxNxK), the matrix itself otherwise."""
    d = dims(shape)
    return (d[0], d[1]) if len(d) >= 2 else (1, d[0])


def wrong(n_wrong: int, shape: str, expected: str, got: str, bound: str, row: int = 0, col: int = 0) -> str:
    """describe_failure() for a matrix output."""
    rows, cols = outputs(shape)
    elements = rows * cols
    head = (f"all {elements} elements are wrong" if n_wrong == elements and elements > 1
            else f"{n_wrong} of {elements} {'element is' if elements == 1 else 'elements are'} wrong")
    bound_text = f" (allowed error {bound})" if bound else ""
    return f"{head}; the first is at (row {row}, col {col}): expected {expected}, got {got}{bound_text}"


def _tiled_k_guard(task, dtype, shape):
    """s03: `kb <= k` loads one element past the row of a and the column of b in the last tile."""
    m, n, k = dims(shape)
    if k % 32 == 0:
        return None
    elements = m * n
    if dtype == "float32":  # garbage from past the arrays, different each call: the race sentence first
        return {"status": "wrong", "message": wrong(elements, shape, "3.25", "3.3125", "2.38419e-06"),
                "hint": f"{RACE} {EVERY_ELEMENT}" if elements > 1 else RACE}
    if dtype == "float64":
        return {"status": "wrong", "message": wrong(elements, shape, "-1.625", "NaN", "4.44089e-15"),
                "hint": NONFINITE.format(n=elements, results="result is" if elements == 1 else "results are")}
    return {"status": "wrong", "message": wrong(elements, shape, "1207", "nothing (never written)", ""),
            "hint": NEVER_WRITTEN.format(n=elements)}


def _missing_syncthreads(task, dtype, shape):
    """s04 and planted/missing_syncthreads: no barrier between loading a tile and using it."""
    m, n, k = dims(shape)
    if m * n * k == 1:
        return None
    bad = max(1, m * n // 7)
    return {"status": "wrong", "message": wrong(bad, shape, "10.5", "9.75", "2.38419e-06", 3, 8), "hint": RACE}


def _swapped_indices(task, dtype, shape):
    m, n, _ = dims(shape)
    if m == 1 and n == 1:
        return None
    hint = TRANSPOSED if m == n else EVERY_ELEMENT
    return {"status": "wrong", "message": wrong(m * n, shape, "4.5", "-0.75", "1.90735e-06", 0, 1), "hint": hint}


def _element_never_written(task, dtype, shape):
    """planted/element_never_written: guards with `c < cols - 1`, the last column is never written."""
    rows, cols = outputs(shape)
    if cols == 1:  # the guard `c < cols - 1` is false everywhere: nothing is written
        return {"status": "wrong", "message": wrong(rows, shape, "0", "nothing (never written)", ""),
                "hint": NEVER_WRITTEN.format(n=rows) if rows > 1 else NEVER_WRITTEN_ONE}
    return {"status": "wrong", "message": wrong(rows, shape, str(cols - 1), "nothing (never written)", "", 0, cols - 1),
            "hint": NEVER_WRITTEN.format(n=rows)}


def _dot_race(task, dtype, shape):
    """planted/race: blocks add their sums with a plain `+=`."""
    (n,) = dims(shape)
    if n <= 1024:  # one block: nothing to lose
        return None
    share = 43 if n < 10**6 else 3
    return {"status": "wrong", "message": f"the result is wrong: expected 5123.5, got {5123.5 * share / 100:g} "
                                          "(allowed error 0.0123)", "hint": LOST_SUM.format(p=share)}


def _illegal_address(task, dtype, shape):
    """s06 and planted/illegal_address: writes far outside the output, a GPU fault in every case."""
    return {"status": "error", "message": "your kernel failed while running: an illegal memory access was "
                                          "encountered (cudaErrorIllegalAddress)",
            "hint": ILLEGAL.format(task=task), "context_lost": True}


def _float_only(task, dtype, shape):
    """planted/float_only_instantiation: instantiated for float only."""
    if dtype == "float32":
        return None
    return {"status": "build_error", "message": f"{task}.cu does not define {task}<{TYPE_NAMES[dtype]}>",
            "hint": ""}


def _int_through_float(task, dtype, shape):
    if dtype != "int32" or max(dims(shape)) < 37:
        return None
    return {"status": "wrong", "message": wrong(5, shape, "1073741823", "1073741824", ""),
            "hint": INT_THROUGH_FLOAT.format(e="1073741823", g="1073741824")}


def _not_implemented(task, dtype, shape):
    return {"status": "not_implemented", "message": "not implemented yet", "hint": ""}


BUGS = {"tiled_k_guard": _tiled_k_guard, "missing_syncthreads": _missing_syncthreads,
        "swapped_indices": _swapped_indices, "element_never_written": _element_never_written,
        "race": _dot_race, "illegal_address": _illegal_address, "float_only_instantiation": _float_only,
        "int_through_float": _int_through_float, "stub": _not_implemented}

MEMCHECK_READ = ("Invalid __global__ read of size {size} bytes\n"
                 "    at void tiled_kernel<{type}>(const T1 *, const T1 *, T1 *, int, int, int)+0x2d0 in "
                 "{task}.cu:{line}\n"
                 "    by thread (10,31,0) in block (1,0,0)\n"
                 "    Address 0x7f3c5c006ac4 is out of bounds\n"
                 "    and is 1 bytes after the nearest allocation at 0x7f3c5c005000 of size 6,880 bytes")
MEMCHECK_WRITE = ("Invalid __global__ write of size 4 bytes\n"
                  "    at void add_kernel<float>(const float *, const float *, float *, long long)+0x1b0 in "
                  "{task}.cu:{line}\n"
                  "    by thread (0,0,0) in block (0,0,0)\n"
                  "    Address 0x7f3c9c000000 is out of bounds")
RACECHECK = ("Error: Race reported between Write access at void tiled_kernel<float>(const T1 *, const T1 *, T1 *, int, "
             "int, int)+0x1f0 in {task}.cu:{line}\n"
             "    and Read access at void tiled_kernel<float>(const T1 *, const T1 *, T1 *, int, int, int)+0x2a0 in "
             "{task}.cu:{line2} [2048 hazards]")
# What compute-sanitizer finds in each bug's small case: {tool: (errors, report)}.
FINDINGS = {
    "tiled_k_guard": {"memcheck": (96, MEMCHECK_READ.format(size=4, type="float", task="{task}", line=17))},
    "missing_syncthreads": {"racecheck": (1, RACECHECK.format(task="{task}", line=16, line2=19))},
    "illegal_address": {"memcheck": (3, MEMCHECK_WRITE.format(task="{task}", line=9))},
}


def check_reply(name: str, message: dict) -> dict | None:
    """The harness's reply fields for one `check` request of a file with this planted bug (None: right)."""
    return BUGS[name](message["task"], message["dtype"], message["shape"])


def sanitizer_outcome(name: str, tool: str, task: str, dtype: str, shape: str) -> SanitizerOutcome:
    errors, report = FINDINGS.get(name, {}).get(tool, (0, ""))
    if not errors:
        return SanitizerOutcome(task, tool, dtype, shape, "clean", seconds=0.1)
    return SanitizerOutcome(task, tool, dtype, shape, "errors", errors, report.format(task=task), seconds=0.1)
