"""The corpus of compile mistakes (issue 45): each one line of a solution's task file written as a student might
get it wrong, kept as that edit rather than as a copy of the file, so a change to the solution carries over (and an
edit whose line is gone fails here, by name). solution/tests/test_compile_mistakes.py compiles each for real;
starter/cpu/tests/test_messages.py reads captured outputs of those compiles against the same text. Standard library
only: the CPU runtime's own test runner imports it."""
from __future__ import annotations

import re
from pathlib import Path

SOLUTION = Path(__file__).resolve().parents[2] / "kernels"
# name: (the task whose solution file it edits, a line's text there, what the mistake makes of it)
MISTAKES = {
    '01-too-few-arguments': ('add',
        'add_vectors<<<blocks_for(vectors), kThreads>>>(a, b, c, vectors);',
        'add_vectors<<<blocks_for(vectors), kThreads>>>(a, b, vectors);'),
    '02-missing-semicolon': ('add',
        'add_vectors<<<blocks_for(vectors), kThreads>>>(a, b, c, vectors);',
        'add_vectors<<<blocks_for(vectors), kThreads>>>(a, b, c, vectors)'),
    '03-undeclared-in-configuration': ('add',
        'add_vectors<<<blocks_for(vectors), kThreads>>>(a, b, c, vectors);',
        'add_vectors<<<nblocks, kThreads>>>(a, b, c, vectors);'),
    '04-wrong-argument-type': ('dot',
        'dot_kernel<<<blocks, kThreads>>>(x, y, result, n, vectorized);',
        'dot_kernel<<<blocks, kThreads>>>(x, y, &n, n, vectorized);'),
    '05-not-a-kernel': ('add',
        'add_vectors<<<blocks_for(vectors), kThreads>>>(a, b, c, vectors);',
        'vectors<<<blocks_for(vectors), kThreads>>>(a, b, c, vectors);'),
    '06-kernel-name-typo': ('fill',
        'fill_kernel<<<grid, block>>>(out, rows, cols);',
        'fill_kernal<<<grid, block>>>(out, rows, cols);'),
    '07-missing-chevrons': ('fill',
        'fill_kernel<<<grid, block>>>(out, rows, cols);',
        'fill_kernel<<<grid, block(out, rows, cols);'),
    '08-too-many-arguments': ('fill',
        'fill_kernel<<<grid, block>>>(out, rows, cols);',
        'fill_kernel<<<grid, block>>>(out, rows, cols, 4);'),
    '09-undeclared-in-kernel-body': ('fill',
        'const int r = blockIdx.y * blockDim.y + threadIdx.y;',
        'const int r = blockIdx.y * blockDim.y + threadIdy.y;'),
    '10-warning-on-launch-line': ('fill',
        'fill_kernel<<<grid, block>>>(out, rows, cols);',
        'int unused = 0; fill_kernel<<<grid, block>>>(out, rows, cols);'),
    '11-unknown-type-in-kernel-signature': ('fill',
        '__global__ void fill_kernel(std::int32_t* out, int rows, int cols) {',
        '__global__ void fill_kernel(std::int23_t* out, int rows, int cols) {'),
    '12-assign-to-shared-array': ('matmul_tiled',
        '__shared__ T a_tile[kTile][kTile];',
        '__shared__ T a_tile[kTile][kTile]; a_tile = 0;'),
    '13-template-kernel-arguments-swapped': ('transpose',
        'transpose_vector<T, tile, pass_rows><<<grid, block>>>(in, out, rows, cols);',
        'transpose_vector<T, tile, pass_rows><<<grid, block>>>(out, in, rows, cols);'),
}
# The one that compiles: a warning on a launch line.
COMPILES = {"10-warning-on-launch-line"}

# What the tests read in a compiler's output: names a student never wrote (the rewrite's, the runtime's), a
# diagnostic's first line, and a quoted source line.
INTERNAL = re.compile(r"cudacpu|LaunchSite|cudacpu_args_|cudacpu_kernel_key_|lambda|launch\.h")
HEADER = re.compile(r"^(?P<file>[^\s:][^:]*?):(?P<line>\d+):(?:(?P<col>\d+):)? "
                    r"(?P<kind>fatal error|error|warning|note)")
QUOTE = re.compile(r"^ *(?P<line>\d+) \| (?P<text>.*)$")


def text(name: str) -> str:
    """The mistaken task file: the solution's, with the one line edited."""
    task, right, wrong = MISTAKES[name]
    solution = (SOLUTION / f"{task}.cu").read_text()
    if solution.count(right) != 1:
        raise LookupError(f"{name}: solution/kernels/{task}.cu no longer has exactly one line {right!r}")
    return solution.replace(right, wrong)


def line(name: str) -> int:
    """The mistake's line (1-based)."""
    task, right, _ = MISTAKES[name]
    return (SOLUTION / f"{task}.cu").read_text().split(right)[0].count("\n") + 1


def write(folder: Path) -> list[Path]:
    """Every mistake as a file NAME.cu in `folder`, as a student's compile sees it."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in MISTAKES:
        (folder / f"{name}.cu").write_text(text(name))
        written.append(folder / f"{name}.cu")
    return written
