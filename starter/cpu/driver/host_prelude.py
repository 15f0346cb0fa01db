"""The prelude every task file is compiled with (include/cudacpu/kernel_prelude.h: the CUDA stand-in), precompiled
by g++ once per compiler, flags and headers. Parsing it took about 0.07 s of each task file's 0.5-0.9 s compile, and
each task file is compiled twice (AddressSanitizer's build, then the race checker's), in make test and in grading:
a graded first upload's build took 0.43 s less with it (toolchain.compile_cu uses it for task files only).

    FOLDER/host-<digest>/kernel_prelude.h       one line: #include <cudacpu/kernel_prelude.h>
    FOLDER/host-<digest>/kernel_prelude.h.gch   g++'s precompiled form of that line
    FOLDER/host-<digest>/failed                 in its place where g++ could not make it (what g++ said)

A compile is given `-include FOLDER/host-<digest>/kernel_prelude.h` in place of `-include cudacpu/kernel_prelude.h`.
g++ reads the .gch beside it where the .gch is valid for that compile, and the line otherwise, which finds the
prelude where the plain option did, as a system header as before (no warning about our code): the object is the
same either way (solution/tests/test_cpu_precompiled.py). The digest covers the compiler, every flag but the
source's own folder, and the headers, as g++ checks none of the headers a .gch was made from. GCC only: clang
refuses a stale precompiled header with an error rather than reading the header. Each file is written under a
temporary name and renamed into place (make -j's compiles may make one at the same time); where the folder
cannot be written (a read-only build tree, a sandbox), compiles go without it, as before."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from . import precompiled

PRELUDE = "cudacpu/kernel_prelude.h"
FORMAT = "1"  # a change in how the files are made starts new names
FAILED = "failed"  # in the folder: g++ could not make it (its messages)


def _compiler_identity(cxx: str) -> list:
    """The compiler as run: its resolved path, size and time (an upgrade makes new names; g++ refuses a .gch of
    another version anyway, and reads the header instead)."""
    found = shutil.which(cxx.split()[0])
    if not found:
        return [cxx]
    real = os.path.realpath(found)
    st = os.stat(real)
    return [real, st.st_size, st.st_mtime_ns, cxx.split()[1:]]


# Flags that do not change what the prelude compiles to: the compiled file's own folder (the prelude's line
# includes nothing from it) and the dependency lists (-MMD would write one for the header too).
_IRRELEVANT_WITH_VALUE = {"-iquote", "-MF", "-MT", "-MQ"}
_IRRELEVANT = {"-M", "-MM", "-MD", "-MMD", "-MG", "-MP"}


def _prelude_flags(flags: list[str]) -> list[str]:
    out, skip = [], False
    for f in flags:
        if skip:
            skip = False
        elif f in _IRRELEVANT_WITH_VALUE:
            skip = True
        elif f not in _IRRELEVANT:
            out.append(f)
    return out


def with_precompiled(cmd: list[str], folder: Path | None, include_dir: Path, env: dict) -> list[str]:
    """`cmd` (g++ compiling a task file from standard input: `... -include cudacpu/kernel_prelude.h ... -c - -o OUT`)
    reading the prelude precompiled in `folder`, made there now if missing; `cmd` as it is where none can be."""
    try:
        at = cmd.index("-include")
        tail = cmd.index("-c")
    except ValueError:
        return cmd
    if folder is None or cmd[at + 1] != PRELUDE:
        return cmd
    flags = _prelude_flags(cmd[:at] + cmd[at + 2:tail])
    key = json.dumps([FORMAT, _compiler_identity(cmd[0]), flags, str(include_dir),
                      precompiled.headers_digest(include_dir)])
    home = folder / f"host-{hashlib.sha256(key.encode()).hexdigest()[:20]}"
    line, gch = home / "kernel_prelude.h", home / "kernel_prelude.h.gch"
    if not gch.is_file():
        # Tried once: a compiler that cannot make it would otherwise spend 0.3 s of every compile trying again.
        if (home / FAILED).is_file() or not _make(flags, home, line, gch, env):
            return cmd
    return cmd[:at + 1] + [str(line)] + cmd[at + 2:]


def _make(flags: list[str], home: Path, line: Path, gch: Path, env: dict) -> bool:
    try:
        home.mkdir(parents=True, exist_ok=True)
        if not line.is_file():
            _write_whole(line, f"#include <{PRELUDE}>\n".encode())
    except OSError:
        return False
    # (Without the compile's "-x c++": g++ given it before "-x c++-header" links the header instead.)
    header = [f for k, f in enumerate(flags) if not (f == "-x" or (k > 0 and flags[k - 1] == "-x"))]
    made, said = precompiled.compiled_into(gch, lambda out: [*header, "-x", "c++-header", str(line), "-o", out], env)
    if not made and said:
        try:
            _write_whole(home / FAILED, said[-4000:].encode())
        except OSError:
            pass
    return made


def _write_whole(path: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "wb") as f:
        f.write(data)
    os.chmod(temporary, 0o644)
    os.replace(temporary, path)
