"""The hostile corpus (grader/tests/hostile/): adversarial submissions, each with
its expected verdict. Without a GPU the corpus's form is checked (and the build
gate's verdicts by test_gate); on a GPU the whole corpus is graded in one batch,
a normal submission right after each entry."""
from __future__ import annotations

import json
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


def load_corpus() -> list[Entry]:
    entries = []
    for folder in sorted(p for p in CORPUS.iterdir() if p.is_dir()):
        spec = tomllib.loads((folder / "expected.toml").read_text())
        entries.append(Entry(folder.name, folder, spec["attack"], spec["needs_gpu"], spec["status"], spec["task"],
                             spec["case_status"], spec["reason"],
                             spec.get("kind", "correctness"), spec.get("cases", "all")))
    return entries


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
    assert all(f in {t + ".cu" for t in task_names()} | {"nickname.txt"} for f in files), files


# ---------------------------------------------------------------------------
# On a GPU: the whole corpus in one batch.

NORMAL_TASKS = ("fill", "add")  # the normal submission: these two right, the rest untouched stubs


def fast_rubric(tmp: Path) -> Path:
    """The real rubric with a short timing budget and case limit, and no sanitizer runs, so the batch stays quick."""
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
    text = text.replace(old, "tools = []", 1)
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
        shutil.copytree(entry.path, submissions / f"h{i:02d}-{entry.name}", ignore=shutil.ignore_patterns("*.toml"))
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
