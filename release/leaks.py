"""The leak check: nothing in the student tarball may come from the solution, the grader or private data.

Two checks, over every file of the tarball:
- by path: every file must sit where student files live (ALLOWED), and no
  path may name a private place (FORBIDDEN), whatever folder it was moved to;
- by content: a token fingerprint (release/fingerprint.py) of every secret
  file (the solution's kernels, the planted-bug kernels, the sample class's
  submissions, the grader's code) is compared with every file; a file that
  holds half a secret file's fingerprint, or a long stretch of it, is a leak.

Files of the sample class that are byte-for-byte the starter's own stubs (the
"untouched stubs" student) are public by construction and are not secrets.
"""
from __future__ import annotations

import re
import tarfile
from dataclasses import dataclass
from pathlib import Path

from release.fingerprint import Fingerprint

REPO = Path(__file__).resolve().parents[1]

# Where a file of the tarball (below its top folder) may be.
ALLOWED = re.compile(r"(README\.md|handout/assignment\.html|data/manifest\.json|data/cases/.+|starter/.+)")
# Path components no file of the tarball may have, wherever it is.
FORBIDDEN = re.compile(r"(^|/)(solution|grader|sample-submissions|planted|hostile|results|\.git)(/|$)"
                       r"|\.(sqlite|sqlite3|db)$|(^|/)rubric\.toml$")

# The secrets, as globs from the repository root.
SECRET_GLOBS = ("solution/kernels/**/*", "solution/tests/planted/**/*.cu", "data/sample-submissions/**/*.cu",
                "grader/**/*.py", "grader/tests/hostile/**/*.cu")
STUBS = "starter/kernels"

# A file leaks a secret when it holds at least this share of the secret's shingles ...
MIN_SHARE = 0.5
# ... or at least this many of them (a whole kernel pasted into a large file).
MIN_SHARED = 200


@dataclass(frozen=True)
class Leak:
    path: str  # inside the tarball, below its top folder
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def secrets(repo: Path = REPO) -> list[Fingerprint]:
    stubs = {p.name: p.read_bytes() for p in (repo / STUBS).glob("*.cu")}
    found = []
    for pattern in SECRET_GLOBS:
        for path in sorted(repo.glob(pattern)):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            data = path.read_bytes()
            if "sample-submissions" in path.parts and stubs.get(path.name) == data:
                continue  # an untouched stub handed in as a sample: the students already have it
            fp = Fingerprint.of(path.relative_to(repo).as_posix(), data)
            if fp is not None and fp.shingles:
                found.append(fp)
    return found


def check(files: dict[str, bytes], secret_prints: list[Fingerprint]) -> list[Leak]:
    """Leaks among `files` (path below the top folder -> contents)."""
    leaks = []
    for path in sorted(files):
        if FORBIDDEN.search(path):
            leaks.append(Leak(path, "its path names a private place (solution, grader, sample submissions, "
                                    "planted bugs, results or the rubric)"))
        elif not ALLOWED.fullmatch(path):
            leaks.append(Leak(path, "not a place student files live (starter/, data/cases/, the handout, README.md)"))
        fp = Fingerprint.of(path, files[path])
        if fp is None:
            continue
        for secret in secret_prints:
            shared = secret.shared_with(fp)
            share = shared / len(secret.shingles)
            if share >= MIN_SHARE or shared >= MIN_SHARED:
                leaks.append(Leak(path, f"holds {share:.0%} of {secret.name}'s code ({shared} of its "
                                        f"{len(secret.shingles)} token shingles)"))
    return leaks


def check_tarball(tarball: Path, secret_prints: list[Fingerprint]) -> list[Leak]:
    """Leaks in a tarball. A member that is not a plain file or folder is one too: a link could point anywhere."""
    files, odd = {}, []
    with tarfile.open(tarball, "r:gz") as tar:
        for info in tar:
            path = info.name.split("/", 1)[1] if "/" in info.name else info.name
            if info.isfile():
                files[path] = tar.extractfile(info).read()
            elif not info.isdir():
                odd.append(Leak(path, "not a plain file (a link or a device)"))
    return odd + check(files, secret_prints)


def tree_files(root: Path) -> dict[str, bytes]:
    """Every file below a folder (an extracted tarball), by relative path."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
