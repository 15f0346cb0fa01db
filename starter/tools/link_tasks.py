#!/usr/bin/env python3
"""Links the harness (or the test suite) so that one broken task file costs only its own task.

    python3 tools/link_tasks.py --kernels kernels --objects build/starter/kernels \\
        --report build/starter/harness.tasks.json -- nvcc -o build/starter/harness main.o @KERNELS@ fallback.o lib.a

The command after `--` is the link; @KERNELS@ stands for the task files' objects.
A task file whose object is missing (it did not compile: make left its compiler
messages in <object>.log) is linked as a small marker object instead, and so is
one the linker rejects (an undefined reference, a definition another file also
has): the harness's fallback launchers (harness/fallback_launchers.cpp) then
stand in for its launchers and report, when its cases run, the compiler's or
linker's first message. Every other task runs as usual. The report (JSON) says
which files were built and why the others were not; the grader reads it.

Exit status: 0 when the program was linked; the linker's own status when it
fails for a reason no task file explains (the harness itself does not link).
Standard library only: it ships with the starter.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

PLACEHOLDER = "@KERNELS@"
MAX_MESSAGE = 400  # characters of a compiler or linker message carried into a case's message


def first_error(log: str, names: dict[str, str], file: str) -> str:
    """The compiler's first error in the task file itself (else its first error anywhere: an error
    reported inside a system header usually starts with a mistake just before its #include), with
    build paths shortened to the file's own name."""
    lines = [shorten(line.strip(), names) for line in log.splitlines() if line.strip()]
    errors = [line for line in lines if re.search(r"\berror\b", line, re.IGNORECASE)]  # the assembler says "Error:"
    own = [line for line in errors if line.startswith(file)]
    return (own or errors or lines or [""])[0]


def shorten(text: str, names: dict[str, str]) -> str:
    """Paths of objects and sources replaced by the task file's name (add.o -> add.cu)."""
    for path, name in sorted(names.items(), key=lambda item: -len(item[0])):
        text = text.replace(path, name)
    text = re.sub(r"(?:/[^\s:'`()]*)+/([^/\s:'`()]+\.cu)", r"\1", text)  # any remaining directory before a .cu
    text = text.replace("/usr/bin/ld: ", "")
    text = re.sub(r"; ([^\s;:]+\.cu)(?::\(\.[\w.]+\+0x[0-9a-f]+\))?: first defined here", r" (\1 defines it too)", text)
    text = re.sub(r"[^\s;]*:\(\.[\w.]+\+0x[0-9a-f]+\): ", "", text)  # where in the object: no help to a student
    return text[:MAX_MESSAGE]


def c_string(text: str) -> str:
    """A C string literal holding text (ASCII, everything else escaped)."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= code < 127:
            out.append(ch)
        else:
            out.extend(f"\\{b:03o}" for b in ch.encode("utf-8"))
    return '"' + "".join(out) + '"'


def compile_marker(stem: str, reason: str, out: Path, cxx: str) -> None:
    """An object defining kernel_file_unbuilt_<stem>: the fallback launchers' message for the file."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", stem):
        raise SystemExit(f"link_tasks.py: '{stem}.cu' is not a task file name the harness knows")
    out.parent.mkdir(parents=True, exist_ok=True)
    source = f'extern "C" const char kernel_file_unbuilt_{stem}[] = {c_string(reason)};\n'
    done = subprocess.run([*cxx.split(), "-x", "c++", "-c", "-", "-o", str(out)], input=source, text=True,
                          capture_output=True)
    if done.returncode != 0:
        raise SystemExit(f"link_tasks.py: could not compile the marker for {stem}.cu with {cxx}: "
                         f"{done.stderr.strip()[:500]}")


def blamed_objects(linker_output: str, objects: dict[str, Path]) -> dict[str, str]:
    """Task-file objects the linker's error lines name: stem -> the first such line. A line naming
    two task files (a definition both have) blames the one it names first: the later one linked."""
    blamed: dict[str, str] = {}
    lines = linker_output.splitlines()
    for i, line in enumerate(lines):
        if not re.search(r"undefined reference|multiple definition|relocation .* against", line):
            continue
        context = (lines[i - 1] + " " if i and "in function" in lines[i - 1] else "") + line
        mentioned = sorted((context.find(str(path)), stem) for stem, path in objects.items() if str(path) in context)
        if mentioned:
            blamed.setdefault(mentioned[0][1], line.strip())
    return blamed


def link(command: list[str], kernel_objects: list[str]) -> subprocess.CompletedProcess:
    at = command.index(PLACEHOLDER)
    return subprocess.run(command[:at] + kernel_objects + command[at + 1:], capture_output=True, text=True,
                          errors="replace")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        print("link_tasks.py: usage: link_tasks.py --kernels DIR --objects DIR --report FILE -- LINK COMMAND "
              f"(with {PLACEHOLDER} where the task files' objects go)", file=sys.stderr)
        return 2
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="link_tasks.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", required=True, help="the folder of task files (.cu)")
    parser.add_argument("--objects", required=True, help="where make put each task file's object (<stem>.o)")
    parser.add_argument("--report", required=True, help="JSON: which task files were built, and why not")
    # $CXX before c++: the markers must suit the program's other objects (a cross build for aarch64, say).
    parser.add_argument("--cxx", default=os.environ.get("LINK_TASKS_CXX") or os.environ.get("CXX") or "c++",
                        help="compiler for the marker objects (default: $LINK_TASKS_CXX, else $CXX, else c++)")
    args = parser.parse_args(argv[:split])
    command = argv[split + 1:]
    if PLACEHOLDER not in command:
        print(f"link_tasks.py: the link command has no {PLACEHOLDER}", file=sys.stderr)
        return 2

    objects_dir, markers = Path(args.objects), Path(args.objects).parent / "markers"
    stems = sorted(p.stem for p in Path(args.kernels).glob("*.cu"))
    names = {str(objects_dir / f"{s}.o"): f"{s}.cu" for s in stems}
    names.update({str(Path(args.kernels) / f"{s}.cu"): f"{s}.cu" for s in stems})
    report: dict[str, dict] = {}
    chosen: dict[str, Path] = {}
    for stem in stems:
        obj, log = objects_dir / f"{stem}.o", objects_dir / f"{stem}.o.log"
        text = log.read_text(errors="replace") if log.is_file() else ""
        if obj.is_file():
            chosen[stem] = obj
            report[stem] = {"file": f"{stem}.cu", "built": True, "reason": "", "log": text}
        else:
            needs_gpu = [shorten(line.strip(), names) for line in text.splitlines() if line.startswith("needs a GPU:")]
            if needs_gpu:  # the CPU backend's driver refused it (exit 3): nothing wrong with the file
                reason = needs_gpu[0]
            else:
                reason = f"{stem}.cu does not compile: {first_error(text, names, f'{stem}.cu')}" if text.strip() else \
                    f"{stem}.cu does not compile"
            report[stem] = {"file": f"{stem}.cu", "built": False, "reason": reason, "log": text}

    while True:
        for stem, entry in report.items():
            if not entry["built"] and stem not in chosen:
                chosen[stem] = markers / f"{stem}.o"
                compile_marker(stem, entry["reason"], chosen[stem], args.cxx)
        done = link(command, [str(chosen[s]) for s in stems])
        if done.returncode == 0:
            break
        students = {s: chosen[s] for s in stems if report[s]["built"]}
        blamed = blamed_objects(done.stdout + done.stderr, students)
        if not blamed:  # nothing a task file did: the harness itself does not link
            sys.stderr.write(done.stdout + done.stderr)
            return done.returncode
        for stem, line in blamed.items():
            report[stem].update(built=False, reason=f"{stem}.cu does not link: {shorten(line, names)}",
                                log=report[stem]["log"] + (done.stdout + done.stderr))
            del chosen[stem]
    Path(args.report).parent.mkdir(parents=True, exist_ok=True)
    Path(args.report).write_text(json.dumps({"tasks": report}, indent=2) + "\n")
    for entry in report.values():
        if not entry["built"] and entry["reason"].startswith("needs a GPU:"):
            print(f"{entry['file']}: {entry['reason']}\n  -> its task is listed as needing a GPU; every other task "
                  "still runs", file=sys.stderr)
        elif not entry["built"]:
            print(f"{entry['reason']}\n  -> its task's cases fail; every other task still runs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
