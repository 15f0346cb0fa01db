"""What is stored of one submission stays bounded and reads as the student's own: every text capped, and the
grader's folders named as the student's checkout names them."""
from __future__ import annotations

import json
from typing import Callable

from grader.outcomes.build_result import BuildResult
from grader.outcomes.results import SubmissionResult


def human_bytes(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def cap_text(text: str, limit: int) -> str:
    """At most `limit` bytes of text (UTF-8), the cut marked with how much was left out."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore") + f"… [cut: {human_bytes(len(data) - limit)} more]"


def _each_string(value, change: Callable[[str], str]):
    """A harness record with `change` applied to every string in it."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {k: _each_string(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [_each_string(v, change) for v in value]
    return value


def _cap_record(value, limit: int):
    """Every string in a harness record capped (a message a task file threw can be megabytes)."""
    return _each_string(value, lambda text: cap_text(text, limit))


def name_folders_as_the_student_does(result: SubmissionResult, build: BuildResult) -> None:
    """The harness ran the student's files from the grader's folders, so `__FILE__` in a CUDA_CHECK message,
    a crash's output or a record names them there: every stored text names them as the student's checkout
    does (kernels/add.cu:31)."""
    for c in result.cases:
        c.message, c.hint, c.output = build.readable(c.message), build.readable(c.hint), build.readable(c.output)
        if c.record is not None:
            c.record = _each_string(c.record, build.readable)
    for f in result.sanitizer:
        f.report, f.message = build.readable(f.report), build.readable(f.message)


def _strings(value) -> int:
    if isinstance(value, str):
        return 1
    if isinstance(value, dict):
        return sum(_strings(v) for v in value.values())
    if isinstance(value, list):
        return sum(_strings(v) for v in value)
    return 0


def cap_stored(result: SubmissionResult, message_bytes: int, submission_bytes: int,
               hidden: Callable[[str, str], bool] = lambda task, shape: False, hidden_share: float = 0.0) -> None:
    """What is stored of one submission stays bounded: each message, hint, output and record string at most
    `message_bytes`, and all of them together about `submission_bytes` (past that, each is cut shorter).

    hidden(task, shape): whether the rubric hides that shape. What is stored at hidden shapes and what is stored at
    visible ones are cut apart, the hidden part within `hidden_share` of `submission_bytes` and the visible part
    within the rest (shares the rubric decides: its hidden cases' part of all its cases), so how much a hidden case
    printed never decides where a visible message is cut."""
    def at_hidden(item) -> bool:
        return hidden(item.task, item.shape)
    for side, share in ((False, 1.0 - hidden_share), (True, hidden_share)):
        cases = [c for c in result.cases if at_hidden(c) == side]
        tools = [f for f in result.sanitizer if at_hidden(f) == side]
        if cases or tools:
            _cap(cases, tools, message_bytes, max(1, int(submission_bytes * share)))


def _cap(cases: list, tools: list, message_bytes: int, submission_bytes: int) -> None:
    def size() -> int:
        return sum(len(c.message) + len(c.hint) + len(c.output) + (len(json.dumps(c.record)) if c.record else 0)
                   for c in cases) + sum(len(f.report) + len(f.message) for f in tools)

    fields = sum(3 + _strings(c.record) for c in cases) + 2 * len(tools)
    originals = [(c, c.message, c.hint, c.output, c.record) for c in cases]  # every pass cuts the originals
    found = [(f, f.report, f.message) for f in tools]
    limit = message_bytes
    while True:
        for c, message, hint, output, record in originals:
            c.message, c.hint, c.output = cap_text(message, limit), cap_text(hint, limit), cap_text(output, limit)
            if record is not None:
                c.record = _cap_record(record, limit)
        for f, report, message in found:
            f.report, f.message = cap_text(report, limit), cap_text(message, limit)
        if size() <= submission_bytes or limit <= 64:
            return
        limit = max(64, min(limit // 2, submission_bytes // max(1, fields) - 40))  # 40: the cut's own note
