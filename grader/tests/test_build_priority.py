"""A submission's build runs below the code being graded on the host's cores (issue 43: the service's build stage
builds the next jobs while a job's cases and tools run)."""
from __future__ import annotations

import os
import subprocess
from types import SimpleNamespace

from grader.backends import local


def test_a_submissions_build_runs_niced_below_the_graded_code(tmp_path, monkeypatch):
    seen = {}

    def recorded(sandbox, command, **kwargs):
        seen["command"] = command
        return SimpleNamespace(stdout="", status=0, timed_out=False)
    monkeypatch.setattr(local, "run", recorded)
    workspace = local.Workspace(tmp_path / "work", cpu=True)
    workspace._sandboxed_make("objects", workspace.view(tmp_path / "kernels", tmp_path / "out"), 10)
    command = seen["command"]
    assert command[:3] == ["nice", "-n", str(local.BUILD_NICENESS)] and command[3] == "make", command
    # what that prefix does to the compilers make starts: they inherit it
    inherited = subprocess.run([*command[:3], "sh", "-c", "sh -c 'ps -o nice= -p $$'"], capture_output=True,
                               text=True, check=True).stdout.strip()
    assert int(inherited) == os.nice(0) + local.BUILD_NICENESS
