"""Which kernels racecheck leaves out (Workspace.harness_only_kernels), on real nvcc builds and cuobjdump (no GPU):
the harness library's own, and never a name a task file defines too."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from grader.backends.local import Workspace
from grader.gate.objects import find_cuobjdump, kernel_entries

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not shutil.which("nvcc") or not find_cuobjdump(), reason="needs nvcc and cuobjdump")]

# The harness's kernels have internal linkage, as the real harness's do (an anonymous namespace there): one here is
# `static` in a named namespace, a name a task file can repeat (nvcc refuses a namespace spelled as an anonymous one).
LIBRARY = """
namespace harness { static __global__ void reference_kernel(int* p) { p[0] = 1; } }
namespace { __global__ void compare_kernel(int* p) { p[0] = 2; } }
void harness_launch(int* p) { harness::reference_kernel<<<1, 1>>>(p); compare_kernel<<<1, 1>>>(p); }
"""

TASK = """
__global__ void student_kernel(int* p) {{ p[0] = 3; }}
{same}
void harness_launch(int* p);
int main() {{ harness_launch(nullptr); student_kernel<<<1, 1>>>(nullptr); {launch} return 0; }}
"""


def nvcc(*args: str, cwd: Path):
    done = subprocess.run(["nvcc", "-arch=sm_90", *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


def test_the_harness_kernels_are_left_out_and_a_task_files_namesake_is_not(tmp_path):
    """A program linked from the library and a task file: the library's two kernels are left out. Then a task file
    that defines a kernel of the very same mangled name as one of them: that name is now checked (it is in the
    program twice), the other still left out."""
    workspace = Workspace(tmp_path / "work")
    lib = workspace.build_dir / "lib"
    lib.mkdir(parents=True)
    (tmp_path / "library.cu").write_text(LIBRARY)
    nvcc("-c", "library.cu", "-o", "library.o", cwd=tmp_path)
    subprocess.run(["ar", "rcs", str(lib / "libharness.a"), str(tmp_path / "library.o")], check=True)
    found = find_cuobjdump()
    own = sorted(kernel_entries(lib / "libharness.a", found))
    assert len(own) == 2 and all("reference_kernel" in n or "compare_kernel" in n for n in own), own

    (tmp_path / "plain.cu").write_text(TASK.format(same="", launch=""))
    nvcc("plain.cu", str(lib / "libharness.a"), "-o", "plain", cwd=tmp_path)
    assert workspace.harness_only_kernels(tmp_path / "plain") == tuple(own)

    reference = next(n for n in own if "reference_kernel" in n)
    namesake = "namespace harness { __global__ void reference_kernel(int* p) { p[0] = 4; } }"
    (tmp_path / "namesake.cu").write_text(TASK.format(same=namesake,
                                                     launch="harness::reference_kernel<<<1, 1>>>(nullptr);"))
    nvcc("namesake.cu", str(lib / "libharness.a"), "-o", "namesake", cwd=tmp_path)
    assert kernel_entries(tmp_path / "namesake", found)[reference] == 2  # the task file's kernel has the same name
    assert workspace.harness_only_kernels(tmp_path / "namesake") == tuple(n for n in own if n != reference)


def test_nothing_is_left_out_where_the_program_cannot_be_read(tmp_path):
    workspace = Workspace(tmp_path / "work")
    (tmp_path / "not-a-program").write_bytes(b"\x7fELF not really")
    assert workspace.harness_only_kernels(tmp_path / "not-a-program") == ()
    assert Workspace(tmp_path / "cpu", cpu=True).harness_only_kernels(tmp_path / "not-a-program") == ()
