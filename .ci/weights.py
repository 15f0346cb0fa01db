#!/usr/bin/env python3
"""Each test file's seconds, summed from pytest logs' `--durations=0` tables (stdin: the slow tier's and the fast
tier's, one after the other), as .ci/test-weights reads them: "SECONDS PATH" per line, longest first, files under
5 s left out."""
import re
import sys
from collections import defaultdict

HEADER = """# Seconds each test file's tests took in measured runs of both tiers (--durations=0; refresh with
# cat SLOW_LOG FAST_LOG | .ci/weights.py > .ci/test-weights). conftest.py hands the files out longest first, in
# each tier, so that its last minutes are not one long file on one worker while the others wait. Speed only: a
# file missing here runs after these, in its usual order."""

totals: dict[str, float] = defaultdict(float)
for line in sys.stdin:
    found = re.match(r"^([0-9.]+)s (?:setup|call|teardown)\s+([^:\s]+)::", line)
    if found:
        totals[found.group(2)] += float(found.group(1))
print(HEADER)
for path, seconds in sorted(totals.items(), key=lambda item: -item[1]):
    if seconds >= 5:
        print(f"{seconds:.0f} {path}")
