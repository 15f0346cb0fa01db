"""A Slurm batch's plan, without Slurm: shards, the one-GPU rule, time limits, sbatch arguments, the manifest."""
from __future__ import annotations

import pytest

from grader.core.errors import GraderError
from grader.slurm.batch import Manifest, batches
from grader.slurm.submit import default_time, one_gpu, sbatch_arguments, shards_of


def test_shards_hold_every_submission_once_dealt_round_robin():
    shards = shards_of(7, 3)
    assert shards == [[0, 3, 6], [1, 4], [2, 5]]
    assert sorted(i for s in shards for i in s) == list(range(7))


def test_no_submission_makes_no_shard_and_one_makes_one():
    assert shards_of(0, 8) == []
    assert shards_of(1, 8) == [[0]]


@pytest.mark.parametrize("gres", ["gpu:1", "gpu:h100:1", "gpu", "gpu:a100"],
                         ids=["one", "one-typed", "count-left-out", "typed-count-left-out"])  # (a bare "gpu" id
# would mark the case as a GPU test)
def test_a_task_may_ask_for_one_gpu(gres):
    assert one_gpu(gres) == gres


@pytest.mark.parametrize("gres", ["gpu:2", "gpu:h100:4", "mps:1", "gpu:a:b:1"])
def test_a_task_that_asks_for_more_than_one_gpu_is_refused_in_one_line(gres):
    with pytest.raises(GraderError, match="each array task grades on one GPU") as e:
        one_gpu(gres)
    assert "\n" not in str(e.value)


def test_the_default_time_limit_covers_every_submission_of_a_shard_using_its_whole_limits(small_rubric):
    limits = small_rubric.limits  # build 30 s + submission 120 s, a shard of 8: 20 min, with 15 min to start
    assert default_time(small_rubric, 8) == "0:35:00"
    assert limits.build == 30 and limits.submission == 120


def test_more_sbatch_arguments_are_split_as_a_shell_would():
    assert sbatch_arguments(["--qos=short --mem=16G", "--comment='a b'"]) == ["--qos=short", "--mem=16G",
                                                                            "--comment=a b"]


def test_sbatch_arguments_that_are_not_options_are_refused():
    with pytest.raises(GraderError, match="give sbatch options"):
        sbatch_arguments(["short"])


def manifest(tmp_path, **changes) -> Manifest:
    fields = dict(batch="B1", results=str(tmp_path), submissions=str(tmp_path / "subs"),
                  entries=[{"entry": f"/s/{n}", "student": n, "sha256": n * 2} for n in ("a", "b", "c")],
                  shards=[[0, 2], [1]], seed=5, device="simulated", arch="simulated", cache=str(tmp_path / "c"),
                  cache_key="k", harness_version="h", rubric="/r.toml", rubric_sha256="r", repo="/repo",
                  python="python3")
    return Manifest(**{**fields, **changes})


def test_a_manifest_reads_back_as_it_was_written(tmp_path):
    written = manifest(tmp_path)
    written.save()
    read = Manifest.load(written.path)
    assert read == written
    assert [e["student"] for e in read.shard_entries(0)] == ["a", "c"]
    assert read.shard_store(1) == tmp_path / "slurm" / "B1" / "shards" / "001" / "grades.sqlite"


def test_a_shard_the_manifest_does_not_have_is_one_line(tmp_path):
    with pytest.raises(GraderError, match="batch B1 has shards 0 to 1, not 2"):
        manifest(tmp_path).shard_entries(2)


def test_a_manifest_of_another_format_is_refused_and_not_listed_as_a_batch(tmp_path):
    old = manifest(tmp_path, format=0)
    old.save()
    with pytest.raises(GraderError, match="format 0"):
        Manifest.load(old.path)
    assert batches(tmp_path) == []


def test_batches_are_listed_oldest_first_even_within_one_second(tmp_path):
    for name in ("20261123T100000Z-ffff", "20261123T100000Z-0000"):  # made in this order, in one second
        manifest(tmp_path, batch=name).save()
    assert [m.batch for m in batches(tmp_path)] == ["20261123T100000Z-ffff", "20261123T100000Z-0000"]


def test_jobs_recorded_after_the_manifest_do_not_change_it(tmp_path):
    m = manifest(tmp_path)
    m.save()
    m.record_jobs(array="12", submitted="t")
    m.record_jobs(merge="13")
    assert Manifest.load(m.path).jobs == {"array": "12", "submitted": "t", "merge": "13"}
    assert Manifest.load(m.path) == m
