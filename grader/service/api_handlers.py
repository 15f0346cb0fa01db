"""The service's HTTP API handlers (docs/service.md): uploads in, jobs and results out; create_app
(grader/service/app.py) wires them to their addresses.

An upload is refused before anything is kept when its token, its student, its Upload-Id (a replay), its size,
its pace (it must arrive within the rubric's upload_seconds), its archive (the grader's own intake, with the
rubric's limits) or the student's limits say so, each with one line saying why. Accepted, it is a row of the
store's queue (grader/store/jobs.py) before the reply goes out.

Every store access runs on a worker thread of the server (a connection per thread), never on the event
loop, so one slow request or a busy store cannot hold up the others. A handler finds the service's state
(grader/service/context.py) through its request; a helper without a request is given it.
"""
from __future__ import annotations

import asyncio
import json
import re
import secrets
import traceback
from datetime import datetime, timezone

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

from grader.core.received import GRADESCOPE, SERVICE
from grader.exports import gradescope
from grader.intake.submission import Entry, read_submission
from grader.service import policy, tokens
from grader.service.connections import RateLimitedLog
from grader.service.context import ServiceContext, service_of
from grader.service.log import say
from grader.service.status import service_status
from grader.service.views import MAX_ID, job_name, job_view, job_views, utc_now
from grader.store import faults
from grader.store.jobs import GRADE, PROFILE, Jobs, Token, UploadIdUsed

UPLOAD_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")
STUDENT_ID = re.compile(r"[A-Za-z0-9_.@+-]{1,128}")


class Gone(Exception):
    """The client went away before its request arrived whole: an info line, not the service's failure."""


_faults_log = RateLimitedLog()  # a machine fault's refusals: a line a minute with their count


def log_fault(line: str):
    _faults_log.note(line, line)


class Refused(HTTPException):
    def __init__(self, status: int, message: str, **extra):
        super().__init__(status, message)
        self.extra = extra


# --- who asks -------------------------------------------------------------------------------------------------

def caller(request: Request) -> Token:
    header = request.headers.get("authorization", "")
    token = header[7:].strip() if header.lower().startswith("bearer ") else ""
    if not token:
        raise Refused(401, "no token: log in first (`make login TOKEN=...` with the token the course gave you)")
    found = tokens.who(service_of(request).jobs(), token)
    if found is None:
        raise Refused(401, "this token is not one the service knows: check it, or ask the course staff for yours")
    if found.revoked:
        raise Refused(403, "this token was revoked: ask the course staff for a new one")
    return found


def student_for(request: Request, who: Token, param: str | None = None) -> str | None:
    """Whose jobs the caller means: a student's own; staff and the assignment name one (or none: all)."""
    named = request.headers.get("student") if param is None else param
    if who.role == "student":
        if named and named != who.student:
            raise Refused(403, f"this token is {who.student}'s: it cannot act for {named}")
        return who.student
    if named is not None and not STUDENT_ID.fullmatch(named):
        raise Refused(400, "the Student header must be a student id (letters, digits, . _ @ + -)")
    return named


def own(service: ServiceContext, who: Token, job_id: int):
    if not 0 < job_id <= MAX_ID:
        raise Refused(400, f"{job_id} is not a job number (1 to {MAX_ID})")
    job = service.jobs().job(job_id)
    if job is None or (who.role == "student" and job.student != who.student) or \
            (who.role == "assignment" and job.token != who.hash):
        raise Refused(404, f"no upload or profile of yours has job id {job_id}")  # another's is not confirmed
    return job


# --- uploads --------------------------------------------------------------------------------------------------

async def read_body(request: Request) -> bytes:
    service = service_of(request)
    rubric, max_bytes = service.rubric, service.max_bytes
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise Refused(413, f"the upload is {int(declared) / 2**20:.1f} MiB, more than the "
                           f"{rubric.limits.archive_mib:g} MiB a submission may be")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + rubric.service.upload_seconds
    chunks, size = [], 0
    stream = request.stream().__aiter__()
    while True:
        left = deadline - loop.time()
        try:
            if left <= 0:
                raise asyncio.TimeoutError
            chunk = await asyncio.wait_for(stream.__anext__(), left)
        except StopAsyncIteration:
            break
        except ClientDisconnect:
            raise Gone(f"{request.url.path}: the client disconnected after {size} bytes") from None
        except asyncio.TimeoutError:
            raise Refused(408, f"the upload did not arrive within {rubric.service.upload_seconds:g} s "
                               f"({size} bytes came): check your connection and upload again") from None
        size += len(chunk)
        if size > max_bytes:
            raise Refused(413, f"the upload is more than the {rubric.limits.archive_mib:g} MiB a submission "
                               "may be")
        chunks.append(chunk)
    return b"".join(chunks)


def received_at(request: Request, who: Token) -> tuple[str, str]:
    given = request.headers.get("received-at")
    if given and who.role == "assignment":
        try:
            when = datetime.fromisoformat(given.replace("Z", "+00:00"))
        except ValueError:
            raise Refused(400, f"Received-At {given!r} is not an ISO 8601 time") from None
        if when.tzinfo is None:
            raise Refused(400, f"Received-At {given!r} names no time zone")
        return when.astimezone(timezone.utc).isoformat(timespec="seconds"), GRADESCOPE
    return utc_now().isoformat(timespec="seconds"), SERVICE


def profile_task(request: Request) -> str:
    """The task a profile request names, checked, and the graders able to run Nsight Compute (after the
    caller's token: nothing about the service is told to a caller it does not know)."""
    caller(request)
    service = service_of(request)
    task = request.query_params.get("task", "")
    if task not in service.task_file:
        raise Refused(400, f"no task {task[:40]!r} to profile (tasks: {', '.join(service.task_file)}): make profile "
                           "TASK=<task> GPU=1")
    why_not = service.profiler_missing()
    if why_not:
        raise Refused(503, f"the grading service cannot run Nsight Compute ({why_not}): make profile TASK={task} "
                           "counts on your machine's CPU instead")
    return task


def check_upload(request: Request, kind: str = GRADE) -> tuple[Token, str, str]:
    service = service_of(request)
    who = caller(request)
    fault = faults.results_fault(service.results)
    if fault:  # before the body is read: nothing could be kept
        raise Refused(*faults.refusal(fault))
    upload_id = request.headers.get("upload-id", "")
    if not UPLOAD_ID.fullmatch(upload_id):
        raise Refused(400, "the Upload-Id header must be 8 to 64 letters, digits, - or _ (a fresh one per "
                           "upload): use `make upload`")
    student = student_for(request, who)
    if not student:
        raise Refused(400, "name the student the upload is for (header Student: ID)")
    if who.role != "student":
        roster = service.jobs().store.roster()
        if len(roster) and student not in set(roster["student"]):
            raise Refused(400, f"no student {student} on the course's roster")
    earlier = service.jobs().by_upload(upload_id)
    if earlier is not None:
        mine = earlier.student == student
        raise Refused(409, "this upload was received already"
                      + (f" as {job_name(earlier, service.jobs().attempt_number(earlier))}" if mine else "")
                      + " (its Upload-Id was used before): nothing new was stored",
                      **({"job": earlier.id} if mine else {}))
    if who.role == "student":
        refused = _limit_refusal(service, service.jobs(), student, kind)
        if refused:
            raise Refused(429, refused[0], retry_after=refused[1])
    return who, student, upload_id


def _limit_refusal(service: ServiceContext, j: Jobs, student: str, kind: str):
    recent = j.jobs(student)
    return policy.refusal(recent, service.rubric.service, utc_now(), j.attempt_number, kind)


def accept(service: ServiceContext, who: Token, student: str, upload_id: str, body: bytes,
           received: tuple[str, str], kind: str = GRADE, task: str = "") -> dict:
    rubric, task_files, task_file = service.rubric, service.task_files, service.task_file
    j = service.jobs()
    folder = service.uploads / student
    folder.mkdir(parents=True, exist_ok=True)
    suffix = ".zip" if body[:4] == b"PK\x03\x04" else ".tar.gz"
    kept = folder / f"{upload_id}{suffix}"
    partial = folder / f".{upload_id}.{secrets.token_hex(4)}.part{suffix}"
    partial.write_bytes(body)
    try:
        sub = read_submission(Entry(partial, student, received[0], received_from=received[1]), task_files,
                              service.limits)
        if sub.rejected:
            raise Refused(400, f"the archive was not accepted: {sub.rejected}")
        if not sub.files:
            raise Refused(400, "the archive holds none of the task files (" + ", ".join(task_files)
                               + "): pack it with `make submit`")
        if kind == PROFILE and task_file[task] not in sub.files:
            raise Refused(400, f"the archive holds no {task_file[task]}: there is nothing of {task} to profile")
        partial.rename(kept)
        job = {"student": student, "upload_id": upload_id, "token": who.hash, "received": received[0],
               "received_from": received[1], "archive": str(kept.resolve()), "sha256": sub.sha256,
               "bytes": len(body), "kind": kind, "task": task}
        limit = (lambda recent: (policy.refusal(recent, rubric.service, utc_now(), j.attempt_number, kind)
                                 or [None])[0]) if who.role == "student" else (lambda recent: None)
        try:
            job_id, refused = j.admit(job, limit)
        except UploadIdUsed:  # the same Upload-Id at the same moment: the other one won
            kept.unlink(missing_ok=True)
            raise Refused(409, "this upload was received already (its Upload-Id was used before): nothing new "
                               "was stored") from None
        if refused:
            kept.unlink(missing_ok=True)
            raise Refused(429, refused)
    finally:
        partial.unlink(missing_ok=True)
    return job_view(j, rubric, j.job(job_id), service.alive(), utc_now(), feedback=False)


async def upload(request: Request):
    service = service_of(request)
    who, student, upload_id = await run_in_threadpool(check_upload, request)
    body = await read_body(request)
    received = received_at(request, who)
    view = await run_in_threadpool(accept, service, who, student, upload_id, body, received)
    return JSONResponse(view, status_code=202, headers={"Location": f"/api/v1/jobs/{view['job']}"})


async def profile(request: Request):
    """make profile GPU=1: the archive as for an upload, and ?task=: Nsight Compute on that task (graded
    nothing), limited apart from uploads."""
    service = service_of(request)
    task = await run_in_threadpool(profile_task, request)
    who, student, upload_id = await run_in_threadpool(check_upload, request, PROFILE)
    body = await read_body(request)
    view = await run_in_threadpool(accept, service, who, student, upload_id, body, received_at(request, who),
                                   PROFILE, task)
    return JSONResponse(view, status_code=202, headers={"Location": f"/api/v1/jobs/{view['job']}"})


# --- reading: each runs on a server thread (threaded) ---------------------------------------------------------

def _job(request: Request) -> dict:
    service = service_of(request)
    who = caller(request)
    job = own(service, who, request.path_params["job"])
    return job_view(service.jobs(), service.rubric, job, service.alive(), utc_now(), staff=who.role == "staff")


def _jobs(request: Request) -> dict:
    service = service_of(request)
    who = caller(request)
    student = student_for(request, who, request.query_params.get("student"))
    j = service.jobs()
    found = j.jobs(student)
    if who.role == "assignment":
        found = [x for x in found if x.token == who.hash]
    return {"jobs": job_views(j, service.rubric, found, service.alive(), utc_now(), staff=who.role == "staff")}


def _gradescope(request: Request) -> dict:
    service = service_of(request)
    rubric = service.rubric
    who = caller(request)
    job = own(service, who, request.path_params["job"])
    if job.state != "done" or job.submission_id is None:
        raise Refused(409, f"{job_name(job, service.jobs().attempt_number(job))} (job id {job.id}) is {job.state}: "
                           "its result is not there yet")
    if who.role == "student" and rubric.hidden_until is not None and utc_now() < rubric.hidden_until:
        # Gradescope's JSON carries a hidden test's points for Gradescope to hold back: not for the student
        raise Refused(403, "Gradescope's results of a job are for the course's Gradescope and staff while cases "
                           f"are hidden (until {rubric.hidden_until.isoformat()}): `make history` shows yours")
    return gradescope.results(service.jobs().store, rubric, job.student, submission_id=job.submission_id)


def _limits(request: Request) -> dict:
    service = service_of(request)
    rules = service.rubric.service
    who = caller(request)
    student = student_for(request, who, request.query_params.get("student"))
    if not student:
        raise Refused(400, "name the student (?student=ID)")
    j = service.jobs()
    recent = j.jobs(student)
    now = utc_now()
    at = policy.next_upload_at(recent, rules, now)
    in_flight = next((x.id for x in recent if x.open and x.kind == GRADE), None)
    profile_at = policy.next_upload_at(recent, rules, now, PROFILE)
    # the line a student reads (make upload's check, make history, the student's page) and whether it refuses
    upload_line, upload_refused = policy.standing(recent, rules, now, j.attempt_number)
    profile_line, profile_refused = policy.standing(recent, rules, now, j.attempt_number, PROFILE)
    return {"upload_line": upload_line, "upload_refused": upload_refused, "profile_line": profile_line,
            "profile_refused": profile_refused,
            "profiles": service.profiler_missing(),
            "uploads_per_hour": rules.uploads_per_hour,
            "counted_last_hour": len(policy.counted(recent, now)),
            "next_upload_at": at.isoformat(timespec="seconds") if at else None, "in_flight": in_flight,
            "profiles_per_hour": rules.profiles_per_hour,
            "profiles_last_hour": len(policy.counted(recent, now, PROFILE)),
            "next_profile_at": profile_at.isoformat(timespec="seconds") if profile_at else None,
            "profile_in_flight": next((x.id for x in recent if x.open and x.kind == PROFILE), None)}


def _status(request: Request) -> dict:
    who = caller(request)
    if who.role != "staff":
        raise Refused(403, "the service's status is for the course staff (a staff token)")
    return service_status(service_of(request).jobs())


def threaded(fn):
    """An endpoint answering `fn(request)`'s dict as JSON, `fn` run on a server thread (it reads the store)."""
    async def endpoint(request: Request):
        return JSONResponse(await run_in_threadpool(fn, request))
    return endpoint


CODE_BYTES = 256


async def login_code(request: Request):
    """`make login CODE=...`: a code a student made on their page, traded once for a token of their own."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > CODE_BYTES:
            raise Refused(413, f"a login code's request is at most {CODE_BYTES} bytes")
    try:
        code = str(json.loads(body or b"{}").get("code", ""))
    except (ValueError, AttributeError):
        raise Refused(400, 'send {"code": "..."} as JSON') from None
    traded = await run_in_threadpool(tokens.trade_login_code, service_of(request).jobs(), code)
    if traded is None:
        raise Refused(401, "that code is unknown, expired or already used: make a new one on your page of the "
                           "grading service (\"A code for make login\")")
    say(f"{traded[0]}: make login with a code from the pages")
    return JSONResponse({"student": traded[0], "token": traded[1]})


async def health(request: Request):
    fault = await run_in_threadpool(faults.results_fault, service_of(request).results)
    return JSONResponse({"ok": True, "state": "ready", **({"fault": f"the grading machine's {fault}"} if fault
                                                          else {})})


# --- exception handlers ---------------------------------------------------------------------------------------

async def refused(request: Request, exc: HTTPException):
    extra = getattr(exc, "extra", {})
    headers = {"Retry-After": str(int(extra["retry_after"]))} if extra.get("retry_after") else None
    body = {"error": exc.detail, **{k: v for k, v in extra.items() if k != "retry_after"}}
    return JSONResponse(body, status_code=exc.status_code, headers=headers)


async def not_found(request: Request, exc):
    if isinstance(exc, Refused):
        return await refused(request, exc)
    return JSONResponse({"error": f"no such address: {request.url.path}"}, status_code=404)


async def gone(request: Request, exc: Gone):
    say(f"{exc}: nothing was kept")
    return JSONResponse({"error": "the upload did not arrive whole: nothing was kept"}, status_code=400)


async def failed(request: Request, exc: Exception):
    cause = faults.fault_of(exc)
    if cause:  # the machine's, not the service's own: one line a minute in the log, the cause to the client
        log_fault(f"{request.method} {request.url.path} refused: the grading machine's {cause}")
        status, line = faults.refusal(cause)
        return JSONResponse({"error": line}, status_code=status)
    say(f"{request.method} {request.url.path} failed:\n{''.join(traceback.format_exception(exc))}")
    return JSONResponse({"error": "the grading service failed on its own (not your submission): try again in "
                                  "a minute; the course staff see it in the service's log"}, status_code=500)
