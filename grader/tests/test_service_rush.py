"""The deadline rush of issue 29 item 8, on the fast fake backend: 300 students upload within a short window to a
service with four simulated GPUs; every upload is acknowledged at once, nothing is lost, each student's results
come in their upload order, and the queue drains at the workers' own rate. The load is the benchmark's
(grader/service/bench.py's rush: one client thread per waiting student, as `make upload` waits).

The issue's five minutes are compressed to WINDOW seconds: what the rush tests is that uploads arrive faster
than the workers grade (a queue builds, and the 202 must not wait for it), and 300 uploads in 30 s do that here
as 300 in 5 minutes do on a real class's GPUs, in a tenth of a test's time."""
from __future__ import annotations

import pytest

from grader.core.registry import Registry
from grader.core.rubric import DEFAULT_RUBRIC, load_rubric
from grader.service.bench import Client, drained, percentile, rush, seconds_between, throughput, uploads_per_student
from grader.tests.conftest import small_rubric_text
from grader.tests.service_server import ServiceUnderTest, archive, log_tail

pytestmark = pytest.mark.slow  # about two minutes on a loaded 2-core machine

STUDENTS = [f"r{i:03d}" for i in range(1, 301)]
WINDOW = 30.0
GPUS = "0,1,2,3"
DELAY = 0.005  # seconds per simulated request: half a second per job of the small rubric
AGAIN = 10  # every 10th student uploads 2-3 times
DRAIN_FACTOR = 1.5  # the measured drain within this of jobs x the workers' seconds per job / workers


@pytest.fixture(scope="module")
def rushed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rush")
    rubric = tmp / "small.toml"
    rubric.write_text(small_rubric_text(load_rubric(DEFAULT_RUBRIC, Registry.from_file())))
    service = ServiceUnderTest(tmp, students=STUDENTS, gpus=GPUS, delay=DELAY, rubric=rubric).start()
    try:
        client = Client(f"http://127.0.0.1:{service.port}")
        tokens = {s: service.token(s) for s in STUDENTS}
        run = rush(client, tokens, lambda s, n: archive(salt=f"{s}-{n}"), WINDOW, threads=48, again=AGAIN,
                   timeout=300)
        try:
            jobs = drained(client, service.staff, {u.job for u in run.uploads if u.job is not None}, timeout=300)
        except TimeoutError as e:
            raise AssertionError(f"{e}\n{log_tail(service)}") from None
        status = service.status()
    finally:
        service.stop()
    return run, {j["job"]: j for j in jobs}, status


def test_every_upload_of_the_rush_is_acknowledged_without_waiting_for_the_queue(rushed):
    """The 202 comes while the job waits: at the 95th percentile well below the jobs' own waits in the queue
    (which the rush builds to several seconds; an acknowledgement that waited for grading would take as long).
    How fast it comes is a speed, not a verdict on a loaded machine: printed here, and recorded by the bench on
    the GPU machine (grader/service/bench.py; the target is a second at the 95th percentile)."""
    run, jobs, _ = rushed
    plan = uploads_per_student(STUDENTS, AGAIN)
    assert len(run.uploads) == sum(plan.values()) and [u.error for u in run.uploads if u.error] == []
    acks = run.acks
    waits = [seconds_between(j["received"], j["started"]) for j in jobs.values()]
    numbers = (f"p50 {percentile(acks, 0.5):.3f} s, p95 {percentile(acks, 0.95):.3f} s, max {max(acks):.3f} s over "
               f"{len(acks)} uploads in {run.last_upload - run.started:.1f} s; the jobs waited in the queue "
               f"p50 {percentile(waits, 0.5):.0f} s, p95 {percentile(waits, 0.95):.0f} s")
    print(f"rush acknowledgements: {numbers}")  # shown with pytest -s
    assert percentile(waits, 0.95) >= 3, f"the rush built no queue to wait in: {numbers}"
    assert percentile(acks, 0.95) < percentile(waits, 0.95) / 3, numbers
    # each client waited for its job before uploading again: the in-flight limit never had to refuse one
    assert run.refused == 0, f"{run.refused} uploads refused 429 ({numbers})"


def test_nothing_is_lost_and_each_student_s_results_come_in_upload_order(rushed):
    run, jobs, _ = rushed
    assert sorted(jobs) == sorted(u.job for u in run.uploads)
    assert all(j["state"] == "done" and j["result"]["total"] == 100 for j in jobs.values()), \
        [j for j in jobs.values() if j["state"] != "done"][:3]
    mine: dict[str, list] = {}
    for u in sorted(run.uploads, key=lambda u: (u.student, u.number)):
        mine.setdefault(u.student, []).append(jobs[u.job])
    for student, theirs in mine.items():
        assert [j["attempt"] for j in theirs] == list(range(1, len(theirs) + 1)), student
        assert all(a["finished"] <= b["started"] for a, b in zip(theirs, theirs[1:])), (student, theirs)


def test_the_queue_drains_at_the_workers_rate(rushed):
    _, jobs, status = rushed
    drain = throughput(list(jobs.values()), status)
    assert drain["workers"] == len(GPUS.split(",")), status["workers"]
    numbers = (f"{drain['jobs']} jobs from the first start to the last finish in {drain['span_seconds']:.0f} s; "
               f"expected {drain['expected_span_seconds']} s from the workers' GPU seconds per job "
               f"{drain['gpu_seconds_per_job']}")
    print(f"rush drain: {numbers}")
    assert drain["span_seconds"] <= DRAIN_FACTOR * drain["expected_span_seconds"] + 2, numbers  # + 2: stamps of 1 s
    assert drain["span_seconds"] >= 0.8 * drain["expected_span_seconds"], numbers
