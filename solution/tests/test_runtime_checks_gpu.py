"""On a GPU: the harness's run-time checks (issue 5) and timing records (issue 6).

The hostile submissions of grader/tests/hostile/ that these checks stop are
graded through the real grader in one batch, with a normal submission after
them, and each must get the verdict its expected.toml names. The harness's own
records are checked too: the precision rule at a large K, the plausibility
floor, and per-sample clocks."""
from __future__ import annotations

import json
import sqlite3
import tomllib

import pandas as pd
import pytest

from class_run import RUNTIME_ENTRIES
from conftest import ROOT, build_with, json_lines

pytestmark = pytest.mark.gpu

HOSTILE = ROOT / "grader" / "tests" / "hostile"
# The normal submission graded in the same run as the entries (class_run.py).
NORMAL = "solution-as-student"


def expected(name: str) -> dict:
    return tomllib.loads((HOSTILE / name / "expected.toml").read_text())


@pytest.fixture(scope="module")
def graded(class_run):
    """Every entry, graded in the session's class run (class_run.py) beside normal submissions."""
    return class_run.db(), class_run.results


def cases(db, student: str, task: str, kind: str | None = None) -> list[sqlite3.Row]:
    rows = db.execute("SELECT c.* FROM cases c JOIN submissions s ON s.id = c.submission_id WHERE s.student = ? "
                      "AND c.task = ? ORDER BY c.id", (student, task)).fetchall()
    return [r for r in rows if kind is None or r["kind"] == kind]


@pytest.mark.parametrize("name", RUNTIME_ENTRIES)
def test_each_hostile_submission_gets_its_expected_verdict(graded, name):
    db, _ = graded
    want = expected(name)
    assert want["needs_gpu"] is True
    (status,) = db.execute("SELECT status FROM submissions WHERE student = ?", (name,)).fetchone()
    assert status == want["status"]
    rows = cases(db, name, want["task"], want.get("kind"))
    assert rows, f"{name}: no {want['task']} cases graded"
    for r in rows:
        where = f"{name}: {r['kind']} {r['dtype']} {r['shape']}: {r['status']}: {r['message']}"
        if want["case_status"] == "any-failing":
            assert r["status"] != "ok", where
        else:
            assert r["status"] == want["case_status"], where
        assert want["reason"].lower() in r["message"].lower(), where


def test_work_on_the_per_thread_stream_is_timed_in_full(graded):
    db, _ = graded
    (timed,) = cases(db, "per-thread-stream", "fill", "timed")
    # Timed honestly: as fast as a plain fill can be, neither implausible nor flagged.
    assert timed["status"] == "ok" and timed["flag"] == "", dict(timed)
    # (Measured on the H200: 0.16 ms against a floor of 0.039 ms, speedup 0.38: a plain fill, timed in full.)
    assert timed["student_ms"] > timed["floor_ms"] and 0.1 < timed["speedup"] < 1.5, dict(timed)


def test_a_cache_keyed_by_pointer_never_hits(graded):
    db, _ = graded
    (timed,) = cases(db, "cache-by-pointer", "matmul_naive", "timed")
    # The same kernel as the solution's: had the cache hit, a copy would replace 17 GFLOP of work.
    assert timed["status"] == "ok" and 0.7 < timed["speedup"] < 1.3, dict(timed)
    assert timed["student_ms"] > 5 * timed["floor_ms"], dict(timed)  # a hit would take ~1% of the floor


def test_half_precision_is_caught_by_its_mean_error_and_reported_as_coarse(graded):
    db, _ = graded
    (row,) = [r for r in cases(db, "half-precision", "matmul_fast", "correctness") if r["shape"] == "1024x1024x1024"]
    check = json.loads(row["record"])["check"]
    # Most elements are within their own bound (on the H200, 33% were not at 1024^3: the per-element rule
    # alone would catch it here, not at small k); the mean error is far above float32's everywhere.
    assert check["wrong"] < check["elements"] / 2, check
    assert check["mean_error"] > 3 * check["mean_error_limit"], check


def test_a_normal_submission_graded_after_them_is_unaffected(graded):
    db, _ = graded
    total = db.execute("SELECT total FROM submissions WHERE student = ?", (NORMAL,)).fetchone()[0]
    assert total == 100
    statuses = {r["status"] for r in db.execute(
        "SELECT c.status FROM cases c JOIN submissions s ON s.id = c.submission_id WHERE s.student = ?", (NORMAL,))}
    assert statuses == {"ok"}


def test_the_ta_list_names_no_honest_case(graded):
    _, results = graded
    review = pd.read_csv(results / "review.csv")
    assert NORMAL not in set(review["student"]), review.to_string()


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
    # At most a few elements in 16 million leave the sqrt(K) bound: the mean error is what fails.
    assert record["status"] == "wrong" and check["wrong"] < check["elements"] / 10000, check
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


def test_the_grader_records_each_pairs_clocks(graded):
    db, _ = graded
    rows = db.execute("SELECT p.student_sm_mhz, p.solution_sm_mhz, p.throttled FROM samples p JOIN cases c "
                      "ON c.id = p.case_id JOIN submissions s ON s.id = c.submission_id "
                      "WHERE s.student = ?", (NORMAL,)).fetchall()
    assert rows and all(r[0] and r[1] for r in rows)
