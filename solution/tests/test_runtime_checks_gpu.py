"""On a GPU: the harness's run-time checks (issue 5) and timing records (issue 6).

The hostile submissions of grader/tests/hostile/ that these checks stop are
graded through the real grader, in the graded corpus's fast run
(grader/tests/gpu_corpus.py) with the rest of the corpus, each followed by a
normal submission, and each must get the verdict its expected.toml names. The
harness's own records are checked too: the precision rule at a large K, the
plausibility floor, and per-sample clocks."""
from __future__ import annotations

import json
import tomllib

import pandas as pd
import pytest

from conftest import ROOT, build_with, json_lines
from grader.tests.gpu_corpus import SOLUTION_AS_STUDENT
from grader.tests.hostile_batch import NORMAL_TASKS, hostile_student, normal_after

pytestmark = pytest.mark.gpu

HOSTILE = ROOT / "grader" / "tests" / "hostile"
# The hostile entries whose verdicts come from the harness's run-time checks (the others come from the
# sandbox and the build gate: grader/tests/test_hostile_corpus.py).
RUNTIME_ENTRIES = ["per-thread-stream", "cache-by-pointer", "skip-after-first-call", "fast-when-timed",
                   "writes-into-input", "output-unwritten", "half-precision"]


def expected(name: str) -> dict:
    return tomllib.loads((HOSTILE / name / "expected.toml").read_text())


def cases(corpus, name: str, task: str, kind: str | None = None) -> list[dict]:
    """The hostile entry's stored cases of `task` (of one kind when given), as records, in the order they ran."""
    found = corpus.cases(hostile_student(name), task=task, **({"kind": kind} if kind else {}))
    return found.to_dict("records")


@pytest.mark.parametrize("name", RUNTIME_ENTRIES)
def test_each_hostile_submission_gets_its_expected_verdict(graded_corpus, name):
    want = expected(name)
    assert want["needs_gpu"] is True
    assert graded_corpus.submission(hostile_student(name))["status"] == want["status"]
    rows = cases(graded_corpus, name, want["task"], want.get("kind"))
    assert rows, f"{name}: no {want['task']} cases graded"
    for r in rows:
        where = f"{name}: {r['kind']} {r['dtype']} {r['shape']}: {r['status']}: {r['message']}"
        if want["case_status"] == "any-failing":
            assert r["status"] != "ok", where
        else:
            assert r["status"] == want["case_status"], where
        assert want["reason"].lower() in r["message"].lower(), where


def test_work_on_the_per_thread_stream_is_timed_in_full(graded_corpus):
    (timed,) = cases(graded_corpus, "per-thread-stream", "fill", "timed")
    # Timed honestly: as fast as a plain fill can be, neither implausible nor flagged.
    assert timed["status"] == "ok" and timed["flag"] == "", dict(timed)
    # (Measured on the H200: 0.16 ms against a floor of 0.039 ms, speedup 0.38: a plain fill, timed in full.)
    assert timed["student_ms"] > timed["floor_ms"] and 0.1 < timed["speedup"] < 1.5, dict(timed)


def test_a_cache_keyed_by_pointer_never_hits(graded_corpus):
    (timed,) = cases(graded_corpus, "cache-by-pointer", "matmul_naive", "timed")
    # The same kernel as the solution's: had the cache hit, a copy would replace 17 GFLOP of work.
    assert timed["status"] == "ok" and 0.7 < timed["speedup"] < 1.3, dict(timed)
    assert timed["student_ms"] > 5 * timed["floor_ms"], dict(timed)  # a hit would take ~1% of the floor


def test_half_precision_is_caught_by_its_mean_error_and_reported_as_coarse(graded_corpus):
    (row,) = [r for r in cases(graded_corpus, "half-precision", "matmul_fast", "correctness")
              if r["shape"] == "1024x1024x1024"]
    check = json.loads(row["record"])["check"]
    # Most elements are within their own bound (on the H200, 33% were not at 1024^3: the per-element rule
    # alone would catch it here, not at small k); the mean error is far above float32's everywhere.
    assert check["wrong"] < check["elements"] / 2, check
    assert check["mean_error"] > 3 * check["mean_error_limit"], check


@pytest.mark.parametrize("name", RUNTIME_ENTRIES)
def test_a_normal_submission_graded_right_after_each_is_unaffected(graded_corpus, name):
    normal = normal_after(name)
    after = graded_corpus.submission(normal)
    assert after["id"] > graded_corpus.submission(hostile_student(name))["id"]
    mine = graded_corpus.cases(normal)
    handed_in, others = mine[mine["task"].isin(NORMAL_TASKS)], mine[~mine["task"].isin(NORMAL_TASKS)]
    assert set(handed_in["status"]) == {"ok"}, \
        handed_in[["task", "kind", "shape", "status", "message"]].to_dict("records")
    assert set(handed_in[handed_in["kind"] == "timed"]["task"]) == set(NORMAL_TASKS)  # timed, each of them
    assert set(others["status"]) == {"missing"}  # not handed in
    scores = graded_corpus.scores(normal)
    for task in NORMAL_TASKS:
        assert scores.loc[task, "correctness"] == scores.loc[task, "correctness_max"] > 0


def test_the_ta_list_names_no_honest_case(graded_corpus):
    real = pd.read_csv(graded_corpus.results(SOLUTION_AS_STUDENT) / "review.csv")
    assert SOLUTION_AS_STUDENT not in set(real["student"]), real.to_string()
    fast = pd.read_csv(graded_corpus.fast.results / "review.csv")
    normals = [s for s in fast["student"] if s.endswith("-zz-normal")]
    assert not normals, fast.to_string()


# --- the harness's records -------------------------------------------------------


@pytest.fixture(scope="module")
def half_precision_build(tmp_path_factory, solution_build):
    return build_with(tmp_path_factory.mktemp("half"), "half_precision", HOSTILE / "half-precision" / "matmul_fast.cu")


def test_half_precision_at_k_4096_is_caught_by_the_mean_rule(half_precision_build):
    result = half_precision_build.run_harness("--task", "matmul_fast", "--shape", "4096x4096x4096", "--check-only",
                                              "--json", "-")
    assert result.returncode == 1, result.stderr[-2000:]
    (record,) = json_lines(result.stdout)
    check = record["check"]
    # Few elements leave the sqrt(K) bound (on an H100 under 1 in 10,000; 1,751 of 16.8 million on an H200): the
    # mean error is what fails.
    assert record["status"] == "wrong" and check["wrong"] < check["elements"] / 1000, check
    assert check["mean_error"] > 3 * check["mean_error_limit"], check
    assert "far less accurate than float32 arithmetic gives" in record["message"]
    assert "half precision" in record["hint"] or "tensor cores" in record["hint"]


def test_the_solution_passes_the_precision_rule_with_room_to_spare(solution_build):
    result = solution_build.run_harness("--task", "matmul_naive,matmul_tiled,matmul_fast", "--dtype", "float32",
                                        "--shape", "2048x2048x2048,4095x1031x515", "--check-only", "--json", "-")
    assert result.returncode == 0, result.stderr[-3000:]
    for record in json_lines(result.stdout):
        check = record["check"]
        assert check["mean_error"] < check["mean_error_limit"] / 2, (record["task"], record["shape_text"], check)


def test_timed_records_carry_the_floor_and_per_sample_clocks(solution_build):
    result = solution_build.run_harness("--task", "fill,matmul_fast", "--budget", "0.3", "--json", "-")
    assert result.returncode == 0, result.stderr[-3000:]
    records = json_lines(result.stdout)
    (limits,) = [r for r in records if r["record"] == "limits"]
    device = limits["device"]
    assert limits["peak_fp32_gflops"] == pytest.approx(device["sm_count"] * limits["peak_sm_clock_mhz"] * 256 / 1e3,
                                                       rel=1e-3)
    assert limits["sgemm_fp32_gflops"] < limits["peak_fp32_gflops"]
    for r in (r for r in records if r["record"] == "case"):
        timing, floor = r["timing"], r["plausibility"]
        assert floor is not None and not floor["implausible"], r["task"]
        assert timing["median_ms"] > floor["floor_ms"] * 1.2, (r["task"], timing["median_ms"], floor)
        assert len(timing["sm_mhz"]) == len(timing["throttled"]) == timing["samples"]
        assert all(m is None or m > 100 for m in timing["sm_mhz"])
        # The closing device-wide synchronize found nothing left running (a host hiccup may count now and then).
        assert timing["outside_stream_samples"] <= max(2, timing["samples"] // 10), timing


def test_the_grader_records_each_pairs_clocks(graded_corpus):
    pairs = graded_corpus.samples(SOLUTION_AS_STUDENT)
    assert len(pairs) and pairs["student_sm_mhz"].notna().all() and pairs["solution_sm_mhz"].notna().all()
    assert (pairs["student_sm_mhz"] > 0).all() and (pairs["solution_sm_mhz"] > 0).all()
