"""solution/lab/: the experiments behind the shipped kernels still compile, and the sweep plans name
candidates the lab has. The timings themselves need a GPU (solution/lab/sweep.sh)."""
from __future__ import annotations

import re
import subprocess

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow  # compiles the lab's configurations (make, nvcc)

LAB = ROOT / "solution" / "lab"
SHIPPED = ROOT / "solution" / "kernels"


def test_every_lab_configuration_and_the_sweep_program_compile():
    """Every configuration in one nvcc run (all_configs.cu), and the sweep program in a second: it went
    uncompiled, and broken, for a day when the registry's shape sets were renamed."""
    result = subprocess.run(["make", "-C", str(LAB), "compile-check"], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    runs = [line for line in result.stdout.splitlines() if line.startswith("nvcc")]
    assert len(runs) == 2 and "all_configs.cu" in runs[0] and "sweep.cu" in runs[1]


def lab_candidates() -> set[str]:
    """The matmul_fast candidates the lab's sources define (what `sweep --list` prints, without building it)."""
    classes = (LAB / "matmul_fast" / "classes.cu").read_text()
    names = re.findall(r'tile_class<\w+>\("(\w+)"', (SHIPPED / "matmul_fast.cu").read_text() + classes)
    assert "for (int parts = 1; parts <= kMaxParts; ++parts)" in classes
    most = int(re.search(r"constexpr int kMaxParts = (\d+);", (SHIPPED / "matmul_fast.cu").read_text()).group(1))
    parts = range(1, most + 1)
    variants = re.findall(r"struct VariantConfig<(\d+)>", (LAB / "matmul_fast" / "v1_variants.cuh").read_text())
    return {"auto"} | {f"{n}/{p}" for n in names for p in parts} | {f"v{v}" for v in variants}


def test_the_sweep_plans_name_only_candidates_the_lab_has():
    known = lab_candidates()
    for plan in LAB.glob("**/*.plan"):
        for line in plan.read_text().splitlines():
            words = line.split("#")[0].split()
            if words and words[0] == "matmul_fast":
                assert set(words[2].split(",")) <= known, f"{plan.name}: {set(words[2].split(',')) - known}"


def test_the_shipped_files_hold_no_variant_switch():
    for name in ("matmul_fast.cu", "transpose.cu"):
        text = (SHIPPED / name).read_text()
        assert not re.search(r"VariantConfig|kVariants|_VARIANT\b", text), name
