"""make gradescope's zip, unpacked as Gradescope unpacks it (into /autograder/source), and its setup.sh run."""
from __future__ import annotations

import os
import subprocess
import zipfile

import pytest

from grader.tests.conftest import REPO

STUB = """#!/usr/bin/env bash
# A stand-in for {name}: records how it was called and from where, and does nothing else.
echo "{name} $* (in $PWD)" >> "$STUB_LOG"
"""
PYTHON_STUB = """#!/usr/bin/env bash
# python3 -m pip is recorded and checked (the requirements file must be really there); anything else runs.
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then
  echo "pip ${*:3} (in $PWD)" >> "$STUB_LOG"
  for ((i = 1; i <= $#; i++)); do
    if [ "${!i}" = "-r" ]; then j=$((i + 1)); [ -f "${!j}" ] || { echo "no such file: ${!j}" >&2; exit 1; }; fi
  done
  exit 0
fi
exec "$REAL_PYTHON3" "$@"
"""


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory):
    """The zip built by the Makefile's recipe, unpacked into a stand-in for /autograder/source."""
    tmp = tmp_path_factory.mktemp("gradescope")
    built = subprocess.run([str(REPO / "grader" / "gradescope" / "make_zip.sh"), str(tmp / "autograder.zip")],
                           capture_output=True, text=True, cwd=REPO)
    assert built.returncode == 0, built.stderr
    source = tmp / "autograder" / "source"
    with zipfile.ZipFile(tmp / "autograder.zip") as z:
        names = z.namelist()
        z.extractall(source)
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in z.infolist()}
    for name, mode in modes.items():  # zipfile drops the modes; Gradescope's unzip keeps them
        if mode:
            os.chmod(source / name, mode)
    return tmp, source, names


def run_setup(tmp, source, path_first=None):
    stubs = tmp / "stubs"
    stubs.mkdir(exist_ok=True)
    for name in ("apt-get", "nvcc"):
        (stubs / name).write_text(STUB.format(name=name))
        (stubs / name).chmod(0o755)
    (stubs / "python3").write_text(PYTHON_STUB)
    (stubs / "python3").chmod(0o755)
    log = tmp / "calls.log"
    log.write_text("")
    real = subprocess.run(["bash", "-c", "command -v python3"], capture_output=True, text=True).stdout.strip()
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "STUB_LOG": str(log),
           "AUTOGRADER_SOURCE": str(source), "REAL_PYTHON3": real}
    done = subprocess.run(["bash", str(source / "setup.sh")], capture_output=True, text=True, env=env, cwd=tmp)
    return done, log.read_text()


def test_the_zip_root_holds_setup_sh_run_autograder_and_the_repository(unpacked):
    _, source, names = unpacked
    assert "setup.sh" in names and "run_autograder" in names
    for path in ("grader/requirements.txt", "grader/__main__.py", "starter/Makefile", "Makefile"):
        assert (source / path).is_file(), path
    assert not (source / "source").exists()  # no folder around the tree (it once landed in source/source/)
    assert os.access(source / "setup.sh", os.X_OK) and os.access(source / "run_autograder", os.X_OK)


def test_setup_sh_installs_the_requirements_from_where_gradescope_unpacked_them(unpacked):
    tmp, source, _ = unpacked
    done, calls = run_setup(tmp, source)
    assert done.returncode == 0, done.stderr
    assert f"pip install -q -r grader/requirements.txt (in {source})" in calls
    assert "apt-get install" in calls and "bubblewrap" in calls


def test_setup_sh_stops_with_the_missing_path_named_when_the_tree_is_not_at_the_root(unpacked, tmp_path):
    tmp, source, _ = unpacked
    nested = tmp_path / "autograder" / "source"
    (nested / "source").mkdir(parents=True)  # the old layout: the tree one folder too deep
    (nested / "setup.sh").write_bytes((source / "setup.sh").read_bytes())
    done, calls = run_setup(tmp_path, nested)
    assert done.returncode == 1 and calls == ""
    assert f"{nested}/grader/requirements.txt is missing: the zip's root must hold the repository" in done.stderr


def test_the_zip_holds_pyyaml_in_its_requirements_for_gradescope_exports(unpacked):
    _, source, _ = unpacked
    assert "PyYAML" in (source / "grader" / "requirements.txt").read_text()
