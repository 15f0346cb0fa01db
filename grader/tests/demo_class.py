"""The sample class of data/sample-submissions/ (data/README.md), as fake submissions for the simulated GPU.

Each student's files carry fake markers that make the fake backend answer as the real harness answers
their real files (planted.py): the untouched stubs, a submission with one file, the `<=` k guard, the
missing barrier, a hang, a GPU fault, a file that does not compile, and a good submission. `grade_demo`
grades them with the real rubric into a store, as `make demo` does on a GPU; the feedback, overview,
release and similarity tests read that store.
"""
from __future__ import annotations

from pathlib import Path

from grader.grading.grade import GradeOptions, grade
from grader.tests.conftest import write_submission
from grader.tests.fakes import FakeBackend

SEED = 4242


def demo_files(registry) -> dict[str, dict[str, str]]:
    every = {t.file: f"// fake: ok speed={speed}\n" for t, speed in
             zip(registry.tasks, (1.02, 0.97, 1.0, 0.95, 1.01, 0.88, 0.99))}
    ok = "// fake: ok speed=0.9\n"
    return {
        "s01-stubs": {t.file: "// fake-harness: stub\n" for t in registry.tasks},
        "s02-naive-only": {"matmul_naive.cu": ok},
        "s03-tiled-off-by-one": {"matmul_naive.cu": ok, "matmul_tiled.cu": "// fake-harness: tiled_k_guard\n"},
        "s04-race": {"matmul_naive.cu": ok, "matmul_tiled.cu": "// fake-harness: missing_syncthreads\n",
                     "nickname.txt": "<script>alert('s04')</script>\n"},
        "s05-hang": {"add.cu": ok, "fill.cu": "// fake: hang\n"},
        "s06-crash": {"fill.cu": ok, "add.cu": "// fake-harness: illegal_address\n"},
        "s07-compile-error": {"transpose.cu": "#error expected a \";\"\n"},
        "s08-fast": {**every, "nickname.txt": "tile & tensor\n"},
    }


def write_demo(root: Path, registry) -> Path:
    for student, files in demo_files(registry).items():
        write_submission(root, student, files)
    return root


def grade_demo(tmp: Path, rubric, registry) -> Path:
    """Grades the sample class on the fake backend into TMP/results; returns the results folder."""
    subs = write_demo(Path(tmp) / "submissions", registry)
    results = Path(tmp) / "results"
    grade(GradeOptions(subs, results, [None], jobs=2, progress=False, seed=SEED), rubric, registry, FakeBackend())
    return results
