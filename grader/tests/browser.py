"""A headless Chromium for the tests, driven through chromedriver's W3C WebDriver protocol.

The protocol is plain JSON over HTTP, so the standard library speaks it: no
Selenium or Playwright to install, and nothing to pin. What the machine needs
is Debian's `chromium` and `chromium-driver` (`make deps-browser`).
"""
from __future__ import annotations

import base64
import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C key of an element reference
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
DRIVERS = ("chromedriver", "/usr/lib/chromium/chromedriver")


def find_browser() -> tuple[str | None, str | None]:
    """Paths of a Chromium and its chromedriver, None for whichever is not installed."""
    browser = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
    driver = next((shutil.which(d) for d in DRIVERS if shutil.which(d)), None)
    return browser, driver


class WebDriverError(RuntimeError):
    pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """One chromedriver process and one headless browser session; use as a context manager."""

    def __init__(self, browser: str, driver: str, width: int = 1360, height: int = 900, logging: bool = False,
                 phone: bool = False):
        self.profile = tempfile.mkdtemp(prefix="leaderboard-chromium-")
        self.port = _free_port()
        self.log = Path(self.profile) / "chromedriver.log"
        self.driver = subprocess.Popen([driver, f"--port={self.port}", f"--log-path={self.log}"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.base = f"http://127.0.0.1:{self.port}"
        self.session = None
        try:
            self._wait_ready()
            # No sandbox: Chromium refuses it as root, and CI containers often lack the user namespaces it
            # needs; the only page opened is the one the test just wrote.
            args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
                    f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "--hide-scrollbars"]
            caps = {"browserName": "chrome", "unhandledPromptBehavior": "ignore",  # an alert stays up to be seen
                    "goog:chromeOptions": {"binary": browser, "args": args}}
            if phone:  # a phone's screen, width x height CSS pixels (a headless window is at least 500 wide)
                caps["goog:chromeOptions"]["mobileEmulation"] = {
                    "deviceMetrics": {"width": width, "height": height, "pixelRatio": 3, "touch": True}}
            if logging:  # the page's console, read by console_errors()
                caps["goog:loggingPrefs"] = {"browser": "ALL"}
            self.session = self._call("POST", "/session", {"capabilities": {"alwaysMatch": caps}})["sessionId"]
        except BaseException:
            self.close()
            raise

    def _wait_ready(self, timeout: float = 30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.driver.poll() is not None:
                raise WebDriverError(f"chromedriver exited with {self.driver.returncode}")
            try:
                if self._call("GET", "/status").get("ready"):
                    return
            except (OSError, WebDriverError):
                pass
            time.sleep(0.1)
        raise WebDriverError(f"chromedriver did not answer within {timeout:.0f} s")

    def _call(self, method: str, path: str, body: dict | None = None, timeout: float = 60):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                reply = json.loads(response.read())
        except urllib.error.HTTPError as e:
            reply = json.loads(e.read() or b"{}")
        value = reply.get("value")
        if isinstance(value, dict) and "error" in value:
            raise WebDriverError(f"{value['error']}: {value.get('message', '')[:300]}")
        return value

    def _s(self, path: str) -> str:
        return f"/session/{self.session}{path}"

    # --- what the tests use -------------------------------------------------------

    def open(self, url: str):
        self._call("POST", self._s("/url"), {"url": url})

    def run(self, script: str, *args):
        """Runs `script` (a function body; `return` gives the value) in the page."""
        return self._call("POST", self._s("/execute/sync"), {"script": script, "args": list(args)})

    def find(self, css: str) -> str:
        return self._call("POST", self._s("/element"), {"using": "css selector", "value": css})[ELEMENT]

    def click(self, css: str):
        self._call("POST", self._s(f"/element/{self.find(css)}/click"), {})

    def text(self, css: str) -> str:
        return self._call("GET", self._s(f"/element/{self.find(css)}/text"))

    def title(self) -> str:
        return self._call("GET", self._s("/title"))

    def alert_text(self) -> str | None:
        """The text of an open alert, or None when there is none."""
        try:
            return self._call("GET", self._s("/alert/text"))
        except WebDriverError as e:
            if "no such alert" in str(e):
                return None
            raise

    def console_errors(self) -> list[str]:
        """The console's errors since the last call (needs logging=True): a failed load, a refused resource,
        a script error, a Content-Security-Policy violation."""
        entries = self._call("POST", self._s("/se/log"), {"type": "browser"}) or []
        return [e.get("message", "") for e in entries if e.get("level") == "SEVERE"]

    def cdp(self, command: str, params: dict | None = None):
        """A Chrome DevTools Protocol command, through chromedriver (Emulation.setDeviceMetricsOverride, ...)."""
        return self._call("POST", self._s("/goog/cdp/execute"), {"cmd": command, "params": params or {}})

    def screenshot(self, path: Path, full_page: bool = True) -> Path:
        """Saves a PNG; with full_page the window first grows to the page's height."""
        if full_page:
            height = self.run("return Math.ceil(document.documentElement.scrollHeight);")
            width = self.run("return window.outerWidth;")
            self._call("POST", self._s("/window/rect"), {"width": width, "height": height + 140})
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(self._call("GET", self._s("/screenshot"))))
        return path

    def close(self):
        if self.session is not None:
            try:
                self._call("DELETE", f"/session/{self.session}", timeout=20)
            except (OSError, WebDriverError):
                pass
            self.session = None
        if self.driver.poll() is None:
            self.driver.terminate()
            try:
                self.driver.wait(10)
            except subprocess.TimeoutExpired:
                self.driver.kill()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc):
        self.close()
