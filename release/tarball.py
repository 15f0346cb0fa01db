"""A reproducible .tar.gz: the same files give the same bytes, on any machine, at any time.

Entries are sorted (each folder before what it holds), every entry has one
fixed time, owner 0:0 with no names, and a mode of 0755 (folders and
executables) or 0644; the gzip header carries the same fixed time and no
file name.
"""
from __future__ import annotations

import gzip
import io
import tarfile
from dataclasses import dataclass
from pathlib import PurePosixPath


@dataclass(frozen=True)
class Member:
    data: bytes
    executable: bool = False


def _entry(name: str, mtime: int, mode: int, kind: bytes) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.mtime = mtime
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def write(path, top: str, members: dict[str, Member], mtime: int) -> None:
    """Writes `members` (path below `top` -> contents) under the folder `top`."""
    folders = {str(parent) for name in members for parent in PurePosixPath(name).parents if str(parent) != "."}
    entries = sorted([(f, None) for f in folders] + list(members.items()), key=lambda e: e[0].split("/"))
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=mtime,
                                                  compresslevel=9) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(_entry(top, mtime, 0o755, tarfile.DIRTYPE))
        for name, member in entries:
            if member is None:
                tar.addfile(_entry(f"{top}/{name}", mtime, 0o755, tarfile.DIRTYPE))
            else:
                info = _entry(f"{top}/{name}", mtime, 0o755 if member.executable else 0o644, tarfile.REGTYPE)
                info.size = len(member.data)
                tar.addfile(info, io.BytesIO(member.data))
