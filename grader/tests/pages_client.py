"""A browser's part of the service's pages for the tests, over http.client: a login that keeps its cookie, and
GETs and form POSTs that send it (with the page's own Origin, as a browser's form does)."""
from __future__ import annotations

import http.client
import urllib.parse
from pathlib import Path


class PageSession:
    def __init__(self, port: int):
        self.port, self.cookie = port, ""
        self.origin = f"http://127.0.0.1:{port}"

    def request(self, method: str, path: str, body: str | None = None, headers: dict | None = None
                ) -> tuple[int, str, dict]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            sent = {**({"Cookie": self.cookie} if self.cookie else {}), **(headers or {})}
            conn.request(method, path, body=body, headers=sent)
            reply = conn.getresponse()
            return reply.status, reply.read().decode("utf-8", "replace"), {k.lower(): v for k, v in reply.getheaders()}
        finally:
            conn.close()

    def get(self, path: str, headers: dict | None = None) -> tuple[int, str, dict]:
        return self.request("GET", path, headers=headers)

    def post(self, path: str, fields: dict, origin: str | None = None) -> tuple[int, str, dict]:
        return self.request("POST", path, urllib.parse.urlencode(fields),
                            {"Content-Type": "application/x-www-form-urlencoded",
                             "Origin": self.origin if origin is None else origin})

    def login(self, token: str) -> tuple[int, str, dict]:
        status, body, headers = self.post("/login", {"token": token})
        if "set-cookie" in headers:
            self.cookie = headers["set-cookie"].split(";")[0]
        return status, body, headers

    def save(self, paths: dict[str, str], out: Path) -> dict[str, int]:
        """Saves each page (name -> path) as out/NAME.html; returns each one's status."""
        out.mkdir(parents=True, exist_ok=True)
        statuses = {}
        for name, path in paths.items():
            status, body, _ = self.get(path)
            (out / f"{name}.html").write_text(body, encoding="utf-8")
            statuses[name] = status
        return statuses
