"""prepare_cgroup_v2: what a cgroup v2 tree without systemd needs before slurmd's cgroup plugin can start
(grader/tests/slurm_cluster.py). The kernel's files are stood in for by plain files in a folder: the test checks
which files the function writes and what, not the kernel's answer."""
from __future__ import annotations

import shutil

import pytest

from grader.tests.slurm_cluster import LEAF, ClusterUnavailable, prepare_cgroup_v2


def fake_root(tmp_path, controllers="cpuset cpu io memory pids", procs=""):
    (tmp_path / "cgroup.controllers").write_text(controllers + "\n")
    (tmp_path / "cgroup.procs").write_text(procs)
    (tmp_path / "cgroup.subtree_control").write_text("")
    return tmp_path


def test_a_tree_without_system_slice_gets_the_slice_and_every_controller_enabled_for_it(tmp_path):
    root = fake_root(tmp_path)
    said = prepare_cgroup_v2(root)
    assert (root / "system.slice").is_dir()
    assert not (root / LEAF).exists()  # the machine's own root (no cgroup.type) may hold processes
    assert (root / "cgroup.subtree_control").read_text() == "+cpuset +cpu +io +memory +pids"
    assert (root / "system.slice" / "cgroup.subtree_control").read_text() == "+cpuset +cpu +io +memory +pids"
    assert "cpuset, cpu, io, memory, pids" in said and "system.slice" in said


def test_a_namespace_root_that_holds_processes_gets_a_leaf_for_them(tmp_path):
    root = fake_root(tmp_path, procs="")
    (root / "cgroup.type").write_text("domain\n")
    assert "moved" not in prepare_cgroup_v2(root)  # none to move: no leaf
    shutil.rmtree(root / "system.slice")
    (root / "cgroup.procs").write_text("4242\n")
    said = prepare_cgroup_v2(root)  # a plain file keeps its pid: every round moves it again, five in all
    assert (root / LEAF / "cgroup.procs").read_text() == "4242" and "moved 5 processes" in said


def test_cgroup_v1_and_systemds_tree_are_left_alone(tmp_path):
    v1 = tmp_path / "v1"
    v1.mkdir()
    assert prepare_cgroup_v2(v1) == "" and list(v1.iterdir()) == []
    (tmp_path / "systemd").mkdir()
    systemd = fake_root(tmp_path / "systemd")
    (systemd / "system.slice").mkdir()
    (systemd / "system.slice" / "cgroup.procs").write_text("")
    assert prepare_cgroup_v2(systemd) == ""
    assert not (systemd / LEAF).exists() and (systemd / "cgroup.subtree_control").read_text() == ""


def test_a_refusal_names_the_file_in_one_line(tmp_path):
    root = fake_root(tmp_path)
    (root / "system.slice").write_text("a file where the folder must go")
    with pytest.raises(ClusterUnavailable) as e:
        prepare_cgroup_v2(root)
    assert "system.slice" in str(e.value) and "\n" not in str(e.value)
