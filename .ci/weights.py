#!/usr/bin/env python3
"""Each test file's seconds, summed from pytest logs' `--durations=0` tables (stdin: the slow tier's and the fast
tier's, one after the other), as .ci/test-weights reads them: "SECONDS PATH" per line, longest first, files under
5 s left out; a file the current .ci/test-weights marks `waits` keeps its mark."""
import re
import sys
from collections import defaultdict
from pathlib import Path

HEADER = """# Seconds each test file's tests took in measured runs of both tiers (--durations=0; refresh with
# cat SLOW_LOG FAST_LOG | .ci/weights.py > .ci/test-weights, which keeps the marks). conftest.py hands the files out
# longest first, in each tier, so that its last minutes are not one long file on one worker while the others wait;
# a file marked `waits` mostly waits on processes (a service, Slurm, a browser: its CPU under a third of its wall
# time in .ci/cpu.py's table) and asserts no response time, so it runs beside the others' CPU work, one worker at a
# time, from the start (conftest.file_order). Speed only: a file missing here runs after these, in its usual order."""

CURRENT = Path(__file__).resolve().parent / "test-weights"
waits = {line.split()[1] for line in CURRENT.read_text().splitlines()
         if not line.startswith("#") and line.split()[2:3] == ["waits"]} if CURRENT.exists() else set()
totals: dict[str, float] = defaultdict(float)
for line in sys.stdin:
    found = re.match(r"^([0-9.]+)s (?:setup|call|teardown)\s+([^:\s]+)::", line)
    if found:
        totals[found.group(2)] += float(found.group(1))
print(HEADER)
for path, seconds in sorted(totals.items(), key=lambda item: -item[1]):
    if seconds >= 5:
        print(f"{seconds:.0f} {path}" + (" waits" if path in waits else ""))
