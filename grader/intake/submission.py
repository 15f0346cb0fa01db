"""Reading a submissions directory safely.

Each entry of the directory is one student's submission, named by student id:
a folder, or a `.tar.gz`, `.tgz` or `.zip` archive. Archives are read into
memory and never extracted, so nothing in them can land outside the grader's
own files. Task files are recognized by name anywhere inside; everything else
is listed and ignored. A submission that breaks a rule is rejected with a
reason that goes into that student's feedback; the others are unaffected.

Reading is bounded (IntakeLimits, from the rubric's [limits]): the archive's
own size, every member of any kind counted (folders, links and devices too),
the bytes unpacked (an archive's stream is never read past them, whatever its
headers claim), and the time spent on one submission.

Two entries with the same student id (a folder and an archive, or two
archives): the one received last is graded (the course system's record of
the time, else the entry's own modification time: grader/intake/layouts.py; never a time
from inside an archive, which the student's machine sets), then the higher
rank (Canvas: submission id, duplicate number), then an archive before a
folder; the other is skipped, and the graded one's feedback says so
(choose_latest).
"""
from __future__ import annotations

import gzip
import hashlib
import io
import os
import re
import stat
import struct
import tarfile
import time
import zipfile
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from grader.core.received import FILE

MAX_UNPACKED_BYTES = 10 * 1024 * 1024
MAX_FILES = 1000  # plain files; every member of any kind counts against IntakeLimits.members
NICKNAME_FILE = "nickname.txt"
NICKNAME_MAX = 32
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip")
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")


class Rejected(Exception):
    """A submission that breaks an intake rule; the message is for the student."""


@dataclass(frozen=True)
class IntakeLimits:
    """What reading one submission may cost (grader/rubric.toml's [limits])."""
    archive_bytes: int = 10 * 1024 * 1024
    unpacked_bytes: int = MAX_UNPACKED_BYTES
    members: int = 2000
    files: int = MAX_FILES
    seconds: float = 30.0

    @classmethod
    def from_rubric(cls, limits) -> "IntakeLimits":
        return cls(int(limits.archive_mib * 2**20), int(limits.unpacked_mib * 2**20), int(limits.members),
                   min(MAX_FILES, int(limits.members)), float(limits.intake_seconds))


@dataclass
class Entry:
    """One submission entry as a course system delivered it (grader/intake/layouts.py): its path, whose it is, when it was
    received and where that time came from (grader/core/received.py; None: the entry's own file time), and how it
    ranks among the same student's entries received at the same second (Canvas: its submission id, then its
    duplicate number)."""
    path: Path
    student: str
    received: str | None = None
    notes: list[str] = field(default_factory=list)
    rank: tuple = ()
    received_from: str = ""
    aliases: tuple[str, ...] = ()  # other ids of the same student (Canvas's user id), for the roster
    # Files uploaded one by one rather than in an archive (Canvas: one download file each), as (the name the
    # student gave it, the downloaded file); `path` is then the first of them.
    loose: tuple[tuple[str, Path], ...] = ()

    def record(self) -> dict:
        """The entry as JSON (a Slurm batch's manifest: grader/slurm/), paths absolute."""
        return {"entry": str(Path(self.path).resolve()), "student": self.student, "received": self.received,
                "notes": list(self.notes), "rank": list(self.rank), "received_from": self.received_from,
                "aliases": list(self.aliases), "loose": [[name, str(p.resolve())] for name, p in self.loose]}

    @classmethod
    def from_record(cls, r: dict) -> "Entry":
        """An entry from its record (a manifest of an older grader holds only the path and the student; one
        whose time came from inside the archive has none, and gets the entry's file time)."""
        return cls(Path(r["entry"]), r["student"], r.get("received"), list(r.get("notes", [])),
                   tuple(r.get("rank", ())), str(r.get("received_from", "")), tuple(r.get("aliases", ())),
                   tuple((name, Path(p)) for name, p in r.get("loose", ())))


@dataclass
class Submission:
    student: str
    source: Path
    sha256: str = ""
    received: str = ""  # UTC ISO 8601: the course system's record, else the entry's own file time
    received_from: str = ""  # where `received` came from (grader/core/received.py)
    files: dict[str, bytes] = field(default_factory=dict)  # task file name -> contents
    nickname: str | None = None
    ignored: list[str] = field(default_factory=list)  # paths inside the submission that were not used
    notes: list[str] = field(default_factory=list)
    rejected: str | None = None
    rank: tuple = ()  # among the same student's entries received at the same second, the higher ranks later

    @property
    def key(self) -> str:
        """A name for this submission's folders, unique per entry: its id and a digest of where it came from
        (a folder and an archive of the same id never share one)."""
        return f"{self.student}-{hashlib.sha256(str(self.source).encode()).hexdigest()[:10]}"


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


def choose_latest(subs: list[Submission]) -> tuple[list[Submission], list[str]]:
    """One submission per student id: the one received last (an archive before a folder on a tie, then by
    name); the graded one's notes say which others were skipped. Returns (kept, a note per skipped entry)."""
    by_id: dict[str, list[Submission]] = {}
    for sub in subs:
        by_id.setdefault(sub.student, []).append(sub)
    kept, skipped = [], []
    for student, group in by_id.items():
        group.sort(key=lambda s: (s.received, s.rank, not s.source.is_dir(), s.source.name), reverse=True)
        kept.append(group[0])
        for other in group[1:]:
            shown = other.source.name + ("/" if other.source.is_dir() else "")
            group[0].notes.append(f"{shown} (received {other.received}) has the same student id; only the one "
                                  f"received last, {group[0].source.name} ({group[0].received}), was graded")
            skipped.append(f"{shown}: another entry with the id {student} was received later "
                           f"({group[0].source.name}); skipped")
    order = {id(s): i for i, s in enumerate(subs)}
    return sorted(kept, key=lambda s: order[id(s)]), skipped


def file_time(path: Path) -> str:
    """A file's (or folder's) own modification time on this machine, as UTC ISO 8601: set when it was copied
    or unpacked here, never read from inside it."""
    return datetime.fromtimestamp(Path(path).lstat().st_mtime, timezone.utc).isoformat(timespec="seconds")


def read_submission(entry: Path | Entry, task_files: list[str], limits: IntakeLimits | None = None) -> Submission:
    """Reads one entry (a path, named by the student id, or a course system's Entry); never raises for anything
    inside it (a broken one comes back rejected)."""
    meta = entry if isinstance(entry, Entry) else Entry(Path(entry), student_id(Path(entry)) or Path(entry).name)
    entry = Path(meta.path)
    limits = limits or IntakeLimits()
    sub = Submission(student=meta.student, source=entry, notes=list(meta.notes), rank=meta.rank)
    if meta.received:
        sub.received, sub.received_from = meta.received, meta.received_from
    else:
        sub.received, sub.received_from = file_time(entry), FILE
    budget = _Budget(limits)
    try:
        if meta.loose:
            members = _read_loose(meta.loose, budget)
        elif entry.is_dir():
            members = _read_folder(entry, budget)
        else:
            size = entry.stat().st_size
            if size > limits.archive_bytes:
                raise Rejected(f"the archive is {size / 2**20:.1f} MiB, more than the "
                               f"{limits.archive_bytes / 2**20:g} MiB an archive may be")
            members = _read_zip(entry, budget) if entry.name.endswith(".zip") else _read_tar(entry, budget)
        sub.sha256 = _digest(entry, members, folder_like=bool(meta.loose))
        _recognize(sub, members, task_files)
    except Rejected as e:
        sub.rejected = str(e)
        sub.files.clear()
        if not sub.sha256:
            sub.sha256 = _fallback_digest(entry)
    return sub


class _Budget:
    """Counts members, files, bytes and time as they are read, and rejects past the limits."""

    def __init__(self, limits: IntakeLimits):
        self.limits = limits
        self.members = 0
        self.files = 0
        self.bytes = 0
        self.deadline = time.monotonic() + limits.seconds

    def add_member(self, name: str):
        """Any entry: a file, a folder, a link, a device."""
        self.members += 1
        if self.members > self.limits.members:
            raise Rejected(f"more than {self.limits.members} entries (files, folders, links); submit only your "
                           "kernel files")
        if self.members % 64 == 0 and time.monotonic() > self.deadline:
            raise Rejected(f"reading it took longer than {self.limits.seconds:g} s; submit only your kernel files")

    def add_file(self, name: str):
        self.files += 1
        if self.files > self.limits.files:
            raise Rejected(f"more than {self.limits.files} files; submit only your kernel files")

    def _too_big(self, name: str) -> Rejected:
        return Rejected(f"more than {self.limits.unpacked_bytes // (1024 * 1024)} MB unpacked (at {name})")

    def unpacked(self, total: int, name: str):
        """The archive's stream has been read this far (headers, data and padding together)."""
        if total > self.limits.unpacked_bytes + 1024 * 1024:  # room for the tar headers of small files
            raise self._too_big(name)

    def read(self, stream, declared: int | None, name: str) -> bytes:
        remaining = self.limits.unpacked_bytes - self.bytes
        if declared is not None and declared > remaining:
            raise self._too_big(name)
        data = stream.read(remaining + 1)
        if len(data) > remaining:
            raise self._too_big(name)
        self.bytes += len(data)
        if time.monotonic() > self.deadline:
            raise Rejected(f"reading it took longer than {self.limits.seconds:g} s; submit only your kernel files")
        return data


def _check_path(name: str) -> str:
    if name.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", name):
        raise Rejected(f"the archive holds an absolute path ({name}); paths must be relative")
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if ".." in parts:
        raise Rejected(f"the archive holds a path that climbs out of it ({name})")
    return "/".join(p for p in parts if p not in ("", "."))


def _read_folder(folder: Path, budget: _Budget) -> dict[str, bytes]:
    members = {}
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in dirs + files:
            path = Path(root) / name
            rel = path.relative_to(folder).as_posix()
            budget.add_member(rel)
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise Rejected(f"the submission holds a symbolic link ({rel}); submit plain files")
            if stat.S_ISDIR(mode):
                continue
            if not stat.S_ISREG(mode):
                raise Rejected(f"the submission holds a device file or pipe ({rel}); submit plain files")
            members[rel] = _read_file(path, rel, budget)
    return members


def _read_file(path: Path, name: str, budget: _Budget) -> bytes:
    budget.add_file(name)
    with open(path, "rb") as f:
        return budget.read(f, path.lstat().st_size, name)


def _read_loose(files: tuple[tuple[str, Path], ...], budget: _Budget) -> dict[str, bytes]:
    """Files uploaded one by one, under the names the student gave them."""
    members = {}
    for name, path in files:
        budget.add_member(name)
        if not stat.S_ISREG(path.lstat().st_mode):
            raise Rejected(f"{path.name} is not a plain file")
        members[name] = _read_file(path, name, budget)
    return members


class _Bounded(io.RawIOBase):
    """The decompressed stream of a .tar.gz, which refuses to go past the unpacked limit: tarfile reads a
    long name's or a pax header's whole declared size into memory, and skips a member's data by
    decompressing it, before the caller sees any of it."""

    def __init__(self, stream, budget: _Budget):
        self.stream, self.budget = stream, budget

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.stream.tell()

    def read(self, n: int = -1) -> bytes:
        room = self.budget.limits.unpacked_bytes + 1024 * 1024 - self.stream.tell()
        if n is None or n < 0 or n > room:
            n = max(room, 0) + 1
        data = self.stream.read(n)
        self.budget.unpacked(self.stream.tell(), "the archive's stream")
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        target = offset if whence == 0 else self.stream.tell() + offset if whence == 1 else None
        if target is None:
            raise OSError("cannot seek from the end of a compressed stream")
        self.budget.unpacked(target, "the archive's stream")
        return self.stream.seek(target)


def _read_tar(archive: Path, budget: _Budget) -> dict[str, bytes]:
    members = {}
    try:
        with gzip.open(archive, "rb") as raw, tarfile.open(fileobj=_Bounded(raw, budget), mode="r:") as tar:
            while True:
                info = tar.next()  # one header at a time, each counted before the next is read
                if info is None:
                    break
                tar.members = []  # tarfile keeps every header it read: a million of them would be its memory
                budget.add_member(info.name)
                budget.unpacked(info.offset_data + max(info.size, 0), info.name)
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
    except (tarfile.TarError, EOFError, OSError, zlib.error, gzip.BadGzipFile) as e:
        raise Rejected(f"the archive cannot be read as .tar.gz ({e})") from None
    return members


def _zip_entries(archive: Path) -> int | None:
    """The entry count of a zip's end-of-central-directory record, read before the directory itself."""
    with open(archive, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - 65557))
        tail = f.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or at + 22 > len(tail):
        return None
    return struct.unpack_from("<H", tail, at + 10)[0]


def _read_zip(archive: Path, budget: _Budget) -> dict[str, bytes]:
    members = {}
    entries = _zip_entries(archive)
    if entries is not None and (entries == 0xFFFF or entries > budget.limits.members):
        raise Rejected(f"more than {budget.limits.members} entries (files, folders, links); submit only your "
                       "kernel files")
    try:
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                budget.add_member(info.filename)
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


def _digest(entry: Path, members: dict[str, bytes], folder_like: bool = False) -> str:
    if folder_like or entry.is_dir():
        h = hashlib.sha256()
        for name in sorted(members):
            h.update(name.encode() + b"\0" + hashlib.sha256(members[name]).digest())
        return h.hexdigest()
    return _fallback_digest(entry)


def _fallback_digest(entry: Path) -> str:
    if entry.is_file():
        return hashlib.sha256(entry.read_bytes()).hexdigest()
    return hashlib.sha256(str(entry).encode()).hexdigest()
