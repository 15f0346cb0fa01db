"""`grade --device cpu` carries make profile's findings into the feedback (issue 31): each task whose correctness
cases all passed is counted on its profile shape by the race checker's harness, in the sandbox (which runs no
addr2line: the harness gets the line table, and its code addresses get their lines afterwards, in the sandbox
too). The findings are the student's own make profile's, unscored. Real command line, sandbox and builds."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.tests.conftest import REPO, cases_of, opened, small_rubric_text
from grader.tests.cpu_class import sandbox_or_skip

PLANTED = REPO / "solution" / "tests" / "planted_performance"
# transpose's second shape is over the CPU's per-case budget, as a shape of every task but matmul_naive is in the
# course's rubric: the counters wait for every case the CPU ran, not for the one it leaves to a GPU.
OVER_BUDGET = "2048x2048"
SHAPES = {"fill": ["1x1"], "add": ["1x1"], "transpose": ["37x211", OVER_BUDGET], "matmul_naive": ["1x1x1"],
          "matmul_tiled": ["1x1x1"], "matmul_fast": ["1x1x1"], "dot": ["1025"]}


@pytest.fixture(scope="module")
def graded(tmp_path_factory, rubric, cpu_grading_work):
    sandbox_or_skip(rubric)
    root = tmp_path_factory.mktemp("cpu-profile")
    subs = root / "subs"
    (subs / "naive-transpose").mkdir(parents=True)
    shutil.copy(PLANTED / "naive_transpose" / "transpose.cu", subs / "naive-transpose")
    (subs / "slow-reduction").mkdir()
    shutil.copy(PLANTED / "interleaved_reduction" / "dot.cu", subs / "slow-reduction")
    shutil.copy(REPO / "solution" / "kernels" / "transpose.cu", subs / "slow-reduction")
    rubric_path = root / "rubric.toml"
    rubric_path.write_text(small_rubric_text(rubric, shapes=SHAPES, limits={"build": 300, "case": 5,
                                                                            "submission": 120}))
    results = root / "results"
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(subs), "--device", "cpu", "--rubric",
                           str(rubric_path), "--results", str(results), "--work", str(cpu_grading_work), "--seed", "7",
                           "--jobs", "2", "--no-progress"], cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return results


def counted(results: Path, student: str) -> dict:
    with opened(results) as store:
        sid = int(store.submissions(student)["id"].iloc[-1])
        rows = store.profile_runs(sid)
        scores = store.scores([sid]).set_index("task")
    return {r.task: r for r in rows.itertuples()}, scores


def test_the_naive_transposes_feedback_names_its_uncoalesced_store_and_scores_as_before(graded):
    runs, scores = counted(graded, "naive-transpose")
    assert cases_of(graded, "naive-transpose", task="transpose", shape=OVER_BUDGET)["status"].tolist() == ["gpu_only"]
    run = runs["transpose"]
    assert run.status == "counted" and run.shape == "1024x1024" and run.dtype == "float32", run
    assert json.loads(run.numbers)["global_store_sectors_per_needed"] == 8.0
    assert scores.loc["transpose", "correctness"] == scores.loc["transpose", "correctness_max"]
    page = (graded / "feedback" / "naive-transpose.md").read_text()
    assert ("- Performance (not scored; counted on the CPU for float32 1024x1024 as a GPU would run it): your stores "
            "touch 32.0 sectors per warp request where 4.0 would do (transpose.cu:13)") in page, page
    assert "reproduce: `make profile TASK=transpose`" in page
    html = (graded / "feedback" / "naive-transpose.html").read_text()
    assert 'class="evidence performance"' in html and "(transpose.cu:13)" in html


def test_the_interleaved_reduction_is_named_and_the_solutions_transpose_has_no_finding(graded):
    runs, _ = counted(graded, "slow-reduction")
    assert set(runs) == {"transpose", "dot"}  # the tasks whose cases that ran all passed; the others are missing
    assert json.loads(runs["transpose"].findings) == []
    (sentence,) = json.loads(runs["dot"].findings)
    assert "lanes of a warp are active at dot.cu:17" in sentence, sentence
    page = (graded / "feedback" / "slow-reduction.md").read_text()
    assert "dot.cu:17" in page and "an unknown line" not in page and "pc:0x" not in page


@pytest.mark.slow  # sandboxes readelf
def test_a_harness_line_table_is_read_once_and_again_when_the_harness_is_rebuilt(tmp_path, rubric, monkeypatch):
    """Each counted task of a submission runs the same --racecheck harness: readelf reads its line table once
    (in the sandbox); a rebuilt harness (another file at the path) is read again."""
    sandbox_or_skip(rubric)
    from grader.backends import cpu as cpu_backend
    from grader.run.sandbox import ResourceLimits, Sandbox, find_bwrap
    sandbox = Sandbox(find_bwrap(), ResourceLimits.from_rubric(rubric.limits))
    backend = cpu_backend.CpuBackend(tmp_path / "work", sandbox)
    runs = []
    real = cpu_backend.run_sandboxed
    monkeypatch.setattr(cpu_backend, "run_sandboxed", lambda *a, **k: runs.append(a[1]) or real(*a, **k))
    program, scratch = tmp_path / "bin" / "harness", tmp_path / "scratch"
    program.parent.mkdir()
    scratch.mkdir()

    def build(body: str):
        (tmp_path / "kernel.cu").write_text(f"int main() {{\n  {body}\n  return 0;\n}}\n")
        subprocess.run(["g++", "-x", "c++", "-g", "-O0", "-o", str(program), str(tmp_path / "kernel.cu")], check=True)

    build("int x = 1;")
    first = backend._line_table(program, scratch, 60)
    assert re.search(r"^0x[0-9a-f]+ kernel\.cu:2$", first, re.M), first[:300]
    assert backend._line_table(program, scratch, 60) == first and len(runs) == 1
    build("int x = 1;\n  int y = x + 1;\n  (void)y;")
    assert backend._line_table(program, scratch, 60) != first and len(runs) == 2
