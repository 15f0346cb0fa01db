"""The student build: one object per kernel file, so editing one task rebuilds one file."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from conftest import STARTER, make_starter

pytestmark = pytest.mark.slow  # builds the starter with make and nvcc


def test_editing_one_kernel_rebuilds_only_that_object(tmp_path):
    kernels = tmp_path / "kernels"
    shutil.copytree(STARTER / "kernels", kernels)
    args = [f"KERNELS={kernels}", "KTAG=rebuild_probe"]
    shutil.rmtree(STARTER / "build" / "rebuild_probe", ignore_errors=True)  # no dependency files of an earlier run
    make_starter("harness", *args)
    edited = kernels / "transpose.cu"
    os.utime(edited)  # now: newer than every object just built
    dry_run = subprocess.run(["make", "-C", str(STARTER), "-n", "harness", *args], capture_output=True, text=True)
    compiles = [line for line in dry_run.stdout.splitlines() if " -c " in line and not line.startswith("echo")]
    assert len(compiles) == 1 and "transpose.cu" in compiles[0], dry_run.stdout + dry_run.stderr
    shutil.rmtree(STARTER / "build" / "rebuild_probe")


def test_a_compile_error_names_the_students_file_and_line_and_the_build_goes_on(tmp_path):
    kernels = tmp_path / "kernels"
    shutil.copytree(STARTER / "kernels", kernels)
    (kernels / "dot.cu").write_text((kernels / "dot.cu").read_text().replace("NOT_IMPLEMENTED_YET();", "oops;"))
    shutil.rmtree(STARTER / "build" / "error_probe", ignore_errors=True)  # no dependency files of an earlier run
    result = subprocess.run(["make", "-C", str(STARTER), "harness", f"KERNELS={kernels}", "KTAG=error_probe"],
                            capture_output=True, text=True)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out  # one broken file costs its own task, not the build
    assert f"{kernels}/dot.cu(" in out
    assert "dot.cu does not compile (the compiler's messages are above): its task fails, the others still run" in out
    assert (STARTER / "build" / "error_probe" / "harness").exists()
    shutil.rmtree(STARTER / "build" / "error_probe", ignore_errors=True)
