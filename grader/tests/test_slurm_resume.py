"""Submit, shard, merge, status and resubmit, without Slurm: its tools are replaced by a queue the test sets.

The array's tasks are run here, one by one (run_shard, as each task runs it), on the tests' simulated backend.
test_slurm_cluster.py does the same through a real Slurm.
"""
from __future__ import annotations

import pytest

from grader import cli
from grader.core.errors import GraderError
from grader.slurm import scheduler
from grader.slurm.batch import batches
from grader.slurm.merge import merge_results
from grader.slurm.scheduler import JobState
from grader.slurm.shard import run_shard
from grader.slurm.status import report
from grader.slurm.submit import SlurmOptions, submit
from grader.tests.conftest import opened, small_rubric_text, write_submission

STUDENTS = ["ann", "ben", "cat", "dan", "eve"]


class FakeSlurm:
    """sbatch hands out ids from 100; the queue and what ended are what the test says."""

    def __init__(self):
        self.next_id = 100
        self.submitted: list[list[str]] = []
        self.queue: dict[str, JobState] = {}
        self.gone: dict[str, JobState] = {}

    def sbatch(self, options, script) -> str:
        self.submitted.append(list(options))
        self.next_id += 1
        return str(self.next_id - 1)

    def queued(self, jobs):
        return {j: s for j, s in self.queue.items() if j.split("_")[0] in jobs}

    def ended(self, jobs):
        return {j: s for j, s in self.gone.items() if j.split("_")[0] in jobs}

    def set(self, where: dict, **states):
        where.clear()
        where.update({job.lstrip("j"): JobState(job.lstrip("j"), state) for job, state in states.items()})


@pytest.fixture
def slurm(monkeypatch):
    fake = FakeSlurm()
    monkeypatch.setattr(scheduler, "sbatch", fake.sbatch)
    monkeypatch.setattr(scheduler, "queued", fake.queued)
    monkeypatch.setattr(scheduler, "ended", fake.ended)
    monkeypatch.setattr(scheduler, "run", lambda cmd, **kw: None)
    monkeypatch.setattr(scheduler, "check_partition", lambda partition: ["grading"])
    monkeypatch.setattr(scheduler, "cancel", lambda job: None)
    monkeypatch.setenv("GRADER_TEST_BACKENDS", "1")
    return fake


@pytest.fixture
def course(tmp_path, registry, rubric):
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    for i, name in enumerate(STUDENTS):
        write_submission(tmp_path / "subs", name, {**files, "add.cu": f"// fake: ok speed={0.5 + i / 4}\n"})
    (tmp_path / "rubric.toml").write_text(small_rubric_text(rubric))
    return tmp_path


def send(course, options: SlurmOptions | None = None):
    return submit(course / "subs", course / "results", options or SlurmOptions(shard_size=2), device="simulated",
                  arch=None, rubric_path=course / "rubric.toml", seed=3)


def run_tasks(course, *indices: int):
    manifest = batches(course / "results")[-1]
    for index in indices:
        run_shard(manifest.path, index, work=course / f"work-{manifest.batch}-{index}", progress_seconds=60)
    return manifest


def merged_students(course) -> list[str]:
    with opened(course / "results") as store:
        return sorted(store.submissions()["student"])


def test_submit_writes_a_manifest_of_every_ungraded_submission_and_submits_the_array_then_the_merge(course, slurm):
    done = send(course, SlurmOptions(partition="grading", account="cs101", shard_size=2, max_parallel=2,
                                     cpus_per_task=3, time="0:20:00", sbatch=["--qos=short"]))
    manifest = batches(course / "results")[0]
    assert (done.to_grade, done.shards, done.array, done.merge) == (5, 3, "100", "101")
    assert sorted(e["student"] for e in manifest.entries) == STUDENTS
    array, merge = slurm.submitted
    assert {"--array=0-2%2", "--gres=gpu:1", "--cpus-per-task=3", "--time=0:20:00", "--partition=grading",
            "--account=cs101", "--qos=short"} <= set(array)
    assert {"--dependency=afterany:100", "--partition=grading", "--account=cs101", "--qos=short"} <= set(merge)
    assert not any(a.startswith("--gres") for a in merge)  # the merge needs no GPU


def test_the_merge_takes_every_shard_store_once_one_submission_at_a_time(course, slurm):
    send(course)
    run_tasks(course, 0, 1, 2)
    first = merge_results(course / "results")
    again = merge_results(course / "results")
    assert (first.merged, first.before, first.shards) == (5, 0, 3)
    assert (again.merged, again.before) == (0, 5)
    assert merged_students(course) == STUDENTS


def test_the_merge_leaves_a_shard_whose_task_is_still_in_the_queue(course, slurm):
    send(course)
    manifest = run_tasks(course, 0, 1)
    slurm.set(slurm.queue, j100_1="RUNNING")  # its store is still being written, on its node
    done = merge_results(course / "results")
    assert done.waiting == [f"{manifest.batch}/001"]
    assert merged_students(course) == sorted(e["student"] for e in manifest.shard_entries(0))


def test_grading_again_submits_only_what_no_shard_stored(course, slurm):
    send(course)
    first = run_tasks(course, 1, 2)  # task 0 was cancelled before it started; the merge job merged the rest
    merge_results(course / "results")
    done = send(course)
    second = batches(course / "results")[-1]
    missing = sorted(e["student"] for e in first.shard_entries(0))
    assert sorted(e["student"] for e in second.entries) == missing
    assert (done.to_grade, done.already_graded, done.cache_built) == (len(missing), 5 - len(missing), False)
    run_tasks(course, *range(len(second.shards)))
    merge_results(course / "results")
    assert merged_students(course) == STUDENTS


def test_grading_again_first_merges_what_a_cancelled_merge_job_left(course, slurm):
    send(course)
    run_tasks(course, 0, 1, 2)  # the merge job was cancelled: nothing merged
    done = send(course)
    assert (done.merged_before, done.batch, done.already_graded) == (5, None, 5)
    assert len(slurm.submitted) == 2  # the first batch's two jobs, nothing more


def test_a_batch_sbatch_refuses_leaves_nothing_behind(course, slurm, monkeypatch):
    def refuse(options, script):
        raise scheduler.SlurmError("sbatch refused the job: Invalid time limit specification")
    monkeypatch.setattr(scheduler, "sbatch", refuse)
    with pytest.raises(GraderError, match="Invalid time limit"):
        send(course, SlurmOptions(time="soon"))
    assert batches(course / "results") == []
    assert [p.name for p in (course / "results" / "slurm").iterdir()] == ["cache"]


def test_a_batch_still_in_the_queue_stops_a_second_one(course, slurm):
    send(course)
    slurm.set(slurm.queue, j100_0="PENDING", j101="PENDING")
    with pytest.raises(GraderError, match="still in Slurm's queue"):
        send(course)
    assert len(batches(course / "results")) == 1


def test_status_shows_each_shard_and_what_to_grade_again(course, slurm):
    send(course)
    manifest = run_tasks(course, 1, 2)
    slurm.set(slurm.gone, j100_0="CANCELLED", j100_1="COMPLETED", j100_2="COMPLETED", j101="COMPLETED")
    text = report(course / "results")
    missing = len(manifest.shards[0])
    assert f"graded {5 - missing} / 5; 0 running, 0 pending, 1 ended with submissions left ungraded" in text
    assert f"{missing} submissions were left ungraded (shards 0)" in text and "--slurm" in text
    assert "merge job 101: COMPLETED" in text
    assert "CANCELLED" in text and text.count("COMPLETED") == 3


def test_status_while_the_array_runs_counts_running_and_pending_tasks_and_gives_an_eta(course, slurm):
    send(course)
    run_tasks(course, 2)
    slurm.set(slurm.queue, j100_0="PENDING", j100_1="RUNNING", j100_2="RUNNING", j101="PENDING")
    text = report(course / "results")
    assert "2 running, 1 pending" in text
    assert "ETA: " in text and "4 to go" in text


def test_every_merged_submission_records_its_host_and_its_one_gpu(course, slurm, monkeypatch):
    send(course)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # the GPU Slurm gave the task
    run_tasks(course, 0, 1, 2)
    merge_results(course / "results")
    with opened(course / "results") as store:
        where = store.submission_devices()
    assert (where["gpu"] == "1").all() and (where["gpus"] == "1").all()
    assert (where["uuid"] == "GPU-simulated-1").all() and where["host"].str.len().gt(0).all()


def grader(capsys, *args: str) -> tuple[int, str]:
    status = cli.main(list(args))
    return status, capsys.readouterr().err


def test_a_slurm_option_without_slurm_is_a_bad_argument(course, capsys):
    status, err = grader(capsys, "grade", str(course / "subs"), "--partition", "gpu")
    assert status == 2 and err == "grader: --partition is an option of --slurm\n"


def test_two_gpus_per_task_is_one_line_and_submits_nothing(course, capsys):
    status, err = grader(capsys, "grade", str(course / "subs"), "--slurm", "--gres", "gpu:2",
                         "--results", str(course / "results"))
    assert status == 1 and len(err.splitlines()) == 1 and "gpu:1 or gpu:TYPE:1" in err
    assert not (course / "results").exists()


def test_a_machine_without_slurm_is_one_line(course, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(course / "no-slurm-here"))
    status, err = grader(capsys, "grade", str(course / "subs"), "--slurm", "--results", str(course / "results"))
    assert status == 1 and len(err.splitlines()) == 1 and "sbatch is not on PATH" in err


def test_status_without_a_batch_is_one_line(tmp_path, capsys):
    status, err = grader(capsys, "status", "--results", str(tmp_path))
    assert status == 1 and len(err.splitlines()) == 1 and "no grading service has run there" in err \
        and "no Slurm batch" in err


def test_a_canvas_download_with_a_roster_is_graded_through_slurm_as_grade_would(tmp_path, slurm, capsys):
    """--from canvas, --lms-times and --roster with --slurm: the submit step reads the download and Canvas's
    times and names each entry by the roster, the manifest carries what the shards need (Canvas's notes, its
    numbering, the time received and where it came from), and the merged store is what `grade` alone would
    have made of it."""
    import pandas as pd

    from grader.tests.canvas_class import ABSENT, STUDENTS as CANVAS, TIMES, build
    cc = build(tmp_path / "input")
    results = tmp_path / "results"
    common = ["--rubric", str(cc / "rubric.toml"), "--results", str(results)]
    status = cli.main(["grade", str(cc / "download"), "--from", "canvas", "--lms-times", str(cc / TIMES), "--roster",
                       str(cc / "roster.csv"), "--slurm", "--device", "simulated", "--shard-size", "3", *common])
    out = capsys.readouterr().out
    assert status == 0 and f"on the roster with no submission (1): {ABSENT[2]}" in out
    manifest = batches(results)[-1]
    logins = sorted(login for login, *_ in CANVAS.values())
    assert sorted(e["student"] for e in manifest.entries) == logins
    assert {e["received_from"] for e in manifest.entries} == {"lms-times"}
    for index in range(len(manifest.shards)):
        run_shard(manifest.path, index, work=tmp_path / f"work-{index}", progress_seconds=60)
    assert cli.main(["merge", *common]) == 0
    with opened(results) as store:
        subs = store.submissions().set_index("student")
    assert sorted(subs.index) == logins
    assert subs.loc["s04race", "notes"].count("marked LATE by Canvas") == 1
    assert subs.loc["s04race", "late_percent"] == 10  # Canvas's time: 30 h late, the late day, then 10%
    assert subs.loc["s04race", "received"] == "2026-11-22T10:59:59+00:00"
    assert set(subs["received_from"]) == {"lms-times"}
    grades = pd.read_csv(results / "grades.csv", keep_default_na=False).set_index("student")
    assert grades.loc[ABSENT[2], "status"] == "no submission"
    # One student again, on the cluster: only that entry is submitted, graded anew although unchanged.
    capsys.readouterr()
    assert cli.main(["grade", str(cc / "download"), "--from", "canvas", "--roster", str(cc / "roster.csv"),
                     "--slurm", "--device", "simulated", "--student", "s08fast", *common]) == 0
    assert [e["student"] for e in batches(results)[-1].entries] == ["s08fast"]
