#!/usr/bin/env python3
"""The last step of `make submit`: pack submission.tar.gz with your task files and nickname.txt.

By the time this runs, make has compiled your kernels and tools/precheck.py
has checked them. This script refuses when a task file did not compile or
link (the grader would score that task 0), warns about every task still left as the stub
(identical to the file you were given, or still calling
NOT_IMPLEMENTED_YET()), then writes an archive that holds exactly one file per
task, plus nickname.txt if you wrote one: the files the grader reads, and
nothing else.

    python3 tools/submit.py --harness build/starter/harness [--kernels kernels] [--out submission.tar.gz]

Exit status 0 when the archive was written (warnings or not), 1 when it was
not (the message says why). Python 3 standard library only.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import subprocess
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PRISTINE = HERE / "pristine-stubs.sha256"  # written into the student tarball by `make dist`
NICKNAME = "nickname.txt"


class SubmitError(Exception):
    pass


def task_files(harness: Path) -> list[str]:
    """The task files, from the harness's own registry (the list the grader uses too)."""
    try:
        out = subprocess.run([str(harness), "--list-tasks", "--json"], capture_output=True, text=True, check=True,
                             timeout=60).stdout
        return [task["file"] for task in json.loads(out)["tasks"]]
    except (OSError, subprocess.SubprocessError, ValueError, KeyError) as e:
        raise SubmitError(f"could not list the tasks with {harness}: {e}") from None


NEEDS_GPU = "needs a GPU"  # how the CPU backend's build reports a file it cannot run (cpu/cudacpu.py)


def files_that_did_not_build(harness: Path) -> tuple[list[str], list[str]]:
    """The reasons of task files the harness was linked without (tools/link_tasks.py's report): those that do not
    build, and those a CPU build left to a GPU (inline PTX, ...), which the grader builds on its GPU."""
    report = harness.parent / (harness.name + ".tasks.json")
    try:
        tasks = json.loads(report.read_text())["tasks"]
    except (OSError, ValueError, KeyError) as e:
        raise SubmitError(f"could not read the build's report {report}: {e}") from None
    reasons = [f"{entry['file']}: {entry['reason']}" if not entry["reason"].startswith(entry["file"]) else entry["reason"]
               for entry in tasks.values() if not entry["built"]]
    return ([r for r in reasons if NEEDS_GPU not in r], [r for r in reasons if NEEDS_GPU in r])


def pristine_sums() -> dict[str, str] | None:
    if not PRISTINE.is_file():
        return None
    sums = {}
    for line in PRISTINE.read_text(encoding="utf-8").splitlines():
        digest, _, name = line.partition("  ")
        if name:
            sums[name.strip()] = digest.strip()
    return sums


def still_not_implemented(text: str) -> bool:
    """True when NOT_IMPLEMENTED_YET() is still called (comments do not count)."""
    code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    code = re.sub(r"//[^\n]*", "", code)
    return re.search(r"\bNOT_IMPLEMENTED_YET\s*\(\s*\)", code) is not None


def gather(kernels: Path, files: list[str], sums: dict[str, str] | None) -> tuple[dict[str, bytes], list[str]]:
    """The archive's members and the warnings to print."""
    members, warnings = {}, []
    for name in files:
        path = kernels / name
        if not path.is_file():
            warnings.append(f"{name} is missing: that task will score 0")
            continue
        data = path.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise SubmitError(f"{path} is not UTF-8 text: the grader rejects it; save it as UTF-8") from None
        members[name] = data
        if sums is not None and sums.get(name) == hashlib.sha256(data).hexdigest():
            warnings.append(f"{name} is the untouched stub: that task will score 0")
        elif still_not_implemented(text):
            warnings.append(f"{name} still calls NOT_IMPLEMENTED_YET(): that task will report 'not implemented' "
                            f"and score 0")
    extra = sorted(p.name for p in kernels.iterdir() if p.is_file() and p.name not in files)
    if extra:
        warnings.append(f"not submitted (the grader reads only the task files): {', '.join(extra)}")
    nickname = kernels.parent / NICKNAME
    if nickname.is_file():
        data = nickname.read_bytes()
        if not data.strip():
            warnings.append(f"{NICKNAME} is empty: you will be listed under a pseudonym")
        members[NICKNAME] = data
    return members, warnings


def write_archive(out: Path, members: dict[str, bytes]) -> None:
    partial = out.with_name(out.name + ".partial")
    now = int(time.time())
    with tarfile.open(partial, "w:gz") as tar:
        for name in sorted(members):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(members[name]), 0o644, now
            tar.addfile(info, io.BytesIO(members[name]))
    partial.replace(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--harness", type=Path, required=True, help="the built harness (for the task list)")
    parser.add_argument("--kernels", type=Path, default=Path("kernels"), help="your kernel files (default kernels)")
    parser.add_argument("--out", type=Path, default=Path("submission.tar.gz"))
    args = parser.parse_args(argv)
    try:
        unbuilt, left_to_gpu = files_that_did_not_build(args.harness)
        if unbuilt:
            raise SubmitError("these files do not build, so their tasks would score 0: " + "; ".join(unbuilt) +
                              ". Fix them (or put the stub back) and run make submit again")
        files = task_files(args.harness)
        sums = pristine_sums()
        members, warnings = gather(args.kernels, files, sums)
        if not any(name in members for name in files):
            raise SubmitError(f"no task file found in {args.kernels}/: nothing to submit")
        write_archive(args.out, members)
    except SubmitError as e:
        print(f"make submit: {e}", file=sys.stderr)
        return 1
    if sums is None:
        print(f"note: {PRISTINE.name} is not here (make dist writes it into the student tarball), so untouched "
              f"stubs are recognized only by NOT_IMPLEMENTED_YET()")
    for warning in warnings:
        print(f"WARNING: {warning}")
    for reason in left_to_gpu:
        print(f"note: {reason}: it was not built or run here (the CPU backend cannot run it); the grader builds "
              "and runs it on a GPU, so check it on a GPU machine if you can")
    tasks = [n for n in files if n in members]
    print(f"wrote {args.out}: {len(tasks)} task files ({', '.join(tasks)})"
          + (f" and {NICKNAME}" if NICKNAME in members else "") + ". Hand in this file.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
