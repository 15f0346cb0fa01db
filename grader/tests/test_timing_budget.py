"""How much GPU time timing one submission takes, on a simulated GPU whose runs
take what the solution's took on an H200 (docs/gpu-runs): the rubric's budget
arithmetic holds for correct submissions, and slow ones stay bounded."""
from __future__ import annotations

import pytest

from grader.grading.cases import SLOW_CHECK_SHARE
from grader.grading.grade import grade_single
from grader.core.rubric import load_rubric
from grader.tests.conftest import write_submission
from grader.tests.fakes import SimClock, FakeBackend

FLOP_RATE = {"matmul_naive": 5.9e12, "matmul_tiled": 8.7e12, "matmul_fast": 36e12}  # FLOP/s, recorded
BYTES_PER_ELEMENT = {"fill": 4, "add": 12, "transpose": 8, "dot": 8}  # the fewest bytes each moves
COPY_RATE = 4.2e12  # bytes/s


def solution_ms(task: str, shape: str) -> float:
    dims = [int(d) for d in shape.split("x")]
    if task in FLOP_RATE:
        m, n, k = dims
        return 2.0 * m * n * k / FLOP_RATE[task] * 1e3
    elements = dims[0] * (dims[1] if len(dims) > 1 else 1)
    return max(BYTES_PER_ELEMENT[task] * elements / COPY_RATE * 1e3, 0.003)


def timing_seconds(result) -> float:
    return sum(c.paired.seconds for c in result.cases if c.kind == "timed" and c.paired is not None)


def grade_on_sim(tmp_path, registry, rubric, marker: str | dict[str, str]):
    files = marker if isinstance(marker, dict) else {t.file: marker for t in registry.tasks}
    entry = write_submission(tmp_path, "student", files)
    backend = FakeBackend(sim=SimClock(), solution_ms=solution_ms)
    return grade_single(entry, tmp_path / "results", rubric, registry, backend, None, seed=1).result


def test_the_rubric_gives_every_timed_case_an_equal_share_within_the_submission_budget(rubric):
    timed = sum(len(t.timed) for t in rubric.tasks)
    assert timed * rubric.timing.budget <= rubric.timing.submission_budget <= 60


def test_a_correct_submission_that_never_converges_is_timed_within_the_submission_budget(tmp_path, registry,
                                                                                      rubric):
    result = grade_on_sim(tmp_path, registry, rubric, "// fake: ok speed=1 noise=0.5\n")
    timed = [c for c in result.cases if c.kind == "timed"]
    assert len(timed) == sum(len(t.timed) for t in rubric.tasks) and all(c.status == "ok" for c in timed)
    assert {c.paired.stop_reason for c in timed} <= {"budget", "max_pairs"}
    assert timing_seconds(result) <= rubric.timing.submission_budget
    for c in timed:
        assert c.paired.seconds <= rubric.timing.budget


def test_a_submission_like_the_solution_is_timed_in_seconds(tmp_path, registry, rubric):
    result = grade_on_sim(tmp_path, registry, rubric, "// fake: ok speed=1\n")
    timed = [c for c in result.cases if c.kind == "timed"]
    assert {c.paired.stop_reason for c in timed} == {"converged"}
    assert timing_seconds(result) < 5


@pytest.fixture
def rubric_at_8192(tmp_path, registry, rubric):
    """The default rubric with every matmul timed at 8192^3 (the slowest shape a student might be timed at)."""
    text = rubric.path.read_text()
    for task in ("matmul_naive", "matmul_tiled", "matmul_fast"):
        # The rubric takes its timed shapes from the registry, so each task gets a `timed` line of its own.
        header = f"[tasks.{task}]\n"
        assert header in text and "timed =" not in text[text.index(header):].split("\n[", 1)[0]
        text = text.replace(header, header + 'timed = ["8192x8192x8192"]\n', 1)
    path = tmp_path / "rubric_8192.toml"
    path.write_text(text)
    return load_rubric(path, registry)


def test_an_inverted_naive_kernel_at_8192_stops_after_one_pair(tmp_path, registry, rubric_at_8192):
    # The inverted-indexing naive kernel (0.5 TFLOP/s) handed in for all three matmuls: 2.2 s a run at 8192^3.
    inverted = 0.5e12
    files = {f"{task}.cu": f"// fake: ok speed={inverted / rate:.4f}\n" for task, rate in FLOP_RATE.items()}
    result = grade_on_sim(tmp_path, registry, rubric_at_8192, files)
    timed = [c for c in result.cases if c.kind == "timed"]
    assert len(timed) == 3
    run = 2.0 * 8192**3 / inverted
    for c in timed:
        assert run > SLOW_CHECK_SHARE * rubric_at_8192.timing.budget  # so no warm-ups
        assert c.paired.stop_reason == "no_credit" and len(c.paired.pairs) == 1
        assert c.paired.seconds < 2 * run + 0.5  # its check run and one timed run, with the solution's
    assert timing_seconds(result) < 15  # seconds, not minutes


def test_a_coalesced_naive_kernel_at_8192_is_held_to_the_budget(tmp_path, registry, rubric_at_8192):
    # A noisy naive kernel at 6 TFLOP/s as matmul_fast: 0.18 s a run, a speedup near s_zero.
    result = grade_on_sim(tmp_path, registry, rubric_at_8192, {"matmul_fast.cu": "// fake: ok speed=0.17 noise=0.3\n"})
    (case,) = [c for c in result.cases if c.kind == "timed"]
    assert case.paired.stop_reason == "budget"
    assert case.paired.seconds <= rubric_at_8192.timing.budget
