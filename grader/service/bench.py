"""The grading service's benchmark (issue 29 item 9): a deadline rush against `bin/grader serve`, measured.

    python -m grader.service.bench --device simulated --gpus 1,2,4 --students 60        # no GPU: the fakes
    python -m grader.service.bench --device gpu --gpus 1,2 --students 16 --work /tmp/bench-work   # a GPU host
    python -m grader.service.bench --url http://127.0.0.1:8000 --tokens results/tokens.csv --staff-token T

For each GPU count it starts a service of its own (a fresh results folder; the solution's build is shared
through --work), or talks to the one at --url. Every student's submission is the course's solution
(solution/kernels/*.cu packed as `make submit` packs a student's files, a comment line making each archive
distinct). It measures, and prints and writes as JSON (--out):

- acknowledgement: seconds from sending an upload to its 202 (p50, p95, max), under the rush: every student
  uploads once within --window seconds, from --threads client threads; every --again-th student uploads twice
  more, each time once the previous upload is graded (the in-flight limit; as `make upload` waits); a 429 is
  retried after its Retry-After and counted;
- throughput: jobs graded per hour while the rush's queue drains, (jobs) / (last job's finish - first job's
  start), per GPU count, and the speedup over one GPU; beside it the expected, jobs x the workers' measured
  GPU seconds per job (/api/v1/status) / workers: how close the queue drains to the workers' own rate;
- the ETA each upload's 202 gave against the wait that followed (a first upload is graded before the rush, so
  that the service has a pace);
- upload-to-result: on the idle service after the rush, --single uploads of the solution one after another, each
  from sending the upload to the client seeing its result (polling every POLL seconds): the median;
- a re-upload that changes one task file: --reuploads uploads on the idle service, each the last one with one
  more file changed (in the registry's order), upload to result: the median and each file's (issue 43's target is
  <= 12 s: the build compiles that one file, the object cache holds the rest);
- service overhead per job, from those idle uploads: upload-to-result minus the job's grading seconds (the
  store's jobs.seconds: from the worker's claim to the grade ready to store). It is what the service adds around
  the grading itself: the upload and its intake (the acknowledgement), the wait until an idle worker claims
  it (a worker looks at an empty queue every grader/service/worker.py IDLE_POLL seconds), storing the grade,
  and the client's poll interval (at most POLL). Median and max.

--device simulated needs no GPU: the fake backend of grader/tests/fakes.py (GRADER_TEST_BACKENDS=1, set here),
each of its requests taking --simulated-delay seconds as a GPU's work would.
"""
from __future__ import annotations

import argparse
import csv
import http.client
import io
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from grader.core.registry import Registry

REPO = Path(__file__).resolve().parents[2]
POLL = 0.05  # seconds between a waiting client's looks at its job
FINAL = ("done", "failed", "cancelled")


def solution_archive(salt: str, kernels: Path = REPO / "solution" / "kernels", changed: dict[str, str] | None = None
                     ) -> bytes:
    """The solution's task files as a student's `submission.tar.gz`; `salt` (a comment line) makes it distinct;
    `changed` (file: a second comment line) makes those files differ from the same salt's archive, and only them."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for task in Registry.from_file().tasks:
            data = (kernels / task.file).read_bytes() + f"\n// bench: {salt}\n".encode()
            if changed and task.file in changed:
                data += f"// changed: {changed[task.file]}\n".encode()
            info = tarfile.TarInfo(task.file)
            info.size, info.mtime = len(data), 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


class Client:
    """The service's HTTP API as a student's client sees it (one connection per request, as `make upload`)."""

    def __init__(self, url: str):
        parsed = urlparse(url)
        self.host, self.port = parsed.hostname, parsed.port or 80

    def request(self, method: str, path: str, token: str, body: bytes | None = None, headers: dict | None = None,
                timeout: float = 60.0) -> tuple[int, dict, dict]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers={"Authorization": f"Bearer {token}", **(headers or {})})
            reply = conn.getresponse()
            data = reply.read()
            return reply.status, (json.loads(data) if data else {}), dict(reply.getheaders())
        finally:
            conn.close()

    def upload(self, token: str, data: bytes, student: str | None = None) -> tuple[int, dict, dict, float]:
        """(status, body, headers, seconds to the reply)."""
        headers = {"Upload-Id": secrets.token_urlsafe(12), "Content-Type": "application/gzip",
                   **({"Student": student} if student else {})}
        sent = time.monotonic()
        status, body, got = self.request("POST", "/api/v1/uploads", token, data, headers)
        return status, body, got, time.monotonic() - sent

    def wait(self, token: str, job: int, timeout: float, poll: float = POLL) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            status, body, _ = self.request("GET", f"/api/v1/jobs/{job}", token)
            if status == 200 and body["state"] in FINAL:
                return body
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job} not graded within {timeout:g} s: {body}")
            time.sleep(poll)

    def all_jobs(self, staff: str) -> list[dict]:
        status, body, _ = self.request("GET", "/api/v1/jobs", staff)
        if status != 200:
            raise RuntimeError(f"GET /api/v1/jobs: {status} {body}")
        return body["jobs"]

    def status(self, staff: str) -> dict:
        status, body, _ = self.request("GET", "/api/v1/status", staff)
        if status != 200:
            raise RuntimeError(f"GET /api/v1/status: {status} {body}")
        return body


@dataclass
class Upload:
    student: str
    number: int  # the student's 1st, 2nd, ... upload
    job: int | None = None
    sent: float = 0.0  # monotonic
    ack_seconds: float = 0.0
    refused_429: int = 0
    error: str = ""
    eta_seconds: float | None = None  # what the 202 said the wait would be


@dataclass
class Rush:
    """What a rush did: every upload, and the 202s' latencies."""
    uploads: list[Upload] = field(default_factory=list)
    started: float = 0.0
    last_upload: float = 0.0

    @property
    def acks(self) -> list[float]:
        return [u.ack_seconds for u in self.uploads if u.job is not None]

    @property
    def refused(self) -> int:
        return sum(u.refused_429 for u in self.uploads)


def uploads_per_student(students: list[str], again: int) -> dict[str, int]:
    """Every `again`-th student uploads three times (two when the count runs short), the others once."""
    return {s: (3 if i % (2 * again) == 0 else 2) if again and i % again == 0 else 1 for i, s in enumerate(students)}


def rush(client: Client, tokens: dict[str, str], archive, window: float, threads: int, again: int,
         timeout: float = 600.0, retries: int = 20) -> Rush:
    """The deadline rush: student i's first upload at i x window / len(tokens) seconds from now; those with
    more uploads make each once the previous one is graded. `archive(student, n)` is the n-th upload's bytes."""
    students = sorted(tokens)
    plan = uploads_per_student(students, again)
    out, lock = Rush(started=time.monotonic()), threading.Lock()

    def session(i: int, student: str):
        time.sleep(max(0.0, out.started + i * window / len(students) - time.monotonic()))
        for n in range(1, plan[student] + 1):
            up = Upload(student, n)
            with lock:
                out.uploads.append(up)
            for _ in range(retries):
                up.sent = time.monotonic()
                status, body, headers, seconds = client.upload(tokens[student], archive(student, n))
                if status != 429:
                    break
                up.refused_429 += 1
                time.sleep(float(headers.get("retry-after", headers.get("Retry-After", "1"))))
            up.ack_seconds = seconds
            with lock:
                out.last_upload = max(out.last_upload, time.monotonic())
            if status != 202:
                up.error = f"{status} {body}"
                return
            up.job, up.eta_seconds = body["job"], body.get("eta_seconds")
            if n < plan[student]:
                client.wait(tokens[student], up.job, timeout, poll=0.5)

    with ThreadPoolExecutor(threads) as pool:
        for future in [pool.submit(session, i, s) for i, s in enumerate(students)]:
            future.result()
    return out


def drained(client: Client, staff: str, jobs: set[int], timeout: float) -> list[dict]:
    """Every job of `jobs` once all are final (the staff's listing)."""
    deadline, reported = time.monotonic() + timeout, 0
    while True:
        listed = [j for j in client.all_jobs(staff) if j["job"] in jobs]
        final = sum(j["state"] in FINAL for j in listed)
        if final != reported and len(jobs) <= 50:  # a GPU run's progress, not a simulated rush's hundreds
            say(f"{final} of {len(jobs)} jobs graded")
            reported = final
        if len(listed) == len(jobs) and final == len(jobs):
            return listed
        if time.monotonic() > deadline:
            open_ = [j["job"] for j in listed if j["state"] not in FINAL]
            raise TimeoutError(f"{len(open_)} jobs not graded within {timeout:g} s: {open_[:20]}")
        time.sleep(0.5)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def seconds_between(first: str, last: str) -> float:
    from datetime import datetime
    return (datetime.fromisoformat(last) - datetime.fromisoformat(first)).total_seconds()


def throughput(jobs: list[dict], status: dict) -> dict:
    """The rush's drain: measured jobs/hour, and the expected from the workers' own seconds per job."""
    done = [j for j in jobs if j["state"] == "done"]
    span = seconds_between(min(j["started"] for j in done), max(j["finished"] for j in done))
    workers = [w for w in status["workers"] if w["jobs_last_hour"]]
    # a worker's rate is its GPU's: the build stage builds the next job meanwhile (its seconds where not recorded)
    busy = sum(w["jobs_last_hour"] * (w.get("gpu_seconds_per_job") or w["seconds_per_job"]) for w in workers)
    expected = busy / len(workers) if workers else None
    return {"jobs": len(done), "span_seconds": span, "jobs_per_hour": round(len(done) / span * 3600) if span else None,
            "workers": len(workers), "seconds_per_job": {w["name"]: w["seconds_per_job"] for w in workers},
            # what each job cost its GPU (issue 43's target is <= 10 s), and how much of that was CPU-only building
            "gpu_seconds_per_job": {w["name"]: w.get("gpu_seconds_per_job") for w in workers},
            "build_seconds_per_job": {w["name"]: w.get("build_seconds_per_job") for w in workers},
            "expected_span_seconds": round(expected, 1) if expected else None}


def eta_accuracy(uploads: list[Upload], jobs: list[dict]) -> dict:
    """How the ETA each 202 gave compares with the wait that followed (received to finished, as the store stamps
    them, to the second): issue 43's target is within 25% for at least 90% of the jobs."""
    by_id = {j["job"]: j for j in jobs if j["state"] == "done"}
    pairs = [(u.eta_seconds, seconds_between(by_id[u.job]["received"], by_id[u.job]["finished"]))
             for u in uploads if u.job in by_id and u.eta_seconds is not None]
    within = sum(abs(eta - waited) <= 0.25 * waited for eta, waited in pairs)
    errors = [(eta - waited) / waited for eta, waited in pairs if waited > 0]
    return {"jobs": len(by_id), "with_eta": len(pairs), "within_25_percent": within,
            "share_within_25_percent": round(within / len(pairs), 3) if pairs else None,
            "relative_error": {"median": round(statistics.median(errors), 3), "min": round(min(errors), 3),
                               "max": round(max(errors), 3)} if errors else None}


class Service:
    """A `bin/grader serve` of the bench's own, on loopback: its tokens made as the course makes them."""

    def __init__(self, folder: Path, students: list[str], gpus: int, device: str, rubric: Path, work: Path,
                 delay: float, log: Path, builders: int | None = None):
        self.folder, self.results = folder, folder / "results"
        self.results.mkdir(parents=True, exist_ok=True)
        roster = folder / "roster.csv"
        roster.write_text("student,name\n" + "".join(f"{s},Student {s}\n" for s in students))
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1",
                    "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
        if device == "simulated":
            self.env.update(GRADER_TEST_BACKENDS="1", GRADER_SIMULATED_DELAY=str(delay),
                            CUDA_VISIBLE_DEVICES=",".join(str(i) for i in range(gpus)))
        self._grader("tokens", "--roster", str(roster), "--rubric", str(rubric))
        with open(self.results / "tokens.csv") as f:
            self.tokens = {row["student"]: row["token"] for row in csv.DictReader(f)}
        self.staff = self._grader("tokens", "--staff", "bench").strip().splitlines()[-1]
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(log, "a")  # beside --out: a run cut by a time limit still leaves it
        self.process = subprocess.Popen(
            [sys.executable, "-m", "grader", "serve", "--results", str(self.results), "--device", device, "--gpus",
             ",".join(str(i) for i in range(gpus)), "--port", str(self.port), "--rubric", str(rubric),
             "--work", str(work), *(["--builders", str(builders)] if builders else [])], cwd=REPO, env=self.env,
            stdout=self.log, stderr=subprocess.STDOUT)
        self.gpus = gpus

    def _grader(self, *args: str) -> str:
        return subprocess.run([sys.executable, "-m", "grader", *args, "--results", str(self.results)], cwd=REPO,
                              env=self.env, check=True, capture_output=True, text=True).stdout

    def ready(self, client: Client, timeout: float):
        started = time.monotonic()
        deadline = started + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.log.flush()
                tail = "\n".join(Path(self.log.name).read_text(errors="replace").splitlines()[-15:])
                raise RuntimeError(f"the service exited ({self.process.returncode}); {self.log.name} ends:\n{tail}")
            try:
                workers = client.status(self.staff)["workers"]
            except (OSError, RuntimeError):
                workers = []
            failed = [w for w in workers if w["state"] == "failed"]
            if failed:  # (a worker the service gave up on is never ready: say so now, not at the timeout)
                raise RuntimeError(f"worker {failed[0]['name']} failed: {failed[0]['reason']}; "
                                   f"see {self.log.name}")
            if sum(w["state"] == "idle" for w in workers) >= self.gpus:
                say(f"{self.gpus} worker(s) ready {time.monotonic() - started:.1f} s after the service started"
                    " (the solution's build included)")
                return
            time.sleep(0.2)
        raise RuntimeError(f"the service's workers were not ready within {timeout:g} s: see {self.log.name}")

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=120)
        self.log.close()


def job_seconds(results: Path | None, job: int) -> float | None:
    """The job's grading seconds in the store (jobs.seconds), when the bench can read the store."""
    if results is None:
        return None
    from grader.store.jobs import Jobs
    from grader.store.store import Store
    store = Store(results / "grades.sqlite")
    try:
        found = Jobs(store).job(job)
        return found.seconds if found else None
    finally:
        store.close()


def say(line: str):
    """A measurement as soon as it is made (a run cut by a time limit still shows what it measured)."""
    print(f"bench: {line}", file=sys.stderr, flush=True)


def measure(client: Client, tokens: dict[str, str], staff: str, args, results: Path | None) -> dict:
    """One rush and the idle uploads after it, against one service; before the rush, one upload graded so that
    the service has a pace to give ETAs from."""
    status, body, _, _ = client.upload(staff, solution_archive(f"warm-{secrets.token_hex(4)}"), student=sorted(tokens)[0])
    if status != 202:
        raise RuntimeError(f"the first upload was refused: {status} {body}")
    client.wait(staff, body["job"], args.timeout)
    run = rush(client, tokens, lambda s, n: solution_archive(f"{s}-{n}-{secrets.token_hex(4)}"), args.window,
               args.threads, args.again, args.timeout)
    failed = [asdict(u) for u in run.uploads if u.job is None]
    say(f"rush: {len(run.uploads)} uploads sent, {len(run.acks)} acknowledged"
        + (f" (p95 {percentile(run.acks, 0.95):.3f} s)" if run.acks else "") + "; draining")
    jobs = drained(client, staff, {u.job for u in run.uploads if u.job is not None}, args.timeout)
    drain = throughput(jobs, client.status(staff))
    say(f"drained: {json.dumps(drain)}")
    etas = eta_accuracy(run.uploads, jobs)
    say(f"ETA at upload against the wait: {json.dumps(etas)}")
    first = sorted(tokens)[0]
    idle = []
    for n in range(args.single):
        sent = time.monotonic()
        status, body, _, _ = client.upload(staff, solution_archive(f"idle-{n}-{secrets.token_hex(4)}"), student=first)
        if status != 202:
            raise RuntimeError(f"the idle upload was refused: {status} {body}")
        client.wait(staff, body["job"], args.timeout)
        seconds = time.monotonic() - sent
        graded = job_seconds(results, body["job"])
        idle.append((seconds, None if graded is None else seconds - graded))
        say(f"idle upload {n + 1}: {seconds:.2f} s from upload to result"
            + (f", {seconds - graded:.2f} s of it the service's own" if graded is not None else ""))
    reuploads = reupload_one_file(client, staff, first, args.reuploads, args.timeout)
    acks = run.acks
    overheads = [o for _, o in idle if o is not None]
    return {
        "uploads": len(run.uploads), "refused_429": run.refused, "not_accepted": failed,
        "upload_window_seconds": round(run.last_upload - run.started, 1),
        "ack_seconds": {"p50": round(percentile(acks, 0.5), 3), "p95": round(percentile(acks, 0.95), 3),
                        "max": round(max(acks), 3)} if acks else None,
        "graded": sum(j["state"] == "done" for j in jobs), "failed": sum(j["state"] == "failed" for j in jobs),
        "drain": drain, "eta": etas,
        "idle_upload_to_result_seconds": {"median": round(statistics.median(s for s, _ in idle), 3),
                                          "max": round(max(s for s, _ in idle), 3)} if idle else None,
        "overhead_seconds": {"median": round(statistics.median(overheads), 3), "max": round(max(overheads), 3)}
        if overheads else None,
        "reupload_one_file_seconds": {"median": round(statistics.median(reuploads.values()), 3),
                                      "each": {f: round(t, 3) for f, t in reuploads.items()}} if reuploads else None,
    }


def reupload_one_file(client: Client, staff: str, student: str, count: int, timeout: float) -> dict[str, float]:
    """Upload to result of `count` re-uploads on the idle service, each differing from the one before in one task
    file (in the registry's order), after a first upload of the same salt that builds every file."""
    files = [t.file for t in Registry.from_file().tasks]
    salt = f"re-{secrets.token_hex(4)}"
    measured: dict[str, float] = {}

    def upload(changed: dict[str, str]) -> float:
        sent = time.monotonic()
        status, body, _, _ = client.upload(staff, solution_archive(salt, changed=changed), student=student)
        if status != 202:
            raise RuntimeError(f"the re-upload was refused: {status} {body}")
        client.wait(staff, body["job"], timeout)
        return time.monotonic() - sent
    if count:
        upload({})
    changed: dict[str, str] = {}
    for n in range(count):
        file = files[n % len(files)]
        changed[file] = str(n)
        measured[file] = upload(dict(changed))
        say(f"re-upload {n + 1}, {file} changed: {measured[file]:.2f} s from upload to result")
    return measured


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m grader.service.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--gpus", default="1,2", help="GPU counts to measure, one service each (default: %(default)s)")
    p.add_argument("--students", type=int, default=60, help="students in the rush (default: %(default)s)")
    p.add_argument("--device", choices=("simulated", "gpu"), default="simulated")
    p.add_argument("--url", default=None, help="an already running service (with --tokens and --staff-token)")
    p.add_argument("--tokens", default=None, help="its tokens.csv (`bin/grader tokens`), with --url")
    p.add_argument("--staff-token", default=None, help="a staff token of it, with --url")
    p.add_argument("--rubric", default=str(REPO / "grader" / "rubric.toml"))
    p.add_argument("--work", default=None, help="the solution's build, shared by the runs (default: a temporary one)")
    p.add_argument("--window", type=float, default=30.0, help="seconds over which the first uploads arrive")
    p.add_argument("--threads", type=int, default=32, help="client threads (default: %(default)s)")
    p.add_argument("--again", type=int, default=10, help="every N-th student uploads 2-3 times (0: never)")
    p.add_argument("--single", type=int, default=5, help="uploads one at a time on the idle service, after the rush")
    p.add_argument("--reuploads", type=int, default=3, help="re-uploads changing one task file each, after --single")
    p.add_argument("--builders", type=int, default=None, help="each worker's build threads (default: serve's)")
    p.add_argument("--simulated-delay", type=float, default=0.005, help="seconds per simulated GPU request")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait for the queue to drain")
    p.add_argument("--out", default="service-bench.json")
    args = p.parse_args(argv)
    report = {"device": args.device, "students": args.students, "window_seconds": args.window,
              "threads": args.threads, "rubric": args.rubric, "runs": {}}
    if args.device == "simulated":
        report["simulated_delay"] = args.simulated_delay
    if args.url:
        if not (args.tokens and args.staff_token):
            p.error("--url needs --tokens (the service's tokens.csv) and --staff-token")
        with open(args.tokens) as f:
            tokens = {row["student"]: row["token"] for row in csv.DictReader(f)}
        tokens = dict(sorted(tokens.items())[:args.students])
        report["runs"]["url"] = measure(Client(args.url), tokens, args.staff_token, args, None)
    else:
        students = [f"b{i:03d}" for i in range(1, args.students + 1)]
        with tempfile.TemporaryDirectory(prefix="service-bench-") as tmp:
            work = Path(args.work or Path(tmp) / "work").resolve()
            for gpus in [int(g) for g in args.gpus.split(",")]:
                service = Service(Path(tmp) / f"gpus{gpus}", students, gpus, args.device, Path(args.rubric).resolve(),
                                  work, args.simulated_delay, Path(args.out).resolve().parent / f"service-{gpus}gpu.log",
                                  args.builders)
                try:
                    client = Client(service.url)
                    service.ready(client, timeout=1800)
                    report["runs"][str(gpus)] = measure(client, service.tokens, service.staff, args, service.results)
                finally:
                    service.stop()
                print(f"{gpus} GPU(s): {json.dumps(report['runs'][str(gpus)]['drain'])}", file=sys.stderr, flush=True)
        rates = {g: r["drain"]["jobs_per_hour"] for g, r in report["runs"].items()}
        if "1" in rates and rates["1"]:
            report["speedup_over_1_gpu"] = {g: round(v / rates["1"], 2) for g, v in rates.items() if v}
    text = json.dumps(report, indent=2)
    print(text)
    Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
