"""Store.merge_from: a shard's store merged into the class's, one submission at a time, never twice."""
from __future__ import annotations

import shutil

import pytest

from grader import cli
from grader.scoring.chain import settle_stored
from grader.store.store import Store, StoreError
from grader.tests.conftest import opened, small_rubric_text, write_submission


@pytest.fixture(scope="module")
def shards(tmp_path_factory, registry, rubric):
    """The same two students graded into two stores (a class graded, then --regrade'd in another batch), once."""
    root = tmp_path_factory.mktemp("shards")
    files = {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks}
    write_submission(root / "subs", "amy", files)
    write_submission(root / "subs", "bo", {**files, "dot.cu": "// fake: wrong-large\n"})
    (root / "rubric.toml").write_text(small_rubric_text(rubric))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRADER_TEST_BACKENDS", "1")
        for shard in ("a", "b"):
            assert cli.main(["grade", str(root / "subs"), "--device", "simulated", "--no-progress", "--rubric",
                             str(root / "rubric.toml"), "--results", str(root / shard)]) == 0
    return root


@pytest.fixture
def graded_twice(tmp_path, shards):
    """The two stores, copied for a test that merges them into a class store of its own."""
    for name in ("a", "b"):
        shutil.copytree(shards / name, tmp_path / name)
    return tmp_path


def merged(tmp_path, *shards: str) -> list[tuple[int, int]]:
    store = Store(tmp_path / "class" / "grades.sqlite")
    try:
        return [store.merge_from(tmp_path / s / "grades.sqlite", f"batch/{s}", settle_stored) for s in shards]
    finally:
        store.close()


def test_a_shard_merged_again_adds_nothing(graded_twice):
    assert merged(graded_twice, "a", "a") == [(2, 0), (0, 2)]
    with opened(graded_twice / "class") as store:
        assert sorted(store.submissions()["student"]) == ["amy", "bo"]
        assert len(store.runs()) == 1


def test_the_merged_submission_keeps_its_cases_scores_and_grading_run(graded_twice):
    merged(graded_twice, "a")
    with opened(graded_twice / "a") as shard, opened(graded_twice / "class") as store:
        for mine, theirs in ((store.cases_for(), shard.cases_for()), (store.scores(), shard.scores())):
            columns = [c for c in theirs.columns if c not in ("id", "submission_id")]
            assert mine[columns].equals(theirs[columns])
        assert store.runs()["devices"].tolist() == shard.runs()["devices"].tolist()


def test_the_same_submission_from_another_shard_replaces_the_one_merged_before(graded_twice):
    assert merged(graded_twice, "a", "b") == [(2, 0), (2, 0)]
    with opened(graded_twice / "class") as store, opened(graded_twice / "b") as b:
        assert sorted(store.submissions()["student"]) == ["amy", "bo"]
        assert len(store.cases_for()) == len(b.cases_for()) and len(store.scores()) == len(b.scores())
        assert set(store.merged_origins()["origin"].str.split("/").str[1]) == {"a", "b"}


def test_a_merge_of_named_students_copies_only_theirs(graded_twice):
    store = Store(graded_twice / "class" / "grades.sqlite")
    try:
        assert store.merge_from(graded_twice / "a" / "grades.sqlite", "batch/a", settle_stored,
                                students={"bo"}) == (1, 0)
    finally:
        store.close()
    with opened(graded_twice / "class") as store, opened(graded_twice / "a") as shard:
        assert store.submissions()["student"].tolist() == ["bo"]
        bo = shard.submissions("bo")["id"].tolist()
        assert len(store.cases_for()) == len(shard.cases_for(bo)) and len(store.scores()) == len(shard.scores(bo))
        assert len(store.runs()) == 1


def test_a_file_that_is_not_a_store_is_one_line(tmp_path):
    (tmp_path / "junk.sqlite").write_bytes(b"not a database" * 100)
    store = Store(tmp_path / "grades.sqlite")
    try:
        with pytest.raises(StoreError) as e:
            store.merge_from(tmp_path / "junk.sqlite", "batch/x", settle_stored)
    finally:
        store.close()
    assert "\n" not in str(e.value)
