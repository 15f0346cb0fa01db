"""`bin/grader similarity`: planted near-copies (renamed variables, reordered functions) rank top, honest
solutions written independently rank low, and the starter's own lines count for nothing.

Needs Debian's similarity-tester (sim_c; `make deps-similarity`); without it these tests skip, except the one
that checks the refusal, which runs everywhere.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from grader.reports import similarity as sim
from grader.cli import main
from grader.grading.grade import GradeOptions, grade
from grader.tests.conftest import REPO, write_submission
from grader.tests.fakes import FakeBackend

needs_tool = pytest.mark.skipif(shutil.which("sim_c") is None,
                                reason="sim_c is not installed (Debian: similarity-tester; `make deps-similarity`)")
OK = "// fake: ok speed=1.0\n"  # the fake backend's answer; a comment, which the comparison ignores


def solution(name: str) -> str:
    return (REPO / "solution" / "kernels" / name).read_text()


def rename(text: str, names: dict[str, str]) -> str:
    for old, new in names.items():
        text = re.sub(rf"\b{re.escape(old)}\b", new, text)
    return text


def move_before(text: str, start: str, end: str, before: str) -> str:
    """Cuts the text from `start` up to `end` and puts it in front of `before`: a reordered function."""
    i, j = text.index(start), text.index(end)
    block, rest = text[i:j], text[:i] + text[j:]
    k = rest.index(before)
    return rest[:k] + block + rest[k:]


def tiled_copy() -> str:
    """The solution's tiled matmul, its variables renamed, its kernel moved below the launcher (declared above)."""
    text = rename(solution("matmul_tiled.cu"), {"a_tile": "sa", "b_tile": "sb", "acc": "total", "row": "r",
                                                "col": "cidx", "kTile": "BS", "tx": "lx", "ty": "ly", "p": "q",
                                                "matmul_tiled_kernel": "mm_kernel"})
    text = text.replace("\ntemplate <typename T>\nvoid matmul_tiled(",
                        "\ntemplate <typename T>\n__global__ void mm_kernel(const T*, const T*, T*, int, int, int);\n"
                        "\ntemplate <typename T>\nvoid matmul_tiled(", 1)
    return move_before(text, "template <typename T>\n__global__ void mm_kernel(const T* a", "}  // namespace",
                       "MATMUL_TYPES")


def dot_copy() -> str:
    """The solution's dot, renamed, with its helpers in another order."""
    text = rename(solution("dot.cu"), {"warp_sum": "reduce_warp", "sum": "s", "stride": "step", "first": "begin",
                                       "vectors": "nvec", "warp_sums": "partial", "lane": "ln", "warp": "w",
                                       "sm_count": "num_sms", "kThreads": "THREADS", "aligned16": "is_aligned"})
    return move_before(text, "int num_sms()", "}  // namespace", "__device__ float reduce_warp")


@pytest.fixture(scope="module")
def planted(tmp_path_factory, rubric, registry) -> Path:
    """A class graded on the fake backend: two planted copies, honest solutions, an untouched stub."""
    tmp = tmp_path_factory.mktemp("similarity")
    subs = tmp / "submissions"
    honest = REPO / "grader" / "tests" / "honest"
    samples = REPO / "data" / "sample-submissions"
    starter = (REPO / "starter" / "kernels" / "matmul_tiled.cu").read_text()
    class_files = {
        "original": {"matmul_tiled.cu": solution("matmul_tiled.cu"), "dot.cu": solution("dot.cu")},
        "copycat": {"matmul_tiled.cu": tiled_copy(), "dot.cu": dot_copy()},
        "sample": {"matmul_tiled.cu": (samples / "s08-fast" / "matmul_tiled.cu").read_text()},
        "lambdas": {"matmul_tiled.cu": (honest / "containers-and-lambdas" / "matmul_tiled.cu").read_text(),
                    "dot.cu": (honest / "to-string-messages" / "dot.cu").read_text()},
        "stub": {"matmul_tiled.cu": starter},
    }
    for student, files in class_files.items():
        write_submission(subs, student, {name: OK + text for name, text in files.items()})
    results = tmp / "results"
    grade(GradeOptions(subs, results, [None], jobs=1, progress=False, seed=3,
                       command=f"bin/grader grade {subs} --results {results}"), rubric, registry,
          FakeBackend())
    return results


def pairs(results: Path) -> pd.DataFrame:
    return pd.read_csv(results / "similarity.csv")


@needs_tool
def test_the_command_writes_a_ranked_csv_and_html(planted):
    assert main(["similarity", "--results", str(planted)]) == 0  # the folder the grading run read
    table = pairs(planted)
    assert list(table.columns) == sim.COLUMNS
    assert list(table["score"]) == sorted(table["score"], reverse=True)
    html = (planted / "similarity.html").read_text()
    first, second = html.index("copycat"), html.index("lambdas")
    assert first < second and 'class="high"' in html


@needs_tool
def test_planted_near_copies_rank_top_in_each_task(planted):
    main(["similarity", "--results", str(planted)])
    table = pairs(planted)
    top = table.head(2)
    assert set(top["task"]) == {"matmul_tiled", "dot"}
    assert all({a, b} == {"copycat", "original"} for a, b in zip(top["student_a"], top["student_b"]))
    assert (top["score"] >= 90).all(), top


@needs_tool
def test_honest_independent_solutions_rank_low(planted):
    main(["similarity", "--results", str(planted)])
    table = pairs(planted)
    honest = table[~table.apply(lambda r: {r.student_a, r.student_b} == {"copycat", "original"}, axis=1)]
    copies = table[table.apply(lambda r: {r.student_a, r.student_b} == {"copycat", "original"}, axis=1)]
    assert len(honest) >= 5
    # Tiled matmuls written apart still share their loop (60% for two 16 x 16 ones): low is well below a copy.
    assert honest["score"].max() <= 60 and honest["score"].max() <= copies["score"].min() - 30, honest


@needs_tool
def test_the_starters_own_lines_count_for_nothing(planted):
    main(["similarity", "--results", str(planted)])
    table = pairs(planted)
    assert "stub" not in set(table["student_a"]) | set(table["student_b"])  # nothing of its own: left out
    starter = (REPO / "starter" / "kernels" / "matmul_tiled.cu").read_text()
    assert sim.without_starter(starter, starter).strip() == ""
    mine = "#include \"tasks.h\"\n// mine\n  int  extra = 1;\nMATMUL_TYPES(INSTANTIATE_MATMUL_TILED)\n"
    assert sim.without_starter(mine, starter) == "  int  extra = 1;\n"


@needs_tool
def test_a_file_changed_since_grading_is_compared_and_marked(planted, tmp_path):
    subs = tmp_path / "later"
    shutil.copytree(planted.parent / "submissions", subs)
    (subs / "sample" / "matmul_tiled.cu").write_text(OK + solution("matmul_tiled.cu"))
    assert main(["similarity", "--results", str(planted), "--submissions", str(subs)]) == 0
    table = pairs(planted)
    row = table[(table["student_a"] == "original") & (table["student_b"] == "sample")].iloc[0]
    assert row["score"] == 100 and "sample: its entry in the folder is not the one graded" in row["note"]


def test_without_the_tool_it_says_so_in_one_line(planted, monkeypatch, capsys):
    monkeypatch.setattr(sim.shutil, "which", lambda name: None)
    assert main(["similarity", "--results", str(planted)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "similarity-tester" in err and "make deps-similarity" in err


def test_an_unknown_submissions_folder_is_one_line(planted, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sim, "find_tool", lambda: "sim_c")
    assert main(["similarity", "--results", str(planted), "--submissions", str(tmp_path / "none")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not a folder of submissions" in err
