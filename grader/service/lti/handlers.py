"""The LTI tool's addresses: /lti/login (the platform's login initiation, GET or POST), /lti/launch (the browser
posts the platform's id token here) and /lti/jwks (the tool's public keys). A launch that passes every check
(launch.py) gets a session as the login form gives one: a token of its own (kept hashed, revocable, named after the
platform) in the same cookie; the student lands on their page, the staff on theirs. A deep linking launch (an
instructor adding the assignment, deep_link.py) gets the page whose button sends the signed answer to the LMS."""
from __future__ import annotations

from urllib.parse import urlparse

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from grader.service import tokens
from grader.service.context import service_of
from grader.service.log import say
from grader.service.lti import deep_link, keys, launch, platforms
from grader.service.pages import PageRefused, handled, render, with_session

STATE_COOKIE = "grader_lti_state"
LAUNCH_FORM_BYTES = 64 * 1024  # an id token with its claims (a platform's roster and grade service URLs): a few KB


def _setup(request: Request) -> platforms.LtiSetup:
    setup = platforms.load(service_of(request).results)
    if not setup.platforms:
        raise PageRefused(404, "This service takes no LTI launches: no platform is registered (the course staff "
                               "register one with `bin/grader lti platform`, docs/lti.md).")
    return setup


def _secure(request: Request, setup: platforms.LtiSetup) -> bool:
    return request.url.scheme == "https" or setup.tool_url.startswith("https://")


def launch_url(request: Request, setup: platforms.LtiSetup) -> str:
    base = setup.tool_url or f"{request.url.scheme}://{request.url.netloc}"
    return base.rstrip("/") + "/lti/launch"


def _refusal(fn):
    def checked(request: Request) -> Response:
        try:
            return fn(request)
        except launch.LtiRefused as e:
            say(f"lti: refused {request.url.path}: {e.message}")
            raise PageRefused(e.status, f"The LMS's launch was refused: {e.message}.") from None
    return checked


@_refusal
def login(request: Request) -> Response:
    setup = _setup(request)
    params = dict(request.query_params)
    if request.method == "POST":
        params.update(request.state.form)
    url, state = launch.login_redirect(setup, service_of(request).jobs(), params, launch_url(request, setup))
    response = RedirectResponse(url, status_code=302)
    # Binds the launch to this browser: it comes back with the platform's cross-site form post, which only a
    # SameSite=None cookie survives (and such a cookie must be Secure: over plain http the binding is the store's).
    secure = _secure(request, setup)
    response.set_cookie(STATE_COOKIE, state, max_age=launch.LOGIN_MINUTES * 60, httponly=True,
                        samesite="none" if secure else "lax", secure=secure, path="/lti/")
    return response


@_refusal
def launched(request: Request) -> Response:
    setup = _setup(request)
    service = service_of(request)
    jobs = service.jobs()
    found = launch.check_launch(setup, jobs, request.state.form, request.cookies.get(STATE_COOKIE),
                                cookie_required=_secure(request, setup))
    course = launch.roster_service(found)
    if course:  # the roster can come from this course from now on (roster.py)
        jobs.lti_context_seen(found.platform.issuer, found.platform.client_id, *course)
    if launch.is_deep_linking(found):  # an instructor adding the assignment: the answer goes back to the LMS
        back, answer = deep_link.answer(service.results, found, service.rubric, launch_url(request, setup))
        say(f"lti: {found.name} adds the assignment from {found.platform.label}")
        there = urlparse(back)
        page = render(service, "lti_deep_link.html.j2", None, {"back": back, "jwt": answer,
                                                               "platform": found.platform.label},
                      form_to=(f"{there.scheme}://{there.netloc}",))
        page.delete_cookie(STATE_COOKIE, path="/lti/")
        return page
    token = tokens.new_token(found.role)
    jobs.add_tokens([(tokens.digest(token), found.role, found.student,
                      f"{found.name} (LTI, {found.platform.label})")])
    lineitem = launch.graded_link(found)
    if lineitem:  # their score goes back to the LMS's gradebook (passback.py)
        jobs.lti_link_grade(found.platform.issuer, found.platform.client_id, lineitem, str(found.claims["sub"]),
                            found.student)
    say(f"lti: {found.role} {found.student or found.name} logged in from {found.platform.label}")
    to = "/staff" if found.role == "staff" else "/me"
    page = render(service, "lti_landing.html.j2", None, {"name": found.name, "platform": found.platform.label,
                                                         "to": to})
    page.delete_cookie(STATE_COOKIE, path="/lti/")
    return with_session(page, request, token)


def jwks(request: Request) -> Response:
    results = service_of(request).results
    keys.current(results)  # made on first use
    return JSONResponse(keys.jwks(results), headers={"Cache-Control": "max-age=300"})


def lti_routes() -> list[Route]:
    return [Route("/lti/login", handled(login), methods=["GET", "POST"]),
            Route("/lti/launch", handled(launched, form_bytes=LAUNCH_FORM_BYTES), methods=["POST"]),
            Route("/lti/jwks", handled(jwks))]
