"""The nvcc-rules check's prelude, precompiled once per clang and build folder for each side (host, device).

Parsing the prelude (include/cudacpu/frontend/prelude.h: the standard headers and clang's CUDA declarations it pulls
in) was two thirds of the check's 0.4 s a file; read from a precompiled header, each side takes 0.12 s instead of
0.2 (clang 19, cpu/README.md). A precompiled header is clang's own, valid only for the same clang, flags and
headers: its name holds a digest of all three, and clang refuses one whose headers changed since (their times too),
which frontend.run takes as "check without it, and make it again". Where the folder cannot be written (a read-only
build tree, a sandbox) there is none, and the check runs as before: the result is the same either way
(solution/tests/test_nvcc_rules.py).

    FOLDER/prelude-<digest>.host.pch     the prelude as clang's host side reads it
    FOLDER/prelude-<digest>.device.pch   and as its device side does

Each is written under a temporary name and renamed into place: make -j's compiles may make one at the same time,
and a reader sees a whole file or none."""
from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

SIDES = {"host": "--cuda-host-only", "device": "--cuda-device-only"}  # in the order clang's driver runs them
FORMAT = "1"  # a change in how the headers are made starts new names


@functools.lru_cache(maxsize=None)
def headers_digest(folder: Path) -> str:
    """sha256 of the prelude's folder (every file's path and contents): a changed header names a new file."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def paths(folder: Path, clang: str, version: str, flags: list[str], headers: Path) -> dict[str, Path]:
    """Where the two precompiled headers for this clang (its --version text), these flags and these headers go."""
    found = shutil.which(clang.split()[0])  # (the flags name the clang as called; this is the one it runs)
    key = json.dumps([FORMAT, os.path.realpath(found) if found else clang, version, flags, str(headers),
                      headers_digest(headers)])
    digest = hashlib.sha256(key.encode()).hexdigest()[:20]
    return {side: folder / f"prelude-{digest}.{side}.pch" for side in SIDES}


def made(folder: Path | None, clang: str, version: str, flags: list[str], prelude: Path,
         env: dict) -> dict[str, Path] | None:
    """The prelude's precompiled header for each side (`flags`: the check's own, without the file and its include
    flags), made now where missing; None where the folder cannot hold them or clang cannot make them."""
    if folder is None:
        return None
    wanted = paths(folder, clang, version, flags, prelude.parent)
    for side, pch in wanted.items():
        if not pch.is_file() and not compiled_into(pch, lambda out: [
                *flags, SIDES[side], "-Xclang", "-emit-pch", "-Xclang", "-o", "-Xclang", out, str(prelude)], env)[0]:
            return None
    return wanted


def compiled_into(target: Path, command: Callable[[str], list[str]], env: dict) -> tuple[bool, str]:
    """Runs `command(output)`, a compile that writes `output`, and puts what it wrote at `target` whole: under a
    temporary name in the target's folder, renamed into place (make -j's compiles may make one at the same time,
    and a reader sees a whole file or none), readable by another user (a sandbox's). (made, what the compiler
    said where it failed: "" where the folder could not be written)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=target.suffix)
        os.close(handle)
    except OSError:
        return False, ""
    done = subprocess.run(command(temporary), capture_output=True, text=True, errors="replace", env=env)
    try:
        if done.returncode != 0 or os.path.getsize(temporary) == 0:
            os.unlink(temporary)
            return False, done.stderr or f"exit status {done.returncode}"
        os.chmod(temporary, 0o644)  # (mkstemp's 0600: a sandbox of another user reads it too)
        os.replace(temporary, target)
    except OSError:
        return False, ""
    return True, ""


def discard(pch: Path) -> None:
    """Removes a precompiled header clang refused, so that the next check makes it again."""
    try:
        pch.unlink()
    except OSError:
        pass
