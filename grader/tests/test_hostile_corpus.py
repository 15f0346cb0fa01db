"""The hostile corpus (grader/tests/hostile/): adversarial submissions, each with
its expected verdict. Without a GPU the corpus's form is checked (and the build
gate's verdicts by test_gate); on a GPU the whole corpus is graded in one batch,
a normal submission right after each entry."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader.tests.conftest import opened

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "grader" / "tests" / "hostile"
SOLUTION = REPO / "solution" / "kernels"
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
}


@dataclass
class Entry:
    name: str
    path: Path
    attack: str
    needs_gpu: bool
    status: str
    task: str
    case_status: str
    reason: str
    kind: str  # which of the task's cases the verdict is about: correctness or timed
    cases: str  # "all": every one of them gets case_status; "some": at least one does
    archive: str = ""  # "build.py": the submission is the archive that script writes
    duplicate: str = ""  # a subfolder handed in as an older folder of the same id
    sanitizer: str = ""  # the compute-sanitizer tool that must report the task


SPEC_KEYS = {"attack", "needs_gpu", "status", "task", "case_status", "reason", "kind", "cases", "archive",
             "duplicate", "sanitizer"}


def load_corpus() -> list[Entry]:
    entries = []
    for folder in sorted(p for p in CORPUS.iterdir() if p.is_dir()):
        spec = tomllib.loads((folder / "expected.toml").read_text())
        assert not spec.keys() - SPEC_KEYS, (folder.name, spec.keys() - SPEC_KEYS)
        entries.append(Entry(folder.name, folder, spec["attack"], spec["needs_gpu"], spec["status"], spec["task"],
                             spec["case_status"], spec["reason"],
                             spec.get("kind", "correctness"), spec.get("cases", "all"), spec.get("archive", ""),
                             spec.get("duplicate", ""), spec.get("sanitizer", "")))
    return entries


def hand_in(entry: Entry, submissions: Path, student: str) -> None:
    """Puts the entry into a submissions folder as `student`: its files as a folder, or the archive its
    build.py writes, or (duplicate) its older/ folder and the rest as a later archive of the same id."""
    import importlib.util
    import os
    import tarfile
    if entry.archive:
        spec = importlib.util.spec_from_file_location(f"corpus_{student}", entry.path / entry.archive)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.build(submissions / f"{student}.tar.gz")
        return
    ignore = shutil.ignore_patterns("*.toml", *([entry.duplicate] if entry.duplicate else []))
    if not entry.duplicate:
        shutil.copytree(entry.path, submissions / student, ignore=ignore)
        return
    shutil.copytree(entry.path / entry.duplicate, submissions / student)
    archive = submissions / f"{student}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for f in sorted(entry.path.glob("*.cu")):
            tar.add(f, arcname=f"{student}/{f.name}")
    os.utime(submissions / student, (1_700_000_000, 1_700_000_000))
    os.utime(archive, (1_700_000_600, 1_700_000_600))


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
# On a GPU: the whole corpus in one batch.

NORMAL_TASKS = ("fill", "add")  # the normal submission: these two right, the rest untouched stubs


def fast_rubric(tmp: Path, tools: tuple[str, ...] = ()) -> Path:
    """The real rubric with a short timing budget and case limit, and no sanitizer runs (unless `tools`), so the
    batch stays quick."""
    text = (REPO / "grader" / "rubric.toml").read_text()
    data = tomllib.loads(text)
    for key, value in {"budget": 1.0, "min_pairs": 3, "max_pairs": 20}.items():
        old = f"{key} = {data['timing'][key]}"
        assert old in text, old
        text = text.replace(old, f"{key} = {value}", 1)
    old = f"case = {data['limits']['case']}"
    text = text.replace(old, "case = 10", 1)
    # compute-sanitizer has tests of its own (solution/tests/test_sandbox_gpu.py); here it would only add minutes.
    old = f"tools = {json.dumps(data['sanitizer']['tools'])}"
    assert old in text, old
    text = text.replace(old, f"tools = {json.dumps(list(tools))}", 1)
    path = tmp / "rubric.toml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def batch(tmp_path_factory, gpu_work):
    tmp = tmp_path_factory.mktemp("hostile")
    submissions = tmp / "submissions"
    submissions.mkdir()
    corpus = load_corpus()
    for i, entry in enumerate(corpus):
        hand_in(entry, submissions, f"h{i:02d}-{entry.name}")
        normal = submissions / f"h{i:02d}-zz-normal"
        normal.mkdir()
        for task in NORMAL_TASKS:
            shutil.copy(SOLUTION / f"{task}.cu", normal)
    results = tmp / "results"
    run = subprocess.run([sys.executable, "-m", "grader", "grade", str(submissions), "--results", str(results),
                          "--work", str(gpu_work), "--rubric", str(fast_rubric(tmp)), "--no-progress"],
                         cwd=REPO, capture_output=True, text=True, timeout=3600)
    return corpus, results, run


@pytest.mark.gpu
def test_grader_survives_the_whole_corpus(batch):
    corpus, results, run = batch
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    with opened(results) as store:
        assert store.integrity() == "ok"
        graded = set(store.submissions()["student"])
    assert len(graded) == 2 * len(corpus), sorted(graded)


@pytest.mark.gpu
@pytest.mark.parametrize("index", range(len(load_corpus())), ids=[e.name for e in load_corpus()])
def test_each_entry_gets_its_verdict(batch, index):
    corpus, results, _ = batch
    entry = corpus[index]
    student = f"h{index:02d}-{entry.name}"
    with opened(results) as store:
        rows = store.submissions(student)
        assert not rows.empty, f"{student} was not stored"
        row = rows.iloc[-1]
        stored = store.cases(int(row["id"]))
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
def test_a_normal_submission_after_each_entry_is_unaffected(batch):
    corpus, results, _ = batch
    with opened(results) as store:
        subs = store.submissions()
        normal = subs[subs["student"].str.endswith("-zz-normal")]
        cases = store.cases_for(normal["id"].tolist())
        scores = store.scores(normal["id"].tolist())
    students = normal.set_index("id")["student"]
    checks = cases[cases["kind"] == "correctness"]
    by_student: dict[str, dict[str, set[str]]] = {}
    for student, task, status in zip(checks["submission_id"].map(students), checks["task"], checks["status"]):
        by_student.setdefault(student, {}).setdefault(task, set()).add(status)
    assert len(by_student) == len(corpus)
    for student, tasks in by_student.items():
        for task in NORMAL_TASKS:
            assert tasks[task] == {"ok"}, (student, task, tasks[task])
        for task, statuses in tasks.items():
            if task not in NORMAL_TASKS:
                assert statuses == {"missing"}, (student, task, statuses)  # not handed in
    totals = set(normal[normal["status"] == "graded"]["total"].round(6))
    correctness = set(scores.groupby("submission_id")["correctness"].sum().round(6))
    assert len(correctness) == 1, correctness
    assert totals, "no normal submission was graded"


@pytest.mark.gpu
def test_a_gigabyte_of_printf_leaves_the_feedback_small(batch):
    corpus, results, _ = batch
    index = [e.name for e in corpus].index("printf-flood")
    feedback = results / "feedback" / f"h{index:02d}-printf-flood.md"
    assert feedback.exists(), sorted(p.name for p in (results / "feedback").iterdir())[:10]
    assert feedback.stat().st_size < 200_000


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["detached-background", "fork-holds-gpu"])
def test_a_process_left_behind_stalls_nothing_and_holds_no_memory(batch, name):
    """The detached background process once stalled a class run for over six minutes; the forked child kept
    the GPU's memory after its parent was killed. Neither entry, nor the normal submission after it, may take
    long, and no submission may be named for GPU memory that stayed taken."""
    corpus, results, _ = batch
    index = [e.name for e in corpus].index(name)
    con = db(results)
    for student in (f"h{index:02d}-{name}", f"h{index:02d}-zz-normal"):
        seconds, notes = con.execute("SELECT seconds, notes FROM submissions WHERE student = ?", (student,)).fetchone()
        assert seconds < 180, (student, seconds)
        assert not any("of the GPU's memory stayed taken" in n for n in json.loads(notes)), notes


@pytest.mark.gpu
def test_a_four_megabyte_message_per_case_is_stored_cut(batch):
    corpus, results, _ = batch
    index = [e.name for e in corpus].index("message-flood")
    con = db(results)
    (sub_id,) = con.execute("SELECT id FROM submissions WHERE student = ?", (f"h{index:02d}-message-flood",)).fetchone()
    sizes = [len(m or "") + len(r or "") for m, r in con.execute("SELECT message, record FROM cases WHERE "
                                                                  "submission_id = ?", (sub_id,))]
    assert sizes and sum(sizes) < 2 * 2**20, sum(sizes)
    feedback = results / "feedback" / f"h{index:02d}-message-flood.md"
    assert feedback.stat().st_size < 2 * 2**20


@pytest.fixture(scope="module")
def sanitizer_batch(tmp_path_factory):
    """The entries whose verdict is compute-sanitizer's, graded with their tools on (the main batch runs none)."""
    tmp = tmp_path_factory.mktemp("hostile-sanitizer")
    submissions = tmp / "submissions"
    submissions.mkdir()
    entries = [e for e in load_corpus() if e.sanitizer]
    for entry in entries:
        hand_in(entry, submissions, entry.name)
    results = tmp / "results"
    tools = tuple(sorted({e.sanitizer for e in entries}))
    run = subprocess.run([sys.executable, "-m", "grader", "grade", str(submissions), "--results", str(results),
                          "--work", str(tmp / "work"), "--rubric", str(fast_rubric(tmp, tools)), "--no-progress"],
                         cwd=REPO, capture_output=True, text=True, timeout=3600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    return entries, results


@pytest.mark.gpu
def test_a_kernel_clean_only_when_it_thinks_it_is_under_the_tool_is_caught(sanitizer_batch):
    entries, results = sanitizer_batch
    con = db(results)
    for entry in entries:
        rows = con.execute("SELECT r.status, r.errors, r.shape FROM sanitizer_runs r JOIN submissions s ON "
                           "s.id = r.submission_id WHERE s.student = ? AND r.task = ? AND r.tool = ?",
                           (entry.name, entry.task, entry.sanitizer)).fetchall()
        assert rows and all(status == "errors" and errors > 0 for status, errors, _ in rows), (entry.name, rows)
