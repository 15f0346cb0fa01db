#!/usr/bin/env python3
"""Records what nvcc says of every corpus file into nvcc.json: the verdict the CPU path's front-end check must give.

    python3 solution/tests/nvcc_corpus/record.py [--nvcc PATH] [--deps DIR]

Each file is compiled as starter/Makefile compiles a task file (its -std, -arch and -I flags), device and host
side, to no object; the record keeps, per file, whether nvcc accepted it and, if not, the line and message of its
first error in the file. Rerun it where nvcc exists whenever a corpus file changes (test_nvcc_rules.py checks the
record covers every file and is not older than any).
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
STARTER = HERE.parents[2] / "starter"
RECORD = HERE / "nvcc.json"
FLAGS = ["-arch=sm_90", "-std=c++17", "-Iinclude", "-Iharness"]
ERROR = re.compile(r"^(?P<file>[^\s(]+)\((?P<line>\d+)\): error: (?P<message>.*)$", re.M)


def verdict(nvcc: str, source: Path, extra: list[str]) -> dict:
    done = subprocess.run([nvcc, *FLAGS, *extra, "-c", str(source), "-o", "/dev/null"], cwd=STARTER,
                          capture_output=True, text=True, errors="replace")
    if done.returncode == 0:
        return {"accepted": True}
    own = [m for m in ERROR.finditer(done.stderr) if Path(m.group("file")).name == source.name]
    first = own[0] if own else None
    return {"accepted": False, "line": int(first.group("line")) if first else None,
            "message": first.group("message").strip() if first else done.stderr.strip().splitlines()[-1]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nvcc", default=shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    parser.add_argument("--deps", help="the header libraries' folder (-isystem), if the corpus needs it")
    args = parser.parse_args()
    if not Path(args.nvcc).is_file():
        print(f"record.py: no nvcc at {args.nvcc} (--nvcc PATH)", file=sys.stderr)
        return 2
    extra = ["-isystem", args.deps] if args.deps else []
    version = subprocess.run([args.nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    files = sorted(HERE.glob("*.cu"))
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip((f.name for f in files), pool.map(lambda f: verdict(args.nvcc, f, extra), files)))
    RECORD.write_text(json.dumps({"nvcc": version, "flags": FLAGS, "files": results}, indent=1) + "\n")
    for name, r in results.items():
        print(f"{name}: " + ("accepted" if r["accepted"] else f"line {r['line']}: {r['message']}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
