"""The grading service on a real backend, not the fakes: `serve --device cpu` builds each upload with the real
compiler in the real sandbox and runs it on this machine's cores. The simulated GPUs of the other service tests
build nothing, so a worker that cannot start again in the folder its previous life left went unseen there (on a
GPU, a restarted service's workers failed three times each and took no job). Here a worker is killed, then the
service is stopped and started again, and the solution uploaded after that must be graded in full."""
from __future__ import annotations

import os
import signal

import pytest

from grader.core.registry import Registry
from grader.core.rubric import DEFAULT_RUBRIC, load_rubric
from grader.core.status import CaseStatus, SanitizerStatus
from grader.service.bench import solution_archive
from grader.tests.conftest import small_rubric_text
from grader.tests.service_server import ServiceUnderTest, log_tail, until, verdicts

pytestmark = pytest.mark.slow  # one CPU grading (the build is the session's cache entry): a minute or two on 2 cores

# Small shapes, each task's edge cases among them: what is tested is that the service grades at all after a kill
# and a restart, on the real backend; the CPU backend's verdicts on every shape are test_grade_cpu.py's.
MATRIX, MATMUL = ["1x1", "37x211"], ["1x1x1", "37x41x43"]
SHAPES = {"fill": MATRIX, "add": MATRIX, "transpose": MATRIX, "matmul_naive": MATMUL, "matmul_tiled": MATMUL,
          "matmul_fast": MATMUL, "dot": ["1", "1025"]}


def test_a_killed_worker_and_a_restarted_service_grade_again(tmp_path):
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(small_rubric_text(load_rubric(DEFAULT_RUBRIC, Registry.from_file()), shapes=SHAPES,
                                        limits={"build": 300, "case": 10, "submission": 300}))
    service = ServiceUnderTest(tmp_path, students=["s01"], device="cpu", rubric=rubric)
    try:
        service.start(timeout=1200)
        [pid] = service.worker_pids()
        os.kill(pid, signal.SIGKILL)
        until(service, "the killed worker to be started again and ready",
              lambda: service.ready_workers() >= 2 or "not started again" in service.log(), timeout=300)
        assert service.ready_workers() >= 2, log_tail(service)

        service.stop()
        service.start(timeout=300)
        job = service.upload(service.staff, solution_archive("after a restart"), student="s01")["job"]
        finished = service.wait(service.staff, job, timeout=1200)
        assert finished["state"] == "done", (finished, log_tail(service))

        graded = verdicts(service.results / "grades.sqlite")
        assert graded["status"] == "graded", log_tail(service)
        correctness = [(task, status) for task, _, _, kind, status in graded["cases"] if kind == "correctness"]
        # Every case passed, but those the CPU backend leaves to a GPU (the largest shapes; a task it cannot run).
        assert {status for _, status in correctness} <= {CaseStatus.OK, CaseStatus.GPU_ONLY, CaseStatus.NEEDS_GPU}, \
            graded["cases"]
        assert len({task for task, status in correctness if status == CaseStatus.OK}) >= 5, graded["cases"]
        assert {status for *_, status in graded["tools"]} <= {SanitizerStatus.CLEAN}, graded["tools"]
        assert service.log().count("worker cpu ended (") == 1, log_tail(service)  # the kill, and nothing after
    finally:
        service.stop()
