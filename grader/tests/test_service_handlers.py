"""The service's handlers called as functions (grader/service/api_handlers.py, grader/service/pages.py): a request
made by hand over a real store in a temporary folder, no server and no HTTP, so a handler's refusals and answers
are checked where they are written."""
from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest
from starlette.requests import Request

from grader.service import api_handlers as api
from grader.service import pages, policy, tokens
from grader.service.context import ServiceConfig, ServiceContext
from grader.service.status import service_status
from grader.store.jobs import Jobs
from grader.tests.service_server import archive


@pytest.fixture
def service(tmp_path, rubric, registry):
    """A service's context over a fresh store holding tokens for s01 and s02, a staff token and the assignment's
    (`service.handed`: role or student -> the token itself)."""
    made = ServiceContext(ServiceConfig(tmp_path / "results", rubric, registry))
    made.results.mkdir()
    j = made.jobs()
    issued = tokens.issue_students(j, [SimpleNamespace(student=s, name=s) for s in ("s01", "s02")])
    made.handed = {i.student: i.token for i in issued}
    made.handed["staff"] = tokens.issue_one(j, "staff", "ta")
    made.handed["assignment"] = tokens.issue_one(j, "assignment", "gradescope")
    yield made
    made.stores.store.close()  # (the fixture's thread opened it: it is the only one)


def request(service: ServiceContext, path: str = "/", token: str | None = None, headers: dict | None = None,
            query: str = "", path_params: dict | None = None, cookie: str | None = None) -> Request:
    sent = {**(headers or {}), **({"authorization": f"Bearer {token}"} if token else {}),
            **({"cookie": f"{pages.COOKIE}={cookie}"} if cookie else {})}
    return Request({"type": "http", "method": "GET", "path": path, "raw_path": path.encode(),
                    "query_string": query.encode(), "headers": [(k.lower().encode(), v.encode()) for k, v in sent.items()],
                    "scheme": "http", "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 1), "root_path": "",
                    "http_version": "1.1", "path_params": path_params or {},
                    "app": SimpleNamespace(state=SimpleNamespace(service=service))})


def refusal(fn, *args) -> tuple[int, str]:
    with pytest.raises(api.Refused) as refused:
        fn(*args)
    return refused.value.status_code, refused.value.detail


def uploaded(service: ServiceContext, student: str) -> int:
    """A job of `student`'s, accepted as an upload is."""
    who = api.caller(request(service, token=service.handed[student]))
    view = api.accept(service, who, student, f"upload-{student}", archive(), ("2025-01-01T00:00:00+00:00", "service"))
    return view["job"]


def test_the_caller_needs_a_token_the_service_knows_and_in_force(service):
    assert refusal(api.caller, request(service)) == (
        401, "no token: log in first (`make login TOKEN=...` with the token the course gave you)")
    assert refusal(api.caller, request(service, headers={"authorization": "Basic abc"}))[0] == 401
    assert refusal(api.caller, request(service, token="gs_" + "x" * 43)) == (
        401, "this token is not one the service knows: check it, or ask the course staff for yours")
    assert api.caller(request(service, token=service.handed["s01"])).student == "s01"
    service.jobs().revoke(student="s01")
    assert refusal(api.caller, request(service, token=service.handed["s01"])) == (
        403, "this token was revoked: ask the course staff for a new one")


def test_a_student_acts_only_for_themselves(service):
    who = api.caller(request(service, token=service.handed["s01"]))
    assert api.student_for(request(service), who) == "s01"
    assert refusal(api.student_for, request(service, headers={"student": "s02"}), who) == (
        403, "this token is s01's: it cannot act for s02")
    staff = api.caller(request(service, token=service.handed["staff"]))
    assert api.student_for(request(service, headers={"student": "s02"}), staff) == "s02"
    assert refusal(api.student_for, request(service), staff, "no/such")[0] == 400


def test_limits_of_a_fresh_store(service):
    j = service.jobs()
    rules = service.rubric.service
    limits = api._limits(request(service, token=service.handed["s01"]))
    line, refused = policy.standing([], rules, api.utc_now(), j.attempt_number)
    assert limits["upload_line"] == line and limits["upload_refused"] is refused is False
    assert {k: v for k, v in limits.items() if k not in ("upload_line", "profile_line", "profile_refused")} == {
        "upload_refused": False, "profiles": "this service was started without a profiler",
        "uploads_per_hour": rules.uploads_per_hour, "counted_last_hour": 0, "next_upload_at": None,
        "in_flight": None, "profiles_per_hour": rules.profiles_per_hour, "profiles_last_hour": 0,
        "next_profile_at": None, "profile_in_flight": None}
    assert refusal(api._limits, request(service, token=service.handed["staff"])) == (
        400, "name the student (?student=ID)")


def test_status_is_for_the_staff(service):
    assert refusal(api._status, request(service, token=service.handed["s01"])) == (
        403, "the service's status is for the course staff (a staff token)")
    assert api._status(request(service, token=service.handed["staff"])) == service_status(Jobs(service.stores.store))


def test_a_job_is_its_owners_alone(service):
    job_id = uploaded(service, "s01")
    mine = api.caller(request(service, token=service.handed["s01"]))
    other = api.caller(request(service, token=service.handed["s02"]))
    assert api.own(service, mine, job_id).student == "s01"
    assert refusal(api.own, service, other, job_id) == (404, f"no upload or profile of yours has job id {job_id}")
    assert refusal(api.own, service, mine, 0)[0] == 400
    assert api.own(service, api.caller(request(service, token=service.handed["staff"])), job_id).id == job_id
    # the assignment's token sees only the jobs it sent
    assert refusal(api.own, service, api.caller(request(service, token=service.handed["assignment"])), job_id)[0] == 404
    view = api._job(request(service, token=service.handed["s01"], path_params={"job": job_id}))
    assert view["job"] == job_id and view["student"] == "s01"
    assert [x["job"] for x in api._jobs(request(service, token=service.handed["s02"]))["jobs"]] == []


def test_health_answers_and_a_refusal_becomes_its_json(service):
    answer = asyncio.run(api.health(request(service, "/healthz")))
    assert answer.status_code == 200 and json.loads(answer.body) == {"ok": True, "state": "ready"}
    answer = asyncio.run(api.refused(request(service), api.Refused(429, "one an hour", retry_after=59.5, job=3)))
    assert answer.status_code == 429 and answer.headers["retry-after"] == "59"
    assert json.loads(answer.body) == {"error": "one an hour", "job": 3}
    answer = asyncio.run(api.not_found(request(service, "/nowhere"), None))
    assert answer.status_code == 404 and json.loads(answer.body) == {"error": "no such address: /nowhere"}


def test_a_page_reader_is_the_cookies_token_and_not_the_assignments(service):
    with pytest.raises(pages.PageRefused) as refused:
        pages.reader(request(service))
    assert (refused.value.status, refused.value.message) == (401, "")
    with pytest.raises(pages.PageRefused) as refused:
        pages.reader(request(service, cookie=service.handed["assignment"]))
    assert refused.value.status == 403
    assert pages.reader(request(service, cookie=service.handed["s02"])).student == "s02"
    assert pages.home(request(service, cookie=service.handed["staff"])).headers["location"] == "/staff"
    login = pages.home(request(service))
    assert login.status_code == 200 and b"<form" in login.body
