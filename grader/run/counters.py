"""The CPU backend's performance counters in grading: make profile's own code (starter/tools/profile.py, loaded
as the students run it) turns the counted launches of a task's profile case into the numbers and the findings
its feedback shows. Feedback only: nothing here changes a score."""
from __future__ import annotations

import json

from grader.core.status import ProfileStatus
from grader.outcomes.results import ProfileOutcome
from grader.shared import student_tools

_profile = student_tools.load("profile")
# Enough for every launch of any task's profile case (a few KB each); more is not a harness's doing.
MAX_BYTES = 4 << 20
# The sentences name lines and kernels the harness reported, which the submission could forge: kept short.
MAX_FINDINGS, MAX_SENTENCE = 12, 600


# The line table the harness reads, and the lines of the code addresses it names (make profile's own code).
line_table = _profile.line_table
places = _profile.places_from_addr2line


def outcome(task: str, dtype: str, shape: str, text: str, symbolize=None) -> ProfileOutcome:
    """The counts and findings from the launches' JSON lines (the harness wrote them in the sandbox: a
    submission can forge them, which costs nothing but its own feedback); `symbolize` gives code addresses
    their lines (tools/profile.py's resolve_pcs)."""
    counted = ProfileOutcome(task, dtype, shape, ProfileStatus.FAILED)
    if len(text) > MAX_BYTES:
        counted.message = f"the counts were over {MAX_BYTES >> 20} MiB: not read"
        return counted
    try:
        launches = _profile.checked([json.loads(line) for line in text.splitlines() if line.strip()])
        if _profile.too_many(launches):
            counted.message = _profile.too_many(launches)
            return counted
        if symbolize is not None:
            _profile.resolve_pcs(launches, symbolize)
        rules, gpu, _ = _profile.load_occupancy()
        kernels = _profile.summarize(launches, gpu, rules)
        if not kernels:
            counted.message = "no kernel launch was counted"
            return counted
        reference = _profile.load_reference(_profile.REFERENCE, task)
        numbers = _profile.task_numbers(kernels)
        findings = _profile.findings(kernels, task, reference)
    except Exception as e:  # the file is the submission's to write: whatever it holds, one line, never a traceback
        counted.message = f"the counts could not be read ({type(e).__name__})"
        return counted
    counted.status, counted.numbers = ProfileStatus.COUNTED, numbers
    counted.findings = [f if len(f) <= MAX_SENTENCE else f[:MAX_SENTENCE - 1] + "…" for f in findings[:MAX_FINDINGS]]
    return counted
