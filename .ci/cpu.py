#!/usr/bin/env python3
"""Where a test run's CPU went: conftest.py's TEST_CPU_LOG lines ("CPU WALL NODEID") summed by file, the files with
the most CPU first, beside their wall seconds. CPU well under wall is a file that waits (sleeps, servers, limits);
CPU near wall is work, which only less work makes faster."""
import sys
from collections import defaultdict

cpu: dict[str, float] = defaultdict(float)
wall: dict[str, float] = defaultdict(float)
for line in open(sys.argv[1]):
    seconds, elapsed, nodeid = line.split(" ", 2)
    path = nodeid.split("::", 1)[0]
    cpu[path] += float(seconds)
    wall[path] += float(elapsed)
print(f"CPU {sum(cpu.values()):.0f} s, wall {sum(wall.values()):.0f} s summed over {len(cpu)} test files")
print("   CPU s   wall s  file")
for path in sorted(cpu, key=lambda p: -cpu[p])[:int(sys.argv[2]) if len(sys.argv) > 2 else 30]:
    print(f"{cpu[path]:8.0f} {wall[path]:8.0f}  {path}")
