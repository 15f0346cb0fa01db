"""The hostile batch on the CPU backend, in CI (no GPU): every entry of the hostile corpus graded by
`python3 -m grader grade --device cpu` through the real sandbox and the real builds, a normal submission right
after each entry whose code runs there, each entry judged by its verdict on the CPU (hostile_batch.py; its
expected.toml's cpu_* keys where the CPU's verdict differs: nothing is timed there, a file with inline PTX or
half precision needs a GPU, and the CPU backend's own checkers stand in for compute-sanitizer's tools).

Every entry is graded, none left out: those the gate or intake refuse cost only their build or their intake and
are the proof that the CPU backend's gate judges its own objects; those the CPU cannot run ("needs a GPU") are
the proof that their code never runs there. An entry whose CPU verdict is what a defense should give but does
not yet (cpu_gap in its expected.toml) is expected to fail here (xfail, strict: a fix makes it pass, and the
test then says to drop the gap).

Two runs on one build tree, as the GPU suite's corpus has: the batch with the CPU backend's checkers off (each
would run on every task of every submission), then the entries a checker must report (cpu_sanitizer) under
their own names with them on. The rubric is the default one cut down (conftest.small_rubric_text): small shapes,
one type per task, a 5 s case limit (a hang costs seconds), and a time budget of 20 x the solution's time + 10 s,
so the entry that sleeps in every case is cut off about 10 s in. The time of each run is printed.
"""
from __future__ import annotations

import sys
from dataclasses import replace

import pytest

from grader.core.rubric import load_rubric
from grader.tests import hostile_batch as batch
from grader.tests.conftest import opened, small_rubric_text
from grader.tests.gpu_corpus import TIMES, GradedCorpus, grade
from grader.tests.hostile_batch import ENTRIES, hostile_student, sanitized
from grader.tests.cpu_class import CASE_LIMIT, MATMUL, MATRIX, sandbox_or_skip

BACKEND = "cpu"
SHAPES = {"fill": MATRIX, "add": MATRIX, "transpose": MATRIX, "matmul_naive": MATMUL[:2], "matmul_tiled": MATMUL[:2],
          "matmul_fast": MATMUL[:2], "dot": ["1", "1025"]}  # every add shape odd: read-past-input reads past each
BUDGET_EXTRA = 10  # [limits] time_budget_extra: over two case limits, so that no honest entry runs out
SLEEPER = "sleeps-every-case"


def rubric_text(rubric, tools: tuple[str, ...]) -> str:
    """The default rubric cut down for the batch, with these CPU-backend checkers (none, or the two)."""
    return small_rubric_text(replace(rubric, sanitizer=replace(rubric.sanitizer, tools=tools)), shapes=SHAPES,
                             limits={"build": 300, "case": CASE_LIMIT, "submission": 300,
                                     "time_budget_extra": BUDGET_EXTRA})


@pytest.fixture(scope="module")
def cpu_batch(tmp_path_factory, rubric, registry, cpu_grading_work) -> GradedCorpus:
    """The batch graded on the CPU backend (`grade --device cpu --jobs 2`), then its entries a checker must report
    graded again with the checkers on, on the session's CPU build tree."""
    sandbox_or_skip(rubric)
    root = tmp_path_factory.mktemp("hostile-cpu")
    work = cpu_grading_work
    rubrics = {}
    for name, tools in (("batch", ()), ("checkers", rubric.sanitizer.tools)):
        rubrics[name] = root / f"{name}-rubric.toml"
        rubrics[name].write_text(rubric_text(rubric, tools))
        load_rubric(rubrics[name], registry)  # a rubric the grader accepts, or the error here
    extra = ("--device", BACKEND, "--jobs", "2", "--seed", "7")
    main = grade("cpu batch", root / "batch", lambda folder: sorted(batch.gather(folder, BACKEND)), work,
                 rubrics["batch"], extra, timeout=3000)
    checked = grade("cpu checkers", root / "checkers", lambda folder: sorted(batch.gather_sanitized(folder, BACKEND)),
                    work, rubrics["checkers"], extra, timeout=1200)
    print(f"\nhostile batch on the CPU backend: {TIMES[-2]}; {TIMES[-1]} (the session's first CPU grading run builds "
          "the harness, the runtime, the solution and the stubs first)", file=sys.stderr)
    return GradedCorpus(fast=main, real=checked)  # (the batch in the fast run's place, the checkers' in the real's)


def cpu_params(entries):
    """The entries as parameters, an entry with a cpu_gap expected to fail (strictly: a fix shows as a pass)."""
    return [pytest.param(e, id=e.name, marks=[pytest.mark.xfail(strict=True, reason=e.verdict(BACKEND).gap)]
                         if e.verdict(BACKEND).gap else []) for e in entries]


def test_the_grader_survives_the_whole_corpus_on_the_cpu(cpu_batch):
    batch.check_every_submission_stored_once(cpu_batch, BACKEND)


@pytest.mark.parametrize("entry", cpu_params(ENTRIES))
def test_each_entry_gets_its_cpu_verdict(cpu_batch, entry):
    batch.check_verdict(cpu_batch, entry, BACKEND)


def test_a_normal_submission_after_each_entry_whose_code_runs_is_unaffected(cpu_batch):
    batch.check_normal_submissions(cpu_batch, BACKEND)


@pytest.mark.parametrize("entry", cpu_params(e for e in ENTRIES if sanitized(e, BACKEND)))
def test_each_entry_a_checker_must_report_is_reported(cpu_batch, entry):
    """The CPU backend's checkers in compute-sanitizer's place: AddressSanitizer for memcheck (read-past-input),
    the race checker for racecheck, which sees races between blocks on global memory too (dot-race-between-blocks,
    which no compute-sanitizer tool reports on a GPU)."""
    batch.check_tool_reports(cpu_batch, entry, BACKEND)


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.never_shown], ids=lambda e: e.name)
def test_a_file_an_include_names_is_never_quoted_to_a_student(cpu_batch, entry):
    batch.check_never_shown(cpu_batch, entry)


def test_only_the_entry_that_sleeps_in_every_case_runs_out_of_its_time_budget(cpu_batch):
    """Hangs, crashes that restart the process in every case, floods, a kernel the CPU never finishes: each of
    them stays within 20 x the solution's time + 10 s; the sleeper does not."""
    with opened(cpu_batch.fast.results) as store:
        subs = store.submissions()
        cases = store.cases_for(subs["id"].tolist())
    ids = set(cases.loc[cases["status"] == "out_of_budget", "submission_id"])
    assert set(subs.loc[subs["id"].isin(ids), "student"]) == {hostile_student(SLEEPER)}
