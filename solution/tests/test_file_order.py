"""The order the test workers take the files in (conftest.file_order): the longest first, and the files that mostly
wait beside the CPU work, one worker at a time, not left for the end."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from conftest import ROOT

_spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
root_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(root_conftest)
file_order = root_conftest.file_order

WEIGHTS = {"big": 500, "mid": 300, "small": 100, "tiny": 10, "svc_a": 120, "svc_b": 60, "svc_c": 50}
WAITS = {"svc_a", "svc_b", "svc_c"}


def test_without_waiting_files_or_on_two_workers_the_longest_go_first():
    files = ["tiny", "big", "small", "mid"]
    assert file_order(files, WEIGHTS, set(), 3) == ["big", "mid", "small", "tiny"]
    assert file_order(files + ["svc_a"], WEIGHTS, WAITS, 2) == ["big", "mid", "svc_a", "small", "tiny"]


def test_the_waiting_files_take_one_worker_from_the_start_and_the_others_the_longest_first():
    order = file_order(list(WEIGHTS), WEIGHTS, WAITS, 3)
    # at the start: one waiting file and the two longest; the waiting files follow one another on their worker
    # (120 + 60 + 50 s) while the two longest run, then the rest, longest first
    assert order == ["svc_a", "big", "mid", "svc_b", "svc_c", "small", "tiny"]


def test_a_file_missing_from_the_weights_runs_last_and_every_file_runs_once():
    files = ["new_file", *WEIGHTS]
    order = file_order(files, WEIGHTS, WAITS, 3)
    assert sorted(order) == sorted(files) and order[-1] == "new_file"


def test_the_weights_file_parses_and_marks_only_files_it_weighs():
    weights, waits = root_conftest.file_weights()
    assert weights and waits <= set(weights)
    assert all(Path(ROOT / f).exists() for f in waits), waits
