"""For every test folder: tests that need a GPU carry the `gpu` marker and are
skipped, with the reason, on machines without one; CI runs everything else."""
from __future__ import annotations

import shutil
import subprocess

import pytest


def gpu_available() -> tuple[bool, str]:
    if shutil.which("nvidia-smi") is None:
        return False, "no CUDA device on this machine (nvidia-smi not found)"
    listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    if listed.returncode != 0 or "GPU" not in listed.stdout:
        return False, "no CUDA device on this machine (nvidia-smi lists no GPU)"
    return True, listed.stdout.strip().splitlines()[0]


HAS_GPU, GPU_DESCRIPTION = gpu_available()


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device; skipped without one")


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason=f"GPU test skipped: {GPU_DESCRIPTION}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter):
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if "gpu" in r.keywords]
    if skipped:
        terminalreporter.section(f"{len(skipped)} GPU tests skipped: {GPU_DESCRIPTION}")
        for report in skipped:
            terminalreporter.line(f"  {report.nodeid}")


@pytest.fixture(scope="session")
def gpu_work(tmp_path_factory):
    """The grader's build tree for every grading run of a session (solution/tests/class_run.py, the
    hostile corpus, Gradescope and Autolab): the pristine harness, the solution and the build gate's
    reference objects are built once, not once per run."""
    return tmp_path_factory.mktemp("grader-work")


def pytest_report_header(config):
    return f"GPU: {GPU_DESCRIPTION}"
