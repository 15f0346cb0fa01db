#!/usr/bin/env python3
"""service.py: hand your submission to the course's grading service, and read what it says back.

    python3 tools/service.py login TOKEN          (make login TOKEN=...)  check the token the course gave you, keep it
    python3 tools/service.py login --code=CODE    (make login CODE=...)   trade a code from your page of the service
    python3 tools/service.py check [--profile TASK]
                                                   before make upload (make profile GPU=1) builds: would the service
                                                   take it now? (a service, your token, its limits, its profiler)
    python3 tools/service.py upload [--archive submission.tar.gz]        (make upload)  upload, wait, show
    python3 tools/service.py history               (make history)  your uploads and what the limit leaves
    python3 tools/service.py status N [--profile]  upload #N's state, or its result once graded (profile #N's)
    python3 tools/service.py profile --task TASK [--archive submission.tar.gz]
                                                   (make profile TASK=... GPU=1)  Nsight Compute on the course's GPU

An upload is "upload #N" everywhere (here, the service's pages, its messages): your N-th upload; a profile request
is "profile #N of TASK".

The service's address comes with the course's tarball (service.json, beside the Makefile); without that
file the course runs no service and you hand in submission.tar.gz on the course's site. The token is
$GRADER_TOKEN, else the file `login` writes: ~/.config/<assignment>/token (only you can read it).

Exit status: 0 done; 1 when the service could not be reached or refused (the one line on stderr says
why); 2 when this folder has no service.json. Python 3.9 or later, standard library only.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import secrets
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

API = "/api/v1"
CONFIG = Path(__file__).resolve().parent.parent / "service.json"  # next to the Makefile; make dist writes it
NO_SERVICE = ("this course runs no grading service: hand in submission.tar.gz on the course's site "
              "(make submit writes it)")
NO_PROFILE_SERVICE = ("this course runs no grading service, which make profile GPU=1 asks for Nsight Compute's "
                      "counters: make profile TASK={task} counts on your CPU instead")
# the service's 503 for a profile request where its graders cannot run Nsight Compute (grader/service/app.py), said
# before the build from GET /limits' "profiles"
CANNOT_PROFILE = ("the grading service cannot run Nsight Compute ({why}): make profile TASK={task} counts on your "
                  "machine's CPU instead")
STARTING = "the grading service is starting: try again in a few minutes"  # its 503 with "state": "preparing"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # what a terminal would take as a command, not text
TABLE_HEAD = f"{'':40}{'yours':>10}{'solution':>10}"  # tools/profile.py's table's layout
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")  # an assignment name: one folder under ~/.config
TOKEN = re.compile(r"[A-Za-z0-9._~+/=-]{8,512}")
TASK = re.compile(r"[a-z][a-z0-9_]{0,63}")
RETRY_PAUSES = (0.5, 1.0, 2.0)  # seconds before each new try after a connection that got no reply at all
REPLY_SECONDS = 30.0  # any one request but the upload's
UPLOAD_SECONDS = 300.0  # the upload's body and its reply (the server bounds the body's time itself)
POLL_SECONDS = 2.0
WAIT_SECONDS = 30 * 60  # how long `upload` follows the job before it says where to look later


class ServiceError(Exception):
    """One line for the student, and the exit status it means."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


class Unreachable(ServiceError):
    """No reply at all, after every try; why (e.g. "connection refused") is kept for other callers' words."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Config:
    url: str  # without a trailing slash
    assignment: str


def load_config(path: Path = CONFIG) -> Config:
    if not path.is_file():
        raise ServiceError(NO_SERVICE, 2)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        url, assignment = str(data["url"]).strip().rstrip("/"), str(data["assignment"]).strip()
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
        raise ServiceError(f"{path} is not the service's configuration (it needs url and assignment: {e}); "
                           "take it again from the course's tarball", 2) from None
    if not url.startswith(("http://", "https://")) or not NAME.fullmatch(assignment):
        raise ServiceError(f"{path}: url must start with http:// or https:// and assignment be a plain name; "
                           "take it again from the course's tarball", 2)
    return Config(url, assignment)


def token_file(config: Config) -> Path:
    return Path.home() / ".config" / config.assignment / "token"


def well_formed(token: str) -> str:
    token = token.strip()
    if not TOKEN.fullmatch(token):
        raise ServiceError("that does not look like a token (8 or more letters, digits or -._~+/=, no spaces): "
                           "copy it again from the course's message, as make login TOKEN=...")
    return token


def save_token(config: Config, token: str) -> Path:
    """Writes the token readable by its owner only (mode 600, its folder 700)."""
    token = well_formed(token)
    path = token_file(config)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            os.fchmod(f.fileno(), 0o600)  # a file that was already there keeps its mode otherwise
            f.write(token + "\n")
    except OSError as e:
        raise ServiceError(f"could not write {path}: {e.strerror or e}") from None
    return path


def load_token(config: Config) -> str:
    token = os.environ.get("GRADER_TOKEN", "").strip()
    if token:
        return token
    path = token_file(config)
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        token = ""
    except (OSError, UnicodeDecodeError) as e:
        raise ServiceError(f"could not read your token from {path} ({e}): log in again with "
                           "make login TOKEN=<the token the course gave you>") from None
    if not token:
        raise ServiceError("you are not logged in to the grading service: run make login TOKEN=<the token the "
                           f"course gave you> once (it is kept in {path}), or set GRADER_TOKEN")
    return token


def clock(iso: str | None, now: datetime | None = None) -> str:
    """An ISO 8601 time as a student reads it: 14:05 UTC today, else with its date."""
    if not iso:
        return "?"
    try:
        when = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    when = (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)
    today = (now or datetime.now(timezone.utc)).date()
    return when.strftime("%H:%M UTC" if when.date() == today else "%Y-%m-%d %H:%M UTC")


class Client:
    """The service's API over urllib: one JSON reply per request, bounded waits, and new tries only where
    nothing came back (for an upload, with the same Upload-Id, which the server refuses to store twice)."""

    def __init__(self, config: Config, token: str, pauses: tuple = RETRY_PAUSES):
        self.config, self.token, self.pauses = config, token, pauses
        self.starting = False  # the service said it is starting: no connection right after means the same

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
                timeout: float = REPLY_SECONDS) -> tuple[int, dict, dict]:
        """(status, reply headers, reply JSON) for any reply, error statuses included."""
        url = self.config.url + API + path
        sent = {"Authorization": f"Bearer {self.token}", "Accept": "application/json", **(headers or {})}
        why = ""
        for pause in (0.0, *self.pauses):
            time.sleep(pause)
            req = urllib.request.Request(url, data=body, headers=sent, method=method)
            try:
                with urllib.request.urlopen(req, timeout=timeout) as reply:
                    return reply.status, dict(reply.headers), self._json(reply.read(), reply.status)
            except urllib.error.HTTPError as e:
                with e:
                    data = self._json(e.read(), e.code)
                self.starting = self.starting or starting(e.code, data)
                return e.code, dict(e.headers or {}), data
            except (urllib.error.URLError, http.client.HTTPException, OSError) as e:
                why = self._reason(e)
        if self.starting:  # it was starting a moment ago: (re)starting still, not gone
            raise Unreachable(STARTING, why)
        raise Unreachable(f"cannot reach the grading service at {self.config.url} ({why}): try again later; "
                          "meanwhile make test checks your kernels' correctness here", why)

    @staticmethod
    def _json(raw: bytes, status: int) -> dict:
        try:
            data = json.loads(raw.decode("utf-8"))
            return data if isinstance(data, dict) else {"error": f"an unexpected reply (HTTP {status})", "foreign": 1}
        except (UnicodeDecodeError, ValueError):
            return {"error": f"a reply that is not the service's (HTTP {status}): is service.json's url right?",
                    "foreign": 1}

    @staticmethod
    def _reason(e: Exception) -> str:
        reason = getattr(e, "reason", e)
        if isinstance(reason, (socket.timeout, TimeoutError)):
            return "no reply in time"
        if isinstance(reason, http.client.RemoteDisconnected):
            return "the connection closed without a reply"
        text = getattr(reason, "strerror", None) or str(reason) or type(reason).__name__
        return text[:1].lower() + text[1:]

    def get(self, path: str) -> dict:
        status, headers, data = self.request("GET", path)
        if status != 200:
            raise refused(status, headers, data)
        return data


def starting(status: int, data: dict) -> bool:
    """The service's answer while `serve` prepares (it builds the solution first), whatever the address."""
    return status == 503 and data.get("state") == "preparing"


def refused(status: int, headers: dict, data: dict) -> ServiceError:
    """The server's own words for a refusal (a 429's say when to try again; a 503's why the service cannot do it),
    with what to do where the status says more."""
    error = CONTROL.sub("?", str(data.get("error") or f"HTTP {status}").strip().splitlines()[0])
    if starting(status, data):
        told = ServiceError(STARTING)
    elif status == 401:
        told = ServiceError(f"{error}; then make login TOKEN=<the token the course gave you>")
    elif status >= 500 and (status != 503 or data.get("foreign")):
        told = ServiceError(f"the grading service failed (HTTP {status}: {error}): try again later")
    else:
        told = ServiceError(error)
    told.said = error  # the server's own words, for callers that are not a student (the Gradescope bridge)
    return told


def send_upload(client: Client, archive: Path, student: str | None = None, received_at: str | None = None,
                path: str = "/uploads") -> dict:
    """POST the archive once (a new try after no reply reuses its Upload-Id) to `path` (/uploads to grade it,
    /profiles?task=T to profile a task); the job it made.
    A 409 naming a job is the server saying it already has this very upload: that job is ours."""
    try:
        body = archive.read_bytes()
    except OSError as e:
        raise ServiceError(f"cannot read {archive} ({e.strerror or e}): make submit writes it") from None
    headers = {"Content-Type": "application/gzip", "Upload-Id": secrets.token_urlsafe(24)}
    if student:
        headers["Student"] = student
    if received_at:
        headers["Received-At"] = received_at
    status, reply_headers, data = client.request("POST", path, body, headers, timeout=UPLOAD_SECONDS)
    if status in (200, 201, 202) and isinstance(data.get("job"), int):
        return data
    if status == 409:
        job = data.get("job")
        job = job.get("job") if isinstance(job, dict) else job
        if isinstance(job, int):
            return client.get(f"/jobs/{job}")
    raise refused(status, reply_headers, data)


def job_name(job: dict) -> str:
    """The job as its student knows it, in the service's words: "upload #3", "profile #1 of transpose"."""
    return str(job.get("name") or f"upload #{job.get('attempt')}")


def status_command(job: dict) -> str:
    """The command that shows this job again (by its number among the student's uploads or profiles)."""
    return f"python3 tools/service.py status {'--profile ' if job.get('kind') == 'profile' else ''}{job.get('attempt')}"


def progress_line(job: dict) -> str:
    state, head = job.get("state"), job_name(job)
    if state == "queued":
        place = f", number {job['position']} in the queue" if job.get("position") else ""
        eta = f", about {round(job['eta_seconds'])} s to go" if job.get("eta_seconds") is not None else ""
        return f"{head}: waiting{place}{eta}"
    if state == "running":
        done = job.get("progress") or {}
        cases = f", {done.get('done')}/{done.get('total')} cases" if done.get("total") else ""
        eta = f", about {round(job['eta_seconds'])} s to go" if job.get("eta_seconds") is not None else ""
        return f"{head}: {job.get('phase_words') or job.get('phase') or 'running'}{cases}{eta}"
    return f"{head}: {state}"


def follow(client: Client, job: dict, out, wait_seconds: float = WAIT_SECONDS, poll: float = POLL_SECONDS,
           show: bool = True) -> dict:
    """Polls the job until it ends or wait_seconds pass; the job as last seen. On a terminal the progress
    is one line rewritten in place; elsewhere a line each time it changes."""
    tty = show and hasattr(out, "isatty") and out.isatty()
    deadline, last = time.monotonic() + wait_seconds, ""
    while True:
        line = progress_line(job)
        if show and line != last:
            out.write(f"\r\x1b[K{line}" if tty else line + "\n")
            out.flush()
            last = line
        if job.get("state") not in ("queued", "running") or time.monotonic() >= deadline:
            break
        time.sleep(poll)
        job = client.get(f"/jobs/{job['job']}")
    if tty:
        out.write("\n")
    return job


def table(rows: list[list[str]], head: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [head, *rows])


def points(value, top) -> str:
    """Points as the feedback page writes them: 4.0 / 8."""
    return "-" if value is None else f"{value:.1f} / {top:.0f}" if top is not None else f"{value:.1f}"


def sentence(line: str) -> str:
    """One of the service's lines as a sentence, as its pages show it."""
    return line[:1].upper() + line[1:] + ("" if line.endswith(".") else ".")


def _cells(row: str) -> list[str]:
    return [_inline(c.strip()) for c in re.split(r"(?<!\\)\|", row.strip()[1:-1])]


def _inline(text: str) -> str:
    text = re.sub(r"\*\*(.+?)\*\*", r"\1", text)
    text = re.sub(r"`([^`]*)`", r"\1", text)
    return re.sub(r"</?(details|summary)>", "", text).replace("\\|", "|")


def terminal_text(markdown: str) -> str:
    """The condensed feedback (Markdown, as the feedback page renders it) for a terminal: headings and bold as plain
    words, what follows a heading indented under it, tables as aligned columns, code fences left out (their lines
    kept), and control characters, which a terminal would obey, shown as ?."""
    out: list[tuple[str, str]] = []  # (heading, text or blank; its line)
    rows: list[list[str]] = []
    indent = ""

    def flush():
        if rows:
            widths = [max(len(r[i]) for r in rows if i < len(r)) for i in range(max(len(r) for r in rows))]
            out.extend(("text", (indent + "  ".join(c.ljust(w) for c, w in zip(r, widths))).rstrip()) for r in rows)
            rows.clear()

    for raw in markdown.splitlines():
        line = CONTROL.sub("?", raw.rstrip().expandtabs())
        bare = line.strip()
        if len(bare) > 1 and bare.startswith("|") and bare.endswith("|"):
            cells = _cells(bare)
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):  # (the rule under a table's head)
                rows.append(cells)
            continue
        flush()
        heading = re.match(r"#{1,6}\s+(.*)", bare)
        if heading:
            out += [("blank", ""), ("heading", _inline(heading.group(1)))]
            indent = "  "
        elif not bare:
            out.append(("blank", ""))
        elif not (bare.startswith("```") or bare in ("</details>", "---")):
            out.append(("text", (indent + _inline(line)).rstrip()))
    flush()
    lines: list[str] = []
    for i, (kind, text) in enumerate(out):  # no blank line first, after a heading, or after another
        if kind != "blank" or (i and out[i - 1][0] == "text"):
            lines.append(text)
    return "\n".join(lines).strip("\n")


def report(job: dict) -> str:
    """What a finished job says: its name and total, the condensed feedback as the feedback page has it (each task's
    points, what failed, the hidden cases), whether it counted."""
    lines = []
    result = job.get("result") or {}
    if job.get("state") != "done" or not result:
        why = job.get("error") or "no reason given"
        lines.append(f"{job_name(job)} {job.get('state')}: {why}")
    else:
        said = [result.get("late") or "", "timed on the GPU" if result.get("timed") else "not timed"]
        word = {"build_failed": "did not build", "rejected": "not graded"}.get(result.get("status"),
                                                                             result.get("status"))
        lines.append(f"{job_name(job)}: {word}, {points(result.get('total'), result.get('max_total'))} points "
                     f"({', '.join(s for s in said if s)})")
        if result.get("feedback"):
            lines += ["", terminal_text(str(result["feedback"]))]
    lines += ["", "This upload counted against the hourly limit." if job.get("counted") else
              "This upload did not count against the hourly limit."]
    return "\n".join(lines)


def profile_report(job: dict) -> str:
    """What a finished profile job says: the table beside the solution's on the same GPU, one sentence per
    finding, or why there are no counts."""
    result = job.get("profile") or {}
    if job.get("state") != "done" or not result:
        lines = [f"{job_name(job)} {job.get('state')}: {job.get('error') or 'no reason given'}"]
    elif result.get("status") != "counted":
        lines = [f"{job_name(job)}: no counts: {result.get('message') or result.get('status')}"]
    else:
        lines = [f"{job_name(job)}: Nsight Compute on the course's GPU, {result.get('task')} {result.get('dtype')} "
                 f"{result.get('shape')}, beside the solution's numbers on the same GPU:", "", TABLE_HEAD]
        lines += [f"{str(label):40}{str(yours):>10}{str(theirs):>10}" for label, yours, theirs in result.get("rows") or []]
        if result.get("message"):
            lines += ["", str(result["message"])]
        findings = result.get("findings") or []
        lines += [""] + ([f"- {f}" for f in findings] if findings else
                         ["No finding: each number is within a tenth of the solution's."])
    lines.append("This profile counted against the hourly limit." if job.get("counted") else
                 "This profile did not count against the hourly limit.")
    return "\n".join(lines)


def send_and_follow(client: Client, archive: Path, path: str, sent: str, out, wait_seconds: float, poll: float
                    ) -> dict:
    """Sends the archive to `path`, says `sent`, follows the job and prints what it ends with (a grade's report or a
    profile's table); the job as last seen."""
    job = send_upload(client, archive, path=path)
    out.write(f"{sent}: {job_name(job)}\n")
    try:
        job = follow(client, job, out, wait_seconds, poll)
    except ServiceError as e:  # the service went away (or restarts) while the job waits: it is kept all the same
        raise ServiceError(f"{e}; {job_name(job)} was received and is kept: make history shows it once graded",
                           e.status) from None
    if job.get("state") in ("queued", "running"):
        out.write(f"{job_name(job)} is still {job['state']} after {wait_seconds / 60:g} minutes: make history shows "
                  f"its result later, and so does {status_command(job)}\n")
    else:
        out.write((profile_report(job) if job.get("kind") == "profile" else report(job)) + "\n")
    return job


def profile(config: Config, token: str, archive: Path, task: str, out=sys.stdout, wait_seconds: float = WAIT_SECONDS,
            poll: float = POLL_SECONDS, client: Client | None = None) -> dict:
    """Sends the archive to be profiled on `task`, follows its job, prints the table; the job as last seen."""
    return send_and_follow(client or Client(config, token), archive, f"/profiles?task={urllib.parse.quote(task)}",
                           f"sent {archive} to {config.url} to profile {task} with Nsight Compute", out,
                           wait_seconds, poll)


def upload(config: Config, token: str, archive: Path, out=sys.stdout, wait_seconds: float = WAIT_SECONDS,
           poll: float = POLL_SECONDS, client: Client | None = None) -> dict:
    """Uploads the archive, follows its job, prints its result; the job as last seen."""
    size = archive.stat().st_size if archive.is_file() else 0
    return send_and_follow(client or Client(config, token), archive, "/uploads",
                           f"uploaded {archive} ({size / 1024:.1f} KiB) to {config.url}", out, wait_seconds, poll)


def history(config: Config, token: str, out=sys.stdout, client: Client | None = None) -> list[dict]:
    client = client or Client(config, token)
    jobs = [j for j in client.get("/jobs").get("jobs") or [] if isinstance(j, dict)]
    limits = client.get("/limits")
    if jobs:
        rows = [[job_name(j), clock(j.get("received")), j.get("state"),
                 points((j.get("result") or {}).get("total"), (j.get("result") or {}).get("max_total")),
                 "yes" if j.get("counted") else "no"] for j in jobs]
        out.write(table(rows, ["", "received", "state", "total", "counted"]) + "\n")
    else:
        out.write("no uploads yet\n")
    out.write(sentence(limits["upload_line"]) + "\n")
    if any(j.get("kind") == "profile" for j in jobs):
        out.write(sentence(limits["profile_line"]) + "\n")
    return jobs


def status(config: Config, token: str, number: int, out=sys.stdout, client: Client | None = None,
           profile: bool = False) -> dict:
    """Upload #number's state, or its result once graded (with `profile`: profile #number's)."""
    client = client or Client(config, token)
    kind = "profile" if profile else "grade"
    found = next((j for j in client.get("/jobs").get("jobs") or []
                  if isinstance(j, dict) and j.get("kind", "grade") == kind and j.get("attempt") == number), None)
    if found is None:
        raise ServiceError(f"you have no {'profile' if profile else 'upload'} #{number}: make history lists yours")
    job = client.get(f"/jobs/{found['job']}")
    done = profile_report(job) if job.get("kind") == "profile" else report(job)
    out.write((done if job.get("state") not in ("queued", "running") else progress_line(job)) + "\n")
    return job


def check(config: Config, token: str, out=sys.stdout, client: Client | None = None, task: str | None = None) -> dict:
    """Before make upload builds: the service answers, knows the token, and would take an upload now (with `task`:
    before make profile GPU=1 builds, that it can profile, and would take a profile request now), each refusal in
    the service's own words."""
    limits = (client or Client(config, token)).get("/limits")
    if task is not None:
        if limits["profiles"]:
            raise ServiceError(CANNOT_PROFILE.format(why=limits["profiles"], task=task))
        line, refused_now = limits["profile_line"], limits["profile_refused"]
    else:
        line, refused_now = limits["upload_line"], limits["upload_refused"]
    if refused_now:
        raise ServiceError(line)
    out.write(f"grading service at {config.url}: {line}\n")
    return limits


def login(config: Config, token: str, out=sys.stdout, client: Client | None = None) -> Path:
    """Asks the service whether it knows the token: one it does not know, or revoked, is refused and not kept; one it
    knows, or that could not be checked (no answer, or the service is starting), is kept for its owner alone."""
    token = well_formed(token)
    client = client or Client(config, token)
    try:
        status, headers, data = client.request("GET", "/limits")
    except Unreachable as e:
        unchecked = str(e) if str(e) == STARTING else f"the grading service at {config.url} did not answer ({e.reason})"
    else:
        if status in (401, 403):
            raise ServiceError(f"{refused(status, headers, data).said}: this token was not kept")
        known = status in (200, 400) and not data.get("foreign")  # (400: a staff token names no student)
        unchecked = "" if known else str(refused(status, headers, data))
    if unchecked == STARTING:
        unchecked = "the grading service is still starting"
    path = save_token(config, token)
    if unchecked:
        out.write(f"logged in, unchecked: {unchecked}, so your token could not be checked; it is kept in {path} "
                  "(only you can read it), and make upload checks it\n")
    else:
        out.write(f"logged in: the grading service knows this token; it is kept in {path} (only you can read it)\n")
    return path


def login_with_code(config: Config, code: str, out=sys.stdout) -> Path:
    """make login CODE=...: trades a code from the student's page of the service (where the course's LMS logged
    them in) for a token of this machine's own, and keeps it as `login` keeps a token."""
    code = code.strip()
    if not re.fullmatch(r"[A-Za-z0-9_-]{8,64}", code):
        raise ServiceError("that does not look like a code from your page of the grading service: copy the whole "
                           "make login CODE=... line it shows", 2)
    client = Client(config, "")
    try:
        status, headers, data = client.request("POST", "/login-code", json.dumps({"code": code}).encode(),
                                               {"Content-Type": "application/json"})
    except Unreachable as e:
        raise ServiceError(f"the grading service at {config.url} did not answer ({e.reason}): the code stays "
                           "good for a few minutes, try again") from None
    if status != 200 or not isinstance(data.get("token"), str):
        told = refused(status, headers, data)
        raise ServiceError(told.said if status == 401 else str(told))  # (a 401 here is the code's, not a token's)
    path = save_token(config, data["token"])
    out.write(f"logged in as {data.get('student')}: this machine's token is kept in {path} (only you can read it); "
              "make upload uses it\n")
    return path


def main(argv: list[str] | None = None, config_path: Path = CONFIG) -> int:
    parser = argparse.ArgumentParser(prog="python3 tools/service.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    logging_in = commands.add_parser("login", help="check your token with the service, keep it in "
                                                   "~/.config/<assignment>/token (or trade a --code from your page)")
    logging_in.add_argument("token", nargs="?")
    logging_in.add_argument("--code", help="the code your page of the grading service shows (make login CODE=...)")
    checking = commands.add_parser("check", help="would the service take an upload now?")
    checking.add_argument("--profile", metavar="TASK", help="would it take a profile request of TASK now?")
    prof = commands.add_parser("profile", help="profile a task of submission.tar.gz with Nsight Compute on the "
                                               "course's GPU, and show the counters beside the solution's")
    prof.add_argument("--task", required=True)
    prof.add_argument("--archive", type=Path, default=Path("submission.tar.gz"))
    up = commands.add_parser("upload", help="upload submission.tar.gz, wait for its result and show it")
    up.add_argument("--archive", type=Path, default=Path("submission.tar.gz"))
    commands.add_parser("history", help="your uploads, and what the hourly limit leaves")
    one = commands.add_parser("status", help="upload #N's state or result")
    one.add_argument("number", type=int, help="N of upload #N (make history lists them)")
    one.add_argument("--profile", dest="of_profile", action="store_true", help="profile #N's instead")
    args = parser.parse_args(argv)
    task = args.task if args.command == "profile" else getattr(args, "profile", None)
    said = {"check": "make profile GPU=1" if task is not None else "make upload", "status": "service.py status",
            "profile": "make profile GPU=1"}.get(args.command, f"make {args.command}")
    try:
        if task is not None and not TASK.fullmatch(task):
            raise ServiceError("usage: make profile TASK=<task> GPU=1, e.g. make profile TASK=transpose GPU=1", 2)
        try:
            config = load_config(config_path)
        except ServiceError as e:
            if task is not None and e.status == 2 and str(e) == NO_SERVICE:
                raise ServiceError(NO_PROFILE_SERVICE.format(task=task), 2) from None
            raise
        if args.command == "login":
            if args.code is not None:
                login_with_code(config, args.code)
            elif args.token:
                login(config, args.token)
            else:
                raise ServiceError("usage: make login TOKEN=<the token the course gave you>, or make login "
                                   "CODE=<the code your page of the grading service shows>", 2)
            return 0
        token = load_token(config)
        if args.command == "upload":
            upload(config, token, args.archive)
        elif args.command == "history":
            history(config, token)
        elif args.command == "status":
            status(config, token, args.number, profile=args.of_profile)
        elif args.command == "profile":
            profile(config, token, args.archive, task)
        else:
            check(config, token, task=task)
    except ServiceError as e:
        print(f"{said}: {e}", file=sys.stderr)
        return e.status
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        print(f"{said}: the grading service's reply was not understood ({type(e).__name__}: {e}); tell the "
              "course staff", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{said}: stopped; an upload already sent is still graded (make history shows it)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
