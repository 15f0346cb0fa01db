"""The service's listening socket refuses a connection over a limit as it accepts it (Guard.screen,
ScreeningSocket): a real socket on loopback, no HTTP server; the counts it keeps agree with the protocol's."""
from __future__ import annotations

import socket
from types import SimpleNamespace

import pytest

from grader.core.errors import GraderError
from grader.service.connections import ConnectionLimits, Guard, RateLimitedLog


class Lines:
    def __init__(self):
        self.text = ""

    def write(self, text):
        self.text += text

    def flush(self):
        pass


def guard(**limits) -> tuple[Guard, Lines]:
    out = Lines()
    return Guard(ConnectionLimits(**limits), upload_seconds=10, log=RateLimitedLog(out)), out


def test_the_screen_counts_those_it_let_through_until_they_are_made():
    g, _ = guard(max_per_address=2, max_connections=3)
    assert g.screen("10.0.0.1") is None and g.screen("10.0.0.1") is None
    assert "the most one address may" in g.screen("10.0.0.1")  # two let through, not yet made
    assert g.admit("10.0.0.1") is None  # made: no longer pending, open
    assert (g.open, g.pending_count) == (1, 1)
    assert "the most one address may" in g.screen("10.0.0.1")
    assert g.screen("10.0.0.2") is None
    assert "connections open, all it takes" in g.screen("10.0.0.3")  # 1 open + 2 pending: the service's 3
    g.release("10.0.0.1")
    assert g.screen("10.0.0.1") is None


def test_one_let_through_that_is_never_made_stops_counting(monkeypatch):
    g, _ = guard(max_per_address=1)
    now = [100.0]
    monkeypatch.setattr("grader.service.connections.time.monotonic", lambda: now[0])
    assert g.screen("10.0.0.1") is None
    assert g.screen("10.0.0.1") is not None
    now[0] += 11  # (asyncio failed to make it: PENDING_SECONDS later it is forgotten)
    assert g.screen("10.0.0.1") is None and g.pending_count == 1


def test_the_socket_answers_503_and_closes_over_the_limit_and_hands_on_the_rest():
    g, out = guard(max_per_address=2)
    listening = g.listening_socket(SimpleNamespace(host="127.0.0.1", port=0))
    listening.listen(16)
    listening.setblocking(False)
    port = listening.getsockname()[1]
    clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]
    try:
        handed = []
        while True:
            try:
                handed.append(listening.accept()[0])
            except BlockingIOError:
                break
        assert len(handed) == 2  # the other two answered at accept, never handed to the loop
        replies = []
        for c in clients[2:]:
            c.settimeout(5)
            replies.append(c.recv(4096))
        assert all(r.startswith(b"HTTP/1.1 503 ") and b"retry-after: 10" in r for r in replies), replies
        assert clients[2].recv(10) == b""  # closed
        assert out.text.count("\n") == 1 and "127.0.0.1 has 2 open" in out.text  # one line, the rest counted
    finally:
        for s in clients + handed:
            s.close()
        listening.close()


def test_a_port_in_use_is_one_line():
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        g, _ = guard()
        with pytest.raises(GraderError, match=r"cannot listen on 127\.0\.0\.1:\d+: .*--port"):
            g.listening_socket(SimpleNamespace(host="127.0.0.1", port=taken.getsockname()[1]))
    finally:
        taken.close()
