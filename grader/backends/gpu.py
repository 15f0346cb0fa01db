"""This machine's NVIDIA GPUs as a grading backend (`--device gpu`): nvcc builds in the sandbox and `harness --serve`
on each GPU, through LocalBackend (local.py); the kind says which GPUs there are, what architecture to build for,
and what the shared build cache records of the toolchain. The chooser is grader/backends/__init__.py's `get`."""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

from grader.backends.base import Kind
from grader.backends.local import LocalBackend, Workspace
from grader.core.errors import GraderError
from grader.core.registry import Registry
from grader.core.rubric import load_rubric
from grader.run import ncu


def gpu_list(spec: str) -> list[str]:
    """--gpus all|0,1,...: the CUDA device indices to run one worker on each. 'all' is what this process may use:
    CUDA_VISIBLE_DEVICES when set (Slurm sets it to a job's GPUs), else every GPU nvidia-smi lists."""
    if spec != "all":
        ids = [s.strip() for s in spec.split(",") if s.strip()]
        if not ids or not all(i.isdigit() for i in ids):
            raise GraderError(f"--gpus must be 'all' or a comma-separated list of GPU indices, not '{spec}'")
        return ids
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        ids = [s.strip() for s in visible.split(",") if s.strip()]
    else:
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True,
                                 text=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        ids = out.split()
    if not ids:
        raise GraderError("no GPU found: timing the kernels needs a machine with an NVIDIA GPU; without one, "
                          "--device cpu grades correctness on the CPU backend (--device auto picks by itself)")
    return ids


def _bus_id(text: str) -> tuple[int, str] | None:
    """A PCI bus id as CUDA ("0000:00:06.0") and nvidia-smi ("00000000:00:06.0") write it, made comparable."""
    parts = str(text).strip().lower().split(":")
    if len(parts) != 3:
        return None
    try:
        return int(parts[0], 16), ":".join(parts[1:])
    except ValueError:
        return None


def gpu_identity(device: dict) -> dict:
    """The host, and the UUID and NVIDIA driver of the GPU the harness described (matched by PCI bus id in
    nvidia-smi's list: CUDA's index and nvidia-smi's need not agree under CUDA_VISIBLE_DEVICES)."""
    found = {"host": socket.gethostname(), "uuid": None, "nvidia_driver": None}
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=pci.bus_id,uuid,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return {**found, "identity_error": f"nvidia-smi did not run ({e})"}
    wanted = _bus_id(device.get("pci_bus_id", ""))
    for line in out.stdout.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == 3 and wanted is not None and _bus_id(fields[0]) == wanted:
            return {**found, "uuid": fields[1], "nvidia_driver": fields[2]}
    return {**found, "identity_error": f"nvidia-smi lists no GPU at PCI bus id {device.get('pci_bus_id')!r}"}


class GpuBackend(LocalBackend):
    """build.LocalBackend that also says which GPU it ran on (use_cache: it grades against a shared cache entry)."""

    tools_at_once = True

    def identify(self, gpu: str | None, device: dict) -> dict:
        return {"backend": "gpu", **gpu_identity(device)}


class GpuKind(Kind):
    name = "gpu"
    sandboxed = True
    uses_gpus = True  # a Slurm array task asks for one (--gres)

    def devices(self, spec: str) -> list[str]:
        return gpu_list(spec)

    def profiler(self) -> str:
        return "" if ncu.find_ncu() else "Nsight Compute (ncu) is not installed on the grading machine"

    def arch(self, given: str | None) -> str:
        """--arch, else this machine's first GPU's: a build for the cluster's GPUs cannot guess theirs."""
        if given:
            if not re.fullmatch(r"sm_[0-9]+[a-z]?", given):
                raise GraderError(f"--arch must name a GPU architecture such as sm_90, not '{given}'")
            return given
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=60).stdout.split()
        except (OSError, subprocess.SubprocessError):
            out = []
        if not out or not re.fullmatch(r"[0-9]+\.[0-9]+", out[0]):
            raise GraderError("this machine has no GPU to tell the architecture to build for: pass --arch, the "
                              "grading GPUs' (e.g. sm_90 for an H100)")
        return "sm_" + out[0].replace(".", "")

    def toolchain(self) -> dict:
        """nvcc's and the host compiler's versions, and the header libraries' folder: what a build depends on
        besides the sources."""
        def first_lines(cmd: list[str]) -> str:
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            except (OSError, subprocess.SubprocessError) as e:
                raise GraderError(f"{cmd[0]} cannot run here ({e}): the build needs the CUDA toolkit and a C++ "
                                  "compiler") from None
            return done.stdout.strip()
        nvcc = shutil.which("nvcc")
        if nvcc is None:
            raise GraderError("nvcc is not on PATH: building the harness needs the CUDA toolkit")
        return {"nvcc": str(Path(nvcc).resolve()), "nvcc_version": first_lines(["nvcc", "--version"]),
                "cxx": first_lines(["c++", "--version"]).splitlines()[0] if shutil.which("c++") else "",
                "deps_include": os.environ.get("DEPS_INCLUDE", "")}

    def build_cache(self, folder: Path, arch: str | None, jobs: int, rubric: Path) -> dict:
        """The pristine harness, its library, the solution and the build gate's reference objects, built once
        (trusted code: no sandbox), readable by the sandbox's own user."""
        old = os.umask(0o022)
        try:
            ws = Workspace(Path(folder) / "work", arch)
            registry = Registry.from_harness(ws.prepare(jobs))
            ws.gate(load_rubric(rubric, registry).gate)
        finally:
            os.umask(old)
        return {"registry": registry.raw, "harness_version": registry.harness_version, "arch": ws.arch}

    def open(self, folder: Path, cached: dict, work: Path, sandbox, arch: str | None):
        backend = GpuBackend(work, cached.get("arch") or arch, sandbox)
        return backend, backend.use_cache(folder, cached)


def gpu_missing() -> str:
    """Why this machine cannot grade on a GPU ("" when it can): `make test`'s rule (starter/Makefile), except that a
    GPU must be listed by nvidia-smi, through which the grader finds its GPUs and their architecture."""
    if shutil.which("nvcc") is None:
        return "nvcc, the CUDA compiler, is not installed"
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return "this machine has no NVIDIA GPU (no nvidia-smi)"
    return "" if any(line.startswith("GPU ") for line in listed.splitlines()) else "nvidia-smi lists no GPU"
