"""`bin/grader serve`: the HTTP API (grader/service/app.py) under uvicorn, with what grades its jobs (a Runner):
one worker process per GPU (grader/service/supervisor.py), or, with --slurm, batches handed to the cluster
(grader/service/slurm_dispatch.py). It listens at once and prepares in the background (it builds the solution:
minutes the first time), saying so in its log; meanwhile every address answers 503 "the grading service is
starting", which the students' client says in one line. SIGTERM or Ctrl-C stops it cleanly: no new uploads, each
worker finishes the job in hand (at most `drain` seconds; after that the job goes back to the queue), then it exits; a batch in
Slurm's queue grades on, and the next start takes it over. Queued jobs stay in the store and are graded when it
starts again."""
from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import uvicorn
from starlette.concurrency import run_in_threadpool

from grader.core.errors import GraderError
from grader.core.registry import Registry
from grader.core.rubric import Rubric
from grader.service.app import ServiceConfig, create_app
from grader.service.connections import ConnectionLimits, Guard
from grader.service.log import say
from grader.service.lti.passback import Passback
from grader.service.runner import Runner


PREPARING_NOTE_EVERY = 30.0  # seconds between the log's "still preparing" lines


@dataclass
class ServeOptions:
    results: Path
    host: str
    port: int
    ranked_only: bool = False  # the live leaderboard leaves off the entries that are not ranked
    connections: ConnectionLimits = ConnectionLimits()  # how many may be open, and for how long (connections.py)


def serve(options: ServeOptions, rubric: Rubric, registry: Registry, prepare: Callable[[], Runner],
          doing: str, profiler=None) -> int:
    """prepare: makes what grades the jobs (builds the solution; `doing` says so in a few words), called in the
    background while the service already answers "starting". profiler: () -> "" where the graders run Nsight
    Compute (make profile GPU=1), else why not. Returns 1 when preparing failed (its line is in the log)."""
    state = {"doing": doing, "runner": None, "failed": ""}
    stop, ready, lock = threading.Event(), threading.Event(), threading.Lock()

    def log(line: str):
        say(line)

    def prepared():
        started = time.monotonic()

        def still():  # a TA watching the log sees it is not hung
            while not ready.wait(PREPARING_NOTE_EVERY):
                log(f"still preparing: {doing} ({time.monotonic() - started:.0f} s so far)")
        threading.Thread(target=still, name="preparing-note", daemon=True).start()
        try:
            runner = prepare()
        except Exception as e:  # (a GraderError's one line, or the build's own failure) the service cannot grade
            state["failed"] = str(e) if isinstance(e, GraderError) else f"{type(e).__name__}: {e}"
            log(f"could not prepare: {state['failed']}; stopping")
            ready.set()
            os.kill(os.getpid(), signal.SIGTERM)
            return
        with lock:
            ready.set()
            if stop.is_set():
                return
            state["runner"] = runner
            runner.start()
            state["doing"] = ""
        log(f"ready after {time.monotonic() - started:.0f} s: grading with {runner.describe()}")

    def alive() -> int:
        return state["runner"].alive() if state["runner"] is not None else 0

    passback = Passback(Path(options.results), rubric, log)

    @asynccontextmanager
    async def lifespan(app):
        log(f"listening on http://{options.host}:{options.port}; store {Path(options.results) / 'grades.sqlite'}; "
            f"preparing: {doing}; until then every address answers 'starting'")
        threading.Thread(target=prepared, name="prepare", daemon=True).start()
        # scores back to the LMS for the students who came from it (docs/lti.md); idle without such students
        threading.Thread(target=passback.run, name="lti-passback", daemon=True).start()
        try:
            yield
        finally:
            log("stopping: no new uploads")
            passback.stopping.set()
            await run_in_threadpool(stopped)

    def stopped():
        with lock:
            stop.set()
            if state["runner"] is not None:
                state["runner"].stop()

    app = create_app(ServiceConfig(Path(options.results), rubric, registry, workers=alive,
                                   ranked_only=options.ranked_only, profiler=profiler,
                                   preparing=lambda: state["doing"]), lifespan)
    guard = Guard(options.connections, rubric.service.upload_seconds)
    config = uvicorn.Config(guard.wrap(app), host=options.host, port=options.port, log_level="warning",
                            access_log=False, timeout_graceful_shutdown=5, lifespan="on", **guard.settings())
    guard.watch_logs()  # (uvicorn.Config has set up its logging)
    # uvicorn raises the signal that stopped it again once it has shut down, through the handlers it found: with
    # these, a stop that drained its workers exits 0, as this command says (systemd and scripts read a clean stop)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _stopped)
    uvicorn.Server(config).run(sockets=[guard.listening_socket(config)])
    if state["failed"]:
        raise GraderError(f"the service stopped: it could not prepare ({state['failed']})")
    return 0


def _stopped(sig, frame):
    """uvicorn's stop signal raised again after the clean shutdown: nothing is left to do."""
