"""Compiled task files kept by what they were compiled from, so that a build compiles only what nobody compiled yet.

A submission's task file compiles to the same object whoever hands it in, once the build sees one fixed layout
(backends/build_view.py): its bytes, its name, the make target (objects, race-objects) and the build cache entry
it is compiled against (whose key holds the harness's sources and headers, the flags in its Makefile, the
architecture and the toolchain) decide it, with the headers outside that entry it read (the header libraries,
the toolkit's, the system's), whose contents are checked again on every use. `grade`, `serve`, the Slurm shards
and the tests share one store beside the build cache entries:

    CACHE/objects/<key[:2]>/<key>/object.o      the object as the compiler wrote it (before the gate seals it)
                                  object.d      its dependency list, with the fixed layout's paths
                                  object.log    what the compiler said (warnings), shown again on every use
                                  inputs.json   each file it read outside the entry, with its sha256

An entry is written under a temporary name and renamed into place, so a reader sees one whole or none; two
builds storing the same key keep the first. What the store holds came from the grader's own sandboxed compile
of exactly the bytes its key names: a file that read another task file is not stored (its object would hold
code its key does not name), nor is one whose inputs cannot all be read.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from grader.backends.build_view import BuildView
from grader.gate.check import listed_dependencies

FORMAT = "objects-1"  # the layout of an entry and of the build view: a change here starts a new store
_hashes: dict[tuple[str, int, int], str] = {}  # (path, mtime_ns, size) -> sha256, for the headers read again


def file_sha256(path: Path) -> str:
    st = path.stat()
    memo = (str(path), st.st_mtime_ns, st.st_size)
    if memo not in _hashes:
        _hashes[memo] = hashlib.sha256(path.read_bytes()).hexdigest()
    return _hashes[memo]


class ObjectCache:
    def __init__(self, root: Path, entry_key: str):
        self.root = Path(root)
        self.entry_key = entry_key
        self.hits = 0  # objects this process took from the store (for the tests and the job log)
        self.stored = 0

    def key(self, target: str, name: str, data: bytes) -> str:
        h = hashlib.sha256(f"{FORMAT}\0{self.entry_key}\0{target}\0{name}\0".encode())
        h.update(data)
        return h.hexdigest()

    def _folder(self, key: str) -> Path:
        return self.root / key[:2] / key

    def fetch(self, target: str, name: str, data: bytes, objects: Path, view: BuildView) -> str | None:
        """Puts the stored object of `name` (its bytes `data`) into `objects` (with its dependency list, made
        the real paths), newer than its source so make keeps it; what the compiler said then, or None where
        the store has none, or one whose headers changed since."""
        folder = self._folder(self.key(target, name, data))
        try:
            inputs = json.loads((folder / "inputs.json").read_text())
            if any(file_sha256(Path(path)) != digest for path, digest in inputs.items()):
                return None
            stem = Path(name).stem
            objects.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(folder / "object.o", objects / f"{stem}.o")
            (objects / f"{stem}.d").write_text(view.to_host((folder / "object.d").read_text()))
            said = (folder / "object.log").read_text(errors="replace")
            (objects / f"{stem}.o.log").write_text(said)
        except (OSError, ValueError):
            return None
        self.hits += 1
        return said

    def store(self, target: str, name: str, data: bytes, objects: Path, view: BuildView) -> bool:
        """Keeps the object make just wrote for `name` in `objects` (its dependency list still as the build saw
        it); whether it was stored."""
        stem = Path(name).stem
        obj, dep, log = objects / f"{stem}.o", objects / f"{stem}.d", objects / f"{stem}.o.log"
        try:
            dep_text = dep.read_text()
            inputs = {}
            own = str(view.kernels / name)
            for path in listed_dependencies(view.to_host(dep_text)):
                real = Path(path) if os.path.isabs(path) else view.pristine / path
                if str(real) == own or real.is_relative_to(view.pristine):
                    continue  # the file itself (the key), and the entry's own sources (the entry key)
                if real.is_relative_to(view.kernels):
                    return False  # it read another task file: its object holds code the key does not name
                inputs[str(real)] = file_sha256(real)
            folder = self._folder(self.key(target, name, data))
            if folder.exists():
                return False
            folder.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".new-", dir=folder.parent))
            shutil.copyfile(obj, tmp / "object.o")
            (tmp / "object.d").write_text(dep_text)
            (tmp / "object.log").write_text(log.read_text(errors="replace") if log.is_file() else "")
            (tmp / "inputs.json").write_text(json.dumps(inputs, indent=0, sort_keys=True))
            tmp.chmod(0o755)
            try:
                os.rename(tmp, folder)
            except OSError:  # another build stored it first
                shutil.rmtree(tmp, ignore_errors=True)
                return False
        except (OSError, ValueError):
            return False
        self.stored += 1
        return True
