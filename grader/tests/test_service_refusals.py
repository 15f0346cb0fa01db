"""Clean refusals (issue 41, item 4), against a real `bin/grader serve` on loopback: a number from a client beyond
what the store can hold is a 400 in one line on every address that takes one; a client that goes away mid-upload
is one info line, not a failure; what a person typed stays one line of the log; the profile endpoint asks for
the token before it says anything about the service; while `serve` prepares, every address says it is starting."""
from __future__ import annotations

import socket
import time

import pytest

from grader.tests.pages_client import PageSession
from grader.tests.service_server import ServiceUnderTest, archive, stored_jobs, until

TOO_BIG = 2**63  # one past SQLite's largest integer
HUGE = 10**30


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    s = ServiceUnderTest(tmp_path_factory.mktemp("refusals"), students=["s01", "s02"], gpus="0", delay=0.01)
    s.start()
    yield s
    s.stop()


@pytest.mark.parametrize("number", [0, TOO_BIG, HUGE])
@pytest.mark.parametrize("path", ["/api/v1/jobs/{}", "/api/v1/jobs/{}/gradescope"])
def test_a_job_number_out_of_range_is_a_400_in_one_line(service, path, number):
    status, body, _ = service.request("GET", path.format(number), service.staff)
    assert status == 400 and set(body) == {"error"} and "\n" not in body["error"], body
    assert "is not a job number" in body["error"]


@pytest.mark.parametrize("number", [TOO_BIG, HUGE])
def test_the_pages_refuse_a_job_number_out_of_range_in_one_line(service, number):
    staff, student = PageSession(service.port), PageSession(service.port)
    staff.login(service.staff)
    student.login(service.token("s01"))
    for session, method, path in ((student, "GET", f"/me/attempts/{number}"), (staff, "GET", f"/staff/jobs/{number}"),
                                  (staff, "POST", f"/staff/jobs/{number}/cancel")):
        if method == "GET":
            status, page, _ = session.get(path)
        else:
            status, page, _ = session.post(path, {"reason": "x"})
        assert status == 400 and "is not a job number" in page, (path, status)
    assert "Traceback" not in service.log()


def test_a_client_that_disconnects_mid_upload_is_one_info_line(service):
    before = len(service.log())
    with socket.create_connection(("127.0.0.1", service.port)) as sock:
        sock.sendall(("POST /api/v1/uploads HTTP/1.1\r\nHost: x\r\n"
                      f"Authorization: Bearer {service.token('s02')}\r\nUpload-Id: disconnect-0001\r\n"
                      "Content-Type: application/gzip\r\nContent-Length: 100000\r\n\r\n").encode() + b"\x1f\x8b" * 100)
        time.sleep(0.5)
    until(service, "the disconnect's line", lambda: "disconnected" in service.log()[before:], timeout=20)
    said = service.log()[before:]
    assert "Traceback" not in said and "failed" not in said, said
    assert said.count("\n") == 1 and "the client disconnected after" in said, said
    assert all(j.upload_id != "disconnect-0001" for j in stored_jobs(service.results).values())


def test_a_staff_reason_with_a_newline_stays_one_log_line(service):
    service.upload(service.staff, archive(salt="reason-first"), student="s01")
    job = service.upload(service.staff, archive(salt="reason"), student="s01")["job"]  # queued behind s01's first
    staff = PageSession(service.port)
    staff.login(service.staff)
    before = len(service.log())
    status, _, _ = staff.post(f"/staff/jobs/{job}/cancel", {"reason": "bad\nservice: job 99 s02 attempt 1: graded 100.0/100"})
    assert status == 303
    said = until(service, "the cancel's line", lambda: service.log()[before:] if "cancelled by" in service.log()[before:]
                 else None, timeout=20)
    line = next(line for line in said.splitlines() if "cancelled by" in line)
    assert "\\n" in line and "service: job 99" in line  # the forged line is inside the real one, escaped
    assert not any(line.startswith("service: job 99") for line in service.log().splitlines())


def test_the_profile_endpoint_asks_for_the_token_before_anything_else(service):
    for token in (None, "gs_" + "x" * 43):
        status, body, _ = service.request("POST", "/api/v1/profiles?task=nosuchtask", token, archive(),
                                          {"Upload-Id": "profile-0001"})
        assert status == 401 and "token" in body["error"], body  # not "no task" nor "cannot run Nsight Compute"


def asgi_get(app, path: str) -> tuple[int, bytes]:
    """One GET through an ASGI app, without a server."""
    import asyncio
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)
    scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": [], "scheme": "http", "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 1), "root_path": "",
             "http_version": "1.1"}
    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


def test_while_serve_prepares_every_address_says_it_is_starting(tmp_path):
    import json

    from grader.core.registry import Registry
    from grader.core.rubric import DEFAULT_RUBRIC, load_rubric
    from grader.service.app import PREPARING, ServiceConfig, create_app
    registry = Registry.from_file()
    app = create_app(ServiceConfig(tmp_path, load_rubric(DEFAULT_RUBRIC, registry), registry,
                                   preparing=lambda: "building the solution"))
    for path in ("/healthz", "/api/v1/jobs/1", "/api/v1/limits"):
        status, body = asgi_get(app, path)
        assert status == 503 and json.loads(body) == {"ok": False, "state": "preparing", "doing": "building the solution",
                                                      "error": PREPARING}, (path, body)
    status, body = asgi_get(app, "/me")
    assert status == 503 and body.decode().startswith("The grading service is starting")
    # (ready, /healthz answers 200 "ready": every real service's start waits for that, service_server.py)
