"""Reading a submissions directory safely.

Each entry of the directory is one student's submission, named by student id:
a folder, or a `.tar.gz`, `.tgz` or `.zip` archive. Archives are read into
memory and never extracted, so nothing in them can land outside the grader's
own files. Task files are recognized by name anywhere inside; everything else
is listed and ignored. A submission that breaks a rule is rejected with a
reason that goes into that student's feedback; the others are unaffected.
"""
from __future__ import annotations

import hashlib
import os
import re
import stat
import tarfile
import zipfile
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

MAX_UNPACKED_BYTES = 10 * 1024 * 1024
MAX_FILES = 1000
NICKNAME_FILE = "nickname.txt"
NICKNAME_MAX = 32
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip")
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")


class Rejected(Exception):
    """A submission that breaks an intake rule; the message is for the student."""


@dataclass
class Submission:
    student: str
    source: Path
    sha256: str = ""
    received: str = ""  # the entry's modification time, UTC ISO 8601
    files: dict[str, bytes] = field(default_factory=dict)  # task file name -> contents
    nickname: str | None = None
    ignored: list[str] = field(default_factory=list)  # paths inside the submission that were not used
    notes: list[str] = field(default_factory=list)
    rejected: str | None = None


def student_id(entry: Path) -> str | None:
    name = entry.name
    for suffix in ARCHIVE_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    else:
        if not entry.is_dir():
            return None
    return name if STUDENT_ID.fullmatch(name) else None


def list_entries(directory: Path) -> tuple[list[Path], list[str]]:
    """The submission entries of a directory, and a note for each entry skipped."""
    entries, skipped = [], []
    for entry in sorted(Path(directory).iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_symlink():
            skipped.append(f"{entry.name}: a symbolic link, not a submission; skipped")
        elif student_id(entry) is None:
            skipped.append(f"{entry.name}: not a folder, .tar.gz, .tgz or .zip named by a student id; skipped")
        else:
            entries.append(entry)
    return entries, skipped


def read_submission(entry: Path, task_files: list[str]) -> Submission:
    """Reads one entry; never raises for anything inside it (a broken one comes back rejected)."""
    entry = Path(entry)
    sub = Submission(student=student_id(entry) or entry.name, source=entry)
    sub.received = datetime.fromtimestamp(entry.lstat().st_mtime, timezone.utc).isoformat(timespec="seconds")
    try:
        if entry.is_dir():
            members = _read_folder(entry)
        elif entry.name.endswith(".zip"):
            members = _read_zip(entry)
        else:
            members = _read_tar(entry)
        sub.sha256 = _digest(entry, members)
        _recognize(sub, members, task_files)
    except Rejected as e:
        sub.rejected = str(e)
        sub.files.clear()
        if not sub.sha256:
            sub.sha256 = _fallback_digest(entry)
    return sub


class _Budget:
    """Counts files and bytes as they are read, and rejects past the limits."""

    def __init__(self):
        self.files = 0
        self.bytes = 0

    def add_file(self, name: str):
        self.files += 1
        if self.files > MAX_FILES:
            raise Rejected(f"more than {MAX_FILES} files; submit only your kernel files")

    def read(self, stream, declared: int | None, name: str) -> bytes:
        remaining = MAX_UNPACKED_BYTES - self.bytes
        if declared is not None and declared > remaining:
            raise Rejected(f"more than {MAX_UNPACKED_BYTES // (1024 * 1024)} MB unpacked (at {name})")
        data = stream.read(remaining + 1)
        if len(data) > remaining:
            raise Rejected(f"more than {MAX_UNPACKED_BYTES // (1024 * 1024)} MB unpacked (at {name})")
        self.bytes += len(data)
        return data


def _check_path(name: str) -> str:
    if name.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", name):
        raise Rejected(f"the archive holds an absolute path ({name}); paths must be relative")
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if ".." in parts:
        raise Rejected(f"the archive holds a path that climbs out of it ({name})")
    return "/".join(p for p in parts if p not in ("", "."))


def _read_folder(folder: Path) -> dict[str, bytes]:
    budget, members = _Budget(), {}
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in dirs + files:
            path = Path(root) / name
            rel = path.relative_to(folder).as_posix()
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise Rejected(f"the submission holds a symbolic link ({rel}); submit plain files")
            if stat.S_ISDIR(mode):
                continue
            if not stat.S_ISREG(mode):
                raise Rejected(f"the submission holds a device file or pipe ({rel}); submit plain files")
            budget.add_file(rel)
            with open(path, "rb") as f:
                members[rel] = budget.read(f, path.lstat().st_size, rel)
    return members


def _read_tar(archive: Path) -> dict[str, bytes]:
    budget, members = _Budget(), {}
    try:
        with tarfile.open(archive, mode="r:gz") as tar:
            for info in tar:
                name = _check_path(info.name)
                if info.issym() or info.islnk():
                    raise Rejected(f"the archive holds a link ({info.name}); submit plain files")
                if info.ischr() or info.isblk() or info.isfifo():
                    raise Rejected(f"the archive holds a device file or pipe ({info.name}); submit plain files")
                if info.isdir():
                    continue
                if not info.isfile():
                    raise Rejected(f"the archive holds something that is not a plain file ({info.name})")
                budget.add_file(name)
                members[name] = budget.read(tar.extractfile(info), info.size, name)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as e:
        raise Rejected(f"the archive cannot be read as .tar.gz ({e})") from None
    return members


def _read_zip(archive: Path) -> dict[str, bytes]:
    budget, members = _Budget(), {}
    try:
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                name = _check_path(info.filename)
                kind = (info.external_attr >> 16) & 0o170000
                if kind == stat.S_IFLNK:
                    raise Rejected(f"the archive holds a link ({info.filename}); submit plain files")
                if kind in (stat.S_IFCHR, stat.S_IFBLK, stat.S_IFIFO):
                    raise Rejected(f"the archive holds a device file or pipe ({info.filename}); submit plain files")
                if info.is_dir():
                    continue
                budget.add_file(name)
                with z.open(info) as f:  # reads what is really there, whatever the header claims
                    members[name] = budget.read(f, None, name)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, NotImplementedError, zlib.error) as e:
        raise Rejected(f"the archive cannot be read as .zip ({e})") from None
    return members


def _recognize(sub: Submission, members: dict[str, bytes], task_files: list[str]) -> None:
    found: dict[str, list[str]] = {}
    for path in members:
        base = path.rsplit("/", 1)[-1]
        if base in task_files:
            found.setdefault(base, []).append(path)
        elif base == NICKNAME_FILE and sub.nickname is None:
            sub.nickname = parse_nickname(members[path])
        else:
            sub.ignored.append(path)
    for name in task_files:
        paths = sorted(found.get(name, []), key=lambda p: (p.count("/"), p))
        if not paths:
            sub.notes.append(f"{name} is missing: that task scores 0")
            continue
        try:
            members[paths[0]].decode("utf-8")
        except UnicodeDecodeError:
            raise Rejected(f"{paths[0]} is not a UTF-8 text file") from None
        sub.files[name] = members[paths[0]]
        for other in paths[1:]:
            sub.ignored.append(other)
            sub.notes.append(f"{name} appears more than once: graded {paths[0]}, ignored {other}")


def parse_nickname(data: bytes) -> str | None:
    """nickname.txt's first line, cleaned (clean_nickname); bytes that are not UTF-8 are dropped."""
    lines = data.decode("utf-8", errors="ignore").splitlines()
    return clean_nickname(lines[0]) if lines else None


def clean_nickname(text: str) -> str | None:
    """One line of at most 32 printable characters, trimmed, or None when nothing is left.

    Whitespace runs become one space; other characters that do not print (controls,
    bidirectional overrides, zero-width marks, a byte-order mark) are dropped, so a
    nickname cannot reorder or hide the text around it wherever it is shown."""
    line = text.splitlines()[0] if text else ""
    words = "".join(ch if ch.isprintable() or ch.isspace() else "" for ch in line).split()
    cleaned = " ".join(words)[:NICKNAME_MAX].strip()
    return cleaned or None


def _digest(entry: Path, members: dict[str, bytes]) -> str:
    if entry.is_dir():
        h = hashlib.sha256()
        for name in sorted(members):
            h.update(name.encode() + b"\0" + hashlib.sha256(members[name]).digest())
        return h.hexdigest()
    return _fallback_digest(entry)


def _fallback_digest(entry: Path) -> str:
    if entry.is_file():
        return hashlib.sha256(entry.read_bytes()).hexdigest()
    return hashlib.sha256(str(entry).encode()).hexdigest()
