"""bin/grader lti: the service as an LTI 1.3 tool of the course's LMS (docs/lti.md). `config` prints what the LMS
asks for (the tool's URLs, Canvas's developer key JSON, Moodle's fields) and sets the tool's public URL; `platform`
registers an LMS (its issuer, the tool's client id and deployment there, its login and key URLs); `roster` stores
the roster from the LMS's courses; `keys` shows or rotates the tool's signing keys. Everything lives in
RESULTS/lti/, beside the store the service reads."""
from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlparse

from grader.cli.common import UsageError, common
from grader.core.errors import GraderError
from grader.service.lti import keys, platforms

AGS = "https://purl.imsglobal.org/spec/lti-ags/scope/"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"


def _url(text: str) -> str:
    parsed = urlparse(text)
    if parsed.scheme not in ("https", "http") or not parsed.netloc or parsed.query or parsed.fragment:
        raise UsageError(f"{text!r} is not the service's base URL (such as https://grader.example.edu)")
    return text.rstrip("/")


def cmd_lti_config(args) -> int:
    results = Path(args.results)
    setup = platforms.load(results)
    if args.url:
        setup = platforms.LtiSetup(_url(args.url), setup.platforms)
        platforms.save(results, setup)
    if not setup.tool_url:
        raise UsageError("give --url https://... (where the LMS reaches this service, behind its proxy): the LMS "
                         "needs the tool's URLs")
    base = setup.tool_url
    urls = {"login": f"{base}/lti/login", "launch": f"{base}/lti/launch", "jwks": f"{base}/lti/jwks"}
    current = keys.current(results)
    print(f"The tool's URLs (RESULTS/lti/platforms.json's tool_url is {base}):")
    print(f"  OpenID Connect login initiation URL  {urls['login']}")
    print(f"  launch (target link) URL             {urls['launch']}")
    print(f"  redirect URI                         {urls['launch']}")
    print(f"  public key set (JWKS) URL            {urls['jwks']}   (current key {current.kid})")
    print("\nCanvas (Admin > Developer Keys > + LTI Key, Method: Paste JSON):")
    print(json.dumps(canvas_key(args.title, urls), indent=2))
    print("\nMoodle (Site administration > Plugins > Activity modules > External tool > Manage tools > "
          "configure a tool manually):")
    for field, value in (("Tool URL", urls["launch"]), ("LTI version", "LTI 1.3"),
                         ("Public key type", "Keyset URL"), ("Public keyset", urls["jwks"]),
                         ("Initiate login URL", urls["login"]), ("Redirection URI(s)", urls["launch"]),
                         ("Supports Deep Linking (Content-Item Message)", "yes"),
                         ("Content Selection URL", urls["launch"]), ("Default launch container", "New window")):
        print(f"  {field:<45} {value}")
    print(f"\nThen register the LMS with `bin/grader lti platform` (its issuer, the client id and deployment id it "
          f"gives the tool, its login and key URLs). Registered now: {len(setup.platforms)}")
    for p in setup.platforms:
        print(f"  {p.label}: client id {p.client_id}, deployments {', '.join(p.deployments)}")
    return 0


def canvas_key(title: str, urls: dict) -> dict:
    """Canvas's LTI 1.3 developer key: the course navigation's link opens the service in a new tab (its pages may
    not be framed); an assignment's "External Tool" picker adds it by deep linking (with its gradebook column); the
    user's login and id come as custom fields the roster matches."""
    return {"title": title, "description": "The course's grading service: your uploads and their results.",
            "oidc_initiation_url": urls["login"], "target_link_uri": urls["launch"],
            "public_jwk_url": urls["jwks"],
            "scopes": [AGS + "lineitem", AGS + "result.readonly", AGS + "score", NRPS],
            "extensions": [{"platform": "canvas.instructure.com", "privacy_level": "public",
                            "settings": {"placements": [{"placement": "course_navigation",
                                                         "message_type": "LtiResourceLinkRequest",
                                                         "target_link_uri": urls["launch"],
                                                         "windowTarget": "_blank", "text": title},
                                                        {"placement": "assignment_selection",
                                                         "message_type": "LtiDeepLinkingRequest",
                                                         "target_link_uri": urls["launch"], "text": title}]}}],
            "custom_fields": {"canvas_user_login_id": "$Canvas.user.loginId",
                              "canvas_user_id": "$Canvas.user.id"}}


def cmd_lti_platform(args) -> int:
    try:
        platform = platforms.Platform(issuer=args.issuer, client_id=args.client_id,
                                      deployments=tuple(args.deployment), login_url=args.login_url,
                                      jwks_url=args.jwks_url, token_url=args.token_url or "",
                                      user_keys=tuple(args.user_key or platforms.DEFAULT_USER_KEYS),
                                      name=args.name or "")
    except platforms.LtiConfigError as e:
        raise UsageError(str(e)) from None
    setup = platforms.register(Path(args.results), platform)
    print(f"registered {platform.label} (client id {platform.client_id}, deployments "
          f"{', '.join(platform.deployments)}); {len(setup.platforms)} platform(s) in "
          f"{platforms.path(Path(args.results))}")
    return 0


def cmd_lti_roster(args) -> int:
    from grader.service.lti import roster, services
    try:
        done = roster.import_roster(Path(args.results))
    except services.ServiceFailed as e:
        raise GraderError(f"the roster was not read from the LMS: {e}; the stored roster is as it was") from None
    for d in done:
        print(f"{d.course}: {d.learners} student{'' if d.learners == 1 else 's'}")
    print(f"stored as the roster in {Path(args.results) / 'grades.sqlite'} (the service refreshes it each hour)")
    return 0


def cmd_lti_keys(args) -> int:
    results = Path(args.results)
    if args.rotate:
        made = keys.new_key(results)
        print(f"new signing key {made.kid}; the one before it stays published until the next rotation")
    for key in keys.keys(results) or [keys.current(results)]:
        print(key.kid)
    return 0


def add_commands(sub) -> None:
    lt = sub.add_parser("lti", help="the service as an LTI 1.3 tool of the course's LMS (docs/lti.md)",
                        description=__doc__.split("\n\n")[0])
    steps = lt.add_subparsers(dest="lti_command", required=True, metavar="step")
    cf = steps.add_parser("config", help="print the tool's URLs and what Canvas and Moodle ask for")
    common(cf)
    cf.add_argument("--url", default=None, help="where the LMS reaches this service (https://..., kept)")
    cf.add_argument("--title", default="Grading service", help="the link's name in the LMS (default: %(default)s)")
    cf.set_defaults(func=cmd_lti_config)
    pf = steps.add_parser("platform", help="register an LMS (or replace its registration)")
    common(pf)
    pf.add_argument("--issuer", required=True, help="the platform's issuer (Canvas: https://canvas.instructure.com)")
    pf.add_argument("--client-id", required=True, help="the tool's client id there (Canvas: the developer key's id)")
    pf.add_argument("--deployment", action="append", required=True, metavar="ID",
                    help="a deployment id whose launches count (repeatable)")
    pf.add_argument("--login-url", required=True, help="the platform's OIDC authorization endpoint")
    pf.add_argument("--jwks-url", required=True, help="the platform's public key set")
    pf.add_argument("--token-url", default=None, help="the platform's OAuth 2 token endpoint")
    pf.add_argument("--user-key", action="append", default=None, metavar="CLAIM",
                    help="where the id token names the student, tried in order against the roster's ids: "
                         "lis.person_sourcedid, custom.NAME, email, preferred_username, sub (repeatable; default: "
                         f"{', '.join(platforms.DEFAULT_USER_KEYS)})")
    pf.add_argument("--name", default=None, help="what the pages call it (default: its issuer)")
    pf.set_defaults(func=cmd_lti_platform)
    rs = steps.add_parser("roster", help="store the roster of every course that launched the service, from the "
                                         "LMS (its Learners; the service does it each hour)")
    common(rs)
    rs.set_defaults(func=cmd_lti_roster)
    ks = steps.add_parser("keys", help="list the tool's signing keys, or --rotate them")
    common(ks)
    ks.add_argument("--rotate", action="store_true", help="make a new key (the previous one stays published)")
    ks.set_defaults(func=cmd_lti_keys)
