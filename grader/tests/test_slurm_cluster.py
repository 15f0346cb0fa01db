"""A class graded through a real (single-host) Slurm: one job array, one store, resumable.

The cluster is Debian's slurmctld, slurmd and munge, started privately (slurm_cluster.py) with a node of two
GPUs (gres, device files made with mknod). The array's tasks grade on the tests' simulated backend (no GPU here),
chosen by name like any backend (--device simulated, allowed by GRADER_TEST_BACKENDS=1). One scenario runs once
for the module: a class is submitted, one array task is cancelled (scancel) after its first submission is
stored, the merge job runs anyway, and `grade --slurm` again submits what is missing; the tests check each
behaviour on what it left, against a local `grade` of the same class.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from contextlib import redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pytest

from grader import cli
from grader.slurm.batch import batches
from grader.tests.conftest import REPO, opened, small_rubric_text, write_submission
from grader.tests.slurm_cluster import PARTITION

pytestmark = pytest.mark.slurm  # the private Slurm is conftest.py's `cluster` fixture

DELAY = "0.03"  # seconds per simulated request: about 2.5 s a submission, so a cancel lands midway


def make_class(root: Path, registry) -> list[str]:
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    write_submission(root, "alice", files)
    write_submission(root, "bob", {**files, "matmul_fast.cu": "// fake: ok speed=0.2\n"})
    write_submission(root, "carol", {**files, "transpose.cu": "// fake: wrong-large\n"})
    write_submission(root, "dave", {**files, "dot.cu": "// fake: hang\n"})
    write_submission(root, "erin", {**files, "add.cu": "#error nope\n"})
    write_submission(root, "frank", files)
    os.symlink("/etc/passwd", root / "frank" / "evil.cu")  # rejected at intake
    return ["alice", "bob", "carol", "dave", "erin", "frank"]


def grader(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        status = cli.main(list(args))
    return status, out.getvalue()


def job_ids(text: str) -> tuple[str, str]:
    words = text.split("submitted job array ")[1].split()
    return words[0], words[4]


@dataclass
class Scenario:
    root: Path
    students: list[str]
    results: Path
    local: Path
    first: str = ""  # what the first `grade --slurm` printed
    refused: tuple[int, str] = (0, "")  # a second submission while the first batch runs
    status_running: str = ""
    status_after_cancel: str = ""
    stored_before_cancel: list[str] = field(default_factory=list)
    merged_after_first: list[str] = field(default_factory=list)
    shard_stores_after_first: dict = field(default_factory=dict)
    second: str = ""
    seconds: float = 0.0


@pytest.fixture(scope="module")
def scenario(cluster, registry, rubric, tmp_path_factory):
    root = tmp_path_factory.mktemp("slurm-class")
    students = make_class(root / "subs", registry)
    (root / "rubric.toml").write_text(small_rubric_text(rubric))
    s = Scenario(root, students, root / "results", root / "local")
    common = ["--device", "simulated", "--rubric", str(root / "rubric.toml"), "--seed", "11"]
    slurm = [*common, "--slurm", "--results", str(s.results), "--shard-size", "3", "--cpus-per-task", "1",
             "--time", "10:00", "--merge-time", "10:00", "--partition", PARTITION]
    started = time.monotonic()
    with pytest.MonkeyPatch.context() as mp:
        for key, value in {**cluster.env, "GRADER_TEST_BACKENDS": "1", "GRADER_SIMULATED_DELAY": DELAY}.items():
            mp.setenv(key, value)
        status, s.first = grader("grade", str(root / "subs"), *slurm)
        assert status == 0, s.first
        array, merge = job_ids(s.first)
        s.refused = grader("grade", str(root / "subs"), *slurm)
        manifest = batches(s.results)[0]
        shard0 = manifest.shard_store(0)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until shard 0 has stored its first submission
            if shard0.is_file():
                with opened(shard0.parent) as store:
                    if len(store.submissions()):
                        break
            time.sleep(0.05)
        cluster.run("scancel", f"{array}_0")
        with opened(shard0.parent) as store:
            s.stored_before_cancel = store.submissions()["student"].tolist()
        time.sleep(2.5)  # a progress.json written since (the watcher's interval is 2 s)
        s.status_running = grader("status", "--results", str(s.results))[1]
        cluster.wait_gone([array, merge])
        s.status_after_cancel = grader("status", "--results", str(s.results))[1]
        with opened(s.results) as store:
            s.merged_after_first = sorted(store.submissions()["student"])
        for index in range(len(manifest.shards)):
            with opened(manifest.shard_folder(index)) as store:
                s.shard_stores_after_first[index] = sorted(store.submissions()["student"])
        status, s.second = grader("grade", str(root / "subs"), *slurm)
        assert status == 0, s.second
        if "submitted job array" in s.second:
            cluster.wait_gone(list(job_ids(s.second)))
        s.seconds = time.monotonic() - started
        status, out = grader("grade", str(root / "subs"), *common, "--results", str(s.local), "--no-progress")
        assert status == 0, out
    return s


def test_grade_slurm_submits_an_array_and_a_merge_job_and_returns(scenario):
    first = scenario.first
    assert "6 submissions to grade in 2 shards" in first and "submitted job array " in first
    assert "bin/grader status" in first


def test_a_second_batch_is_refused_while_the_first_is_in_the_queue(scenario):
    status, _ = scenario.refused
    assert status == 1  # the message is on stderr: one line naming the batch and its jobs


def test_status_shows_each_shard_its_state_and_progress(scenario):
    text = scenario.status_running
    assert "graded" in text and "/3" in text and "merge job" in text
    assert "RUNNING" in text or "PENDING" in text  # shard 1 is still being graded, or the merge waits for it


def test_a_cancelled_task_loses_only_its_submission_in_flight(scenario):
    stored = scenario.shard_stores_after_first
    assert len(stored[0]) < 3, "the cancel should land midway through shard 0"
    assert set(scenario.stored_before_cancel) <= set(stored[0])
    assert len(stored[0]) <= len(scenario.stored_before_cancel) + 1  # at most the one in flight finished meanwhile
    assert len(stored[1]) == 3  # the other task graded its whole shard


def test_the_merge_job_merges_what_every_shard_stored_even_after_a_cancel(scenario):
    stored = scenario.shard_stores_after_first
    assert scenario.merged_after_first == sorted(stored[0] + stored[1])


def test_status_after_the_cancel_names_the_task_and_what_to_grade_again(scenario):
    text = scenario.status_after_cancel
    assert "CANCELLED" in text
    missing = 3 - len(scenario.shard_stores_after_first[0])
    assert f"{missing} submissions were left ungraded (shards 0)" in text and "--slurm" in text


def test_grading_again_submits_only_what_is_missing(scenario):
    second = batches(scenario.results)[-1]
    done = set(scenario.merged_after_first)
    assert sorted(e["student"] for e in second.entries) == sorted(set(scenario.students) - done)
    assert second.skipped_same == len(done)


def totals(results: Path) -> dict:
    grades = pd.read_csv(results / "grades.csv").fillna("")  # (NaN != NaN: an empty nickname would differ)
    return grades.drop(columns=[c for c in ("submitted", "graded") if c in grades]).set_index("student").to_dict("index")


def verdicts(results: Path) -> dict:
    with opened(results) as store:
        subs = store.latest_submissions()
        cases = store.cases_for(subs["id"].tolist()).merge(subs[["id", "student"]], left_on="submission_id",
                                                           right_on="id")
    return {(r.student, r.task, r.dtype, r.shape, r.kind): r.status for r in cases.itertuples()}


def test_the_merged_store_equals_a_local_grade_of_the_same_class(scenario):
    assert totals(scenario.results) == totals(scenario.local)
    assert verdicts(scenario.results) == verdicts(scenario.local)


def test_nothing_is_lost_or_duplicated(scenario):
    with opened(scenario.results) as store:
        subs, merged = store.submissions(), store.merged_origins()
        scores, cases = store.scores(), store.cases_for()
    assert sorted(subs["student"]) == sorted(scenario.students)  # each exactly once
    assert merged["origin"].is_unique and (merged["kind"] == "submission").sum() == len(scenario.students)
    with opened(scenario.local) as local:
        want_cases = local.cases_for().groupby("submission_id").size().sort_values().tolist()
    assert cases.groupby("submission_id").size().sort_values().tolist() == want_cases  # every case, once
    assert scores["submission_id"].isin(subs["id"]).all() and len(scores) == len(subs) * scores["task"].nunique()


def test_every_submission_records_the_host_and_the_one_gpu_its_task_was_given(scenario):
    with opened(scenario.results) as store:
        where = store.submission_devices()
        runs = store.runs()
    assert len(where) == len(scenario.students)
    assert (where["host"] == os.uname().nodename).all()
    assert set(where["gpu"]) <= {"0", "1"} and where["gpus"].str.fullmatch(r"[01]").all()  # one GPU per run
    assert (where["uuid"] == "GPU-simulated-" + where["gpu"]).all()
    assert where["gpu_name"].notna().all() and where["nvidia_driver"].notna().all()
    assert len(runs) >= 3  # each task's grading run (two in the first batch, one in the second), kept apart


def test_the_harness_and_solution_are_built_once_for_both_batches(scenario):
    entries = [p for p in (scenario.results / "slurm" / "cache").iterdir() if p.is_dir()]
    assert len(entries) == 1
    assert len((entries[0] / "builds.log").read_text().splitlines()) == 1
    assert len(batches(scenario.results)) == 2


def test_the_scenario_takes_seconds(scenario):
    assert scenario.seconds < 90, f"{scenario.seconds:.0f} s"


def run_grader(cluster_env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=REPO, capture_output=True, text=True,
                          env={**cluster_env, "GRADER_TEST_BACKENDS": "1"}, timeout=120)


def test_a_partition_that_does_not_exist_is_one_line_and_submits_nothing(cluster, tmp_path, registry):
    make_class(tmp_path / "subs", registry)
    done = run_grader(cluster.env, "grade", str(tmp_path / "subs"), "--slurm", "--device", "simulated",
                      "--results", str(tmp_path / "r"), "--partition", "nosuch")
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
    assert "partition 'nosuch' does not exist on this cluster (sinfo lists: grading)" in done.stderr
    assert not (tmp_path / "r" / "slurm").exists()


def test_without_munge_every_request_fails_in_one_line_that_names_munge(cluster, tmp_path, registry):
    conf = tmp_path / "slurm.conf"
    conf.write_text(cluster.conf.read_text().replace(f"AuthInfo=socket={cluster.socket}",
                                                     f"AuthInfo=socket={tmp_path / 'no-munged-here'}"))
    make_class(tmp_path / "subs", registry)
    done = run_grader({**cluster.env, "SLURM_CONF": str(conf)}, "grade", str(tmp_path / "subs"), "--slurm",
                      "--device", "simulated", "--results", str(tmp_path / "r"))
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Slurm cannot authenticate this request through MUNGE" in done.stderr
