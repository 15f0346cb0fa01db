"""The hostile corpus (grader/tests/hostile/): adversarial submissions, each with
its expected verdict. Without a GPU the corpus's form is checked (the build
gate's verdicts on nvcc's objects by test_gate, the whole batch on the CPU
backend by test_hostile_corpus_cpu); on a GPU the whole corpus is graded in one
batch (hostile_batch.py, in the GPU suite's graded corpus, gpu_corpus.py), a
normal submission right after each entry whose code runs."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from grader.tests import hostile_batch as batch
from grader.tests.hostile_batch import ENTRIES, hostile_student, normal_after, sanitized
from grader.tests.hostile_entries import BACKENDS, CORPUS, hand_in, load_corpus

REPO = Path(__file__).resolve().parents[2]
STATUSES = {"graded", "rejected", "build_failed"}
# The attacks issue 5 names; each must have an entry (folder names).
REQUIRED = {
    "kernel-never-returns", "host-infinite-loop", "segfault", "abort", "illegal-address", "exit-mid-run",
    "printf-flood", "gpu-memory-hog", "fork-bomb", "include-solution", "read-other-submission",
    "socket", "write-outside", "dlopen-cublas", "cublas-call", "private-stream", "cache-by-pointer",
    "skip-after-first-call", "writes-into-input", "output-unwritten", "static-constructor", "interpose-harness", "mprotect-patch",
    "forged-stdout", "forged-fds", "half-precision",
    # issue 21
    "replace-library-call", "hidden-syscall", "runtime-resolved-libc", "include-splice", "include-lone-cr",
    "incbin-concat", "incbin-pasted", "background-thread-gpu", "sanitizer-detect", "split-tf32-mma",
    "quadratic-precheck", "archive-many-members", "archive-huge-unpacked", "message-flood", "fork-holds-gpu",
    "detached-background", "duplicate-ids",
    # issue 27
    "sleeps-every-case", "reply-writer-redefined", "backend-schedule", "backend-fences", "pasted-thread",
    "pasted-file-io", "global-constructor", "dprintf-reply", "nickname-hyperlink", "nickname-dde", "nickname-at-sum",
    "include-bom", "include-form-feed", "include-macro", "include-device-pass", "backdated-archive",
    "read-past-input", "dot-race-between-blocks",
}
CASE_STATUSES = {"ok", "wrong", "error", "crashed", "timeout", "forbidden", "build_error", "needs_gpu",
                 "out_of_budget", "any-failing"}


def task_names() -> set[str]:
    return {p.stem for p in (REPO / "starter" / "kernels").glob("*.cu")}


def test_corpus_has_every_attack_the_issue_names():
    names = {e.name for e in load_corpus()}
    assert not REQUIRED - names, f"missing hostile entries: {sorted(REQUIRED - names)}"
    assert len(names) >= 20


@pytest.mark.parametrize("entry", load_corpus(), ids=lambda e: e.name)
def test_entry_is_well_formed(entry):
    assert entry.status in STATUSES
    assert entry.task in task_names()
    assert entry.attack
    assert entry.kind in {"correctness", "timed"}
    files = [p.name for p in entry.path.iterdir() if p.name != "expected.toml"]
    assert files, "an entry holds at least one submitted file"
    extra = {entry.archive, entry.duplicate} - {""}
    assert all(f in {t + ".cu" for t in task_names()} | {"nickname.txt"} | extra for f in files), files
    if entry.duplicate:
        assert all(p.name in {t + ".cu" for t in task_names()} for p in (entry.path / entry.duplicate).iterdir())
    assert not (entry.archive and entry.status != "rejected" and not entry.needs_gpu), \
        "an archive is an archive bomb (rejected at intake) or a submission that runs"
    assert entry.kind != "timed" or "case_status" in (entry.cpu or {}), \
        "nothing is timed on the CPU backend, which judges its correctness cases: say what they get (cpu_case_status)"
    for backend in BACKENDS:
        verdict = entry.verdict(backend)
        assert verdict.case_status in CASE_STATUSES, (backend, verdict)
        assert verdict.cases in {"all", "some"}, (backend, verdict)
        assert verdict.sanitizer in {"", "memcheck", "racecheck"}, (backend, verdict)
        # An attack that the defenses turn into an honest run passes: it needs no reason.
        assert verdict.reason or verdict.case_status == "ok", (backend, verdict)


@pytest.mark.parametrize("entry", [e for e in load_corpus() if e.cpu], ids=lambda e: e.name)
def test_an_entry_whose_cpu_verdict_differs_says_why(entry):
    """The cpu_* keys come with a comment in the entry's expected.toml: why the CPU backend's verdict differs,
    or (cpu_gap) which defense it lacks there."""
    text = (entry.path / "expected.toml").read_text()
    first = min(text.index(f"cpu_{key}") for key in entry.cpu)
    assert "\n#" in text[:first], f"{entry.name}: no comment before its cpu_* keys"
    assert entry.verdict("cpu") != entry.verdict("gpu") or entry.kind == "timed", entry.name


# ---------------------------------------------------------------------------
# What the CPU can check of the issue-21 entries (the gate's verdicts on real objects are test_gate's).

@pytest.mark.parametrize("entry", [e for e in load_corpus() if e.archive and e.status == "rejected"],
                         ids=lambda e: e.name)
def test_an_archive_bomb_is_rejected_at_intake_in_bounded_time_and_memory(entry, tmp_path):
    import resource
    import time
    from grader.intake.submission import read_submission
    hand_in(entry, tmp_path, "bomb")
    [archive] = list(tmp_path.iterdir())
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.monotonic()
    sub = read_submission(archive, sorted(t + ".cu" for t in task_names()))
    assert time.monotonic() - start < 10
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 * 1024  # KiB
    assert sub.rejected and entry.reason.lower() in sub.rejected.lower(), sub.rejected


def test_the_duplicate_entry_is_graded_once_from_its_later_archive(tmp_path):
    from grader.intake.submission import choose_latest, list_entries, read_submission
    [entry] = [e for e in load_corpus() if e.duplicate]
    hand_in(entry, tmp_path, "twice")
    entries, skipped = list_entries(tmp_path)
    assert len(entries) == 2 and not skipped
    kept, dropped = choose_latest([read_submission(e, sorted(t + ".cu" for t in task_names())) for e in entries])
    assert [k.source.name for k in kept] == ["twice.tar.gz"] and len(dropped) == 1
    assert b"= r * cols + c;" in kept[0].files[f"{entry.task}.cu"]  # the right one, not older/'s


def test_the_quadratic_pre_check_entry_is_checked_in_bounded_time():
    import time
    from grader.gate.build_gate import load_precheck
    [entry] = [e for e in load_corpus() if e.name == "quadratic-precheck"]
    text = (entry.path / "dot.cu").read_text()
    assert len(text) > 48 * 1024
    rules = json.loads((REPO / "starter" / "tools" / "rules.json").read_text())
    start = time.monotonic()
    assert load_precheck().check_text(text, "dot.cu", rules) == []
    assert time.monotonic() - start < 10  # 313 s before the pre-check was made linear


RESOLVER = re.compile(r"// --- resolver:.*?// --- end resolver ---", re.S)


def test_the_run_time_resolver_of_the_corpus_is_the_one_tested_on_the_cpu():
    probe = RESOLVER.search((REPO / "grader" / "tests" / "probes" / "resolve_at_run_time.cpp").read_text()).group(0)
    users = [p for p in CORPUS.glob("*/*.cu") if "// --- resolver:" in p.read_text()]
    assert len(users) == 4
    for path in users:
        assert RESOLVER.search(path.read_text()).group(0) == probe, path


# ---------------------------------------------------------------------------
# On a GPU: the hostile batch (hostile_batch.py), graded in the GPU suite's graded corpus (gpu_corpus.py): in its
# fast run, each entry as hNN-<name>, a normal submission right after each entry whose code runs; the entries
# whose verdict is compute-sanitizer's also in its real run, under their own names. The same checks judge the
# batch on the CPU backend (test_hostile_corpus_cpu.py).


@pytest.mark.gpu
def test_grader_survives_the_whole_corpus(graded_corpus):
    batch.check_every_submission_stored_once(graded_corpus, "gpu")


@pytest.mark.gpu
@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_each_entry_gets_its_verdict(graded_corpus, entry):
    batch.check_verdict(graded_corpus, entry, "gpu")


@pytest.mark.gpu
@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.never_shown], ids=lambda e: e.name)
def test_a_file_an_include_names_is_never_quoted_to_a_student(graded_corpus, entry):
    batch.check_never_shown(graded_corpus, entry)


@pytest.mark.gpu
def test_the_entry_that_waits_in_every_case_holds_the_gpu_for_about_its_time_budget(graded_corpus):
    """Without the budget its 45 cases of fill, add and transpose (two checked runs of 1.5 s each, under the fast
    rubric's 5 s) would hold the GPU for over two minutes; the budget stops it [limits] time_budget_extra seconds
    plus 20 times the solution's time for the same requests in. Every task's correctness cases come before any
    timed case, so it runs out in them, where each of the student's 3 s is matched by the solution's checks of
    the same shapes (on an H200: after 27 of the 45, at 82 s; it ran out sooner when fill's timed pairs, which
    credit the solution little, came before add's checks)."""
    from grader.core.rubric import load_rubric
    from grader.core.registry import Registry
    student = hostile_student("sleeps-every-case")
    limits = load_rubric(graded_corpus.fast.rubric, Registry.from_file()).limits
    cases = graded_corpus.cases(student)
    mine = cases[cases["task"].isin(["fill", "add", "transpose"]) & (cases["kind"] == "correctness")]
    stopped = cases[cases["status"] == "out_of_budget"]["message"].iloc[0]
    assert stopped.startswith("stopped: your code had used up its time budget here"), stopped
    budget = float(re.search(r"plus [0-9.]+ s: ([0-9.]+) s\)", stopped).group(1))  # the budget, as it was told
    seconds = float(graded_corpus.submission(student)["seconds"])
    unbounded = len(mine) * 2 * 1.5  # what its cases would hold the GPU for without a budget
    assert limits.time_budget_extra <= budget < 2 / 3 * unbounded, stopped
    assert seconds < budget + 2 * limits.case, (seconds, stopped)  # its processes' starts and the solution's runs


@pytest.mark.gpu
def test_no_other_submission_of_the_corpus_runs_out_of_its_time_budget(graded_corpus):
    """The sample class, the normal submissions, the solution as a student, and every other entry (hangs,
    faults that restart the process in every case, floods) stay within their budgets."""
    over = set()
    for run in (graded_corpus.fast, graded_corpus.real):
        with run.opened() as store:
            subs = store.submissions()
            cases = store.cases_for(subs["id"].tolist())
        ids = set(cases.loc[cases["status"] == "out_of_budget", "submission_id"])
        over |= set(subs.loc[subs["id"].isin(ids), "student"])
    assert over == {hostile_student("sleeps-every-case")}, sorted(over)


@pytest.mark.gpu
def test_a_normal_submission_after_each_entry_whose_code_runs_is_unaffected(graded_corpus):
    """Right after each entry whose code runs on the GPU, in the same grading run, a normal submission (the
    solution's fill.cu and add.cu) gets every case of those two right, and the same points as every other
    normal submission. (An entry refused at intake, stopped by the gate or not compiling runs no code of its
    own: hostile_batch.runs_code.)"""
    batch.check_normal_submissions(graded_corpus, "gpu")


@pytest.mark.gpu
def test_a_gigabyte_of_printf_leaves_the_feedback_small(graded_corpus):
    feedback = graded_corpus.fast.results / "feedback" / f"{hostile_student('printf-flood')}.md"
    assert feedback.exists(), sorted(p.name for p in feedback.parent.iterdir())[:10]
    assert feedback.stat().st_size < 200_000


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["detached-background", "fork-holds-gpu"])
def test_a_process_left_behind_stalls_nothing_and_holds_no_memory(graded_corpus, name):
    """The detached background process once stalled a class run for over six minutes; the forked child kept
    the GPU's memory after its parent was killed. Neither entry, nor the normal submission after it, may take
    long, and no submission may be named for GPU memory that stayed taken."""
    for student in (hostile_student(name), normal_after(name)):
        row = graded_corpus.submission(student)
        assert row["seconds"] < 180, (student, row["seconds"])
        notes = json.loads(row["notes"])
        assert not any("of the GPU's memory stayed taken" in n for n in notes), notes


@pytest.mark.gpu
def test_a_four_megabyte_message_per_case_is_stored_cut(graded_corpus):
    student = hostile_student("message-flood")
    cases = graded_corpus.cases(student)
    text = lambda v: v if isinstance(v, str) else ""  # noqa: E731  (pandas reads NULL as NaN)
    sizes = [len(text(m)) + len(text(r)) for m, r in zip(cases["message"], cases["record"])]
    assert sizes and sum(sizes) < 2 * 2**20, sum(sizes)
    feedback = graded_corpus.fast.results / "feedback" / f"{student}.md"
    assert feedback.stat().st_size < 2 * 2**20


@pytest.mark.gpu
@pytest.mark.parametrize("entry", [e for e in ENTRIES if sanitized(e, "gpu")], ids=lambda e: e.name)
def test_each_entry_a_tool_must_report_is_reported(graded_corpus, entry):
    """Graded in the corpus's real run, where compute-sanitizer runs (the fast run runs none): a kernel clean only
    when it thinks it is under the tool (sanitizer-detect), a read one element past an input that stays inside a
    graded run's slack (read-past-input)."""
    batch.check_tool_reports(graded_corpus, entry, "gpu")
