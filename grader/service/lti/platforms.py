"""The LMS platforms (and their deployments) this service accepts launches from, and the tool's own public URL:
RESULTS/lti/platforms.json, written by `bin/grader lti platform` and `bin/grader lti config --url`, read by the
service at each login (a platform registered while it runs counts at once)."""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from grader.core.errors import GraderError

FOLDER = "lti"
FILE = "platforms.json"
# Where a launch's id token names the student, tried in order against the roster's ids (a Canvas roster's SIS
# Login ID, SIS User ID and Canvas ID; a plain roster's student): the LIS person's sourced id (Canvas: the SIS
# user id), the LMS login (preferred_username; Canvas sends it where the developer key's privacy level allows),
# the e-mail address, the platform's own user id.
DEFAULT_USER_KEYS = ("lis.person_sourcedid", "preferred_username", "email", "sub")


class LtiConfigError(GraderError):
    """RESULTS/lti/platforms.json cannot be used; the message says what is wrong and how to fix it."""


@dataclass(frozen=True)
class Platform:
    issuer: str                   # the platform's `iss` (Canvas: https://canvas.instructure.com)
    client_id: str                # the tool's client id on that platform (Canvas: the developer key's id)
    deployments: tuple[str, ...]  # the deployment ids whose launches count (a course or an account's install)
    login_url: str                # the platform's OIDC authorization endpoint
    jwks_url: str                 # the platform's public keys
    token_url: str = ""           # its OAuth 2 token endpoint (grade passback and the roster service)
    user_keys: tuple[str, ...] = DEFAULT_USER_KEYS
    name: str = ""

    def __post_init__(self):
        for what, url in (("login URL", self.login_url), ("JWKS URL", self.jwks_url)):
            if urlparse(url).scheme not in ("https", "http") or not urlparse(url).netloc:
                raise LtiConfigError(f"the platform {self.issuer}: its {what} {url!r} is not an http(s) URL")
        if not self.issuer or not self.client_id or not self.deployments:
            raise LtiConfigError("a platform needs its issuer, the tool's client id there and at least one "
                                 "deployment id")

    @property
    def label(self) -> str:
        return self.name or self.issuer


@dataclass(frozen=True)
class LtiSetup:
    tool_url: str = ""  # where the LMS reaches this service (https://grader.example.edu), '' until set
    platforms: tuple[Platform, ...] = field(default=())

    def find(self, issuer: str, client_id: str | None) -> Platform | None:
        """The registration a login names: by issuer and client id, or by issuer alone where it has one."""
        same = [p for p in self.platforms if p.issuer == issuer]
        if client_id:
            same = [p for p in same if p.client_id == client_id]
        return same[0] if len(same) == 1 else None


def jose():
    """PyJWT (with cryptography), imported where the LTI tool first needs it: a service without LTI runs without."""
    try:
        import jwt
        from jwt.algorithms import has_crypto
    except ModuleNotFoundError as e:
        raise LtiConfigError(f"the LTI tool needs PyJWT and cryptography (grader/requirements.txt), and this Python "
                             f"has no {e.name}: run `make deps`") from None
    if not has_crypto:  # PyJWT without cryptography has no RS256
        raise LtiConfigError("the LTI tool needs cryptography beside PyJWT (grader/requirements.txt, PyJWT[crypto]):"
                             " run `make deps`")
    return jwt


def path(results: Path) -> Path:
    return Path(results) / FOLDER / FILE


def load(results: Path) -> LtiSetup:
    """The setup in RESULTS/lti/platforms.json; an empty one where there is no file."""
    file = path(results)
    if not file.exists():
        return LtiSetup()
    try:
        raw = json.loads(file.read_text())
        platforms = tuple(Platform(**{**p, "deployments": tuple(p["deployments"]),
                                      "user_keys": tuple(p.get("user_keys") or DEFAULT_USER_KEYS)})
                          for p in raw.get("platforms", []))
        return LtiSetup(raw.get("tool_url", ""), platforms)
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as e:
        raise LtiConfigError(f"{file}: not a platforms file this grader can read ({type(e).__name__}: {e}); "
                             "`bin/grader lti platform` writes it") from None


def save(results: Path, setup: LtiSetup) -> Path:
    """Writes the setup whole (a new file moved into place: a reader never sees half of it)."""
    file = path(results)
    file.parent.mkdir(parents=True, exist_ok=True)
    raw = {"tool_url": setup.tool_url,
           "platforms": [{**asdict(p), "deployments": list(p.deployments), "user_keys": list(p.user_keys)}
                         for p in setup.platforms]}
    new = file.with_name(f".{FILE}.new")
    new.write_text(json.dumps(raw, indent=1) + "\n")
    os.replace(new, file)
    return file


def register(results: Path, platform: Platform) -> LtiSetup:
    """Adds a platform, or replaces the one with its issuer and client id (a deployment list given again is the
    whole list)."""
    setup = load(results)
    kept = tuple(p for p in setup.platforms if (p.issuer, p.client_id) != (platform.issuer, platform.client_id))
    setup = LtiSetup(setup.tool_url, kept + (platform,))
    save(results, setup)
    return setup
