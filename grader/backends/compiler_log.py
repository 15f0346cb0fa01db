"""What a student may read of the compiler's output: its messages, with the quoted source lines of their own
files only.

A compiler quotes the line each message is about, wherever that line is: in a system header, or in whatever
file an #include made it read. The build gate decides what a task file may include before it is compiled
(tools/includes.py, from the preprocessor's own list), so only the assignment's and the toolchain's headers are
ever compiled; this keeps even their lines out of what is stored and shown: a message about another file keeps
its location and its words, and loses the lines quoted under it. Formats: GCC's (`path:line:col: error: ...`,
quotes in a `  12 | code` gutter), clang's and nvcc's (`path(line): error: ...`; the quoted line then a line of
carets).
"""
from __future__ import annotations

import re
from typing import Callable

# A message: GCC's and clang's `path:line[:col]: kind: text`, nvcc's `path(line): kind: text`.
MESSAGE = re.compile(r"^(?P<path>[^\s:(][^:(]*?)(?::\d+(?::\d+)?|\(\d+\)): (?:fatal error|error|warning|note|remark)\b",
                     re.I)
# Context lines that name files and what was being compiled there, never their text.
CONTEXT = re.compile(r"^(?:In file included from |\s+from |(?P<path>[^\s:][^:]*): (?:In |At global scope|"
                     r"required from))")
GUTTER = re.compile(r"^\s*\d*\s+\|")  # GCC's quote: "   12 | code" and its "      |   ^~~" marker line
CARETS = re.compile(r"^\s*[\^~][\^~\s]*$")  # clang's and nvcc's marker line under a quoted line


def own_messages(text: str, own: Callable[[str], bool]) -> str:
    """`text` without the lines a compiler quoted from files that are not the student's (`own(path)`)."""
    lines = text.split("\n")
    out, quoting_own = [], True
    for k, line in enumerate(lines):
        message = MESSAGE.match(line)
        context = CONTEXT.match(line) if message is None else None
        if message is not None:
            quoting_own = own(message.group("path"))
            out.append(line)
            continue
        if context is not None:
            if context.group("path"):
                quoting_own = own(context.group("path"))
            out.append(line)
            continue
        following = lines[k + 1] if k + 1 < len(lines) else ""
        quote = GUTTER.match(line) or CARETS.match(line) or (CARETS.match(following) and line.strip())
        if quote and not quoting_own:
            continue
        out.append(line)
    return "\n".join(out)
