"""Fixtures for the grader's tests: the real task registry, rubrics, fake submissions."""
from __future__ import annotations

import fcntl
import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest

from grader import backends
from grader.backends.local import Workspace
from grader.core.gate_policy import gate_tables_text
from grader.core.registry import Registry
from grader.core.rubric import DEFAULT_RUBRIC, load_rubric
from grader.core.late import ON_TIME
from grader.scoring.chain import score_chain
from grader.backends import build_cache as cache
from grader.scoring.score import ScoredCase
from grader.store.store import Store

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def registry() -> Registry:
    """The real registry, as checked in (starter/harness/registry.json): no build needed."""
    return Registry.from_file()


def over_cache(ws: Workspace, kind_name: str, arch: str) -> Workspace:
    """`ws` over the session's build cache entry for this backend (conftest.py's TEST_BUILD_CACHE): its harness
    library, solution and stubs built once for the whole test run, as `grade` finds them."""
    entry, _ = cache.ensure(Path(os.environ["GRADER_BUILD_CACHE"]), backends.get(kind_name), arch, 2, DEFAULT_RUBRIC)
    ws.use_built(entry.folder / "work", entry.key)
    return ws


@pytest.fixture(scope="session")
def workspace(tmp_path_factory, registry) -> Workspace:
    """A grader's build tree over the pristine harness library, the solution and the gate's objects built with
    nvcc for sm_90 (no GPU), shared by the tests that build submissions for real."""
    return over_cache(Workspace(tmp_path_factory.mktemp("work"), arch="sm_90"), "gpu", "sm_90")


@pytest.fixture(scope="session")
def cpu_workspace(tmp_path_factory) -> Workspace:
    """The same for the CPU backend: the harness library and the CPU runtime (g++; no CUDA toolkit)."""
    return over_cache(Workspace(tmp_path_factory.mktemp("cpu-work"), cpu=True), "cpu", "cpu")


@pytest.fixture(params=["nvcc", "cpu-backend"])  # (not "gpu": a test with that keyword is a GPU test)
def either_workspace(request) -> Workspace:
    """Each backend's build tree in turn (nvcc's objects, the CPU backend's): the gate's rules hold on both."""
    return request.getfixturevalue("workspace" if request.param == "nvcc" else "cpu_workspace")


@pytest.fixture(scope="session")
def rubric(registry):
    return load_rubric(DEFAULT_RUBRIC, registry)


@pytest.fixture(scope="session")
def cpu_grading_work(tmp_path_factory) -> Path:
    """The work folder of the session's `grade --device cpu` runs: test_grade_cpu's class and the hostile batch on
    the CPU (test_hostile_batch) build their submissions there, over the session's build cache entry."""
    return tmp_path_factory.mktemp("cpu-grading") / "work"


def sandbox_unavailable(why: str):
    """A test that needs bubblewrap, where it cannot run: skipped, and listed; a failure where
    REQUIRE_SANDBOX_TESTS is set (CI's .ci/run), so that CI never passes with its sandboxed grading unexercised."""
    if os.environ.get("REQUIRE_SANDBOX_TESTS", "") not in ("", "0"):
        pytest.fail(f"{why}, and REQUIRE_SANDBOX_TESTS is set: the sandboxed tests must run here", pytrace=False)
    pytest.skip(f"{why}; CI sets REQUIRE_SANDBOX_TESTS=1, so there they run")


def made_once(tmp_path_factory, name: str, make) -> Path:
    """A folder made once per test run, by whichever pytest-xdist worker asks first: the others wait for it (flock)
    and then read it. `make(folder)` fills the folder; if it fails, the next to ask makes it again. For what is
    costly and only read afterwards (a class graded for real), so that tests of two files on two workers share it."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "made-once"
    root.mkdir(parents=True, exist_ok=True)
    folder = root / name
    with open(root / f"{name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".made").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            (folder / ".made").touch()
    return folder


@pytest.fixture(scope="session")
def cpu_sample_class(tmp_path_factory, rubric, registry, cpu_grading_work):
    """The sample class graded for real on the CPU backend (cpu_class.py), once per test run, read only."""
    from grader.tests import cpu_class
    cpu_class.sandbox_or_skip(rubric)
    folder = made_once(tmp_path_factory, "cpu-sample-class",
                       lambda root: cpu_class.grade_class(root, rubric, cpu_grading_work))
    return cpu_class.graded_class(folder, registry)


@pytest.fixture(scope="module")
def cluster():
    """A private single-host Slurm (grader/tests/slurm_cluster.py) for one test module; the module is skipped,
    and listed, where Slurm cannot start, and fails there when REQUIRE_SLURM_TESTS is set (CI's .ci/run)."""
    from grader.tests.slurm_cluster import Cluster, ClusterUnavailable
    c = Cluster(Path(tempfile.mkdtemp(prefix="slurm-", dir="/tmp")))
    try:
        c.start()
    except ClusterUnavailable as e:
        c.stop()
        if os.environ.get("REQUIRE_SLURM_TESTS", "") not in ("", "0"):
            pytest.fail(f"Slurm cannot start here ({e}), and REQUIRE_SLURM_TESTS is set: these tests must run here")
        pytest.skip(f"Slurm cannot start here: {e}; CI sets REQUIRE_SLURM_TESTS=1, so there they run")
    yield c
    c.stop()


def scores_of(result, rubric, measured: bool = True) -> list:
    """A fresh result's task scores as the scoring chain makes them (no overrides, on time): what grading stores."""
    cases = [ScoredCase.of_outcome(c, i) for i, c in enumerate(result.cases)]
    return score_chain(rubric, result.status, cases, result.sanitizer, [], ON_TIME, measured).scores


@contextmanager
def opened(results: Path):
    """The grades store in a results folder, through its own API (never SQL), closed afterwards."""
    store = Store.existing(Path(results) / "grades.sqlite")
    try:
        yield store
    finally:
        store.close()


def narrowed(frame: pd.DataFrame, **where) -> pd.DataFrame:
    """The rows whose columns have these values (task="dot", kind="timed"), numbered from 0."""
    for column, value in where.items():
        frame = frame[frame[column] == value]
    return frame.reset_index(drop=True)


def texts_a_student_reads(results: Path) -> list[str]:
    """Every stored text that reaches a student (case messages, hints, a crash's output, harness records,
    build logs and reasons, gate findings, sanitizer reports) and every feedback page of a results folder."""
    with opened(results) as store:
        cases, subs, tools = store.cases_for(), store.submissions(), store.sanitizer_runs_for()
    frames = [(cases, ["message", "hint", "output", "record"]), (subs, ["build_log", "build_reason", "gate"]),
              (tools, ["report", "message"])]
    texts = [text for frame, columns in frames for column in columns for text in frame[column].dropna()]
    feedback = results / "feedback"  # (a class graded without its reports has none)
    pages = [page for page in feedback.iterdir() if page.suffix in (".md", ".html")] if feedback.is_dir() else []
    return texts + [page.read_text() for page in pages]


# When a submission was stored and received, and its student's id: what differs between two students' pages
# whatever they handed in (student_reads_at leaves them out).
_WHEN = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(\+00:00| UTC)?")
_SHA = re.compile(r"sha256 (`[0-9a-f]*`|<code>[0-9a-f]*</code>)")  # its files' digest (Markdown, HTML)


def student_reads_at(results: Path, rubric, student: str, now) -> dict[str, str]:
    """Everything `student` is handed at `now` (aware), from a results folder's store: the feedback page (HTML and
    Markdown), the grading service's result, and what Gradescope shows of its results.json (its tests visible now;
    while a test is hidden Gradescope shows neither it nor the total, its specification says); the student's id,
    every time of day and the files' digest written as "(id)", "(time)" and "(digest)", so that two students'
    texts compare."""
    import json

    from grader.core import visibility
    from grader.exports import gradescope
    from grader.reports.report import feedback_context, render_feedback, run_of
    from grader.reports.student_view import student_result
    with opened(results) as store:
        sub = next(store.submissions(student).itertuples())
        context, _ = feedback_context(store, rubric, sub, run_of(store, sub.run_id), visibility.student(now))
        texts = {kind: render_feedback(context, kind) for kind in ("md", "html")}
        texts["service"] = json.dumps(student_result(store, rubric, int(sub.id), now), indent=1, sort_keys=True)
        exported = json.loads(gradescope.export(store, rubric, student, now).text)
    hiding = any(t["visibility"] != "visible" for t in exported["tests"])
    shown = {"output": exported["output"], "score": None if hiding else exported["score"],
             "tests": [t if t["visibility"] == "visible" else {k: v for k, v in t.items() if k != "score"}
                       for t in exported["tests"]]}
    texts["gradescope"] = json.dumps(shown, indent=1, sort_keys=True)
    return {kind: _SHA.sub("sha256 (digest)", _WHEN.sub("(time)", text.replace(student, "(id)")))
            for kind, text in texts.items()}


def cases_of(results: Path, student: str, **where) -> pd.DataFrame:
    """Every stored case of the student's submissions, narrowed by column values (task="dot", kind="timed")."""
    with opened(results) as store:
        cases = store.cases_for(store.submissions(student)["id"].tolist())
    return narrowed(cases, **where)


def write_submission(root: Path, student: str, files: dict[str, str]) -> Path:
    folder = root / student
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


@pytest.fixture
def all_task_files(registry):
    """{file: marker} for every task: a correct submission at the solution's speed."""
    return {t.file: f"// fake: ok speed=1.0\n// {t.id}\n" for t in registry.tasks}


def _toml_list(words) -> str:
    return "[" + ", ".join(f'"{w}"' for w in words) + "]"


def small_rubric_text(rubric, min_pairs: int = 3, shapes: dict[str, list[str]] | None = None,
                      limits: dict[str, float] | None = None) -> str:
    """The default rubric cut down to two shapes and one type per task, for fast tests of the flow; `shapes`
    (task -> shapes) and `limits` ([limits] keys) change those it names."""
    limits = {"build": 30, "case": 5, "submission": 120, **(limits or {})}
    lines = [f'[assignment]\nname = "{rubric.name}"\ntitle = "{rubric.title}"\n'
             f'leaderboard_task = "{rubric.leaderboard_task}"\n',
             "[limits]\n" + "".join(f"{k} = {v}\n" for k, v in limits.items())
             + "".join(f"{k} = {getattr(rubric.limits, k)}\n"
                       for k in ("sanitizer", "cpu_seconds", "file_size_mib", "processes", "output_mib")
                       if k not in limits),
             f"[timing]\nmin_pairs = {min_pairs}\nmax_pairs = {min_pairs}\ntarget_relative_ci = 0.01\n"
             "budget = 5.0\nwarmup = 1\nsubmission_budget = 60.0\nreview_speedup = 1.5\n",
             f"[sanitizer]\ntools = {list(rubric.sanitizer.tools)}\npenalty = {rubric.sanitizer.penalty}\n"
             "[sanitizer.shapes]\n" + "".join(f'{t} = "{s}"\n' for t, s in rubric.sanitizer.shapes)]
    for t in rubric.tasks:
        lines.append(f"[tasks.{t.id}]\ncorrectness_points = {t.correctness_points}\n"
                     f"performance_points = {t.performance_points}\ndtypes = [\"{t.dtypes[0]}\"]\n"
                     f"shapes = {_toml_list((shapes or {}).get(t.id, [t.shapes[0], t.shapes[-1]]))}\n"
                     f"timed = [\"{t.timed[-1]}\"]\n"
                     f"s_zero = {t.s_zero}\ns_full = {t.s_full}\n")
    lines.append(gate_tables_text(rubric.path.read_text()))  # the build gate's rules, as the default has them
    return "\n".join(lines)


@pytest.fixture
def small_rubric(tmp_path, rubric, registry):
    path = tmp_path / "small_rubric.toml"
    path.write_text(small_rubric_text(rubric))
    return load_rubric(path, registry)


@pytest.fixture(scope="session")
def small_rubric_once(tmp_path_factory, rubric, registry):
    """small_rubric, written once: for a module's class graded once (scope="module") and tests that only read it."""
    path = tmp_path_factory.mktemp("small-rubric") / "small_rubric.toml"
    path.write_text(small_rubric_text(rubric))
    return load_rubric(path, registry)


def pytest_configure(config):
    config.addinivalue_line("markers", "slurm: starts a private single-host Slurm (root; Debian's slurmctld, slurmd "
                                       "and munge: make deps-slurm); skipped, and listed, where it cannot start")


def pytest_terminal_summary(terminalreporter):
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if "slurm" in r.keywords]
    if skipped:
        terminalreporter.section(f"{len(skipped)} Slurm tests skipped")
        for report in skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            terminalreporter.line(f"  {report.nodeid}: {reason}")


def grade_on_fakes(patch, registry, rubric):
    """`grade`, `gradescope` and `autolab` through main() on the fake backend (grader/tests/fakes.py), no sandbox:
    every command module that opens a built backend gets the fake in its place (`patch`: a MonkeyPatch)."""
    from grader.cli import grading, single
    from grader.tests.fakes import FakeBackend
    for module in (grading, single):
        patch.setattr(module, "isolation", lambda args, work: None)
        patch.setattr(module, "prepared_backend", lambda args, work, jobs, gpu, sandbox: (FakeBackend(), registry,
                                                                                           rubric))
