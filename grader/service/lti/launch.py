"""An LTI 1.3 launch, checked (the OIDC third-party-initiated login, then the platform's id token), as IMS's
security framework and LTI 1.3 core ask: the login names a registered platform and sends the browser there with a
fresh state and nonce, kept in the store; the launch must bring back a state the store holds (once), and an id
token signed by a key of the platform's JWKS, issued by that platform, for this tool's client id, not expired, with
the login's nonce (never seen before), from a registered deployment. The student is who the token names on the
roster; the staff are those whose role in the course (its context) is Instructor or Teaching Assistant: a role
elsewhere in the institution counts for nothing. Every refusal is one sentence saying what was wrong."""
from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from urllib.parse import urlencode, urlparse

from grader.service.lti.platforms import LtiSetup, Platform, jose
from grader.service.lti.services import SCORE_SCOPE
from grader.store.jobs import Jobs

LOGIN_MINUTES = 10  # from the login step to its launch
LEEWAY = 60  # seconds of clock difference allowed on the token's times
CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
STAFF_ROLES = {f"{MEMBERSHIP}#Instructor", f"{MEMBERSHIP}/Instructor#TeachingAssistant",
               f"{MEMBERSHIP}#TeachingAssistant"}
STUDENT_ROLES = {f"{MEMBERSHIP}#Learner", f"{MEMBERSHIP}/Learner#Learner"}
RESOURCE_LINK = "LtiResourceLinkRequest"
DEEP_LINKING = "LtiDeepLinkingRequest"
DL_SETTINGS = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
AGS_ENDPOINT = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"


class LtiRefused(Exception):
    """A login or launch this service does not accept; the message is for the person who clicked."""

    def __init__(self, message: str, status: int = 403):
        super().__init__(message)
        self.message, self.status = message, status


@dataclass(frozen=True)
class Launch:
    role: str        # student or staff
    student: str     # the roster's id ('' for staff)
    name: str        # as the platform names the person
    platform: Platform
    claims: dict


def login_redirect(setup: LtiSetup, jobs: Jobs, params: dict, launch_url: str) -> tuple[str, str]:
    """The platform's authorization URL for a login initiation's parameters (iss, login_hint, target_link_uri,
    and lti_message_hint, client_id, lti_deployment_id where sent), and the state; the state and nonce are kept."""
    issuer, hint, target = params.get("iss", ""), params.get("login_hint", ""), params.get("target_link_uri", "")
    if not issuer or not hint or not target:
        raise LtiRefused("an LTI login needs iss, login_hint and target_link_uri: start from the course's page "
                         "in the LMS", 400)
    platform = setup.find(issuer, params.get("client_id"))
    if platform is None:
        raise LtiRefused(f"the platform {issuer} (client id {params.get('client_id') or 'not given'}) is not "
                         "registered with this service: the course staff register it with `bin/grader lti "
                         "platform`")
    deployment = params.get("lti_deployment_id")
    if deployment and deployment not in platform.deployments:
        raise LtiRefused(f"the deployment {deployment} of {platform.label} is not registered with this service")
    here = urlparse(launch_url)
    if urlparse(target)[:2] != here[:2]:
        raise LtiRefused(f"the login asks to go on to {target}, which is not this service", 400)
    state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    jobs.lti_begin(state, nonce, platform.issuer, platform.client_id,
                   datetime.now(timezone.utc) + timedelta(minutes=LOGIN_MINUTES))
    query = {"scope": "openid", "response_type": "id_token", "response_mode": "form_post", "prompt": "none",
             "client_id": platform.client_id, "redirect_uri": launch_url, "login_hint": hint, "state": state,
             "nonce": nonce}
    if params.get("lti_message_hint"):
        query["lti_message_hint"] = params["lti_message_hint"]
    joiner = "&" if urlparse(platform.login_url).query else "?"
    return f"{platform.login_url}{joiner}{urlencode(query)}", state


_clients: dict[str, object] = {}
_clients_lock = threading.Lock()


def _signing_key(platform: Platform, kid: str | None):
    """The platform's key for `kid` from its JWKS (fetched, and cached for five minutes; a kid not in the cache
    fetches again)."""
    jwt = jose()
    with _clients_lock:
        client = _clients.get(platform.jwks_url)
        if client is None:
            client = _clients[platform.jwks_url] = jwt.PyJWKClient(platform.jwks_url, lifespan=300, timeout=10)
    try:
        if kid:
            return client.get_signing_key(kid).key
        found = client.get_signing_keys()
    except jwt.PyJWKClientConnectionError as e:
        raise LtiRefused(f"the keys of {platform.label} could not be fetched from {platform.jwks_url} ({e})", 502)
    except jwt.PyJWKClientError as e:
        raise LtiRefused(f"the id token was signed with a key {platform.label} does not publish ({e})")
    if len(found) != 1:
        raise LtiRefused(f"the id token names no key (kid), and {platform.label} publishes {len(found)}")
    return found[0].key


def check_launch(setup: LtiSetup, jobs: Jobs, form: dict, state_cookie: str | None, cookie_required: bool
                 ) -> Launch:
    """The launch's person, from its form (id_token, state): refused unless every check holds."""
    jwt = jose()
    token, state = form.get("id_token", ""), form.get("state", "")
    if not token or not state:
        raise LtiRefused("an LTI launch needs an id_token and a state: start from the course's page in the LMS", 400)
    if state_cookie != state and (state_cookie is not None or cookie_required):
        raise LtiRefused("this launch was not started in this browser (its state does not match): start again "
                         "from the course's page")
    begun = jobs.lti_take(state)
    if begun is None:
        raise LtiRefused("this launch's login is unknown, expired or already used: start again from the course's "
                         "page")
    platform = setup.find(begun["issuer"], begun["client_id"])
    if platform is None:
        raise LtiRefused(f"the platform {begun['issuer']} is no longer registered with this service")
    try:
        header = jwt.get_unverified_header(token)
    except jwt.DecodeError:
        raise LtiRefused("the id token is not a JSON Web Token", 400) from None
    if header.get("alg") != "RS256":
        raise LtiRefused(f"the id token is signed with {header.get('alg')!r}; LTI 1.3 uses RS256")
    key = _signing_key(platform, header.get("kid"))
    try:
        claims = jwt.decode(token, key, algorithms=["RS256"], audience=platform.client_id, issuer=platform.issuer,
                            leeway=LEEWAY, options={"require": ["exp", "iat", "iss", "aud", "sub", "nonce"]})
    except jwt.InvalidSignatureError:
        raise LtiRefused(f"the id token's signature is not one of {platform.label}'s keys") from None
    except jwt.ExpiredSignatureError:
        raise LtiRefused("the id token has expired: start again from the course's page") from None
    except jwt.InvalidAudienceError:
        raise LtiRefused(f"the id token is for another tool, not this service's client id {platform.client_id}") \
            from None
    except jwt.InvalidIssuerError:
        raise LtiRefused(f"the id token was not issued by {platform.issuer}, which started this login") from None
    except jwt.MissingRequiredClaimError as e:
        raise LtiRefused(f"the id token lacks its {e.claim!r} claim") from None
    except jwt.InvalidTokenError as e:
        raise LtiRefused(f"the id token is not valid ({e})") from None
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    if len(audiences) > 1 and claims.get("azp") != platform.client_id:
        raise LtiRefused("the id token names several audiences and its azp is not this service's client id")
    if not secrets.compare_digest(str(claims["nonce"]), begun["nonce"]):
        raise LtiRefused("the id token's nonce is not the one this login sent")
    expires = datetime.fromtimestamp(int(claims["exp"]) + LEEWAY, timezone.utc)
    if jobs.lti_nonce_used(platform.issuer, str(claims["nonce"]), expires):
        raise LtiRefused("this id token was used before (a replayed launch)")
    deployment = claims.get(CLAIM + "deployment_id")
    if deployment not in platform.deployments:
        raise LtiRefused(f"the deployment {deployment!r} of {platform.label} is not registered with this service")
    if claims.get(CLAIM + "version") != "1.3.0":
        raise LtiRefused(f"the launch is LTI version {claims.get(CLAIM + 'version')!r}, not 1.3.0")
    kind = claims.get(CLAIM + "message_type")
    if kind not in (RESOURCE_LINK, DEEP_LINKING):
        raise LtiRefused(f"this service takes {RESOURCE_LINK} and {DEEP_LINKING} launches, not {kind!r}", 400)
    found = _person(platform, claims, jobs)
    if kind == DEEP_LINKING:
        settings = claims.get(DL_SETTINGS)
        if found.role != "staff":
            raise LtiRefused("adding the assignment to a course is for its instructors")
        if not isinstance(settings, dict) or urlparse(str(settings.get("deep_link_return_url", ""))).scheme not in (
                "https", "http"):
            raise LtiRefused("the deep linking request names no deep_link_return_url", 400)
    return found


def _person(platform: Platform, claims: dict, jobs: Jobs) -> Launch:
    roles = set(claims.get(CLAIM + "roles") or [])
    name = str(claims.get("name") or claims.get("email") or claims.get("sub"))
    if roles & STAFF_ROLES:
        return Launch("staff", "", name, platform, claims)
    if not roles & STUDENT_ROLES:
        shown = ", ".join(sorted(r.rsplit("#", 1)[-1] for r in roles)) or "none"
        raise LtiRefused(f"your role in this course ({shown}) is neither a student's (Learner) nor the staff's "
                         "(Instructor, Teaching Assistant)")
    ids = [v for v in (_claim(claims, key) for key in platform.user_keys) if v]
    student = _on_roster(jobs, ids)
    if student is None:
        raise LtiRefused(f"you ({name}; {', '.join(ids) or 'no id'}) are not on this course's roster here: ask "
                         "the course staff to add you (`bin/grader tokens --roster`)")
    return Launch("student", student, name, platform, claims)


def _claim(claims: dict, key: str) -> str:
    """One of Platform.user_keys: 'lis.person_sourcedid', 'custom.NAME' or a top-level claim ('email', ...)."""
    if "." in key:
        part, field = key.split(".", 1)
        value = (claims.get(CLAIM + part) or {}).get(field) if isinstance(claims.get(CLAIM + part), dict) else None
    else:
        value = claims.get(key)
    return str(value).strip() if value not in (None, "") else ""


def _on_roster(jobs: Jobs, ids: list[str]) -> str | None:
    """The roster's student whose id, or one of whose other ids (a Canvas roster's), is one of `ids`."""
    import json
    roster = jobs.store.roster()
    wanted = {i.casefold() for i in ids}
    for row in roster.itertuples():
        names = {row.student, *json.loads(row.keys or "[]")}
        if {n.casefold() for n in names if n} & wanted:
            return row.student
    return None


def is_deep_linking(launch: Launch) -> bool:
    return launch.claims.get(CLAIM + "message_type") == DEEP_LINKING


def graded_link(launch: Launch) -> str:
    """The line item a student's scores go to: the launch's link is a graded one (the LMS sent its line item and
    lets the tool post scores), else ''."""
    endpoint = launch.claims.get(AGS_ENDPOINT)
    if launch.role != "student" or not isinstance(endpoint, dict) or SCORE_SCOPE not in (endpoint.get("scope") or []):
        return ""
    lineitem = endpoint.get("lineitem")
    return lineitem if isinstance(lineitem, str) and urlparse(lineitem).scheme in ("https", "http") else ""


def roster_service(launch: Launch) -> tuple[str, str, str] | None:
    """(course id, its title, its membership service's URL) where the launch names the roster service."""
    service, context = launch.claims.get(NRPS_CLAIM), launch.claims.get(CLAIM + "context")
    if not isinstance(service, dict) or not isinstance(context, dict) or not context.get("id"):
        return None
    url = service.get("context_memberships_url")
    if not isinstance(url, str) or urlparse(url).scheme not in ("https", "http"):
        return None
    return str(context["id"]), str(context.get("title") or ""), url
