"""On a GPU: compute-sanitizer memcheck, run as the grader runs it (LocalBackend.sanitize: the tool and its
options over `harness --serve`, sent a graded run's requests), sees a read or a write one element past an
array's end. In its run every input and the output is alone in an allocation of exactly its size (placement.h,
exact placement) and the tool pads every allocation (tools/sanitize.py), so nothing readable follows an array.
In a graded run's fresh placement the same read stays inside the input's room, where the tool sees nothing:
that is why the tool's run is placed apart. The planted kernels are in planted/; the CPU backend's side of the
same checks is test_exact_placement_cpu.py."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import build_with
from grader.shared import sanitizer
from grader.backends.local import LocalBackend
from grader.outcomes.build_result import BuildResult
from grader.intake.submission import Submission
from grader.run.runner import HarnessServer
from grader.run.sandbox import Unsandboxed

pytestmark = pytest.mark.gpu

PLANTED = Path(__file__).parent / "planted"
SEED = 5
TIMEOUT = 300  # seconds for one tool run (a few seconds on an H100)


@pytest.fixture(scope="module")
def planted(tmp_path_factory, solution_build):
    root = tmp_path_factory.mktemp("exact")
    return {name: build_with(root, name, next((PLANTED / name).glob("*.cu")))
            for name in ("read_one_past_input", "write_one_past_output")}


def memcheck(build, task: str, dtype: str, shape: str, work: Path):
    """The grader's memcheck run of `task` on `shape` alone (outside the sandbox: the same command and requests)."""
    backend = LocalBackend(work, isolation=Unsandboxed())
    return backend.sanitize(Submission("planted", build.kernels), BuildResult(True, build.harness, 0.0), None,
                            "memcheck", task, dtype, shape, SEED, TIMEOUT, shapes=[shape])


# 1025 floats end 96 bytes before cudaMalloc's next 256-byte step; 4 MiB is a multiple of the 2 MiB pages, and
# on an H100 the next allocation started right at its end (without the tool's padding the read went unseen there).
@pytest.mark.parametrize("shape", ["1025", "1048576"])
def test_memcheck_reports_a_read_one_element_past_an_input(planted, tmp_path, shape):
    outcome = memcheck(planted["read_one_past_input"], "dot", "float32", shape, tmp_path)
    assert outcome.status == "errors" and outcome.errors > 0, outcome
    assert outcome.report.splitlines()[0] == "Invalid __global__ read of size 4 bytes", outcome.report
    assert sanitizer.location(outcome.report).startswith("dot.cu:"), outcome.report


# 37x211 int32 is 31,228 bytes; 64x64 is 16 KiB, a multiple of every allocation step.
@pytest.mark.parametrize("shape", ["37x211", "64x64"])
def test_memcheck_reports_a_write_one_element_past_the_output(planted, tmp_path, shape):
    outcome = memcheck(planted["write_one_past_output"], "fill", "int32", shape, tmp_path)
    assert outcome.status == "errors" and outcome.errors > 0, outcome
    assert outcome.report.splitlines()[0] == "Invalid __global__ write of size 4 bytes", outcome.report
    assert sanitizer.location(outcome.report).startswith("fill.cu:"), outcome.report


@pytest.mark.parametrize("task, dtype, shape", [("dot", "float32", "1048576"), ("fill", "int32", "64x64")])
def test_the_solution_is_clean_under_the_same_run(solution_build, tmp_path, task, dtype, shape):
    outcome = memcheck(solution_build, task, dtype, shape, tmp_path)
    assert outcome.status == "clean" and outcome.errors == 0, outcome


def test_in_fresh_placement_the_read_stays_in_the_inputs_room_and_memcheck_sees_nothing(planted, tmp_path):
    """The class exact placement closes ("an overrun within slack"): the same tool, options and requests, but
    placed as a graded run places them. The result is right, so the harness has nothing to say either."""
    prefix, log = sanitizer.new_prefix(), tmp_path / "memcheck.log"
    tool = sanitizer.serve_command(sanitizer.find_tool(), "memcheck", str(log), prefix)
    server = HarnessServer(planted["read_one_past_input"].harness, tool=tool)
    try:
        for message in sanitizer.requests("memcheck", "dot", "float32", ["1025"], SEED):
            reply = server.request({**message, "fixed_placement": False}, TIMEOUT)
            assert reply["status"] == "ok", reply
        server.finish(60)
    finally:
        server.close()
    assert sanitizer.parse(log.read_text(), prefix).errors == 0
