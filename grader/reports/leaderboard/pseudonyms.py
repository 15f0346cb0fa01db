"""The names a published leaderboard shows: a student's nickname, or a pseudonym no one can reverse.

A pseudonym is drawn from HMAC-SHA256(salt, student id). The salt is a random
secret kept in a file of the course's own (by default results/pseudonym-salt,
created on the first publish, readable by its owner only), never in the
repository students can read: without it, nobody can tell which id a
pseudonym belongs to, not even by hashing every id on the roster. The same
salt gives the same pseudonyms on every publish.
"""
from __future__ import annotations

import hmac
import os
import secrets
import stat
from dataclasses import dataclass
from hashlib import sha256
from pathlib import Path

from grader.core.errors import GraderError
from grader.intake.submission import clean_nickname

SALT_HEX_CHARS = 64  # 32 random bytes
MIN_SALT_HEX_CHARS = 32

ADJECTIVES = (
    "Agile", "Amber", "Arctic", "Azure", "Bold", "Brave", "Bright", "Brisk", "Calm", "Clever", "Cobalt", "Cosmic",
    "Crimson", "Daring", "Dashing", "Eager", "Electric", "Emerald", "Fearless", "Fierce", "Fleet", "Frosty",
    "Gentle", "Golden", "Grand", "Happy", "Hasty", "Humble", "Icy", "Jade", "Jolly", "Keen", "Lively", "Lucky",
    "Lunar", "Mellow", "Merry", "Mighty", "Nimble", "Noble", "Onyx", "Patient", "Plucky", "Polar", "Proud",
    "Quick", "Quiet", "Rapid", "Restless", "Ruby", "Scarlet", "Silent", "Silver", "Solar", "Speedy", "Steady",
    "Stellar", "Swift", "Tidy", "Turbo", "Velvet", "Vivid", "Witty", "Zesty",
)
ANIMALS = (
    "Albatross", "Antelope", "Badger", "Beaver", "Bison", "Bobcat", "Capybara", "Caracal", "Cheetah", "Condor",
    "Corgi", "Coyote", "Crane", "Dingo", "Dolphin", "Eagle", "Falcon", "Ferret", "Fox", "Gazelle", "Gecko",
    "Gibbon", "Heron", "Hornet", "Ibex", "Jackal", "Jaguar", "Kestrel", "Kingfisher", "Koala", "Lemur", "Lynx",
    "Macaw", "Marmot", "Marten", "Mongoose", "Narwhal", "Newt", "Ocelot", "Octopus", "Orca", "Osprey", "Otter",
    "Owl", "Panda", "Pelican", "Penguin", "Puffin", "Quokka", "Raven", "Salamander", "Seal", "Shrike", "Sparrow",
    "Squid", "Stoat", "Swan", "Tapir", "Tern", "Tiger", "Toucan", "Walrus", "Wombat", "Yak",
)


class LeaderboardError(GraderError):
    """The leaderboard cannot be published; the message says what to fix."""


def load_or_create_salt(path: Path) -> tuple[bytes, list[str]]:
    """The salt in `path`, created (owner-only) when there is no such file; and warnings for the TA."""
    path = Path(path)
    warnings = []
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as e:
            raise LeaderboardError(f"{path}: cannot create the pseudonym salt ({e.strerror})") from None
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(SALT_HEX_CHARS // 2) + "\n")
        warnings.append(f"created the pseudonym salt {path}: keep it (and back it up) with grades.sqlite; "
                        "without it every generated pseudonym changes")
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as e:
        raise LeaderboardError(f"{path}: cannot read the pseudonym salt ({e})") from None
    if len(text) < MIN_SALT_HEX_CHARS or any(c not in "0123456789abcdefABCDEF" for c in text):
        raise LeaderboardError(f"{path}: not a pseudonym salt (expected at least {MIN_SALT_HEX_CHARS} hex digits); "
                               "restore it from a backup, or delete it to draw a new one (every pseudonym changes)")
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        warnings.append(f"{path} is readable by others: `chmod 600 {path}` (whoever reads it can reverse pseudonyms)")
    return bytes.fromhex(text[: len(text) // 2 * 2]), warnings


@dataclass(frozen=True)
class Pseudonyms:
    salt: bytes

    def _digest(self, student: str) -> bytes:
        return hmac.new(self.salt, student.encode("utf-8"), sha256).digest()

    def key(self, student: str) -> str:
        """A stable, opaque id for the student: what the published history is keyed by."""
        return self._digest(student).hex()[:16]

    def generated(self, student: str) -> str:
        """A readable pseudonym such as "Brisk Heron 37"."""
        d = self._digest(student)
        return f"{ADJECTIVES[d[0] % len(ADJECTIVES)]} {ANIMALS[d[1] % len(ANIMALS)]} {10 + d[2] % 90}"


def display_names(students: list[str], nicknames: dict[str, str | None], pseudonyms: Pseudonyms) -> dict[str, str]:
    """Each student's nickname (cleaned again, whatever the store holds) or generated pseudonym.

    Two students never show the same name: where names collide (ignoring case),
    each colliding one gets a short tag from its key, so nobody can pose as someone else."""
    names = {s: clean_nickname(nicknames.get(s) or "") or pseudonyms.generated(s) for s in students}
    seen: dict[str, int] = {}
    for name in names.values():
        seen[name.casefold()] = seen.get(name.casefold(), 0) + 1
    return {s: f"{n} ({pseudonyms.key(s)[:4]})" if seen[n.casefold()] > 1 else n for s, n in names.items()}
