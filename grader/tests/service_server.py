"""The grading service as its tests run it: `bin/grader serve` started the real way, as a process of its own on
loopback, with the simulated GPUs of grader/tests/fakes.py (`--device simulated`: fast, and a GPU can be made to
fail), and real HTTP clients (http.client) talking to it.

    service = ServiceUnderTest(tmp_path, students=["s01", "s02"], gpus="0,1", delay=0.01)
    service.start()
    job = service.upload(service.token("s01"), archive())          # 202's body
    done = service.wait(service.token("s01"), job["job"])
    service.kill()                                                  # SIGKILL, as a crash
"""
from __future__ import annotations

import http.client
import io
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
from contextlib import contextmanager
from pathlib import Path

from grader.cli import main as grader
from grader.core.registry import Registry
from grader.core.rubric import DEFAULT_RUBRIC

REPO = Path(__file__).resolve().parents[2]
TASK_FILES = [t.file for t in Registry.from_file().tasks]


def archive(marker: str = "ok speed=1.2", files: dict[str, bytes] | None = None, salt: str = "") -> bytes:
    """A submission as `make submit` packs it (a .tar.gz of the task files), each file a fake kernel whose marker
    says how it behaves (grader/tests/fakes.py); `salt` makes two archives differ."""
    files = files if files is not None else {name: f"// fake: {marker}\n// {salt}\n".encode() for name in TASK_FILES}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def app_in_thread(config):
    """The service's app alone (no supervisor, no workers) served by uvicorn on a free loopback port in a thread of
    this process, as `serve` serves it; yields the port, and stops the server on leaving."""
    import threading

    import uvicorn

    from grader.service.app import create_app
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(config), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the app did not start within 30 s"
            time.sleep(0.05)
        yield port
    finally:
        server.should_exit = True
        thread.join(10)


def rubric_with(tmp: Path, **service) -> Path:
    """A copy of the course's rubric with [service] values changed (uploads_per_hour=2, ...)."""
    text = Path(DEFAULT_RUBRIC).read_text()
    for key, value in service.items():
        text, n = re.subn(rf"(?m)^{key} = .*$", f"{key} = {json.dumps(value)}", text)
        assert n == 1, key
    out = Path(tmp) / "rubric.toml"
    out.write_text(text)
    return out


class ServiceUnderTest:
    def __init__(self, tmp: Path, students: list[str] = ("s01", "s02"), gpus: str = "0", delay: float = 0.0,
                 rubric: Path | None = None, drain: float = 30.0, device: str = "simulated",
                 serve_args: list[str] = (), env: dict | None = None):
        """serve_args: more arguments of `serve` (--slurm ...); env: more of its environment (Slurm's)."""
        self.tmp = Path(tmp)
        self.serve_args, self.extra_env = list(serve_args), dict(env or {})
        self.results = self.tmp / "results"
        self.broken = self.tmp / "broken-gpus"
        self.broken.mkdir(parents=True, exist_ok=True)
        self.gpus, self.delay, self.drain, self.device = gpus, delay, drain, device
        self.rubric = Path(rubric or DEFAULT_RUBRIC)
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.log_path = self.tmp / "service.log"
        self.students = list(students)
        roster = self.tmp / "roster.csv"
        roster.write_text("student,name\n" + "".join(f"{s},Student {s}\n" for s in self.students))
        assert grader(["tokens", "--results", str(self.results), "--roster", str(roster), "--rubric",
                       str(self.rubric)]) == 0
        rows = (self.results / "tokens.csv").read_text().splitlines()[1:]
        self.tokens = {row.split(",")[0]: row.split(",")[2] for row in rows}
        self.staff = self._one("--staff", "ta")
        self.assignment = self._one("--assignment", "gradescope")

    def _one(self, flag: str, name: str) -> str:
        import contextlib
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert grader(["tokens", "--results", str(self.results), flag, name]) == 0
        return out.getvalue().strip().splitlines()[-1]

    def token(self, student: str) -> str:
        return self.tokens[student]

    @property
    def env(self) -> dict:
        env = {**os.environ, **self.extra_env,
               "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
               "PYTHONUNBUFFERED": "1"}
        if self.device != "simulated":  # this machine's GPUs (--gpus); the session's build cache
            return env
        env.pop("GRADER_BUILD_CACHE", None)  # (nothing is built: its entry stays in RESULTS/work/cache, its own)
        return {**env, "GRADER_TEST_BACKENDS": "1", "CUDA_VISIBLE_DEVICES": ",".join(
                    str(i) for i in range(len(self.gpus.split(",")))),
                "GRADER_SIMULATED_DELAY": str(self.delay), "GRADER_SIMULATED_BROKEN": str(self.broken)}

    def start(self, timeout: float = 60.0) -> "ServiceUnderTest":
        """Starts `serve` and waits until every worker said it is ready (a GPU service first builds the solution:
        give it minutes)."""
        self.log_from = len(self.log())
        log = open(self.log_path, "a")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "grader", "serve", "--results", str(self.results), "--device", self.device,
             "--port", str(self.port), "--rubric", str(self.rubric), "--drain", str(self.drain),
             *(["--gpus", self.gpus] if self.device == "gpu" else []),  # (the CPU backend has one worker)
             *(["--unsafe-no-sandbox"] if self.device == "simulated" else []), *self.serve_args],
            cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the service exited ({self.process.returncode}):\n{self.log()}")
            try:
                if self.request("GET", "/healthz")[0] == 200 and self.ready_workers() >= self.expected_ready:
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"the service did not start within {timeout} s:\n{self.log()}")

    @property
    def expected_ready(self) -> int:
        """How many ready lines a start waits for: one per worker (one dispatcher with --slurm)."""
        return 1 if "--slurm" in self.serve_args else len(self.gpus.split(","))

    def ready_workers(self) -> int:
        """Workers of this start that said they are ready."""
        return self.log()[self.log_from:].count("slurm: ready" if "--slurm" in self.serve_args else ": ready on ")

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def request(self, method: str, path: str, token: str | None = None, body: bytes | None = None,
                headers: dict | None = None, timeout: float = 30.0) -> tuple[int, dict, dict]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            sent = dict(headers or {})
            if token:
                sent["Authorization"] = f"Bearer {token}"
            conn.request(method, path, body=body, headers=sent)
            reply = conn.getresponse()
            data = reply.read()
            return reply.status, (json.loads(data) if data else {}), dict(reply.getheaders())
        finally:
            conn.close()

    def upload(self, token: str, data: bytes, student: str | None = None, upload_id: str | None = None,
               expect: int = 202, extra: dict | None = None) -> dict:
        headers = {"Upload-Id": upload_id or secrets.token_urlsafe(12), "Content-Type": "application/gzip",
                   **({"Student": student} if student else {}), **(extra or {})}
        status, body, _ = self.request("POST", "/api/v1/uploads", token, data, headers)
        assert status == expect, (status, body)
        return body

    def job(self, token: str, job_id: int) -> dict:
        status, body, _ = self.request("GET", f"/api/v1/jobs/{job_id}", token)
        assert status == 200, (status, body)
        return body

    def wait(self, token: str, job_id: int, timeout: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            job = self.job(token, job_id)
            if job["state"] in ("done", "failed", "cancelled"):
                return job
            time.sleep(0.1)
        raise AssertionError(f"job {job_id} not finished within {timeout} s: {job}\n{self.log()}")

    def status(self) -> dict:
        status, body, _ = self.request("GET", "/api/v1/status", self.staff)
        assert status == 200, body
        return body

    def worker_pids(self) -> list[int]:
        found = subprocess.run(["pgrep", "-f", f"serve-worker --results {self.results}"], capture_output=True,
                               text=True).stdout.split()
        return [int(p) for p in found]

    def kill(self, sig: int = signal.SIGKILL):
        """Ends the service as a crash would (SIGKILL: no shutdown runs; its workers die with it)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(timeout=self.drain + 30)
        deadline = time.monotonic() + 10
        while self.worker_pids() and time.monotonic() < deadline:
            time.sleep(0.1)

    def stop(self):
        self.kill(signal.SIGTERM)


@contextmanager
def opened(results: Path):
    """The service's store, read through grader/store/ (never SQL: test_one_source.py)."""
    from grader.store.store import Store
    store = Store(Path(results) / "grades.sqlite")
    try:
        yield store
    finally:
        store.close()


def verdicts(db: Path, submission_id: int | None = None) -> dict:
    """A stored grade's verdicts, to compare two gradings of one archive: its status, every case's status (sorted
    by task, type, shape, kind), each task's points and each sanitizer run's tool and status (clean, errors, ...).
    `submission_id` None: the latest stored. `db`: a grades.sqlite."""
    with opened(Path(db).parent) as store:
        subs = store.submissions()
        sid = int(subs["id"].max()) if submission_id is None else int(submission_id)
        cases = store.cases(sid).sort_values(["task", "dtype", "shape", "kind"])
        scores = store.scores([sid])
        tools = store.sanitizer_runs(sid).sort_values(["task", "tool"])
        return {"status": store.submission_status(sid),
                "cases": [tuple(r) for r in cases[["task", "dtype", "shape", "kind", "status"]].itertuples(index=False)],
                "scores": {r.task: (float(r.correctness), float(r.performance), float(r.performance_max))
                           for r in scores.itertuples()},
                "tools": [(r.task, r.tool, r.status) for r in tools.itertuples()]}


def stored_jobs(results: Path) -> dict:
    """The store's job rows (grader/store/jobs.py's Job: attempts, worker, the grade each points to) by id, oldest
    first. `results`: the service's results folder (ServiceUnderTest.results)."""
    from grader.store.jobs import Jobs
    with opened(results) as store:
        return {job.id: job for job in Jobs(store).jobs()}


def stored_table(results: Path, table: str):
    """The store's submissions ("submissions") or what it merged from Slurm shards ("merged")."""
    with opened(results) as store:
        return store.submissions() if table == "submissions" else store.merged_origins()


def stored_grades(results: Path) -> list[int]:
    """The ids of every grade (submission) the store holds."""
    return stored_table(results, "submissions")["id"].tolist()


def stored_workers(results: Path) -> dict[str, dict]:
    """The store's worker rows by name (their pid, state and reason)."""
    from grader.store.jobs import Jobs
    with opened(results) as store:
        return {w["name"]: w for w in Jobs(store).workers()}


def log_tail(service: ServiceUnderTest, lines: int = 40) -> str:
    return "\n".join(service.log().splitlines()[-lines:])


def until(service: ServiceUnderTest, what: str, check, timeout: float = 60.0, every: float = 0.05):
    """Polls `check()` until it returns something true, and returns that; after `timeout` seconds fails naming
    `what` it waited for, with the service log's tail."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}; the service's log ends:\n{log_tail(service)}")
        time.sleep(every)


def student_starter(folder: Path, port: int) -> Path:
    """A student's starter folder as the tarball has it when the course runs a service: the client and service.json."""
    (folder / "tools").mkdir(parents=True)
    shutil.copy(REPO / "starter" / "tools" / "service.py", folder / "tools" / "service.py")
    (folder / "service.json").write_text(json.dumps({"url": f"http://127.0.0.1:{port}", "assignment": "cuda-kernels"}))
    return folder


def run_client(starter: Path, *args: str, home: Path, token: str | None = None) -> subprocess.CompletedProcess:
    """tools/service.py as the student runs it, with a HOME of its own (and $GRADER_TOKEN, given `token`)."""
    env = {k: v for k, v in os.environ.items() if k != "GRADER_TOKEN"}
    env["HOME"] = str(home)
    if token is not None:
        env["GRADER_TOKEN"] = token
    return subprocess.run([sys.executable, "tools/service.py", *args], cwd=starter, env=env, capture_output=True,
                          text=True, timeout=120)
