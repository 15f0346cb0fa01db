"""The grading service when its machine fails under it (issue 41, item 2): the results folder on a small tmpfs,
filled while a job is graded and freed again (a read-only folder and a locked store take the same path: which
errors are the machine's is test_machine_faults.py's). A real `bin/grader serve` on
loopback (grader/tests/service_server.py), the simulated GPUs of fakes.py. Each fault must leave the worker and the
supervisor alive, give the job back uncounted, refuse uploads with a line that names the cause, show the cause in
`status`, and grading must resume by itself once the cause is gone: every accepted job graded exactly once, the
store intact. Mounting needs root (CI runs as root)."""
from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from grader.tests.service_server import REPO, ServiceUnderTest, archive, log_tail, opened, stored_grades, stored_jobs, until

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs for the results folder: needs root (CI is)")]

SLOWER = 0.01  # about 4 s a job: the fault lands while it is graded
STUDENTS = ["s01", "s02", "s03"]


@pytest.fixture
def small_results(tmp_path):
    """tmp_path/results on a tmpfs of its own (48 MiB), unmounted at the end."""
    folder = tmp_path / "results"
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path) -> Path:
    """Writes a file until the disk is full; returns it (delete it to free the space)."""
    filler = folder / "filler"
    chunk = b"\0" * 2**20
    with open(filler, "wb", buffering=0) as out:
        try:
            while True:
                out.write(chunk)
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
    with open(filler, "ab", buffering=0) as out:  # the last bytes the big writes left
        try:
            while True:
                out.write(b"\0" * 4096)
        except OSError:
            pass
    return filler


def running(service: ServiceUnderTest, job_id: int):
    job = service.job(service.staff, job_id)
    progress = job["progress"] or {}
    return job if job["state"] == "running" and 0 < progress.get("done", 0) < progress.get("total", 1) else None


def cli_status(service: ServiceUnderTest) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", "status", "--results", str(service.results)], cwd=REPO,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60)



def integrity(service: ServiceUnderTest) -> str:
    with opened(service.results) as store:
        return store.integrity()


def graded_once(service: ServiceUnderTest, ids: list[int]):
    rows = stored_jobs(service.results)
    grades = [rows[i].submission_id for i in ids]
    assert None not in grades and len(set(grades)) == len(ids), grades
    assert sorted(stored_grades(service.results)) == sorted(grades), "a stored grade no job points to"
    lines = re.findall(r"job (\d+) s\d+ attempt \d+: graded", service.log())
    assert sorted(int(n) for n in lines) == sorted(ids), lines
    return rows


def test_a_full_disk_pauses_grading_refuses_uploads_by_name_and_grading_resumes_by_itself(tmp_path, small_results):
    service = ServiceUnderTest(tmp_path, students=STUDENTS, gpus="0", delay=SLOWER).start()
    filler = None
    try:
        first = service.upload(service.staff, archive(salt="full-1"), student="s01")["job"]
        until(service, f"job {first} to run its cases", lambda: running(service, first))
        filler = fill(small_results)

        refused = service.upload(service.token("s02"), archive(salt="full-2"), expect=507)
        assert refused == {"error": "the grading machine's disk is full, so no upload can be kept now; the course "
                                    "staff can see it"}, refused
        until(service, "the worker to pause", lambda: "paused: the grading machine's disk is full" in service.log(),
              timeout=60)
        status = service.status()
        assert status["fault"].startswith("the grading machine's disk is full"), status
        printed = cli_status(service)
        assert printed.returncode == 0 and printed.stdout.startswith("FAULT: the grading machine's disk is full"), \
            printed.stdout + printed.stderr
        assert service.process.poll() is None and service.worker_pids(), "the service or its worker died"

        filler.unlink()
        filler = None
        done = service.wait(service.staff, first, timeout=90)
        second = service.upload(service.token("s02"), archive(salt="full-3"))["job"]  # no restart in between
        later = service.wait(service.token("s02"), second, timeout=60)
    finally:
        if filler is not None:
            filler.unlink()
        service.stop()
    assert done["state"] == "done" and done["result"]["total"] == 100, done
    assert later["state"] == "done" and later["result"]["total"] == 100, later
    rows = graded_once(service, [first, second])
    assert rows[first].attempts == 1, rows[first]  # the machine's fault is not the job's
    log = service.log()
    assert "Exception in thread" not in log and "Traceback" not in log, log_tail(service)
    assert "resumed after" in log
    assert integrity(service) == "ok"
