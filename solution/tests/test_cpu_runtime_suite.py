"""The CPU runtime's own tests in `make check`: starter/cpu/tests/run_tests.py (doctest over the runtime, the
textbook kernels and the planted bugs, then the driver's tests), as one slow item, so that a worker of the slow
tier runs it beside the other files (`make check-cpu-runtime` runs it alone, with doctest's options)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # about three minutes on two cores: it compiles the runtime and every test kernel

REPO = Path(__file__).resolve().parents[2]


def test_the_cpu_runtime_passes_its_own_tests():
    done = subprocess.run([sys.executable, str(REPO / "starter" / "cpu" / "tests" / "run_tests.py")], cwd=REPO,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, f"run_tests.py exited {done.returncode}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
