"""Which errors are the grading machine's faults, not a submission's or the grader's (grader/store/faults.py): the
service gives a job back uncounted for these and only these, and refuses uploads with a line naming the cause."""
from __future__ import annotations

import errno
import sqlite3

import pytest

from grader.store.faults import MachineFault, fault_of, refusal, results_fault, words_fault
from grader.store.store import StoreError


@pytest.mark.parametrize("error, cause", [
    (OSError(errno.ENOSPC, "No space left on device"), "disk is full"),
    (OSError(errno.EDQUOT, "Disk quota exceeded"), "disk is full"),
    (OSError(errno.EROFS, "Read-only file system"), "results folder is read-only"),
    (sqlite3.OperationalError("database or disk is full"), "disk is full"),
    (sqlite3.OperationalError("attempt to write a readonly database"), "results folder is read-only"),
    (sqlite3.OperationalError("database is locked"), "grades store is locked by another program"),
    (StoreError("results/grades.sqlite: not a usable grades store (unable to open database file)"),
     "grades store cannot be opened or read"),
    (MachineFault("disk is full (3 MiB free of the 16 MiB grading needs)"), "disk is full (3 MiB free of the 16 MiB grading needs)"),
])
def test_the_machine_s_faults_are_named(error, cause):
    assert fault_of(error) == cause


def test_a_fault_behind_another_error_is_found():
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as inner:
            raise RuntimeError("writing the progress failed") from inner
    except RuntimeError as outer:
        assert fault_of(outer) == "disk is full"


@pytest.mark.parametrize("error", [ValueError("No space left on device"), KeyError("x"), RuntimeError("boom"),
                                   OSError(errno.ENOENT, "No such file"), sqlite3.IntegrityError("UNIQUE failed")])
def test_other_errors_are_not_the_machine_s(error):
    assert fault_of(error) == ""  # (a ValueError's words are a program's, not the disk's)


def test_a_compiler_s_words_for_a_full_disk_are_read():
    assert words_fault("kernels/add.cu: fatal error: error writing to /tmp/cc.s: No space left on device") == "disk is full"
    assert words_fault("add.cu(3): error: expected a ';'") == ""


def test_a_writable_folder_has_no_fault_and_a_too_demanding_one_is_full(tmp_path):
    assert results_fault(tmp_path) == ""
    assert results_fault(tmp_path, min_free=2**62).startswith("disk is full (")
    assert list(tmp_path.iterdir()) == []  # the write probe leaves nothing behind


def test_refusals_name_the_cause_for_the_student_in_one_line():
    assert refusal("disk is full (0 MiB free of the 16 MiB grading needs)") == (
        507, "the grading machine's disk is full, so no upload can be kept now; the course staff can see it")
    status, line = refusal("results folder is read-only")
    assert status == 503 and line.startswith("the grading machine's results folder is read-only,") and "\n" not in line
