"""The hostile batch graded for real, judged by the same checks on each backend that runs code (hostile_batch.py):
every entry of the hostile corpus (grader/tests/hostile/), a normal submission right after each entry whose code
runs there, each entry judged by its verdict on that backend (its expected.toml; its cpu_* keys where the CPU's
verdict differs: nothing is timed there, a file with inline PTX or half precision needs a GPU, and the CPU
backend's own checkers stand in for compute-sanitizer's tools).

  cpu   `grade --device cpu` through the real sandbox and builds, in CI (below: cpu_batch)
  gpu   the GPU suite's graded corpus (gpu_corpus.py): the batch in its fast run, the entries a tool must report
        in its real run, under their own names; on a GPU only

Every entry is graded, none left out: those the gate or intake refuse cost only their build or their intake and
are the proof that the backend's gate judges its own objects; those the CPU cannot run ("needs a GPU") are the
proof that their code never runs there. An entry whose verdict on a backend is what a defense should give but does
not yet (cpu_gap in its expected.toml) is expected to fail there (xfail, strict: a fix makes it pass, and the test
then says to drop the gap). The corpus's form is test_hostile_corpus.py's.

On the CPU, two runs on one build tree, as the GPU suite's corpus has: the batch with the CPU backend's checkers
off (each would run on every task of every submission), then the entries a checker must report under their own
names with them on. The rubric is the default one cut down (conftest.small_rubric_text): small shapes, one type
per task, a 5 s case limit (a hang costs seconds), and a time budget of 20 x the solution's time + 10 s, so the
entry that sleeps in every case is cut off about 10 s in. The time of each run is printed.
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import replace

import pytest

from grader.core.registry import Registry
from grader.core.rubric import load_rubric, shape_size
from grader.tests import hostile_batch as batch
from grader.tests.conftest import small_rubric_text
from grader.tests.cpu_class import CASE_LIMIT, MATMUL, MATRIX, sandbox_or_skip
from grader.tests.gpu_corpus import TIMES, GradedCorpus, grade
from grader.tests.hostile_batch import ENTRIES, hostile_student, normal_after, sanitized

SHAPES = {"fill": MATRIX, "add": MATRIX, "transpose": MATRIX, "matmul_naive": MATMUL[:2], "matmul_tiled": MATMUL[:2],
          "matmul_fast": MATMUL[:2], "dot": ["1", "1025"]}  # every add shape odd: read-past-input reads past each
BUDGET_EXTRA = 10  # [limits] time_budget_extra: over two case limits, so that no honest entry runs out
SLEEPER = "sleeps-every-case"


def rubric_text(rubric, tools: tuple[str, ...]) -> str:
    """The default rubric cut down for the batch, with these CPU-backend checkers (none, or the two), and the
    shapes the entries name hidden until a date long after the batch (each in its place by size)."""
    hidden = batch.hidden_shapes()
    shapes = {task: sorted(set(listed) | set(hidden.get(task, [])), key=shape_size) for task, listed in SHAPES.items()}
    text = small_rubric_text(replace(rubric, sanitizer=replace(rubric.sanitizer, tools=tools)), shapes=shapes,
                             limits={"build": 300, "case": CASE_LIMIT, "submission": 300,
                                     "time_budget_extra": BUDGET_EXTRA})
    for task, listed in hidden.items():
        text = re.sub(rf"(?m)^\[tasks.{task}\]\n", f"[tasks.{task}]\nhidden = {json.dumps(listed)}\n", text)
    return text + (f'\n[hidden]\nuntil = "{batch.HIDDEN_UNTIL}"\n' if hidden else "")


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
    extra = ("--device", "cpu", "--jobs", "2", "--seed", "7")
    main = grade("cpu batch", root / "batch", lambda folder: sorted(batch.gather(folder, "cpu")), work,
                 rubrics["batch"], extra, timeout=3000)
    checked = grade("cpu checkers", root / "checkers", lambda folder: sorted(batch.gather_sanitized(folder, "cpu")),
                    work, rubrics["checkers"], extra, timeout=1200)
    print(f"\nhostile batch on the CPU backend: {TIMES[-2]}; {TIMES[-1]} (the session's first CPU grading run builds "
          "the harness, the runtime, the solution and the stubs first)", file=sys.stderr)
    return GradedCorpus(fast=main, real=checked)  # (the batch in the fast run's place, the checkers' in the real's)


BACKENDS = {"cpu": pytest.mark.slow, "gpu": pytest.mark.gpu}


@pytest.fixture(scope="module")
def graded(request) -> tuple[str, GradedCorpus]:
    """(backend, the batch as it graded it); the backend comes from the test's parameters."""
    return request.param, request.getfixturevalue("cpu_batch" if request.param == "cpu" else "graded_corpus")


def on_each(entries=None, backends=tuple(BACKENDS)):
    """The test's parameters: each backend, with each entry when `entries` says which (a function of the backend);
    an entry with a gap on a backend is expected to fail there (strictly: a fix shows as a pass)."""
    params = []
    for backend in backends:
        if entries is None:
            params.append(pytest.param(backend, id=backend, marks=BACKENDS[backend]))
            continue
        for e in entries(backend):
            gap = e.verdict(backend).gap
            marks = [BACKENDS[backend]] + ([pytest.mark.xfail(strict=True, reason=gap)] if gap else [])
            params.append(pytest.param(backend, e, id=f"{backend}-{e.name}", marks=marks))
    return params


def each_entry(backend):
    return ENTRIES


def each_sanitized(backend):
    return [e for e in ENTRIES if sanitized(e, backend)]


def each_never_shown(backend):
    return [e for e in ENTRIES if e.never_shown]


@pytest.mark.parametrize("graded", on_each(), indirect=True)
def test_the_grader_survives_the_whole_corpus(graded):
    backend, corpus = graded
    batch.check_every_submission_stored_once(corpus, backend)


@pytest.mark.parametrize("graded, entry", on_each(each_entry), indirect=["graded"])
def test_each_entry_gets_its_verdict(graded, entry):
    backend, corpus = graded
    batch.check_verdict(corpus, entry, backend)


@pytest.mark.parametrize("graded", on_each(), indirect=True)
def test_a_normal_submission_after_each_entry_whose_code_runs_is_unaffected(graded):
    """Right after each entry whose code runs on the backend, in the same grading run, a normal submission (the
    solution's fill.cu and add.cu) gets every case of those two right, and the same points as every other
    normal submission. (An entry refused at intake, stopped by the gate or not compiling runs no code of its
    own: hostile_batch.runs_code.)"""
    backend, corpus = graded
    batch.check_normal_submissions(corpus, backend)


@pytest.mark.parametrize("graded, entry", on_each(each_sanitized), indirect=["graded"])
def test_each_entry_a_tool_must_report_is_reported(graded, entry):
    """compute-sanitizer on a GPU, in the corpus's real run (the fast run runs none): a kernel clean only when it
    thinks it is under the tool (sanitizer-detect), a read one element past an input that stays inside a graded
    run's slack (read-past-input). The CPU backend's checkers in its place: AddressSanitizer for memcheck, the
    race checker for racecheck, which sees races between blocks on global memory too (dot-race-between-blocks,
    which no compute-sanitizer tool reports on a GPU)."""
    backend, corpus = graded
    batch.check_tool_reports(corpus, entry, backend)


@pytest.mark.parametrize("graded, entry", on_each(each_never_shown), indirect=["graded"])
def test_a_file_an_include_names_is_never_quoted_to_a_student(graded, entry):
    batch.check_never_shown(graded[1], entry)


# The GPU suite's corpus grades these entries too (their verdicts above), with the real rubric, which hides nothing:
# what their students read before a date is checked on the CPU batch, whose rubric hides the shapes they name.
def each_controlled(backend):
    return [e for e in ENTRIES if e.control]


def each_hidden_never_shown(backend):
    return [e for e in ENTRIES if e.hidden_never_shown]


def each_probing_hidden(backend):
    return [e for e in ENTRIES if e.control and e.hidden and not e.hidden_never_shown]


@pytest.mark.parametrize("graded, entry", on_each(each_controlled, backends=("cpu",)), indirect=["graded"])
def test_each_entrys_honest_control_passes_every_case(graded, entry):
    batch.check_control(graded[1], entry)


@pytest.mark.parametrize("graded, entry", on_each(each_hidden_never_shown, backends=("cpu",)), indirect=["graded"])
def test_what_a_task_file_remembered_of_a_hidden_case_is_never_shown_before_the_date(graded, entry):
    """hidden-shape-told prints every n its process was asked at a visible case, then aborts: no process that
    serves a visible case is ever sent a hidden one (grader/grading/cases.py), so n=1000 appears nowhere."""
    batch.check_hidden_never_shown(graded[1], entry)


@pytest.mark.parametrize("graded, entry", on_each(each_probing_hidden, backends=("cpu",)), indirect=["graded"])
def test_a_hidden_case_that_fails_leaves_what_a_student_reads_as_its_honest_controls(graded, entry):
    """hidden-verdict-probe is wrong at its hidden n = 1000 only: before the date its student reads what the
    control's reads, byte for byte (names and times aside): on the CPU the counters are shown for both."""
    batch.check_same_as_control(graded[1], entry)


@pytest.mark.parametrize("graded", on_each(), indirect=True)
def test_only_the_entry_that_sleeps_in_every_case_runs_out_of_its_time_budget(graded):
    """Hangs, crashes that restart the process in every case, floods, a kernel that never finishes, the normal
    submissions (and on a GPU the sample class and the solution as a student): each stays within 20 x the
    solution's time + its extra seconds; the sleeper does not."""
    over = set()
    for run in (graded[1].fast, graded[1].real):
        with run.opened() as store:
            subs = store.submissions()
            cases = store.cases_for(subs["id"].tolist())
        ids = set(cases.loc[cases["status"] == "out_of_budget", "submission_id"])
        over |= set(subs.loc[subs["id"].isin(ids), "student"])
    assert over == {hostile_student(SLEEPER)}, sorted(over)


@pytest.mark.parametrize("graded", on_each(), indirect=True)
def test_a_gigabyte_of_printf_and_a_four_megabyte_message_per_case_are_stored_cut(graded):
    corpus = graded[1]
    feedback = corpus.fast.results / "feedback" / f"{hostile_student('printf-flood')}.md"
    assert feedback.exists(), sorted(p.name for p in feedback.parent.iterdir())[:10]
    assert feedback.stat().st_size < 200_000
    student = hostile_student("message-flood")
    cases = corpus.cases(student)
    text = lambda v: v if isinstance(v, str) else ""  # noqa: E731  (pandas reads NULL as NaN)
    sizes = [len(text(m)) + len(text(r)) for m, r in zip(cases["message"], cases["record"])]
    assert sizes and sum(sizes) < 2 * 2**20, sum(sizes)
    assert (corpus.fast.results / "feedback" / f"{student}.md").stat().st_size < 2 * 2**20


@pytest.mark.parametrize("graded", on_each(), indirect=True)
@pytest.mark.parametrize("name", ["detached-background", "fork-holds-gpu"])
def test_a_process_left_behind_stalls_nothing_and_holds_no_memory(graded, name):
    """The detached background process once stalled a class run for over six minutes; the forked child kept
    the GPU's memory after its parent was killed. Neither entry, nor the normal submission after it where the
    entry's code ran, may take long, and no submission may be named for GPU memory that stayed taken."""
    backend, corpus = graded
    entry = next(e for e in ENTRIES if e.name == name)
    for student in (hostile_student(name),) + ((normal_after(name),) if batch.runs_code(entry, backend) else ()):
        row = corpus.submission(student)
        assert row["seconds"] < 180, (student, row["seconds"])
        notes = json.loads(row["notes"])
        assert not any("of the GPU's memory stayed taken" in n for n in notes), notes


@pytest.mark.parametrize("graded", on_each(backends=("gpu",)), indirect=True)
def test_the_entry_that_waits_in_every_case_holds_the_gpu_for_about_its_time_budget(graded):
    """Without the budget its 45 cases of fill, add and transpose (two checked runs of 1.5 s each, under the fast
    rubric's 5 s) would hold the GPU for over two minutes; the budget stops it [limits] time_budget_extra seconds
    plus 20 times the solution's time for the same requests in. Every task's correctness cases come before any
    timed case, so it runs out in them, where each of the student's 3 s is matched by the solution's checks of
    the same shapes (on an H200: after 27 of the 45, at 82 s; it ran out sooner when fill's timed pairs, which
    credit the solution little, came before add's checks). (On the CPU: test_grade_cpu.py's sleeper.)"""
    corpus = graded[1]
    student = hostile_student(SLEEPER)
    limits = load_rubric(corpus.fast.rubric, Registry.from_file()).limits
    cases = corpus.cases(student)
    mine = cases[cases["task"].isin(["fill", "add", "transpose"]) & (cases["kind"] == "correctness")]
    stopped = cases[cases["status"] == "out_of_budget"]["message"].iloc[0]
    assert stopped.startswith("stopped: your code had used up its time budget here"), stopped
    budget = float(re.search(r"plus [0-9.]+ s: ([0-9.]+) s\)", stopped).group(1))  # the budget, as it was told
    seconds = float(corpus.submission(student)["seconds"])
    unbounded = len(mine) * 2 * 1.5  # what its cases would hold the GPU for without a budget
    assert limits.time_budget_extra <= budget < 2 / 3 * unbounded, stopped
    assert seconds < budget + 2 * limits.case, (seconds, stopped)  # its processes' starts and the solution's runs
