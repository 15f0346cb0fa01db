"""A stand-in for the grading service (`grader serve`) in the clients' tests: fixed JSON replies per request
line, every request recorded, and a way to drop a connection without a reply. An http.server on 127.0.0.1 in a
thread of the test; the real server is tested against the same clients end to end elsewhere."""
from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from grader.shared import student_tools

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "starter" / "tools" / "service.py"


def load_client():
    """starter/tools/service.py as a module (it is a student's script, not a package)."""
    return student_tools.load("service", CLIENT)


@dataclass
class Request:
    method: str
    path: str
    headers: dict
    body: bytes


@dataclass
class CannedService:
    """replies: "METHOD /path" -> a list of (status, JSON, headers), given in turn; the last one repeats.
    drops: "METHOD /path" -> how many of its first requests are read and then closed without a reply."""
    replies: dict = field(default_factory=dict)
    drops: dict = field(default_factory=dict)
    requests: list = field(default_factory=list)
    url: str = ""

    def reply(self, line: str, *answers) -> None:
        """Each answer is (status, JSON) or (status, JSON, headers)."""
        self.replies[line] = [(a[0], a[1], a[2] if len(a) > 2 else {}) for a in answers]

    def sent(self, line: str) -> list[Request]:
        method, _, path = line.partition(" ")
        return [r for r in self.requests if r.method == method and r.path == path]


def _handler(service: CannedService):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet: the test reads service.requests instead
            pass

        def _serve(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            service.requests.append(Request(self.command, self.path, dict(self.headers), body))
            line = f"{self.command} {self.path}"
            if service.drops.get(line, 0) > 0:
                service.drops[line] -= 1
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            answers = service.replies.get(line) or [(404, {"error": f"no such endpoint: {self.path}"}, {})]
            status, data, headers = answers.pop(0) if len(answers) > 1 else answers[0]
            raw = data if isinstance(data, bytes) else json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(raw)

        do_GET = do_POST = _serve

    return Handler


class running:
    """with running(service): the service answers at service.url until the block ends."""

    def __init__(self, service: CannedService):
        self.service = service
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(service))
        self.server.daemon_threads = True
        service.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> CannedService:
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()
        return self.service

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The condensed feedback as the real service writes it (grader/reports/student_view.py's feedback_text): Markdown
FEEDBACK = ("**Score: 71.5 / 100** (the tasks without hidden cases)\n\n"
            "**Hidden cases**: 4 hidden cases are graded; their results are shown after 2026-12-11 23:59 UTC. Until "
            "then the points of the tasks that have them are withheld.\n\n"
            "## add: 8.0 / 8\n\n**passed 18/18** · all cases pass\n\n"
            "| case | speedup (95% interval) | no / full credit at | credit | points | your throughput |\n"
            "|---|---|---|---|---|---|\n"
            "| float32 8192x8192 | 1.5 (1.5–1.5) | 0.25 / 0.8 | 100% | 4.0 / 4.0 | 750 GB/s (75% of copy bandwidth) "
            "|\n\n"
            "## dot: 2.5 / 10\n\n**18 of 18 cases wrong** · slow: 12% of the copy\n\n"
            "- **wrong**: float32 at every shape (18 cases); float32 1x1: 1 of 1 elements are wrong\n"
            "  - hint: check the bounds\n  - reproduce: `make test TASK=dot SEED=5`\n")


def job(number: int = 17, state: str = "done", **more) -> dict:
    """A job as GET /api/v1/jobs/{id} returns it (service-api.md), finished and graded unless told otherwise."""
    base = {"job": number, "student": "s01", "attempt": 3, "state": state, "phase": "done" if state == "done"
            else "waiting", "position": None, "eta_seconds": None, "progress": None,
            "received": "2026-11-28T09:00:00+00:00", "started": None, "finished": None, "counted": True,
            "error": "", "result": None, "kind": "grade"}
    if state == "done":
        base["result"] = {"status": "graded", "total": 71.5, "max_total": 100, "late": "on time", "timed": True,
                          "tasks": [{"task": "add", "points": 8.0, "max": 8.0, "note": "all cases pass"},
                                    {"task": "dot", "points": 2.5, "max": 10.0, "note": "slow: 12% of the copy"}],
                          "feedback": FEEDBACK,
                          "hidden": {"cases": 4, "until": "2026-12-11T23:59:00+00:00"}}
    base.update(more)
    base.setdefault("name", f"profile #{base['attempt']} of {base.get('task')}" if base.get("kind") == "profile"
                    else f"upload #{base['attempt']}")
    return base
