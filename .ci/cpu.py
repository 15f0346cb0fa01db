#!/usr/bin/env python3
"""Where a test run's CPU went: conftest.py's TEST_CPU_LOG lines ("CPU WALL END WORKER NODEID") summed by file, the
files with the most CPU first, beside their wall seconds. CPU well under wall is a file that waits (sleeps, servers,
limits); CPU near wall is work, which only less work makes faster. Then the run by minute: how many workers were in
a test and how many cores' worth of CPU the tests used (each test's CPU spread evenly over its wall time), so a
stretch where the cores sat idle while workers waited shows, and what ran then. With a third argument, .ci/run's
/proc/stat samples ("EPOCH BUSY_TICKS ALL_TICKS"), the machine's cores used in each minute too: the tests' own
count misses what their sandboxes ran (reaped outside their process tree)."""
import os
import sys
from collections import defaultdict


def machine_cores(path: str, first: float, minutes: int) -> list[float | None]:
    """Cores busy in each minute of the run, from the samples that fall in it (None: no two samples there)."""
    samples = []
    for line in open(path):
        fields = line.split()
        if len(fields) == 3:
            samples.append((float(fields[0]), int(fields[1]), int(fields[2])))
    cores: list[float | None] = []
    for m in range(minutes):
        inside = [s for s in samples if first + 60 * m <= s[0] <= first + 60 * (m + 1)]
        if len(inside) < 2 or inside[-1][2] == inside[0][2]:
            cores.append(None)
            continue
        busy, total = inside[-1][1] - inside[0][1], inside[-1][2] - inside[0][2]
        cores.append(busy / total * (os.cpu_count() or 1))
    return cores

cpu: dict[str, float] = defaultdict(float)
wall: dict[str, float] = defaultdict(float)
spans = []  # (start, end, cpu seconds, worker, file)
for line in open(sys.argv[1]):
    seconds, elapsed, rest = line.split(" ", 2)
    fields = rest.split(" ", 2)
    if len(fields) == 3 and fields[0].replace(".", "", 1).isdigit():
        end, worker, nodeid = float(fields[0]), fields[1], fields[2].strip()
        spans.append((end - float(elapsed), end, float(seconds), worker, nodeid.split("::", 1)[0]))
    else:  # a log of the older form, "CPU WALL NODEID"
        nodeid = rest.strip()
    path = nodeid.split("::", 1)[0]
    cpu[path] += float(seconds)
    wall[path] += float(elapsed)
print(f"CPU {sum(cpu.values()):.0f} s, wall {sum(wall.values()):.0f} s summed over {len(cpu)} test files")
print("   CPU s   wall s  file")
for path in sorted(cpu, key=lambda p: -cpu[p])[:int(sys.argv[2]) if len(sys.argv) > 2 else 30]:
    print(f"{cpu[path]:8.0f} {wall[path]:8.0f}  {path}")

if spans:
    first = min(s[0] for s in spans)
    minutes = int((max(s[1] for s in spans) - first - 1e-9) // 60) + 1
    busy = [0.0] * minutes  # worker-seconds in a test
    used = [0.0] * minutes  # CPU seconds
    files: list[dict[str, float]] = [defaultdict(float) for _ in range(minutes)]
    for start, end, seconds, _, path in spans:
        length = max(end - start, 1e-6)
        for m in range(int((start - first) // 60), int((end - first) // 60) + 1):
            overlap = min(end, first + 60 * (m + 1)) - max(start, first + 60 * m)
            if overlap > 0:
                busy[m] += overlap
                used[m] += seconds * overlap / length
                files[m][path] += overlap
    machine = machine_cores(sys.argv[3], first, minutes) if len(sys.argv) > 3 else [None] * minutes
    print("\nBy minute: workers in a test, cores the tests used, cores the machine used (with /proc/stat's samples),"
          " the files that held the workers longest")
    for m in range(minutes):
        names = ", ".join(p.rsplit("/", 1)[-1] for p, _ in sorted(files[m].items(), key=lambda kv: -kv[1])[:3])
        said = f"{machine[m]:4.2f}" if machine[m] is not None else "   -"
        print(f"  {m:3d}  {busy[m] / 60:4.1f}  {used[m] / 60:4.2f}  {said}  {names}")
