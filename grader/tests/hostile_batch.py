"""The hostile batch: the whole hostile corpus (grader/tests/hostile/) graded in one `grade` run on one backend,
a normal submission right after each entry whose code runs there, and what that grading must show. The same
batch for both backends, each entry judged by its verdict on the backend that graded it (hostile_entries.py:
its expected.toml, with the cpu_* keys on the CPU backend):

  gpu   the GPU suite's graded corpus (gpu_corpus.py) hands the batch in with its fast run, and the entries a
        tool must report again with its real run, where compute-sanitizer runs
  cpu   test_hostile_batch.py grades it with `grade --device cpu` (CI, no GPU), and the entries a checker
        must report again in a second run with the CPU backend's checkers on

test_hostile_batch.py runs the same checks on both.

Students: each entry as hNN-<name> (NN: its place in the corpus, so grading order is corpus order), the normal
submission after it as hNN-zz-normal (the solution's fill.cu and add.cu), which sorts right after it, and an
entry's honest control (its `control` subfolder) as hNN-zzz-control after that; in the run with the tools or
checkers on, each such entry under its own name.

Hidden cases: the batch's rubric hides each shape an entry names (`hidden`) until HIDDEN_UNTIL, long after the
batch; what its student reads is read as before that date (BEFORE_HIDDEN) and after it.

The checks take a graded corpus (gpu_corpus.GradedCorpus: the batch's run, and the run with the tools on) and the
backend, and fail with what was stored when a verdict is not what the entry expects.
"""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from grader.core.registry import Registry
from grader.core.rubric import load_rubric
from grader.core.status import SANITIZER_FINDINGS
from grader.tests.conftest import REPO, student_reads_at, texts_a_student_reads
from grader.tests.hostile_entries import Entry, hand_in, hand_in_control, load_corpus

SOLUTION = REPO / "solution" / "kernels"
NORMAL_TASKS = ("fill", "add")  # a normal submission: these two right (the solution's), the rest not handed in
# Case statuses under which none of the entry's own code ran: nothing of it could be left behind.
RAN_NOTHING = {"forbidden", "build_error", "needs_gpu"}

ENTRIES: list[Entry] = load_corpus()  # the hostile corpus's entries, in folder order
HIDDEN_UNTIL = "2999-01-01T00:00:00+00:00"  # the batch's [hidden] until
BEFORE_HIDDEN = datetime(2998, 12, 31, tzinfo=timezone.utc)
AFTER_HIDDEN = datetime(2999, 1, 2, tzinfo=timezone.utc)


def hidden_shapes() -> dict[str, list[str]]:
    """The shapes the batch's rubric hides, by task: those the entries name."""
    hidden: dict[str, list[str]] = {}
    for e in ENTRIES:
        if e.hidden and e.hidden not in hidden.setdefault(e.task, []):
            hidden[e.task].append(e.hidden)
    return hidden


def hostile_student(name: str) -> str:
    """The student id of the hostile entry `name` in the batch (its index keeps the corpus's order)."""
    index = [e.name for e in ENTRIES].index(name)
    return f"h{index:02d}-{name}"


def normal_after(name: str) -> str:
    """The normal submission graded right after the hostile entry `name` (sorts right after it)."""
    return hostile_student(name).split("-", 1)[0] + "-zz-normal"


def control_of(name: str) -> str:
    """The hostile entry `name`'s honest control (sorts after its normal submission)."""
    return hostile_student(name).split("-", 1)[0] + "-zzz-control"


def runs_code(entry: Entry, backend: str) -> bool:
    """Whether the entry's own code runs on `backend`, so that a normal submission follows it: what it leaves
    behind would show there. An entry refused at intake, stopped by the build gate, not compiling, or one the
    backend cannot run (the CPU's "needs a GPU") runs nothing of its own (its other tasks are the stubs)."""
    return entry.needs_gpu and entry.verdict(backend).case_status not in RAN_NOTHING


def sanitized(entry: Entry, backend: str) -> bool:
    """Whether the entry is also graded in the run with the tools on (compute-sanitizer on a GPU, the CPU
    backend's own checkers on the CPU), under its own name: its verdict names a tool that must report it."""
    return bool(entry.verdict(backend).sanitizer)


def gather(submissions: Path, backend: str) -> list[str]:
    """Hands every entry in, each followed by a normal submission where its code runs on `backend`, into the
    folder `submissions`; returns their student ids."""
    submissions.mkdir(parents=True, exist_ok=True)
    students = []
    for entry in ENTRIES:
        hand_in(entry, submissions, hostile_student(entry.name))
        students.append(hostile_student(entry.name))
        if runs_code(entry, backend):
            normal = submissions / normal_after(entry.name)
            normal.mkdir()
            for task in NORMAL_TASKS:
                (normal / f"{task}.cu").write_bytes((SOLUTION / f"{task}.cu").read_bytes())
            students.append(normal.name)
        if entry.control:
            hand_in_control(entry, submissions, control_of(entry.name))
            students.append(control_of(entry.name))
    return students


def gather_sanitized(submissions: Path, backend: str) -> list[str]:
    """Hands in, under their own names, the entries a tool must report on `backend`; returns their ids."""
    submissions.mkdir(parents=True, exist_ok=True)
    students = []
    for entry in (e for e in ENTRIES if sanitized(e, backend)):
        hand_in(entry, submissions, entry.name)
        students.append(entry.name)
    return students


# ---------------------------------------------------------------------------------------------------------------
# What the grading must show. `corpus`: a graded corpus whose run `corpus.fast` graded the batch.


def check_every_submission_stored_once(corpus, backend: str) -> None:
    """The grader finished the batch, stored every submission once and nothing else, and the store is intact."""
    run = corpus.fast
    with run.opened() as store:
        assert store.integrity() == "ok"
        graded = set(store.submissions()["student"])
    assert graded == set(run.students), sorted(graded ^ set(run.students))
    wanted = {hostile_student(e.name) for e in ENTRIES} | {normal_after(e.name) for e in ENTRIES
                                                           if runs_code(e, backend)}
    wanted |= {control_of(e.name) for e in ENTRIES if e.control}
    assert wanted <= graded and len(wanted) == len(ENTRIES) + sum(runs_code(e, backend) for e in ENTRIES) + \
        sum(bool(e.control) for e in ENTRIES), sorted(wanted - graded)


def check_verdict(corpus, entry: Entry, backend: str) -> None:
    """The entry's submission got its expected status, its task's cases their expected status, with the reason
    in their messages; an attack defeated into an honest run is timed honestly too (where timing is done)."""
    verdict = entry.verdict(backend)
    student = hostile_student(entry.name)
    row = corpus.submission(student)
    status, rejected, build_log = row["status"], row["rejected"], row["build_log"]
    assert status == verdict.status, (status, rejected, str(build_log)[-2000:])
    if status != "graded":
        assert verdict.reason.lower() in f"{rejected or ''}\n{build_log}".lower()
        return
    stored = corpus.cases(student)
    mine = stored[stored["task"] == verdict.task]
    cases = mine[mine["kind"] == verdict.kind][["status", "message", "hint"]].values.tolist()
    assert cases, f"no {verdict.kind} cases of {verdict.task} stored"
    statuses = [c[0] for c in cases]
    if verdict.case_status == "any-failing":
        assert "ok" not in statuses, statuses
    elif verdict.cases == "some":
        assert verdict.case_status in statuses, statuses
    else:
        assert set(statuses) == {verdict.case_status}, (statuses, [c[1] for c in cases][:3])
    text = "\n".join(f"{c[1]}\n{c[2]}" for c in cases).lower()
    assert verdict.reason.lower() in text, text[:3000]
    if verdict.case_status == "ok":  # defeated into an honest run: timed honestly too, nothing flagged
        timed = mine[mine["kind"] == "timed"][["status", "flag"]].values.tolist()
        assert all(status == "ok" and not flag for status, flag in timed), timed


def check_tool_reports(corpus, entry: Entry, backend: str) -> None:
    """The tool (or the CPU backend's checker in its place) that the entry's verdict names reported the task in
    every run it made, in the run with the tools on."""
    verdict = entry.verdict(backend)
    runs = corpus.sanitizer_runs(entry.name, task=verdict.task, tool=verdict.sanitizer)
    assert len(runs) and all(s == "errors" and e > 0 for s, e in zip(runs["status"], runs["errors"])), \
        (entry.name, runs[["status", "errors", "shape", "message"]].to_dict("records"))
    assert set(runs["checker"]) == {"cpu" if backend == "cpu" else "compute-sanitizer"}, set(runs["checker"])


def check_normal_submissions(corpus, backend: str) -> None:
    """Right after each entry whose code runs, in the same grading run, a normal submission (the solution's fill.cu
    and add.cu) gets every case of those two right, and the same points as every other normal submission."""
    with corpus.fast.opened() as store:
        subs = store.submissions()
        normal = subs[subs["student"].str.endswith("-zz-normal")]
        cases = store.cases_for(normal["id"].tolist())
        scores = store.scores(normal["id"].tolist())
    students = normal.set_index("id")["student"]
    checks = cases[cases["kind"] == "correctness"]
    by_student: dict[str, dict[str, set[str]]] = {}
    for student, task, status in zip(checks["submission_id"].map(students), checks["task"], checks["status"]):
        by_student.setdefault(student, {}).setdefault(task, set()).add(status)
    followed = [e for e in ENTRIES if runs_code(e, backend)]
    assert sorted(by_student) == sorted(normal_after(e.name) for e in followed)
    for student, tasks in by_student.items():
        for task in NORMAL_TASKS:
            assert tasks[task] == {"ok"}, (student, task, tasks[task])
        for task, statuses in tasks.items():
            if task not in NORMAL_TASKS:
                assert statuses == {"missing"}, (student, task, statuses)  # not handed in
    correctness = set(scores.groupby("submission_id")["correctness"].sum().round(6))
    assert len(correctness) == 1, correctness
    # Graded right after its entry: the next submission the worker stored (in grading order) is it.
    graded = subs[subs["status"] == "graded"].sort_values("id")["student"].tolist()
    for entry in followed:
        entry_at = graded.index(hostile_student(entry.name))
        assert graded[entry_at + 1] == normal_after(entry.name), graded[entry_at:entry_at + 3]






def check_never_shown(corpus, entry: Entry) -> None:
    """The text of the file the entry's attack reads appears nowhere a student reads (the entry's student or any
    other of the batch): stored messages, build logs and gate findings, sanitizer reports, feedback pages."""
    leaked = [t[:300] for t in texts_a_student_reads(corpus.fast.results) if entry.never_shown in t]
    assert not leaked, leaked


def check_control(corpus, entry: Entry) -> None:
    """The entry's honest control passed every case of the entry's task, hidden ones included: the defense leaves
    an honest submission's verdict as it was."""
    cases = corpus.cases(control_of(entry.name))
    mine = cases[cases["task"] == entry.task]
    assert len(mine) and set(mine["status"]) == {"ok"}, mine[["kind", "shape", "status", "message"]].values.tolist()
    assert not entry.hidden or entry.hidden in set(mine["shape"])  # (a control of a hidden-case entry)
    runs = corpus.sanitizer_runs(control_of(entry.name), task=entry.task)
    assert not set(runs["status"]) & set(SANITIZER_FINDINGS), runs[["tool", "status", "report"]].values.tolist()


def _rubric(corpus):
    return load_rubric(corpus.fast.rubric, Registry.from_file())


def check_hidden_never_shown(corpus, entry: Entry) -> None:
    """Before the date, nothing the entry's student reads (the feedback page and its Markdown, the grading
    service's result, what Gradescope shows) holds the text it printed of a hidden case; after it, the hidden
    case is shown (so that the text is absent before the date because it is hidden, not because nothing ran)."""
    rubric = _rubric(corpus)
    student = hostile_student(entry.name)
    for kind, text in student_reads_at(corpus.fast.results, rubric, student, BEFORE_HIDDEN).items():
        at = text.find(entry.hidden_never_shown)
        assert at < 0, (kind, text[max(0, at - 400):at + 100])
    before = student_reads_at(corpus.fast.results, rubric, student, BEFORE_HIDDEN)["md"]
    after = student_reads_at(corpus.fast.results, rubric, student, AFTER_HIDDEN)["md"]
    assert "hidden case" in before and "hidden case" not in after, after[-3000:]  # (the rubric hides it until then)


def check_same_as_control(corpus, entry: Entry) -> None:
    """Before the date the entry's student reads exactly what its honest control's student reads (the names and
    the times of grading and receipt aside): whatever its hidden case did, nothing shown tells."""
    rubric = _rubric(corpus)
    entry_reads = student_reads_at(corpus.fast.results, rubric, hostile_student(entry.name), BEFORE_HIDDEN)
    control_reads = student_reads_at(corpus.fast.results, rubric, control_of(entry.name), BEFORE_HIDDEN)
    for kind in entry_reads:
        assert entry_reads[kind] == control_reads[kind], (kind, entry_reads[kind], control_reads[kind])
