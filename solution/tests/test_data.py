"""data/: the generator reproduces every committed file, and the manifest covers the registry."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys

from conftest import DATA


def manifest() -> dict:
    return json.loads((DATA / "manifest.json").read_text())


def test_generate_py_reproduces_every_committed_file(starter_build):
    result = subprocess.run([sys.executable, str(DATA / "generate.py"), "--harness", str(starter_build.harness),
                             "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "match generate.py" in result.stdout


def test_generate_py_check_names_a_file_that_differs(starter_build, tmp_path):
    subprocess.run([sys.executable, str(DATA / "generate.py"), "--harness", str(starter_build.harness),
                    "--out", str(tmp_path)], check=True, capture_output=True)
    victim = tmp_path / "cases" / "dot" / "float32" / "37" / "x.npy"
    victim.write_bytes(victim.read_bytes()[:-4] + b"\0\0\0\0")
    result = subprocess.run([sys.executable, str(DATA / "generate.py"), "--harness", str(starter_build.harness),
                             "--out", str(tmp_path), "--check"], capture_output=True, text=True)
    assert result.returncode == 1
    assert f"{victim}: differs" in result.stderr


def test_manifest_checksums_match_the_files():
    for case in manifest()["cases"]:
        for name, digest in case["files"].items():
            path = DATA / case["dir"] / name
            assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, path


def test_manifest_covers_every_task_type_and_data_shape(registry):
    stored = {(c["task"], c["dtype"], c["shape"]) for c in manifest()["cases"]}
    wanted = {(t["id"], d, s) for t in registry["tasks"] for d in t["dtypes"] for s in t["shape_sets"]["data"]}
    assert stored == wanted

