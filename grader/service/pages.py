"""The service's pages (docs/service.md, "Pages"): a student's attempts, the staff's queue and the class overview,
a live leaderboard, each attempt's feedback page. The feedback, overview and leaderboard pages are the batch
reports' own (grader/reports/page.py renders both); the rest share their renderer and style rules.

Who reads a page is the token in its cookie, set by the login form: HttpOnly (no script reads it), SameSite=Strict
(no other site's page sends it), Secure behind TLS. A student sees only their own attempts; a staff page needs the
staff token; a form that changes something (log in, log out, re-queue, cancel) must come from this service's own
page (its Origin), so another site cannot make a logged-in browser send it. Every page carries its
Content-Security-Policy as a header too, where frame-ancestors also keeps it out of other sites' frames.

A live page (attempts, queue, leaderboard) has an ETag made from what it shows (the store's fingerprint of the
jobs): its poll (templates/live.js) costs one small query and a 304 while nothing changed, and the leaderboard is
rendered once per change however many students watch it.
"""
from __future__ import annotations

import urllib.parse
from datetime import datetime

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from grader.core import visibility
from grader.core.errors import GraderError
from grader.core.visibility import STAFF_VIEW
from grader.reports import page
from grader.reports.leaderboard.board import build_board
from grader.reports.leaderboard.publish import ranked
from grader.reports.leaderboard.render import leaderboard_page
from grader.reports.overview import overview_context, overview_page
from grader.reports.report import TEMPLATES, UNKNOWN_RUN, feedback_context, feedback_page, run_views
from grader.service import tokens
from grader.service.context import ServiceContext, service_of
from grader.service.log import say
from grader.service.page_views import attempts_context, staff_context
from grader.service.views import MAX_ID, job_name, typed, utc_now
from grader.store.faults import results_fault
from grader.store.jobs import CANCEL, CANCEL_FROM, QUEUED, REQUEUE, REQUEUE_FROM, Jobs, Token

COOKIE = "grader_token"
STYLE = "service.css"
LIVE_SECONDS = {"attempts": 5, "staff": 5, "leaderboard": 20}  # between a live page's polls
COOKIE_DAYS = 30
FORM_BYTES = 4096
# What a staff form may do to a job: the store's method, the states it acts on, and the word for it done.
STAFF_ACTIONS = {REQUEUE: (Jobs.requeue, REQUEUE_FROM, "re-queued"),
                 CANCEL: (Jobs.cancel_by_staff, CANCEL_FROM, "cancelled")}


class PageRefused(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def _headers(csp: str, etag: str | None = None) -> dict:
    headers = {"Content-Security-Policy": csp + "; frame-ancestors 'none'", "X-Content-Type-Options": "nosniff",
               "Referrer-Policy": "same-origin", "Cache-Control": "no-cache, private"}
    if etag:
        headers["ETag"] = etag
    return headers


def _label(who: Token) -> str:
    if who.role == "staff":
        return f"staff: {who.name}" if who.name else "staff"
    return who.student


# --- shared by the pages ------------------------------------------------------------------------------------

def render(service: ServiceContext, template: str, who: Token | None, context: dict, status: int = 200,
           live: str | None = None, version: str | None = None, form_to: tuple[str, ...] = ()) -> Response:
    seconds = LIVE_SECONDS[live] if live else None
    context = {"title": service.rubric.title, "who": {"role": who.role, "label": _label(who)} if who else None,
               "version": version or "", **context}
    return served(page.render(TEMPLATES["html"], template, context, STYLE, live=seconds, forms=True,
                              form_to=form_to), version, status)


def served(built: page.Page, version: str | None = None, status: int = 200) -> Response:
    return Response(built.html, status_code=status, media_type="text/html",
                    headers=_headers(built.csp, f'"{version}"' if version else None))


def login_page(service: ServiceContext, message: str = "", status: int = 200) -> Response:
    return render(service, "login.html.j2", None, {"message": message}, status)


def reader(request: Request) -> Token:
    """The cookie's token; refused when there is none or it no longer counts."""
    token = request.cookies.get(COOKIE, "")
    found = tokens.who(service_of(request).jobs(), token) if token else None
    if found is None or found.revoked:
        raise PageRefused(401, "" if not token else "Your login is no longer valid: log in again.")
    if found.role == "assignment":
        raise PageRefused(403, "This token is the course's Gradescope token: log in with your own.")
    return found


def staff(request: Request) -> Token:
    who = reader(request)
    if who.role != "staff":
        raise PageRefused(403, "This page is for the course staff (a staff token).")
    return who


def same_origin(request: Request):
    """A form that changes something must come from this service's own page."""
    origin = request.headers.get("origin")
    here = f"{request.url.scheme}://{request.url.netloc}"
    if origin is not None and origin != here:
        raise PageRefused(403, f"A form from {origin} cannot act on this service.")
    if origin is None and request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        raise PageRefused(403, "A form from another site cannot act on this service.")


def unchanged(request: Request, version: str) -> Response | None:
    if request.headers.get("if-none-match") == f'"{version}"':
        return Response(status_code=304, headers={"ETag": f'"{version}"', "Cache-Control": "no-cache, private"})
    return None


def refused_page(request: Request, e: PageRefused) -> Response:
    service = service_of(request)
    if e.status == 401:
        return login_page(service, e.message, 401)
    try:
        who = reader(request)
    except PageRefused:
        who = None
    return render(service, "notice.html.j2", who, {"message": e.message, "heading": "Not here"}, e.status)


def handled(fn, form_bytes: int = FORM_BYTES):
    """A page's endpoint: `fn(request)` on a server thread (it reads the store), a refusal as a page, a form read
    first (at most `form_bytes`)."""
    def endpoint(request: Request) -> Response:
        try:
            number = request.path_params.get("job")
            if number is not None and not 0 < number <= MAX_ID:
                raise PageRefused(400, f"{number} is not a job number (1 to {MAX_ID}).")
            return fn(request)
        except PageRefused as e:
            return refused_page(request, e)
        except GraderError as e:
            return render(service_of(request), "notice.html.j2", None, {"message": str(e), "heading": "Not ready"},
                          503)

    async def run(request: Request) -> Response:
        if request.method == "POST":
            declared = request.headers.get("content-length", "")
            if not declared.isdigit() or int(declared) > form_bytes:  # a form here is a token and a reason
                return await run_in_threadpool(refused_page, request, PageRefused(
                    413, f"A form here is at most {form_bytes} bytes, with its length declared."))
            try:
                body = (await request.body())[:form_bytes].decode("utf-8", "replace")
            except ClientDisconnect:  # the browser went away: an info line, not the service's failure
                say(f"{request.url.path}: the client disconnected before its form arrived")
                return Response(status_code=400)
            request.state.form = {k: v[0] for k, v in urllib.parse.parse_qs(body).items()}
        return await run_in_threadpool(endpoint, request)
    return run


def visible_version(service: ServiceContext, base: str, now: datetime) -> str:
    """A page's version also turns each minute (the waits and estimates it shows) and when hidden cases
    become visible."""
    rubric = service.rubric
    shown = rubric.hidden_until is None or now >= rubric.hidden_until
    return f"{base}-{'v' if shown else 'h'}{now:%H%M}"


# --- login ----------------------------------------------------------------------------------------------------

def home(request: Request) -> Response:
    try:
        who = reader(request)
    except PageRefused as e:
        return login_page(service_of(request), e.message if e.status != 401 else "", 200)
    return RedirectResponse("/staff" if who.role == "staff" else "/me", status_code=303)


def login(request: Request) -> Response:
    service = service_of(request)
    same_origin(request)
    token = request.state.form.get("token", "").strip()
    found = tokens.who(service.jobs(), token) if token else None
    if found is None:
        return login_page(service, "That token is not one the service knows: check it, or ask the course staff.",
                          401)
    if found.revoked:
        return login_page(service, "That token was revoked: ask the course staff for a new one.", 403)
    if found.role == "assignment":
        return login_page(service, "That is the course's Gradescope token: log in with your own.", 403)
    return with_session(RedirectResponse("/", status_code=303), request, token)


def with_session(response: Response, request: Request, token: str) -> Response:
    """The response, setting the cookie that says who reads the pages from now on (the login form's and an LTI
    launch's)."""
    response.set_cookie(COOKIE, token, max_age=COOKIE_DAYS * 86400, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", path="/")
    return response


def logout(request: Request) -> Response:
    same_origin(request)
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return response


# --- a student's pages ----------------------------------------------------------------------------------------

def attempts(request: Request, student: str, who: Token, as_staff: bool) -> Response:
    service = service_of(request)
    now = utc_now()
    j = service.jobs()
    waiting = {x.id for x in j.jobs(student, (QUEUED,))}
    places = [str(i) for i, job_id in enumerate(j.queue()) if job_id in waiting]  # others' jobs move it too
    version = visible_version(service, j.fingerprint(student) + "q" + ".".join(places), now)
    return unchanged(request, version) or render(
        service, "attempts.html.j2", who, attempts_context(j, service.rubric, student, service.alive(), now, as_staff),
        live="attempts", version=version)


def login_code(request: Request) -> Response:
    """A code for the command line (`make login CODE=...`), for a student logged in here (from the LMS, with no
    token file): shown once."""
    same_origin(request)
    who = reader(request)
    if who.role != "student":
        raise PageRefused(403, "A code for make login is a student's: the staff use their staff token.")
    code = tokens.new_login_code(service_of(request).jobs(), who.student)
    return render(service_of(request), "login_code.html.j2", who,
                  {"command": f"make login CODE={code}", "minutes": tokens.CODE_MINUTES})


def my_attempts(request: Request) -> Response:
    who = reader(request)
    if who.role == "staff":
        return RedirectResponse("/staff", status_code=303)
    return attempts(request, who.student, who, False)


def feedback_of(service: ServiceContext, job_id: int, student: str | None, view) -> Response:
    """The feedback page of a job that is done; `student`: the job must be theirs."""
    j = service.jobs()
    job = j.job(job_id)
    if job is None or (student is not None and job.student != student):  # another's is not confirmed to exist
        raise PageRefused(404, "No upload of yours is at this address: your page lists them." if student is not None
                          else f"No job with id {job_id}.")
    if job.state != "done" or job.submission_id is None:
        name = job_name(job, j.attempt_number(job))
        raise PageRefused(409, f"{name[:1].upper()}{name[1:]} is {job.state}: its feedback is not there yet.")
    return submission_page(service, job.submission_id, view)


def submission_page(service: ServiceContext, submission_id: int, view) -> Response:
    store = service.jobs().store
    subs = store.submissions()
    found = subs[subs["id"] == int(submission_id)]
    if found.empty:
        raise PageRefused(404, f"Submission {submission_id} is not in the store.")
    sub = next(found.itertuples(index=False, name="Submission"))
    run = run_views(store).get(sub.run_id, UNKNOWN_RUN)
    context, _ = feedback_context(store, service.rubric, sub, run, view)
    return served(feedback_page(context))


def my_attempt(request: Request) -> Response:
    who = reader(request)
    return feedback_of(service_of(request), request.path_params["job"],
                       None if who.role == "staff" else who.student,
                       STAFF_VIEW if who.role == "staff" else visibility.student(utc_now()))


# --- the staff's pages ----------------------------------------------------------------------------------------

def staff_home(request: Request) -> Response:
    service = service_of(request)
    who = staff(request)
    now = utc_now()
    fault = results_fault(service.jobs().store.path.parent)  # changes the page as a job's row does
    version = visible_version(service, service.jobs().fingerprint() + ("-fault" if fault else ""), now)
    return unchanged(request, version) or render(
        service, "staff.html.j2", who, staff_context(service.jobs(), service.rubric, service.alive(), now),
        live="staff", version=version)


def staff_student(request: Request) -> Response:
    who = staff(request)
    return attempts(request, request.path_params["student"], who, True)


def staff_job(request: Request) -> Response:
    staff(request)
    return feedback_of(service_of(request), request.path_params["job"], None, STAFF_VIEW)


def staff_feedback(request: Request) -> Response:
    """The overview's link to a student's latest feedback page (feedback/ID.html beside it)."""
    service = service_of(request)
    staff(request)
    student = request.path_params["student"]
    latest = service.jobs().store.latest_submissions()
    found = latest[latest["student"] == student]
    if found.empty:
        raise PageRefused(404, f"No grade of {student} in the store.")
    return submission_page(service, int(found.iloc[0]["id"]), STAFF_VIEW)


def overview(request: Request) -> Response:
    service = service_of(request)
    staff(request)
    return served(overview_page(overview_context(service.jobs().store, service.rubric)))


def act(request: Request) -> Response:
    jobs = service_of(request).jobs
    same_origin(request)
    who = staff(request)
    job_id, action = request.path_params["job"], request.path_params["action"]
    if action not in STAFF_ACTIONS:
        raise PageRefused(404, f"No action {action!r}: a job can be re-queued or cancelled.")
    act_on, allowed, done_word = STAFF_ACTIONS[action]
    reason = request.state.form.get("reason", "").strip()[:200]
    by = who.name or "staff"
    job = jobs().job(job_id)
    if job is None:
        raise PageRefused(404, f"No job with id {job_id}.")
    if not act_on(jobs(), job_id, by, reason):
        raise PageRefused(409, f"Job id {job_id} ({job.student}'s {job_name(job, jobs().attempt_number(job))}) is "
                               f"{job.state}: only a job that is {' or '.join(allowed)} can be {done_word}.")
    say(f"job {job_id} {job.student}: {done_word} by {typed(by)}" + (f" ({typed(reason)})" if reason else ""))
    return RedirectResponse("/staff", status_code=303)


# --- the leaderboard ------------------------------------------------------------------------------------------

def leaderboard(request: Request) -> Response:
    service = service_of(request)
    reader(request)
    if service.jobs().store.latest_run() is None:
        raise PageRefused(404, "No result yet: the leaderboard appears with the first graded upload.")
    version = service.jobs().results_version()
    hit = unchanged(request, version)
    if hit:
        return hit
    cache = service.board_cache
    with service.board_lock:  # one rendering per change of the results, however many students are watching
        if cache["version"] != version:
            context = ranked(build_board(service.jobs().store, service.rubric), service.rubric, service.board,
                             utc_now()).context
            cache.update(version=version, page=leaderboard_page({**context, "version": version},
                                                                live=LIVE_SECONDS["leaderboard"]))
        built = cache["page"]
    return served(built, version)


def page_routes() -> list[Route]:
    """The pages' routes, for create_app (grader/service/app.py); their handlers find the service's state on
    `request.app.state.service` (grader/service/context.py)."""
    return [Route("/", handled(home)), Route("/login", handled(login), methods=["POST"]),
            Route("/login", handled(home), methods=["GET"]), Route("/logout", handled(logout), methods=["POST"]),
            Route("/me", handled(my_attempts)), Route("/me/attempts/{job:int}", handled(my_attempt)),
            Route("/me/login-code", handled(login_code), methods=["POST"]),
            Route("/staff", handled(staff_home)), Route("/staff/overview", handled(overview)),
            Route("/staff/students/{student}", handled(staff_student)),
            Route("/staff/jobs/{job:int}", handled(staff_job)),
            Route("/staff/feedback/{student}.html", handled(staff_feedback)),
            Route("/staff/jobs/{job:int}/{action:str}", handled(act), methods=["POST"]),
            Route("/leaderboard", handled(leaderboard))]
