"""How the tool calls a platform's services (grade passback, the roster): an OAuth 2 access token from the
platform's token endpoint, asked for with the tool's signed JWT as its credential (IMS security framework, client
credentials with a JWT assertion), kept per platform and scope until a minute before it expires; and the HTTP
calls, each failure one sentence (ServiceFailed)."""
from __future__ import annotations

import json
import secrets
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

from grader.service.lti import keys, platforms

HTTP_SECONDS = 20
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
ROSTER_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"


class ServiceFailed(Exception):
    """A call that failed; the message is what the staff read."""


class Tokens:
    def __init__(self, results: Path):
        self.results = Path(results)
        self._kept: dict[tuple[str, str, str], tuple[str, float]] = {}
        self._lock = threading.Lock()

    def token(self, platform: platforms.Platform, scope: str) -> str:
        key = (platform.issuer, platform.client_id, scope)
        with self._lock:
            known = self._kept.get(key)
        if known and known[1] > time.time():
            return known[0]
        if not platform.token_url:
            raise ServiceFailed(f"{platform.label} has no token URL registered (`bin/grader lti platform "
                                "--token-url`)")
        jwt = platforms.jose()
        signing = keys.current(self.results)
        issued = int(time.time())
        assertion = jwt.encode({"iss": platform.client_id, "sub": platform.client_id, "aud": platform.token_url,
                                "iat": issued, "exp": issued + 300, "jti": secrets.token_urlsafe(16)},
                               signing.private_pem, algorithm="RS256", headers={"kid": signing.kid})
        form = urlencode({"grant_type": "client_credentials", "client_assertion_type": ASSERTION_TYPE,
                          "client_assertion": assertion, "scope": scope}).encode()
        reply, _ = call("POST", platform.token_url, form, {"Content-Type": "application/x-www-form-urlencoded"})
        try:
            answer = json.loads(reply)
            token, seconds = answer["access_token"], int(answer.get("expires_in", 3600))
        except (ValueError, KeyError, TypeError):
            raise ServiceFailed(f"{platform.label}'s token endpoint answered without an access token") from None
        with self._lock:
            self._kept[key] = (token, time.time() + seconds - 60)
        return token


def call(method: str, url: str, body: bytes | None, headers: dict) -> tuple[bytes, dict]:
    """The reply's body and headers; ServiceFailed for an error status or no reply."""
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=HTTP_SECONDS) as reply:
            return reply.read(8 << 20), dict(reply.headers)
    except urllib.error.HTTPError as e:
        said = e.read(300).decode("utf-8", "replace").strip().replace("\n", " ")
        raise ServiceFailed(f"{url} answered {e.code}{': ' + said if said else ''}") from None
    except (urllib.error.URLError, OSError) as e:
        raise ServiceFailed(f"{url} could not be reached ({getattr(e, 'reason', e)})") from None
