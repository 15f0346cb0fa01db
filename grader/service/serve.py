"""`bin/grader serve`: the HTTP API (grader/service/app.py) under uvicorn, with what grades its jobs (a Runner):
one worker process per GPU (grader/service/supervisor.py), or, with --slurm, batches handed to the cluster
(grader/service/slurm_dispatch.py). SIGTERM or Ctrl-C stops it cleanly: no new uploads, each worker finishes the
job in hand (at most `drain` seconds; after that the job goes back to the queue), then it exits; a batch in
Slurm's queue grades on, and the next start takes it over. Queued jobs stay in the store and are graded when it
starts again."""
from __future__ import annotations

import signal
import sys
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import uvicorn
from starlette.concurrency import run_in_threadpool

from grader.core.registry import Registry
from grader.core.rubric import Rubric
from grader.service.app import ServiceConfig, create_app
from grader.service.connections import ConnectionLimits, Guard
from grader.service.runner import Runner


@dataclass
class ServeOptions:
    results: Path
    host: str
    port: int
    ranked_only: bool = False  # the live leaderboard leaves off the entries that are not ranked
    connections: ConnectionLimits = ConnectionLimits()  # how many may be open, and for how long (connections.py)


def serve(options: ServeOptions, rubric: Rubric, registry: Registry, runner: Runner, profiler=None) -> int:
    """profiler: () -> "" where the graders run Nsight Compute (make profile GPU=1), else why not."""
    @asynccontextmanager
    async def lifespan(app):
        runner.start()
        print(f"service: listening on http://{options.host}:{options.port} with {runner.describe()}; "
              f"store {Path(options.results) / 'grades.sqlite'}", file=sys.stderr, flush=True)
        try:
            yield
        finally:
            print("service: stopping: no new uploads", file=sys.stderr, flush=True)
            await run_in_threadpool(runner.stop)

    app = create_app(ServiceConfig(Path(options.results), rubric, registry, workers=runner.alive,
                                   ranked_only=options.ranked_only, profiler=profiler), lifespan)
    guard = Guard(options.connections, rubric.service.upload_seconds)
    config = uvicorn.Config(guard.wrap(app), host=options.host, port=options.port, log_level="warning",
                            access_log=False, timeout_graceful_shutdown=5, lifespan="on", **guard.settings())
    guard.watch_logs()  # (uvicorn.Config has set up its logging)
    # uvicorn raises the signal that stopped it again once it has shut down, through the handlers it found: with
    # these, a stop that drained its workers exits 0, as this command says (systemd and scripts read a clean stop)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _stopped)
    uvicorn.Server(config).run()
    return 0


def _stopped(sig, frame):
    """uvicorn's stop signal raised again after the clean shutdown: nothing is left to do."""
