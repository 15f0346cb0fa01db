"""The tool's own signing keys (RSA, RS256), in RESULTS/lti/keys/ readable by their owner only: what the tool
signs with when it speaks to a platform (a deep link's answer, the token requests of grade passback and the
roster), published at /lti/jwks. `rotate` makes a new one and keeps the one before it published, so a platform
that cached the old key is not refused mid-rotation; older ones are removed."""
from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from grader.service.lti.platforms import FOLDER, jose

KEYS = "keys"
PUBLISHED = 2  # the current key and the one before it


@dataclass(frozen=True)
class ToolKey:
    kid: str
    private_pem: bytes
    public_jwk: dict


def folder(results: Path) -> Path:
    return Path(results) / FOLDER / KEYS


def _load(file: Path) -> ToolKey:
    jose()
    from cryptography.hazmat.primitives import serialization
    from jwt.algorithms import RSAAlgorithm
    pem = file.read_bytes()
    public = serialization.load_pem_private_key(pem, password=None).public_key()
    jwk = RSAAlgorithm.to_jwk(public, as_dict=True)
    # RFC 7638's thumbprint: the same key always has the same id
    canonical = json.dumps({k: jwk[k] for k in ("e", "kty", "n")}, separators=(",", ":"), sort_keys=True)
    kid = base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()
    return ToolKey(kid, pem, {**jwk, "kid": kid, "alg": "RS256", "use": "sig"})


def _files(results: Path) -> list[Path]:
    """The key files, oldest first (their names are their creation order)."""
    return sorted(folder(results).glob("tool-*.pem"))


def keys(results: Path) -> list[ToolKey]:
    return [_load(f) for f in _files(results)]


@contextmanager
def _making(results: Path):
    """Held while a key is made: one at a time, across the service's threads and processes and the CLI."""
    keep = folder(results)
    keep.mkdir(parents=True, exist_ok=True)
    keep.chmod(0o700)
    with open(keep / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def new_key(results: Path) -> ToolKey:
    """A new current key; keys older than the one before it are removed."""
    with _making(results):
        return _new_key(results)


def _new_key(results: Path) -> ToolKey:
    """new_key's work, with the lock held."""
    jose()
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    number = max([int(f.stem.split("-")[1]) for f in _files(results)] or [0]) + 1
    keep = folder(results)
    file = keep / f"tool-{number:04d}.pem"
    # Written whole under another name, then renamed: a reader (/lti/jwks, a signature) never sees half a key.
    part = keep / f".part-{number:04d}"
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(pem)
    os.replace(part, file)
    for old in _files(results)[:-PUBLISHED]:
        old.unlink()
    return _load(file)


def current(results: Path) -> ToolKey:
    """The key the tool signs with now (made on first use, once: two first requests at once get the same key)."""
    files = _files(results)
    if files:
        return _load(files[-1])
    with _making(results):
        files = _files(results)
        return _load(files[-1]) if files else _new_key(results)


def jwks(results: Path) -> dict:
    """The published key set: the current key and the one before it."""
    return {"keys": [k.public_jwk for k in keys(results)[-PUBLISHED:]]}
