"""A task file cannot replace code the harness runs (no GPU needed). A task file that carries its
own body for a template instance the harness's timer also uses (an inline explicit specialization
of std::vector<double>::_M_realloc_insert, which grows the list of timed samples) is linked, but
the harness comes first in the link, so the linker keeps the harness's copy and drops the task
file's: the linker's map says so."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conftest import STARTER

pytestmark = pytest.mark.slow  # links a task file into the harness (make, nvcc)

SYMBOL = "_ZNSt6vectorIdSaIdEE17_M_realloc_insertIJdEEEvN9__gnu_cxx17__normal_iteratorIPdS1_EEDpOT_"
ATTACK = r"""
#include <vector>
#include "cuda_check.h"
#include "tasks.h"

// A different body for a member the harness's timer instantiates: every sample it stores is 0.
template <>
template <>
__attribute__((noinline, used)) inline void std::vector<double>::_M_realloc_insert<double>(iterator, double&&) {
    double* p = new double[64]();
    this->_M_impl._M_start = p;
    this->_M_impl._M_finish = p + 1;
    this->_M_impl._M_end_of_storage = p + 64;
}

void dot(const float*, const float*, float*, int n) {
    std::vector<double> v;
    v.push_back(static_cast<double>(n));  // odr-uses the specialization, so it is emitted
}
"""


def test_the_harness_keeps_its_own_copy_of_a_template_instance_a_task_file_redefines(tmp_path):
    kernels = tmp_path / "kernels"
    shutil.copytree(STARTER / "kernels", kernels)
    (kernels / "dot.cu").write_text(ATTACK)
    tag = "link-order-probe"
    shutil.rmtree(STARTER / "build" / tag, ignore_errors=True)
    link_map = tmp_path / "harness.map"
    ldlibs = f"-lcublas -Xlinker -rpath,/usr/local/cuda/lib64 -Xlinker -Map={link_map}"
    made = subprocess.run(["make", "-C", str(STARTER), "-j2", "harness", f"KERNELS={kernels}", f"KTAG={tag}",
                           f"LDLIBS={ldlibs}"], capture_output=True, text=True)
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    dot_object = STARTER / "build" / tag / "kernels" / "dot.o"
    symbols = subprocess.run(["nm", str(dot_object)], capture_output=True, text=True, check=True).stdout
    assert re.search(rf"^[0-9a-f]+ W {SYMBOL}$", symbols, re.M), "the attack's object must define the instance"
    text = link_map.read_text()
    discarded, kept = text.split("Memory Configuration", 1)[0], text.split("Linker script and memory map", 1)[1]
    section = f".text.{SYMBOL}"
    # Where the kept copy comes from: the input section line is followed by its address and object.
    kept_from = re.search(rf"{re.escape(section)}\s+0x[0-9a-f]+\s+0x[0-9a-f]+\s+(\S+)", kept)
    assert kept_from and "libharness.a(timing.cu.o)" in kept_from.group(1), kept_from and kept_from.group(0)
    dropped = re.search(rf"{re.escape(section)}\s+0x[0-9a-f]+\s+0x[0-9a-f]+\s+(\S+)", discarded)
    assert dropped and dropped.group(1).endswith("kernels/dot.o"), "the task file's copy must be the one dropped"
    shutil.rmtree(STARTER / "build" / tag, ignore_errors=True)
