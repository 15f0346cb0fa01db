"""The service's connections, whatever sits in front of it (docs/service.md, "Connections"): how many may be open
(all clients together, and from one address), how long a connection may take over a request's headers and over
its body, how long an idle one is kept, and a log that says each kind of error once a minute with a count, not a
line and a traceback each time.

uvicorn 0.35 and h11 do part of this, and are used for it: `timeout_keep_alive` closes a connection left idle
after a response, `h11_max_incomplete_event_size` bounds a request's headers (16 KiB; more is a 400), `backlog`
the kernel's queue of connections not yet accepted. What their source leaves open:
- `timeout_keep_alive` starts only once a response is complete, and any byte that comes stops it: a connection
  that never sends a request, or sends its headers a byte at a time, is kept for ever. Here the headers must be
  complete within `header_timeout` of connecting or of the previous response (a timer in the protocol below).
- `limit_concurrency` is checked when a request's headers are complete, and then answers 503 to every request,
  those of connections already open too, while the count stays reached: it neither refuses nor closes a
  connection. Here a connection over a limit is answered 503 and closed as it is accepted, unread, and never
  reaches the app; uvicorn's own limit is left off.
- nothing times a request's body: one that declares a body and sends none is waited for for ever. Here the app's
  every read of a body is timed (`Guard.wrap`): no byte for `body_timeout`, or the body not whole within the
  rubric's upload_seconds plus `body_timeout`, and the request is answered 408 and closed. (The upload routes
  refuse an upload slower than upload_seconds themselves, saying how much came: that answer comes first.)
- asyncio's accept loop (Python 3.11), out of descriptors (EMFILE), logs a traceback for every connection
  still queued, up to `backlog` of them, every second. Here the descriptor limit is raised and the connection
  limit kept well under it (`fit_to_descriptors`), and the loop's errors go through the rate-limited log.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import resource
import socket
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass, replace

from grader.core.errors import GraderError
from grader.service.log import say

HEADER_BYTES = 16 * 1024  # a request's line and headers at most (h11's own default, said here)
RESERVE = 512  # descriptors kept for all else the service opens: the store per thread, workers' pipes, logs
# The most open files the service raises its own limit to: enough for 60,000 connections, and not the million some
# hard limits allow, which the workers and the code they run inherit (a program that closes every descriptor up to
# its limit before it runs another takes seconds over a million).
FILES_CEILING = 1 << 16
# The kernel's queue of connections not yet accepted. asyncio accepts up to this many in one turn of its loop (the
# listening socket refuses as many more over a limit in the same turn, each closed at once: ScreeningSocket), so it
# bounds the loop's pause and the descriptors a burst holds at once: nginx's 511 on Linux rather than uvicorn's
# 2048. A burst faster than the service refuses fills any queue, and the kernel then drops new connections' first
# packets (the client retries after 1 s, then 3 s): SYN cookies or a firewall's per-address limit in front help
# there, nothing in this process does.
BACKLOG = 512
PENDING_SECONDS = 10.0  # a connection let through at accept counts against its limits until asyncio makes it, or this long
WINDOW = 60.0  # seconds: the log says each kind of error at most once in this long, with how many more came


@dataclass(frozen=True)
class ConnectionLimits:
    """What `serve` allows a connection (its options of the same names)."""
    max_connections: int = 1000  # open at once, all clients together
    max_per_address: int = 32  # open at once from one client address
    proxies: tuple[str, ...] = ()  # addresses the per-address limit leaves out (a reverse proxy's)
    header_timeout: float = 10.0  # s: a request's headers complete, from connecting or the previous response
    body_timeout: float = 10.0  # s: the longest pause in a request's body
    keep_alive: float = 5.0  # s: an idle connection kept after a response (uvicorn's timeout_keep_alive)

    @classmethod
    def from_args(cls, args) -> ConnectionLimits:
        """`serve`'s options of the same names (grader/cli/service.py)."""
        return cls(args.max_connections, args.max_per_address, tuple(args.proxy), args.header_timeout,
                   args.body_timeout, args.keep_alive)


def whole_number(text: str) -> int:
    """An option's count: a whole number, at least 1 (argparse's type)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def seconds(text: str) -> float:
    """An option's seconds: more than 0 (argparse's type)."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds more than 0")
    return value


class RateLimitedLog:
    """One line per kind of error per WINDOW seconds: the first at once, then, at the window's end, one line
    with how many more came in it. A network error (OSError) never gets a traceback; another, the first of its
    kind in a window only."""

    def __init__(self, out=None, window: float = WINDOW, clock=time.monotonic):
        self.out, self.window, self.clock = out, window, clock
        self.loop: asyncio.AbstractEventLoop | None = None
        self._since: dict[str, float] = {}  # kind -> when its window began
        self._more: dict[str, tuple[int, str]] = {}  # kind -> (how many came since its line, the latest's text)
        self._lock = threading.Lock()

    def note(self, kind: str, text: str, error: BaseException | None = None):
        with self._lock:
            now = self.clock()
            since = self._since.get(kind)
            if since is not None and now - since < self.window:
                count, _ = self._more.get(kind, (0, ""))
                self._more[kind] = (count + 1, text)
                if count == 0 and self.loop is not None:  # the window's count is said when it ends
                    try:
                        self.loop.call_soon_threadsafe(self.loop.call_later, since + self.window - now,
                                                       self._close, kind)
                    except RuntimeError:  # (the loop is closed: the service has stopped)
                        pass
                return
            self._since[kind] = now
            count, _ = self._more.pop(kind, (0, ""))
        self._write(text + self._count(count), error)

    def _close(self, kind: str):
        """A window's end: its count, if more came, and a new window for them; else the kind starts afresh."""
        with self._lock:
            count, text = self._more.pop(kind, (0, ""))
            if not count:
                self._since.pop(kind, None)
                return
            self._since[kind] = self.clock()
        self._write(text + self._count(count), None)

    def _count(self, count: int) -> str:
        return f" (and {count:,} more like it in the last {self.window:g} s)" if count else ""

    def _write(self, line: str, error: BaseException | None):
        if error is not None and not isinstance(error, OSError):
            line += "\n" + "".join(traceback.format_exception(error)).rstrip()
        say(line, self.out)

    def attach(self, loop: asyncio.AbstractEventLoop):
        """The serving loop: its errors come here, and each window's count is said when the window ends."""
        self.loop = loop
        loop.set_exception_handler(self.loop_error)

    def loop_error(self, loop, context: dict):
        """The event loop's exception handler: accept errors (EMFILE), callbacks' errors."""
        error = context.get("exception")
        message = context.get("message") or "an error in the event loop"
        kind = f"loop {message} {type(error).__name__} {getattr(error, 'errno', '')}"
        self.note(kind, f"{message}: {error}" if error else message, error)


class _Quiet(logging.Filter):
    """uvicorn's error log (and asyncio's) through the rate-limited log: every record stops here."""

    def __init__(self, log: RateLimitedLog, source: str):
        super().__init__()
        self.log, self.source = log, source

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        kind = f"{self.source} {record.msg} {type(error).__name__ if error else ''}"
        text = record.getMessage().strip()
        self.log.note(kind, f"{self.source}: {text}" + (f": {type(error).__name__}: {error}" if error else ""), error)
        return False


def fit_to_descriptors(limits: ConnectionLimits) -> tuple[ConnectionLimits, int, str]:
    """Raises this process's soft limit of open files to its hard limit (at most FILES_CEILING), and keeps the
    connection limit under it: every open connection is a descriptor, and asyncio's accept loop takes up to
    `backlog` connections at a time (those it lets through the screen, which it makes a few loop turns later). Returns
    the limits that fit, the backlog, and a line saying why the limit was lowered ("" when it was not)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = FILES_CEILING if hard == resource.RLIM_INFINITY else min(hard, FILES_CEILING)
    if wanted > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):
            pass
    backlog = max(16, min(BACKLOG, soft // 16))
    room = max(1, soft - 4 * backlog - RESERVE)
    if limits.max_connections <= room:
        return limits, backlog, ""
    return replace(limits, max_connections=room), backlog, (
        f"--max-connections {limits.max_connections} lowered to {room}: this process may open {soft} files "
        f"(RLIMIT_NOFILE), {4 * backlog} are kept for connections being accepted and {RESERVE} for "
        "the rest of the service")


def _reply(status: int, reason: str, error: str, retry_after: int | None = None) -> bytes:
    """A whole HTTP/1.1 answer written past h11 (a connection refused or cut before it sent a request): one
    line of JSON, and the connection closes."""
    body = (json.dumps({"error": error}) + "\n").encode()
    head = (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            + (f"retry-after: {retry_after}\r\n" if retry_after else "") + "connection: close\r\n\r\n")
    return head.encode() + body


class BodyTimedOut(BaseException):
    """Raised where the app waits for a request's body that stopped coming. A BaseException, so that the app's
    own handlers of Exception (a 500 and a traceback) let it through to Guard.wrap, which answers 408."""


class Guarded:
    """What Guard adds to uvicorn's h11 protocol (Guard.protocol is the two together, with the guard's limits):
    a connection over a limit is answered 503 and closed as it comes, unread; one that has not sent a request's
    whole headers within header_timeout of connecting or of its previous response is closed (with a 408 if it
    sent part of them)."""
    guard: Guard

    def connection_made(self, transport):
        self.address = _address(transport)
        refusal = self.guard.admit(self.address)
        self.refused = refusal is not None
        self.waiting = None
        if self.refused:
            self.transport = transport
            transport.write(_reply(503, "Service Unavailable", refusal, retry_after=10))
            transport.close()
            return
        super().connection_made(transport)
        self._wait_for_headers()

    def connection_lost(self, exc):
        if self.refused:  # uvicorn never had this connection
            return
        self.guard.release(self.address)
        self._stop_waiting()
        super().connection_lost(exc)

    def data_received(self, data: bytes):
        if not self.refused:
            super().data_received(data)

    def handle_events(self):
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not cycle:  # a request's headers are complete: it is the app's (Guard.wrap times a body)
            self._stop_waiting()

    def on_response_complete(self):
        if not self.transport.is_closing():
            self._wait_for_headers()  # before uvicorn's own, which may take a pipelined request at once
        super().on_response_complete()

    def _wait_for_headers(self):
        self._stop_waiting()
        self.waiting = self.loop.call_later(self.guard.limits.header_timeout, self._headers_too_slow)

    def _stop_waiting(self):
        if self.waiting is not None:
            self.waiting.cancel()
            self.waiting = None

    def _headers_too_slow(self):
        self.waiting = None
        if self.transport.is_closing():
            return
        seconds = self.guard.limits.header_timeout
        if self.conn.trailing_data[0]:  # part of a request came (an idle connection is closed without a word)
            self.transport.write(_reply(408, "Request Timeout", f"the request's headers did not all arrive within "
                                                                f"{seconds:g} s: send the request again"))
            self.guard.log.note("headers", f"closed a connection from {self.address} that sent part of a "
                                           f"request's headers but not all within {seconds:g} s (--header-timeout)")
        self.transport.close()


class ScreeningSocket(socket.socket):
    """The service's listening socket: asyncio's accept loop calls `accept`, which answers a connection over a
    limit its 503 and closes it there and then (Guard.screen), and gives the loop only those let through. At most
    a backlog's worth are refused in one call, so that the loop's other work keeps its turn."""
    guard: Guard

    def accept(self):
        refused = 0
        while True:
            conn, peer = super().accept()  # (BlockingIOError when none waits: the loop's turn ends)
            address = _peer_address(peer)
            refusal = self.guard.screen(address)
            if refusal is None:
                return conn, peer
            try:
                conn.setblocking(False)
                conn.send(_reply(503, "Service Unavailable", refusal, retry_after=10))
            except OSError:
                pass
            conn.close()
            refused += 1
            if refused >= self.guard.backlog:
                raise BlockingIOError


def _address(transport) -> str:
    return _peer_address(transport.get_extra_info("peername"))


def _peer_address(peer) -> str:
    """A client's address as the limits count it (a Unix socket's peers are all "local")."""
    return str(peer[0]) if isinstance(peer, tuple) and peer else "local"


class Guard:
    """One service's connection limits: the protocol class, the app's wrapper and the settings for uvicorn.Config,
    and the counts of open connections they share.

        guard = Guard(limits, upload_seconds=rubric.service.upload_seconds)
        config = uvicorn.Config(guard.wrap(app), ..., **guard.settings())
        guard.watch_logs()   # after uvicorn.Config, which configures logging
    """

    def __init__(self, limits: ConnectionLimits, upload_seconds: float, log: RateLimitedLog | None = None):
        self.limits, self.backlog, lowered = fit_to_descriptors(limits)
        self.body_seconds = upload_seconds + self.limits.body_timeout
        self.log = log or RateLimitedLog()
        self.open = 0
        self.by_address: dict[str, int] = {}
        self.pending: dict[str, deque] = {}  # address -> when each connection `screen` let through was accepted
        self.pending_count = 0
        # uvicorn is imported here, not at the top: `bin/grader`'s parser reads ConnectionLimits for every command
        from uvicorn.protocols.http.h11_impl import H11Protocol
        self.protocol = type("GuardedH11", (Guarded, H11Protocol), {"guard": self})
        say(f"connections: {self.describe()}" + (f"; {lowered}" if lowered else ""))

    def settings(self) -> dict:
        """uvicorn.Config's own settings of the same things."""
        return {"http": self.protocol, "backlog": self.backlog, "timeout_keep_alive": self.limits.keep_alive,
                "h11_max_incomplete_event_size": HEADER_BYTES, "limit_concurrency": None}

    def watch_logs(self):
        for name in ("uvicorn.error", "asyncio"):
            logger = logging.getLogger(name)
            for earlier in [f for f in logger.filters if isinstance(f, _Quiet)]:  # (an earlier service's, in-process)
                logger.removeFilter(earlier)
            logger.addFilter(_Quiet(self.log, name.split(".")[0]))

    def describe(self) -> str:
        exempt = f" ({', '.join(self.limits.proxies)} exempt: --proxy)" if self.limits.proxies else ""
        return (f"at most {self.limits.max_connections} connections, {self.limits.max_per_address} per address"
                f"{exempt}; headers within {self.limits.header_timeout:g} s, no pause over "
                f"{self.limits.body_timeout:g} s in a body, idle ones kept {self.limits.keep_alive:g} s")

    # --- the counts ---------------------------------------------------------------------------------------------

    def admit(self, address: str) -> str | None:
        """Counts a new connection in (one `screen` let through, if the listening socket screens); or, over a
        limit, why not (the one line its 503 says)."""
        self._unpend(address)
        refusal = self._over(address, self.open, self.by_address.get(address, 0))
        if refusal is None:
            self.open += 1
            self.by_address[address] = self.by_address.get(address, 0) + 1
        return refusal

    def screen(self, address: str) -> str | None:
        """At accept, before asyncio makes a transport and a protocol of the connection (ScreeningSocket): the
        refusal `admit` would give, counting those let through but not yet made; else None, and it is let through.
        A refusal here costs three system calls and frees its descriptor at once, where one refused as a protocol
        costs a few loop turns: a flood is emptied from the kernel's queue that much faster, and an honest
        client's connection finds room in it."""
        now = time.monotonic()
        waiting = self.pending.setdefault(address, deque())
        while waiting and now - waiting[0] > PENDING_SECONDS:  # (one asyncio never made: it failed, or was closed)
            waiting.popleft()
            self.pending_count -= 1
        refusal = self._over(address, self.open + self.pending_count, self.by_address.get(address, 0) + len(waiting))
        if refusal is None:
            waiting.append(now)
            self.pending_count += 1
        elif not waiting:
            del self.pending[address]
        return refusal

    def _unpend(self, address: str):
        waiting = self.pending.get(address)
        if waiting:
            waiting.popleft()
            self.pending_count -= 1
            if not waiting:
                del self.pending[address]

    def _over(self, address: str, total: int, mine: int) -> str | None:
        if total >= self.limits.max_connections:
            self.log.note("over max", f"refused connections: {total} are open, the most the service takes "
                                      f"(--max-connections); the latest from {address}")
            return (f"the grading service has {total} connections open, all it takes: try again in a minute")
        if mine >= self.limits.max_per_address and address not in self.limits.proxies:
            self.log.note("over per address", f"refused connections: {address} has {mine} open, the most one "
                                              "address may (--max-per-address)")
            return (f"your address has {mine} connections open to the grading service, the most one address may: "
                    "close some, or wait for them to finish")
        return None

    def listening_socket(self, config) -> ScreeningSocket:
        """The socket uvicorn serves on (`uvicorn.Server(config).run(sockets=[...])`): the one uvicorn would
        bind, screening each connection at accept. A port another program holds is a GraderError."""
        host, port = config.host, config.port
        family = socket.AF_INET6 if ":" in (host or "") else socket.AF_INET
        sock = ScreeningSocket(family, socket.SOCK_STREAM)
        sock.guard = self
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as e:
            sock.close()
            raise GraderError(f"the service cannot listen on {host}:{port}: {e.strerror or e} (--host, --port: "
                              "another program may hold the port; choose another)") from None
        return sock

    def release(self, address: str):
        self.open -= 1
        left = self.by_address.get(address, 1) - 1
        if left > 0:
            self.by_address[address] = left
        else:
            self.by_address.pop(address, None)

    # --- the app's side: request bodies -------------------------------------------------------------------------

    def wrap(self, app):
        """The ASGI app with every read of a request's body timed (and, at startup, the event loop's errors sent
        to the rate-limited log)."""
        async def guarded(scope, receive, send):
            if scope["type"] == "lifespan":
                self.log.attach(asyncio.get_running_loop())
            if scope["type"] != "http":
                return await app(scope, receive, send)
            await self._timed(app, scope, receive, send)
        return guarded

    async def _timed(self, app, scope, receive, send):
        loop = asyncio.get_running_loop()
        started = loop.time()
        last, came, whole, answering = started, 0, False, False

        async def timed_receive():
            nonlocal last, came, whole
            if whole:  # the body is in: the app waits for the client to go (a disconnect), as long as it likes
                return await receive()
            left = min(last + self.limits.body_timeout, started + self.body_seconds) - loop.time()
            try:
                if left <= 0:
                    raise asyncio.TimeoutError
                message = await asyncio.wait_for(receive(), left)
            except asyncio.TimeoutError:
                raise BodyTimedOut from None
            if message["type"] == "http.request":
                if message.get("body"):
                    last, came = loop.time(), came + len(message["body"])
                whole = not message.get("more_body", False)
            return message

        async def tracked_send(message):
            nonlocal answering
            answering = answering or message["type"] == "http.response.start"
            await send(message)

        try:
            await app(scope, timed_receive, tracked_send)
        except BodyTimedOut:
            paused = loop.time() - last >= self.limits.body_timeout
            why = (f"no byte of it came for {self.limits.body_timeout:g} s" if paused else
                   f"it was not whole within {self.body_seconds:g} s")
            self.log.note("body", f"answered 408 to {scope['method']} {scope['path']} from "
                                  f"{(scope.get('client') or ('?',))[0]}: its body stopped ({why}, "
                                  f"{came} bytes came; --body-timeout)")
            if answering:  # (its answer begun, no other can be sent: uvicorn closes the connection)
                return
            body = (json.dumps({"error": f"the request's body did not arrive: {why} ({came} bytes came): check "
                                         "your connection and send it again"}) + "\n").encode()
            await send({"type": "http.response.start", "status": 408,
                        "headers": [(b"content-type", b"application/json"), (b"connection", b"close"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
