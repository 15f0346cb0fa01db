"""The grading service on a Slurm cluster (`serve --slurm`): uploads graded in batches through `grade --slurm`'s
job array and merge, on a real single-host Slurm (conftest.py's `cluster`), with the tests' simulated GPUs.

One scenario runs once for the module. Four students upload (one archive does not build) and every job is
graded through Slurm; then two of them upload again, and the service is killed (SIGKILL) while that batch is in
Slurm's queue and started again: the new service follows the batch to its end. Last, one upload's array task is
cancelled before it starts (the partition is down meanwhile): its job goes back to the queue and the next batch
grades it. The tests check each behaviour on what it left, against a local `grade` of the same archives.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from grader.cli import main as grader
from grader.slurm.batch import batches
from grader.tests.conftest import REPO, small_rubric_text
from grader.tests.service_server import ServiceUnderTest, archive, stored_jobs, stored_table, verdicts
from grader.tests.slurm_cluster import PARTITION

pytestmark = pytest.mark.slurm

DELAY = 0.02  # seconds per simulated request: a batch stays seconds in Slurm's queue, for the restart to land in
STUDENTS = ["s01", "s02", "s03", "s04"]
FIRST = {"s01": archive("ok speed=1.2", salt="1"),
         "s02": archive("ok speed=0.5", salt="2"),
         "s03": archive(files={"fill.cu": b"// fake: ok speed=1.3\n", "add.cu": b"// fake: wrong\n",
                               "transpose.cu": b"// fake: crash\n", "dot.cu": b"#error no\n"}),
         "s04": archive("build-fails", salt="4")}
SECOND = {"s01": archive("ok speed=2.0", salt="again"), "s02": archive("ok speed=1.0", salt="again")}
THIRD = {"s03": archive("ok speed=1.0", salt="fixed")}


@dataclass
class Scenario:
    service: ServiceUnderTest
    first: dict = field(default_factory=dict)  # student -> the done job (API view)
    second: dict = field(default_factory=dict)
    third: dict = field(default_factory=dict)  # the upload whose array task was cancelled
    cancelled: str = ""  # its first batch's id
    phases: set = field(default_factory=set)  # every phase the API showed while jobs were graded
    restarted: str = ""  # the batch in Slurm's queue when the service was killed
    queued_at_kill: str = ""  # squeue's lines for the second batch when the service was killed
    status_at_kill: str = ""  # `bin/grader status` then
    local: Path | None = None  # a local `grade` of the first archives
    seconds: float = 0.0


def wait_all(service: ServiceUnderTest, jobs: dict, phases: set, timeout: float = 90.0) -> dict:
    deadline, done = time.monotonic() + timeout, {}
    while time.monotonic() < deadline and len(done) < len(jobs):
        for student, job in jobs.items():
            if student not in done:
                view = service.job(service.staff, job)
                phases.add(view["phase"])
                if view["state"] in ("done", "failed", "cancelled"):
                    done[student] = view
        time.sleep(0.1)
    assert len(done) == len(jobs), f"not all done within {timeout} s: {done}\n{service.log()}"
    return done


def wait_phase(service: ServiceUnderTest, jobs: dict, phases: tuple[str, ...], timeout: float = 30.0):
    """Until every job's phase is one of these (its batch is in Slurm's hands)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(service.job(service.staff, j)["phase"] in phases for j in jobs.values()):
            return
        time.sleep(0.05)
    raise AssertionError(f"jobs {jobs} not {phases} within {timeout} s:\n{service.log()}")


def upload_all(service: ServiceUnderTest, archives: dict) -> dict:
    return {s: service.upload(service.token(s), data)["job"] for s, data in archives.items()}


@pytest.fixture(scope="module")
def scenario(cluster, rubric, tmp_path_factory):
    root = tmp_path_factory.mktemp("service-slurm")
    (root / "rubric.toml").write_text(small_rubric_text(rubric))
    service = ServiceUnderTest(
        root, students=STUDENTS, delay=DELAY, rubric=root / "rubric.toml", env=cluster.env,
        serve_args=["--slurm", "--partition", PARTITION, "--shard-size", "2", "--cpus-per-task", "1",
                    "--time", "10:00", "--merge-time", "10:00", "--batch-seconds", "2"])
    s = Scenario(service)
    started = time.monotonic()
    service.start()
    try:
        s.first = wait_all(service, upload_all(service, FIRST), s.phases)
        jobs = upload_all(service, SECOND)
        wait_phase(service, jobs, ("slurm: queued", "slurm: running"))
        service.kill()
        s.restarted = batches(service.results)[-1].batch
        s.queued_at_kill = cluster.run("squeue", "-h", "-r", "-o", "%i %j %T").stdout
        s.status_at_kill = subprocess.run([sys.executable, "-m", "grader", "status", "--results",
                                           str(service.results)], cwd=REPO, env=service.env, capture_output=True,
                                          text=True, timeout=60).stdout
        service.start()
        s.second = wait_all(service, jobs, s.phases)
        cluster.run("scontrol", "update", f"PartitionName={PARTITION}", "State=DOWN")  # sbatch takes, nothing starts
        try:
            jobs = upload_all(service, THIRD)
            wait_phase(service, jobs, ("slurm: queued",))
            s.cancelled = batches(service.results)[-1].batch
            cluster.run("scancel", batches(service.results)[-1].jobs["array"])
        finally:
            cluster.run("scontrol", "update", f"PartitionName={PARTITION}", "State=UP")
        s.third = wait_all(service, jobs, s.phases)
    finally:
        service.stop()
    s.seconds = time.monotonic() - started
    folder = root / "class"
    folder.mkdir()
    for student, data in FIRST.items():
        (folder / f"{student}.tar.gz").write_bytes(data)
    s.local = root / "local"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRADER_TEST_BACKENDS", "1")
        assert grader(["grade", str(folder), "--results", str(s.local), "--device", "simulated", "--rubric",
                       str(root / "rubric.toml"), "--no-progress", "--unsafe-no-sandbox"]) == 0
    return s


def jobs(scenario: Scenario) -> dict:
    return stored_jobs(scenario.service.results)


def grade_of(scenario: Scenario, job: int) -> int:
    return jobs(scenario)[job].submission_id


def test_every_upload_is_graded_through_slurm_not_on_this_machine(scenario):
    assert {v["state"] for v in [*scenario.first.values(), *scenario.second.values(), *scenario.third.values()]} \
        == {"done"}
    workers = {j.worker for j in jobs(scenario).values()}
    assert workers == {"slurm"}
    assert ": ready on " not in scenario.service.log()  # no local worker started
    made = batches(scenario.service.results)
    # the four first uploads; the two again (taken over, not submitted again); the cancelled one and its second try
    assert len(made) == 4
    assert sorted(made[0].service_jobs) == STUDENTS
    assert {scenario.first[s]["job"] for s in STUDENTS} == set(made[0].service_jobs.values())


def test_a_job_shows_where_its_batch_is_in_slurm(scenario):
    assert scenario.phases & {"slurm: queued", "slurm: running"} and "slurm: merging" in scenario.phases
    assert scenario.phases <= {"waiting", "slurm: submitting", "slurm: queued", "slurm: running", "slurm: merging",
                               "done"}, scenario.phases


def test_the_results_are_the_verdicts_grade_gives_the_same_archives(scenario):
    served, local = scenario.service.results / "grades.sqlite", scenario.local / "grades.sqlite"
    local_ids = stored_table(scenario.local, "submissions").set_index("student")["id"]
    for student, view in scenario.first.items():
        ours, theirs = verdicts(served, grade_of(scenario, view["job"])), verdicts(local, int(local_ids[student]))
        assert (ours["cases"], ours["status"]) == (theirs["cases"], theirs["status"]), student
        assert {t: c for t, (c, _, _) in ours["scores"].items()} == {t: c for t, (c, _, _) in theirs["scores"].items()}
    statuses = {s: v["result"]["status"] for s, v in scenario.first.items()}
    assert statuses == {"s01": "graded", "s02": "graded", "s03": "graded", "s04": "build_failed"}
    cases = verdicts(served, grade_of(scenario, scenario.first["s03"]["job"]))["cases"]
    assert {c[-1] for c in cases} >= {"ok", "wrong", "crashed", "build_error"}


def test_an_upload_that_did_not_build_is_not_counted(scenario):
    assert scenario.first["s04"]["counted"] is False
    assert all(scenario.first[s]["counted"] for s in ("s01", "s02", "s03"))


def test_the_time_received_is_the_services_clock_not_a_file_time(scenario):
    subs = stored_table(scenario.service.results, "submissions").set_index("id")
    for view in [*scenario.first.values(), *scenario.second.values(), *scenario.third.values()]:
        sub = subs.loc[grade_of(scenario, view["job"])]
        assert (sub["received"], sub["received_from"]) == (view["received"], "service")
    manifest = json.loads((batches(scenario.service.results)[0].path).read_text())
    assert {e["received_from"] for e in manifest["entries"]} == {"service"}


def test_status_shows_the_batch_in_flight_and_its_jobs(scenario):
    text = scenario.status_at_kill
    assert f"Slurm batch {scenario.restarted}" in text, text
    assert all(f"job {scenario.second[s]['job']} {s} (slurm: " in text for s in SECOND), text
    assert "slurm, batches to Slurm (partition grading" in text


def test_a_restart_while_a_batch_is_in_slurms_queue_finishes_its_jobs_once(scenario):
    second = scenario.restarted
    assert f"grader-{second}" in scenario.queued_at_kill or \
        f"grader-merge-{second}" in scenario.queued_at_kill  # killed while the batch was queued
    assert f"batch {second} (jobs" in scenario.service.log() and "followed again" in scenario.service.log()
    retried = scenario.third["s03"]["job"]
    rows = [j for i, j in jobs(scenario).items() if i != retried]
    assert all(j.state == "done" and j.attempts == 1 for j in rows)  # none taken twice
    sids = [j.submission_id for j in rows] + [grade_of(scenario, retried)]
    assert len(set(sids)) == len(sids) == len(STUDENTS) + len(SECOND) + len(THIRD)  # each its own grade
    per_archive = stored_table(scenario.service.results, "submissions").groupby(["student", "sha256"]).size()
    assert (per_archive == 1).all() and len(per_archive) == len(sids)  # each stored once
    merged = stored_table(scenario.service.results, "merged")
    merged = list(merged[merged["kind"] == "submission"]["origin"])
    assert len(merged) == len(set(merged)) == len(sids)


def test_a_job_whose_array_task_was_cancelled_goes_back_to_the_queue_and_the_next_batch_grades_it(scenario):
    job = scenario.third["s03"]
    assert job["state"] == "done" and job["result"]["status"] == "graded" and job["result"]["total"] == 100
    assert f"job {job['job']} (s03): its Slurm batch {scenario.cancelled} ended without its grade (array task " \
           in scenario.service.log() and "CANCELLED" in scenario.service.log()
    assert jobs(scenario)[job["job"]].attempts == 2
    last = batches(scenario.service.results)[-1]
    assert last.batch != scenario.cancelled and last.service_jobs == {"s03": job["job"]}


def test_the_scenario_takes_well_under_two_minutes(scenario):
    assert scenario.seconds < 100, f"{scenario.seconds:.0f} s"
