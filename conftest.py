"""For every test folder: tests that need a GPU carry the `gpu` marker and are
skipped, with the reason, on machines without one; CI runs everything else.

The two tiers are decided here, in one place: a test is `slow` when it uses one of SLOW_FIXTURES (directly or
through another fixture), carries the `gpu` or `slurm` marker, or sits in a file marked
`pytestmark = pytest.mark.slow` (a file that builds or sandboxes without these fixtures). `make check-fast` runs
the rest (`pytest -m "not slow"`); `make check` runs both."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest


def gpu_available() -> tuple[bool, str]:
    if shutil.which("nvidia-smi") is None:
        return False, "no CUDA device on this machine (nvidia-smi not found)"
    listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    if listed.returncode != 0 or "GPU" not in listed.stdout:
        return False, "no CUDA device on this machine (nvidia-smi lists no GPU)"
    return True, listed.stdout.strip().splitlines()[0]


HAS_GPU, GPU_DESCRIPTION = gpu_available()


# The fixtures that build or run for real: nvcc or g++ builds of the harness, the solution and the CPU runtime
# (grader/tests/conftest.py, solution/tests/conftest.py), the GPU suite's grading (below), Chromium
# (grader/tests/test_overview.py's browser), README.md's commands in a fresh clone (test_readme_commands.py).
SLOW_FIXTURES = {"workspace", "cpu_workspace", "either_workspace", "cpu_grading_work", "cpu_sample_class", "gpu_work",
                 "graded_corpus", "starter_build", "solution_build", "browser", "clone_runs"}
SLOW_MARKERS = {"gpu", "slurm"}


# The build cache every real grading run of the tests opens (grader/backends/build_cache.py; `grade`'s --build-cache): keyed by
# the harness's sources, the solution and the toolchain, so the harness and the solution are built once for a test run
# and its xdist workers (flock), not once per test folder, and again only when their sources change.
TEST_BUILD_CACHE = Path(__file__).resolve().parent / "build" / "grader-cache"


def pytest_configure(config):
    os.environ.setdefault("GRADER_BUILD_CACHE", str(TEST_BUILD_CACHE))
    config.addinivalue_line("markers", "gpu: needs a CUDA device; skipped without one")
    config.addinivalue_line("markers", "slow: builds with nvcc or g++, sandboxes with bubblewrap, starts Slurm, a "
                                       "browser or a GPU; left out by make check-fast (set in conftest.py)")


WEIGHTS = Path(__file__).resolve().parent / ".ci" / "test-weights"


def file_weights() -> tuple[dict[str, float], set[str]]:
    """Each test file's measured seconds (.ci/test-weights), by its path from the top of the tree, and the files
    marked `waits` there."""
    try:
        lines = WEIGHTS.read_text().splitlines()
    except OSError:
        return {}, set()
    weights, waits = {}, set()
    for line in lines:
        fields = line.split()
        if not line.startswith("#") and len(fields) >= 2:
            weights[fields[1]] = float(fields[0])
            if "waits" in fields[2:]:
                waits.add(fields[1])
    return weights, waits


def file_order(files: list[str], weights: dict[str, float], waits: set[str], workers: int) -> list[str]:
    """The order the workers take the files in: the longest first, but the files that mostly wait (`waits`) one
    worker at a time, beside the others' CPU work, from the start. Longest first alone leaves them for the last
    minutes, where three workers waiting on services use half the cores (docs/ci-time.md). Worked out by handing
    the files to `workers` simulated workers by their weights, as xdist's loadfile hands them out."""
    heavy = sorted((f for f in files if f not in waits), key=lambda f: -weights.get(f, 0.0))
    light = sorted((f for f in files if f in waits), key=lambda f: -weights.get(f, 0.0))
    if workers < 3 or not light:
        return sorted(files, key=lambda f: -weights.get(f, 0.0))
    free_at, waiting = [0.0] * workers, [False] * workers
    order = []
    while heavy or light:
        k = min(range(workers), key=lambda i: free_at[i])
        busy_waiting = any(waiting[i] and free_at[i] > free_at[k] for i in range(workers) if i != k)
        take_light = bool(light) and (not heavy or not busy_waiting)
        order.append((light if take_light else heavy).pop(0))
        free_at[k] += weights.get(order[-1], 0.0)
        waiting[k] = take_light
    return order


def pytest_collection_modifyitems(config, items):
    slow = pytest.mark.slow
    for item in items:
        if SLOW_FIXTURES.intersection(item.fixturenames) or SLOW_MARKERS.intersection(
                marker.name for marker in item.iter_markers()):
            item.add_marker(slow)
    # The files in file_order (a stable sort: a file's tests keep their order): with xdist's --dist loadfile
    # --no-loadscope-reorder, workers take whole files in this order, so neither tier ends on one long file.
    # Every worker collects in the same order (xdist checks): each sorts by the same worker count.
    weights, waits = file_weights()
    files = list(dict.fromkeys(item.nodeid.split("::", 1)[0] for item in items))
    rank = {f: i for i, f in enumerate(file_order(files, weights, waits,
                                                  int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))))}
    items.sort(key=lambda item: rank[item.nodeid.split("::", 1)[0]])
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason=f"GPU test skipped: {GPU_DESCRIPTION}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With TEST_CPU_LOG=FILE each test appends "CPU_SECONDS WALL_SECONDS END_TIME WORKER NODEID" (its process and
    the children it waited for, fixtures included; END_TIME in seconds since the epoch): .ci/cpu.py sums them by
    file and by minute. Not what sandboxed processes ran (bubblewrap's PID namespace reaps them outside this
    tree): .ci/run's /proc/stat samples give the machine's whole CPU beside it."""
    log = os.environ.get("TEST_CPU_LOG")
    if not log:
        yield
        return
    import resource
    import time

    def cpu() -> float:
        return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                      resource.getrusage(resource.RUSAGE_CHILDREN)))
    start_cpu, start = cpu(), time.monotonic()
    yield
    with open(log, "a") as out:
        out.write(f"{cpu() - start_cpu:.2f} {time.monotonic() - start:.2f} {time.time():.1f} "
                  f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')} {item.nodeid}\n")


def pytest_terminal_summary(terminalreporter):
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if "gpu" in r.keywords]
    if skipped:
        terminalreporter.section(f"{len(skipped)} GPU tests skipped: {GPU_DESCRIPTION}")
        for report in skipped:
            terminalreporter.line(f"  {report.nodeid}")
    corpus = sys.modules.get("grader.tests.gpu_corpus")  # imported only where a graded corpus was asked for
    if corpus is not None and corpus.TIMES:
        # The GPU suite's graded corpus, and the hostile batch on the CPU backend (test_hostile_batch.py)
        terminalreporter.section("graded corpus runs (grader/tests/gpu_corpus.py's grade)")
        for line in corpus.TIMES:
            terminalreporter.line(f"  {line}")


# The grader's build tree, begun at the session's start where the graded corpus will be asked for: the pristine
# harness, the solution and the gate's objects are built on the CPU while the tests before the corpus run
# (about 45 s of the corpus's first grading run on an H100, otherwise). {"folder", "thread", "error"}
EARLY_WORK: dict = {}


def _build_early(folder: Path) -> None:
    try:  # what a Slurm batch's cache holds, in folder/work: `grade --work folder/work` finds it built
        from grader.backends.gpu import GpuKind
        from grader.core.rubric import DEFAULT_RUBRIC
        GpuKind().build_cache(folder, None, os.cpu_count() or 2, DEFAULT_RUBRIC)
    except Exception as e:  # noqa: BLE001  (reported by gpu_work, in the test that asks for it)
        EARLY_WORK["error"] = e


def pytest_collection_finish(session):
    if not HAS_GPU or os.environ.get("GPU_SUITE_CACHE"):
        return
    if any("gpu_work" in getattr(item, "fixturenames", ()) for item in session.items):
        folder = Path(tempfile.mkdtemp(prefix="grader-work-"))
        thread = threading.Thread(target=_build_early, args=(folder,), daemon=True)
        EARLY_WORK.update(folder=folder, thread=thread, error=None)
        thread.start()


def pytest_sessionfinish(session):
    if EARLY_WORK:
        EARLY_WORK["thread"].join()
        shutil.rmtree(EARLY_WORK["folder"], ignore_errors=True)


@pytest.fixture(scope="session")
def gpu_work(tmp_path_factory):
    """The grader's build tree for every grading run of a session (the graded corpus, Gradescope and
    Autolab): the pristine harness, the solution and the build gate's reference objects are built once, not
    once per run. With GPU_SUITE_CACHE=DIR it is DIR/<key>/, named by the content hash of what it is built
    from (grader/backends/build_cache.py's key: the harness's sources, the solution, the architecture, the toolchain):
    a later session with the same sources grades against it (make rebuilds only what is older than its
    sources); any change of them makes a new one."""
    cache = os.environ.get("GPU_SUITE_CACHE")
    if EARLY_WORK:
        EARLY_WORK["thread"].join()
        if EARLY_WORK["error"] is not None:
            raise EARLY_WORK["error"]
        return EARLY_WORK["folder"] / "work"
    if not cache:
        return tmp_path_factory.mktemp("grader-work")
    from grader.backends.gpu import GpuKind
    from grader.backends.build_cache import key_inputs, key_of
    kind = GpuKind()
    folder = Path(cache).resolve() / key_of(key_inputs(kind, kind.arch(None)))[:20]
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def fast_rubric(tmp_path_factory):
    """The GPU suite's fast rubric (grader/tests/gpu_corpus.py says what it changes, and why)."""
    from grader.tests.gpu_corpus import write_fast_rubric
    return write_fast_rubric(tmp_path_factory.mktemp("fast-rubric"))


@pytest.fixture(scope="session")
def graded_corpus(tmp_path_factory, gpu_work, fast_rubric):
    """Every submission the GPU tests of solution/tests and grader/tests ask about, graded once per session
    (grader/tests/gpu_corpus.py); the tests query its stores."""
    from grader.tests.gpu_corpus import grade_corpus
    return grade_corpus(tmp_path_factory.mktemp("graded-corpus"), gpu_work, fast_rubric)


def pytest_report_header(config):
    return f"GPU: {GPU_DESCRIPTION}"
