"""The hostile corpus (grader/tests/hostile/): adversarial submissions, each with
its expected verdict. Here the corpus's form and what can be checked without
grading (intake's refusals, the pre-check's time); the build gate's verdicts on
nvcc's objects are test_gate's, and the whole batch graded on each backend is
test_hostile_batch.py's."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from grader.core.registry import Registry
from grader.core.rubric import DEFAULT_RUBRIC, load_rubric
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
    # issue 44
    "hidden-shape-told", "hidden-verdict-probe",
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
    extra = {entry.archive, entry.duplicate, entry.control} - {""}
    assert all(f in {t + ".cu" for t in task_names()} | {"nickname.txt"} | extra for f in files), files
    for folder in {entry.duplicate, entry.control} - {""}:
        assert all(p.name in {t + ".cu" for t in task_names()} for p in (entry.path / folder).iterdir())
    if entry.hidden or entry.hidden_never_shown:  # a shape the real rubric grades (the GPU corpus hides it there)
        assert entry.hidden in load_rubric(DEFAULT_RUBRIC, Registry.from_file()).task(entry.task).shapes
    assert not entry.hidden_never_shown or entry.hidden, "the text is about a hidden case: name its shape"
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
