"""The header-only libraries the starter builds with, copied in at packaging time.

starter/Makefile names each library by one header and its Debian package
(HEADER_PACKAGES, printed by `make -C starter header-packages`). Each header
is found the way the compiler finds it (DEPS_INCLUDE first, then the system's
include path), and the library's whole folder is copied, with its Debian
copyright file when there is one. The starter's Makefile uses
third_party/include/ when it exists, so students install nothing but the
CUDA toolkit.
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
INCLUDE_DIR = "starter/third_party/include"
LICENSE_DIR = "starter/third_party/licenses"


class HeaderError(RuntimeError):
    pass


@dataclass(frozen=True)
class Library:
    header: str  # e.g. "doctest/doctest.h"
    package: str  # e.g. "doctest-dev"
    root: Path  # the include folder that holds header's first component

    @property
    def folder(self) -> str:
        return self.header.split("/", 1)[0]


def header_packages(starter: Path = REPO / "starter") -> list[tuple[str, str]]:
    out = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(starter), "header-packages"],
                         capture_output=True, text=True, env={**os.environ, "MAKEFLAGS": ""})
    if out.returncode != 0:
        raise HeaderError(f"make -C {starter} header-packages failed: {out.stderr.strip()}")
    return [tuple(pair.split(":", 1)) for pair in out.stdout.split()]


def locate(header: str, package: str, deps_include: Path | None) -> Library:
    """The include folder the compiler would take `header` from."""
    cxx = os.environ.get("CXX", "c++")
    command = [cxx, "-std=c++17", "-x", "c++", "-M", "-"]
    if deps_include:
        command[1:1] = ["-isystem", str(deps_include)]
    result = subprocess.run(command, input=f"#include <{header}>\n", capture_output=True, text=True)
    paths = result.stdout.replace("\\\n", " ").split()
    hit = next((p for p in paths if p.endswith("/" + header)), None)
    if result.returncode != 0 or hit is None:
        raise HeaderError(f"<{header}> not found: install Debian's {package}, or set DEPS_INCLUDE=dir to a folder "
                          f"holding it")
    return Library(header, package, Path(os.path.normpath(hit[: -len(header)])))


def collect(deps_include: Path | None) -> dict[str, Path]:
    """Tarball path (below the top folder) -> source file, for every library's headers and copyright files."""
    files: dict[str, Path] = {}
    for header, package in header_packages():
        lib = locate(header, package, deps_include)
        for path in sorted((lib.root / lib.folder).rglob("*")):
            if path.is_file():
                files[f"{INCLUDE_DIR}/{path.relative_to(lib.root).as_posix()}"] = path
        copyright_file = lib.root.parent / "share" / "doc" / package / "copyright"
        if copyright_file.is_file():
            files[f"{LICENSE_DIR}/{package}.copyright"] = copyright_file
    return files
