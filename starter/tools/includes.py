#!/usr/bin/env python3
"""What a task file includes, as the compiler read it: the files it #includes itself, each named as an #include
names it, taken from the compiler's own preprocessing (its -H list), not from reading #include lines. A byte-order
mark, a form feed or vertical tab, a line splice or a macro can hide an #include from a line parser; not from the
compiler. The pre-check (tools/precheck.py --includes) and the grader's build gate judge these lists.

    python3 tools/includes.py --out build/starter/kernels/add.includes --project include \\
        --view -Xcompiler -H --view -Xcompiler -H,-U__CUDA_ARCH__ -- nvcc FLAGS -E kernels/add.cu -o /dev/null

Each --view's flags are added to the command and it is run once: nvcc's -E reads a file as its device pass does,
__CUDA_ARCH__ undefined is its host pass's view (the CPU backend's driver reads it as its host pass, and
-D__CUDA_ARCH__=900 is its device view), so an #include behind #ifdef __CUDA_ARCH__ is seen either way. Nothing
the compiler says is printed (its messages can quote the files it read); the list is written as JSON:

    {"file": "add.cu", "includes": [{"name": "thread", "path": "/usr/include/c++/12/thread", "place": "system"}],
     "missing": ["nothere.h"], "error": ""}

place is "project" (found in the assignment's include folder), "system" (in a folder the compiler searches for
<headers>: the name is the path from that folder) or "elsewhere" (any other file: the name is its path).
Exit status 0 when the list was written (whatever it holds), 2 when it could not be. Standard library only: it
ships with the starter.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

DIRECT = re.compile(r"^\. (.+)$")  # -H: one dot per level of inclusion; one dot is the task file's own #include
MISSING = re.compile(r"^(?P<file>[^:\n]+):\d+:\d+: fatal error: (?P<name>[^:\n]+): No such file or directory")
TIMEOUT = 120  # seconds for one view's preprocessing


def search_dirs(cxx: str) -> list[Path]:
    """The folders the C++ compiler looks for <headers> in, as it lists them (`-E -v`)."""
    try:
        done = subprocess.run([*shlex.split(cxx), "-x", "c++", "-E", "-v", "-"], input="", capture_output=True,
                              text=True, timeout=TIMEOUT, env={**os.environ, "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError):
        return []
    lines, dirs, inside = done.stderr.splitlines(), [], False
    for line in lines:
        if line.startswith("#include <...> search starts here:"):
            inside = True
        elif inside and line.startswith(" "):
            dirs.append(Path(line.strip().split(" (", 1)[0]))
        elif inside:
            break
    return dirs


def named(path: Path, project: list[Path], system: list[Path]) -> dict:
    """An included file as an #include names it: by the folder it was found in (the longest that holds it)."""
    real = path.resolve()
    for place, roots in (("project", project), ("system", system)):
        holding = [r for r in roots if real.is_relative_to(r)]
        if holding:
            root = max(holding, key=lambda r: len(r.parts))
            return {"name": real.relative_to(root).as_posix(), "path": str(real), "place": place}
    return {"name": str(path), "path": str(real), "place": "elsewhere"}


def read_includes(command: list[str], views: list[list[str]], source: Path, project: list[Path],
                  system: list[Path]) -> dict:
    found: dict[str, dict] = {}
    missing: list[str] = []
    error = ""
    for view in views:
        try:
            done = subprocess.run([*command, *view], capture_output=True, text=True, errors="replace",
                                  timeout=TIMEOUT, env={**os.environ, "LC_ALL": "C"})
        except subprocess.TimeoutExpired:
            error = f"the preprocessor did not finish within {TIMEOUT} s"
            continue
        except OSError as e:
            error = f"the preprocessor could not run: {e.strerror}"
            continue
        for line in done.stderr.splitlines():
            direct = DIRECT.match(line)
            if direct:
                entry = named(Path(direct.group(1)), project, system)
                found.setdefault(entry["path"], entry)
                continue
            gone = MISSING.match(line)
            if gone and Path(gone.group("file")).name == source.name and gone.group("name") not in missing:
                missing.append(gone.group("name"))
    return {"file": source.name, "includes": list(found.values()), "missing": missing, "error": error}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        print("includes.py: give the compiler's command after --", file=sys.stderr)
        return 2
    split = argv.index("--")
    p = argparse.ArgumentParser(prog="tools/includes.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="the JSON list to write")
    p.add_argument("--project", action="append", default=[], help="the assignment's include folder (repeatable)")
    p.add_argument("--system", action="append", default=[], help="another folder of <headers> (repeatable)")
    p.add_argument("--cxx", default=os.environ.get("CXX") or "g++", help="the C++ compiler whose folders count")
    p.add_argument("--view", action="append", default=[], help="flags for one reading (repeatable; quoted)")
    args = p.parse_args(argv[:split])
    command = argv[split + 1:]
    sources = [Path(a) for a in command if a.endswith(".cu")]
    if len(sources) != 1:
        print("includes.py: the command must name exactly one .cu file", file=sys.stderr)
        return 2
    project = [Path(d).resolve() for d in args.project]
    system = [Path(d).resolve() for d in args.system] + [d.resolve() for d in search_dirs(args.cxx)]
    views = [shlex.split(v) for v in args.view] or [[]]
    listing = read_includes(command, views, sources[0], project, system)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(listing, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
