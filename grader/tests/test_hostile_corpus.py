"""The hostile corpus (grader/tests/hostile/): adversarial submissions, each with
its expected verdict. Without a GPU the corpus's form is checked (and the build
gate's verdicts by test_gate); on a GPU the whole corpus is graded in one batch
(the GPU suite's graded corpus, grader/tests/gpu_corpus.py), a normal submission
right after each entry whose code runs."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from grader.tests.gpu_corpus import ENTRIES, NORMAL_TASKS, followed, hostile_student, normal_after, sanitized
from grader.tests.hostile_entries import CORPUS, hand_in, load_corpus

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
    "sleeps-every-case",
}


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
    assert entry.cases in {"all", "some"}
    # An attack that the defenses turn into an honest run passes: it needs no reason.
    assert entry.reason or entry.case_status == "ok"
    files = [p.name for p in entry.path.iterdir() if p.name != "expected.toml"]
    assert files, "an entry holds at least one submitted file"
    extra = {entry.archive, entry.duplicate} - {""}
    assert all(f in {t + ".cu" for t in task_names()} | {"nickname.txt"} | extra for f in files), files
    if entry.duplicate:
        assert all(p.name in {t + ".cu" for t in task_names()} for p in (entry.path / entry.duplicate).iterdir())
    assert entry.sanitizer in {"", "memcheck", "racecheck"}
    assert not (entry.archive and entry.status != "rejected"), "an archive bomb is rejected at intake"


# ---------------------------------------------------------------------------
# What the CPU can check of the issue-21 entries (the gate's verdicts on real objects are test_gate's).

@pytest.mark.parametrize("entry", [e for e in load_corpus() if e.archive], ids=lambda e: e.name)
def test_an_archive_bomb_is_rejected_at_intake_in_bounded_time_and_memory(entry, tmp_path):
    import resource
    import time
    from grader.intake import read_submission
    hand_in(entry, tmp_path, "bomb")
    [archive] = list(tmp_path.iterdir())
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.monotonic()
    sub = read_submission(archive, sorted(t + ".cu" for t in task_names()))
    assert time.monotonic() - start < 10
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 * 1024  # KiB
    assert sub.rejected and entry.reason.lower() in sub.rejected.lower(), sub.rejected


def test_the_duplicate_entry_is_graded_once_from_its_later_archive(tmp_path):
    from grader.intake import choose_latest, list_entries, read_submission
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
# On a GPU: the whole corpus, graded in the GPU suite's graded corpus (grader/tests/gpu_corpus.py): in its
# fast run, each entry as hNN-<name>, a normal submission right after each entry whose code runs; the entries
# whose verdict is compute-sanitizer's also in its real run, under their own names.


@pytest.mark.gpu
def test_grader_survives_the_whole_corpus(graded_corpus):
    fast = graded_corpus.fast
    with fast.opened() as store:
        assert store.integrity() == "ok"
        graded = set(store.submissions()["student"])
    assert graded == set(fast.students), sorted(graded ^ set(fast.students))  # each stored, once, nothing else
    wanted = {hostile_student(e.name) for e in ENTRIES} | {normal_after(e.name) for e in ENTRIES if followed(e)}
    assert wanted <= graded and len(wanted) == len(ENTRIES) + sum(map(followed, ENTRIES)), sorted(wanted - graded)


@pytest.mark.gpu
@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_each_entry_gets_its_verdict(graded_corpus, entry):
    student = hostile_student(entry.name)
    row = graded_corpus.submission(student)
    stored = graded_corpus.cases(student)
    status, rejected, build_log = row["status"], row["rejected"], row["build_log"]
    assert status == entry.status, (status, rejected, build_log[-2000:])
    if status != "graded":
        assert entry.reason.lower() in f"{rejected or ''}\n{build_log}".lower()
        return
    mine = stored[stored["task"] == entry.task]
    cases = mine[mine["kind"] == entry.kind][["status", "message", "hint"]].values.tolist()
    assert cases, f"no cases of {entry.task} stored"
    statuses = [c[0] for c in cases]
    if entry.case_status == "any-failing":
        assert "ok" not in statuses, statuses
    elif entry.cases == "some":
        assert entry.case_status in statuses, statuses
    else:
        assert set(statuses) == {entry.case_status}, statuses
    text = "\n".join(f"{c[1]}\n{c[2]}" for c in cases).lower()
    assert entry.reason.lower() in text, text[:3000]
    if entry.case_status == "ok":  # defeated into an honest run: timed honestly too, nothing flagged
        timed = mine[mine["kind"] == "timed"][["status", "flag"]].values.tolist()
        assert all(status == "ok" and not flag for status, flag in timed), timed


@pytest.mark.gpu
def test_the_entry_that_waits_in_every_case_holds_the_gpu_for_about_its_time_budget(graded_corpus):
    """Without the budget its 45 cases of fill, add and transpose (about 3 s each, under the fast rubric's 5 s)
    would hold the GPU for over two minutes; the budget stops it about [limits] time_budget_extra seconds in."""
    from grader.rubric import load_rubric
    from grader.registry import Registry
    student = hostile_student("sleeps-every-case")
    limits = load_rubric(graded_corpus.fast.rubric, Registry.from_file()).limits
    cases = graded_corpus.cases(student)
    mine = cases[cases["task"].isin(["fill", "add", "transpose"]) & (cases["kind"] == "correctness")]
    stopped = cases[cases["status"] == "out_of_budget"]["message"].iloc[0]
    assert stopped.startswith("stopped: your code had used up its time budget here"), stopped
    budget = float(re.search(r"plus [0-9.]+ s: ([0-9.]+) s\)", stopped).group(1))  # the budget, as it was told
    seconds = float(graded_corpus.submission(student)["seconds"])
    assert limits.time_budget_extra <= budget < len(mine) * limits.case / 3, stopped
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
    own: gpu_corpus.followed.)"""
    with graded_corpus.fast.opened() as store:
        subs = store.submissions()
        normal = subs[subs["student"].str.endswith("-zz-normal")]
        cases = store.cases_for(normal["id"].tolist())
        scores = store.scores(normal["id"].tolist())
    students = normal.set_index("id")["student"]
    checks = cases[cases["kind"] == "correctness"]
    by_student: dict[str, dict[str, set[str]]] = {}
    for student, task, status in zip(checks["submission_id"].map(students), checks["task"], checks["status"]):
        by_student.setdefault(student, {}).setdefault(task, set()).add(status)
    assert sorted(by_student) == sorted(normal_after(e.name) for e in ENTRIES if followed(e))
    for student, tasks in by_student.items():
        for task in NORMAL_TASKS:
            assert tasks[task] == {"ok"}, (student, task, tasks[task])
        for task, statuses in tasks.items():
            if task not in NORMAL_TASKS:
                assert statuses == {"missing"}, (student, task, statuses)  # not handed in
    correctness = set(scores.groupby("submission_id")["correctness"].sum().round(6))
    assert len(correctness) == 1, correctness
    # Graded right after its entry: the next submission the GPU worker stored (in grading order) is it.
    graded = subs[subs["status"] == "graded"].sort_values("id")["student"].tolist()
    for entry in filter(followed, ENTRIES):
        entry_at = graded.index(hostile_student(entry.name))
        assert graded[entry_at + 1] == normal_after(entry.name), graded[entry_at:entry_at + 3]


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
@pytest.mark.parametrize("entry", [e for e in ENTRIES if sanitized(e)], ids=lambda e: e.name)
def test_a_kernel_clean_only_when_it_thinks_it_is_under_the_tool_is_caught(graded_corpus, entry):
    """Graded in the corpus's real run, where compute-sanitizer runs (the fast run runs none)."""
    runs = graded_corpus.sanitizer_runs(entry.name, task=entry.task, tool=entry.sanitizer)
    assert len(runs) and all(s == "errors" and e > 0 for s, e in zip(runs["status"], runs["errors"])), \
        (entry.name, runs[["status", "errors", "shape"]].to_dict("records"))
