#!/usr/bin/env python3
"""Each test file's seconds, summed from a pytest log's `--durations=0` table (stdin), as .ci/test-weights reads
them: "SECONDS PATH" per line, longest first, files under 5 s left out."""
import re
import sys
from collections import defaultdict

HEADER = """# Seconds each test file's slow tests took in a measured run (.ci/run's --durations=0; refresh with
# .ci/weights.py < LOG > .ci/test-weights). conftest.py hands the files out longest first, so that the last
# minutes of the slow tier are not one long file on one worker while the other waits. Speed only: a file
# missing here runs after these, in its usual order."""

totals: dict[str, float] = defaultdict(float)
for line in sys.stdin:
    found = re.match(r"^([0-9.]+)s (?:setup|call|teardown)\s+([^:\s]+)::", line)
    if found:
        totals[found.group(2)] += float(found.group(1))
print(HEADER)
for path, seconds in sorted(totals.items(), key=lambda item: -item[1]):
    if seconds >= 5:
        print(f"{seconds:.0f} {path}")
