"""What the service's handlers share (grader/service/api_handlers.py, grader/service/pages.py): the configuration
`serve` gave, and what is made once from it. create_app (grader/service/app.py) keeps it on `app.state.service`,
where a handler finds it through its request, so a handler is a plain function a test can call with a request it
made itself.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from starlette.requests import Request

from grader.core.registry import Registry
from grader.core.rubric import Rubric
from grader.intake.submission import IntakeLimits
from grader.reports.leaderboard.publish import PublishOptions
from grader.store.jobs import Jobs
from grader.store.store import Store


@dataclass
class ServiceConfig:
    results: Path
    rubric: Rubric
    registry: Registry
    workers: callable = None  # () -> how many workers are alive (the ETA's divisor)
    ranked_only: bool = False  # the live leaderboard leaves off the entries that are not ranked
    profiler: callable = None  # () -> "" when the graders run Nsight Compute (make profile GPU=1), else why not
    preparing: callable = None  # () -> what `serve` still does before it grades ("" once it is ready)


class _Stores(threading.local):
    store: Store | None = None


class ServiceContext:
    """One service's configuration and what its handlers derive from it, made once per app."""

    def __init__(self, config: ServiceConfig):
        self.config = config
        # a store connection per server thread: a sqlite connection is not to be shared between threads
        self.stores = _Stores()
        self.results = Path(config.results)
        self.uploads = self.results / "uploads"
        self.rubric = config.rubric
        self.task_files = [t.file for t in config.registry.tasks]
        self.task_file = {t.id: t.file for t in config.registry.tasks}
        self.limits = IntakeLimits.from_rubric(self.rubric.limits)
        self.max_bytes = int(self.rubric.limits.archive_mib * 2**20)
        # the leaderboard's options (the results folder, its pseudonyms' salt, ranked only)
        self.board = PublishOptions(results=config.results, ranked_only=config.ranked_only)
        # the live leaderboard's page, rendered once per change of the results however many students watch it
        self.board_cache = {"version": None, "page": None}
        self.board_lock = threading.Lock()

    def jobs(self) -> Jobs:
        """This thread's store rows."""
        if self.stores.store is None:
            self.stores.store = Store(self.results / "grades.sqlite")
        return Jobs(self.stores.store)

    def profiler_missing(self) -> str:
        """"" where the graders run Nsight Compute (make profile GPU=1), else why not."""
        return self.config.profiler() if self.config.profiler else "this service was started without a profiler"

    def alive(self) -> int:
        return self.config.workers() if self.config.workers else 1


def service_of(request: Request) -> ServiceContext:
    """The context of the app that received `request`."""
    return request.app.state.service
