"""One line per shape of a sweep's CSV (sweep.sh --out DIR writes DIR/sweep.csv): the baseline,
the shipped launcher (auto) with the plan it chose, and the fastest candidate, each as a
percentage of the baseline at that shape.

    python3 solution/lab/best.py DIR/sweep.csv
"""
from __future__ import annotations

import csv
import sys


def main(path: str) -> int:
    rows: dict[tuple[str, str], list[dict]] = {}
    for row in csv.DictReader(open(path)):
        rows.setdefault((row["task"], row["shape"]), []).append(row)
    print(f"{'shape':<16} {'baseline':>9} {'auto':>9} {'auto %':>7}  {'auto plan':<34} {'fastest':<12} {'%':>6}  bad")
    for (task, shape), group in rows.items():
        base, ok = group[0], [r for r in group[1:] if r["status"] == "ok" and float(r["median_ms"]) > 0]
        bad = [r["candidate"] for r in group if r["status"] != "ok"]
        auto = next((r for r in group if r["candidate"] == "auto"), None)
        best = max(ok, key=lambda r: float(r["percent_of_baseline"]), default=None)
        print(f"{shape:<16} {float(base['rate']):>9.0f} {float(auto['rate']) if auto else 0:>9.0f} "
              f"{float(auto['percent_of_baseline']) if auto else 0:>6.1f}%  {auto['plan'] if auto else '':<34} "
              f"{best['candidate'] if best else '':<12} {float(best['percent_of_baseline']) if best else 0:>5.1f}%  "
              f"{' '.join(bad)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
