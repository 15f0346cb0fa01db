"""Where the grader runs student code, chosen by name (`get`): one declared interface (base.py), a module per
implementation.

    gpu        this machine's NVIDIA GPUs (gpu.py): nvcc builds in the sandbox, `harness --serve` on the GPU
               (local.py's LocalBackend, which the CPU backend shares)
    cpu        correctness only, on a machine without a GPU (cpu.py): the same workspace and sandbox build every
               file with the CPU backend (starter/cpu/: cudacpu.py and g++, make CPU=1), one `harness --serve` worker runs
               the correctness cases with each launch's blocks spread over the cores; nothing is timed (the
               reports say "not timed on this run"), the backend's own checks run in compute-sanitizer's place
               (AddressSanitizer; the race checker, which also sees races between blocks), a task file the CPU
               cannot run (inline PTX, ...) is that task's "needs a GPU" verdict, and the build gate judges its
               objects as it judges nvcc's (grader/gate/build_gate.py's Target.cpu)
    simulated  for the grader's own tests only (grader/tests/fakes.py): nothing is built and no student
               code runs; refused unless the environment has GRADER_TEST_BACKENDS=1, which only the tests set

Each kind is a grader/backends/base.py Kind, each backend it returns a Backend: the abilities below are declared there.
`grade`, the service's workers and each array task of a Slurm batch (grader/slurm/) get their backend here, from
the name given to `--device`, and open it over the one build cache entry of its sources and toolchain. A kind says:

    sandboxed              whether it runs student code (then bubblewrap is required, as always)
    uses_gpus              whether a Slurm array task asks for a GPU (--gres); the CPU backend's do not
    devices(spec)          the devices to grade on ("all", or indices): one grading worker each
    arch(given)            the architecture a build cache is built for (given, else this machine's GPU's)
    toolchain()            what the shared build cache's key records about the compilers
    build_cache(entry, …)  the pristine harness and the solution built once, into a cache entry's folder,
                           for every grading run after (grader/backends/build_cache.py)
    open(entry, work, …)   a grading backend (grader/backends/base.py's Backend) that builds submissions in `work`
                           against a cache entry, building nothing else

Every backend a kind returns also has identify(gpu, device): "backend" (gpu or cpu), the host, and for a GPU its
UUID and NVIDIA driver, for the CPU its processor, cores and compiler, stored with each grading run beside the
harness's own description of its device (the harness's `hello` reply names the GPU, its PCI bus id and the CUDA
driver API version, but not the host, the UUID or the driver). Its `timed` says whether grading times cases,
stored with each grading run (grading_runs.timed, untimed_reason) for every reader.
"""
from __future__ import annotations

import os
import sys

from grader.backends.base import Kind
from grader.core.errors import GraderError

TEST_BACKENDS_ENV = "GRADER_TEST_BACKENDS"  # "1": the tests' simulated backend may be named (tests only)
DEFAULT_DEVICE = "gpu"


def get(name: str) -> Kind:
    """The backend kind called `name`; a one-line GraderError for a name that is unknown or not available here.
    `auto` (a Gradescope or Autolab runner, where one machine grades each submission as it comes): the GPU when
    this machine has one, else the CPU backend, correctness only, which every report then says."""
    from grader.backends import cpu, gpu  # (each kind's module on demand: a command that names none loads none)
    if name == "auto":
        why = gpu.gpu_missing()
        if not why:
            return gpu.GpuKind()
        print(f"--device auto: {why}: grading correctness only, on the CPU backend", file=sys.stderr)
        return cpu.CpuKind()
    if name == "gpu":
        return gpu.GpuKind()
    if name == "cpu":
        return cpu.CpuKind()
    if name == "simulated":
        if os.environ.get(TEST_BACKENDS_ENV) != "1":
            raise GraderError(f"--device simulated is the grader's own tests' stand-in (it builds nothing and runs "
                              f"no student code); it is available only with {TEST_BACKENDS_ENV}=1, which only the "
                              "tests set")
        from grader.tests.fakes import SimulatedKind  # the tests' own code, imported only when they ask for it
        return SimulatedKind()
    raise GraderError(f"--device {name}: no such backend (gpu: this machine's NVIDIA GPUs; cpu: correctness only, "
                      "on the CPU; auto: the GPU when there is one, else the CPU)")

