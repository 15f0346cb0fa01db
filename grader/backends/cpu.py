"""Where the grader runs student code, chosen by name: one interface, several implementations.

    gpu        this machine's NVIDIA GPUs: nvcc builds in the sandbox, `harness --serve` on the GPU
               (grader/backends/local.py's LocalBackend)
    cpu        correctness only, on a machine without a GPU: the same workspace and sandbox build every file with
               the CPU backend (starter/cpu/: cudacpu.py and g++, make CPU=1), one `harness --serve` worker runs
               the correctness cases with each launch's blocks spread over the cores; nothing is timed (the
               reports say "not timed on this run"), the backend's own checks run in compute-sanitizer's place
               (AddressSanitizer; the race checker, which also sees races between blocks), a task file the CPU
               cannot run (inline PTX, ...) is that task's "needs a GPU" verdict, and the build gate judges its
               objects as it judges nvcc's (grader/gate/build_gate.py's Target.cpu)
    simulated  for the grader's own tests only (grader/tests/fakes.py): nothing is built and no student
               code runs; refused unless the environment has GRADER_TEST_BACKENDS=1, which only the tests set

Each kind is a grader/backends/base.py Kind, each backend it returns a Backend: the abilities below are declared there.
`grade` on one machine and each array task of a Slurm batch (grader/slurm/) get their backend here, from the
name given to `--device`. A kind says:

    sandboxed              whether it runs student code (then bubblewrap is required, as always)
    uses_gpus              whether a Slurm array task asks for a GPU (--gres); the CPU backend's do not
    devices(spec)          the devices to grade on ("all", or indices): one grading worker each
    arch(given)            the architecture a build cache is built for (given, else this machine's GPU's)
    toolchain()            what the shared build cache's key records about the compilers
    build_cache(entry, …)  the pristine harness and the solution built once, into a cache entry's folder,
                           for every array task of a class (grader/slurm/cache.py)
    open(entry, work, …)   a grading backend (grader/backends/base.py's Backend) that builds submissions in `work`
                           against a cache entry, building nothing else
    local(work, …)         a grading backend for one machine, with its own build of everything in `work`

Every backend a kind returns also has identify(gpu, device): "backend" (gpu or cpu), the host, and for a GPU its
UUID and NVIDIA driver, for the CPU its processor, cores and compiler, stored with each grading run beside the
harness's own description of its device (the harness's `hello` reply names the GPU, its PCI bus id and the CUDA
driver API version, but not the host, the UUID or the driver). Its `timed` says whether grading times cases,
stored with each grading run (grading_runs.timed, untimed_reason) for every reader.
"""
from __future__ import annotations

import os
import platform
import re
import shutil
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

from grader.run import ncu
from grader.run import sanitizer as tool_runs
from grader.backends.base import Backend, Kind
from grader.backends.local import LocalBackend, Workspace
from grader.core.errors import GraderError
from grader.core.registry import Registry
from grader.run import counters
from grader.run.sandbox import run as run_sandboxed
from grader.run.results import ProfileOutcome, SanitizerOutcome
from grader.run.runner import HarnessFailure, HarnessServer
from grader.core.rubric import load_rubric
from grader.core.status import NOT_TIMED_ON_CPU, CaseStatus, ProfileStatus, SanitizerStatus

TEST_BACKENDS_ENV = "GRADER_TEST_BACKENDS"  # "1": the tests' simulated backend may be named (tests only)
DEFAULT_DEVICE = "gpu"


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

    def local(self, work: Path, arch: str | None, sandbox, jobs: int):
        backend = GpuBackend(work, arch, sandbox)
        print(f"building the harness and the solution in {backend.workspace.work} ...", file=sys.stderr)
        return backend, backend.prepare(jobs)


def cpu_model() -> str:
    """This machine's processor, as /proc/cpuinfo names it (else the platform's word for it)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.split(":")[0].strip() in ("model name", "Model", "Hardware"):
                return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown processor"


def cpu_cores() -> int:
    """The processors this process may run on (what the CPU backend's workers spread a launch's blocks over)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def compiler_version(cxx: str = "") -> str:
    """The first line of the CPU backend's compiler's --version ($CXX, else g++, as cpu/cudacpu.py chooses)."""
    cxx = cxx or os.environ.get("CXX") or "g++"
    try:
        done = subprocess.run([*cxx.split(), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        raise GraderError(f"--device cpu: the compiler {cxx} cannot run here ({e}); the CPU backend builds with g++ "
                          "(or $CXX)") from None
    return (done.stdout.strip().splitlines() or [cxx])[0]


class CpuBackend(LocalBackend):
    """The CPU backend (starter/cpu/): the same build and `harness --serve` as the GPU's, with make CPU=1, in the
    same sandbox; correctness only: its harness times nothing, and its own checks stand in for compute-sanitizer."""

    timed = False
    untimed_reason = NOT_TIMED_ON_CPU
    checker = "cpu"
    device_words = "the CPU backend's runtime"
    HARNESS_SUFFIX = "+cpu"  # on its harness version: a submission graded here is graded again on a GPU

    def __init__(self, work: Path, isolation=None):
        super().__init__(work, None, isolation, cpu=True)

    @property
    def harness_version(self) -> str:
        return self.registry.harness_version + self.HARNESS_SUFFIX

    def identify(self, gpu: str | None, device: dict) -> dict:
        """What the run is stored with beside the harness's own description ("CPU backend (cudacpu), emulating
        an sm_90 GPU"): the host, its processor and cores, the compiler."""
        return {"backend": "cpu", "host": socket.gethostname(), "cpu": cpu_model(), "cores": cpu_cores(),
                "compiler": compiler_version()}

    # One worker, on no GPU: the label "cpu" is what the run records, never a CUDA_VISIBLE_DEVICES.
    def student_server(self, build, gpu: str | None):
        return super().student_server(build, None)

    def solution_server(self, gpu: str | None):
        return super().solution_server(None)

    def check_gpu(self, gpu: str | None):
        super().check_gpu(None)

    def gpu_profile(self, sub, build, task, dtype, shape, gpu, seed, timeout) -> None:
        return None  # no GPU here: this backend's own counters are `profile`'s

    # Each task's check alone: its runs start no CUDA context, so one run for all would save little, and the
    # race checker's harness is a build of its own.
    sanitize_tasks = Backend.sanitize_tasks

    def sanitize(self, sub, build, gpu, tool, task, dtype, shape, seed, timeout, shapes=None) -> SanitizerOutcome:
        """The CPU backend's own check in the tool's place, over the student's `harness --serve` in the sandbox,
        sent the requests a graded run of the task gets (as compute-sanitizer's run is): memcheck is the harness
        the submission was graded with (its task files carry AddressSanitizer), each array alone in an allocation
        of exactly its size; racecheck, the harness of its task files compiled with --racecheck, which also sees
        races between blocks. A finding is a case the backend stopped with its report."""
        start = time.monotonic()
        chosen = tool_runs.sanitized_shapes(list(shapes or [shape]), shape)
        outcome = SanitizerOutcome(task, tool, dtype, chosen[-1], SanitizerStatus.CLEAN, checker="cpu")
        harness, why = (build.harness, "") if tool == "memcheck" else self.workspace.race_harness(sub, timeout)
        if harness is None:
            outcome.status, outcome.message = SanitizerStatus.FAILED, why
            return outcome
        scratch = self.workspace.scratch / build.harness.parent.name / f"{tool}-{task}"
        shutil.rmtree(scratch, ignore_errors=True)
        server = HarnessServer(harness, None, sandbox=self.isolation, scratch=scratch)
        replies, said = [], ""
        deadline = start + timeout
        try:
            for message in tool_runs.requests(tool, task, dtype, chosen, seed):
                replies.append(server.request(message, max(1.0, deadline - time.monotonic())))
                if replies[-1].get("context_lost"):
                    break
        except HarnessFailure as failure:
            said = ("the check did not finish within its limit" if failure.kind == CaseStatus.TIMEOUT else str(failure))
            outcome.status = (SanitizerStatus.TIMEOUT if failure.kind == CaseStatus.TIMEOUT
                              else SanitizerStatus.FAILED)
        finally:
            server.close()
            shutil.rmtree(scratch, ignore_errors=True)
        outcome.seconds = time.monotonic() - start
        findings = tool_runs.cpu_findings(replies)
        if findings.errors:
            outcome.status, outcome.errors = SanitizerStatus.ERRORS, findings.errors
            outcome.report = self.workspace._readable(findings.report, self.workspace.kernel_dirs / sub.key)
        elif said:
            outcome.message = f"{said}: {server.stderr.strip()[-600:]}".rstrip(": ")
        return outcome

    def profile(self, sub, build, task, dtype, shape, seed, timeout) -> ProfileOutcome:
        """make profile's counters on the task's profile case: the --racecheck harness (the race checker's build,
        reused) answers one check request in the sandbox with counting on (CUDA_CPU_PROFILE, a file in its
        scratch folder), each array alone in an allocation of exactly its size, as make profile places them."""
        start = time.monotonic()
        outcome = ProfileOutcome(task, dtype, shape, ProfileStatus.FAILED)
        harness, why = self.workspace.race_harness(sub, timeout)
        if harness is None:
            outcome.message = why
            return outcome
        scratch = self.workspace.scratch / build.harness.parent.name / f"profile-{task}"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        counts, lines = scratch / "launches.jsonl", scratch / "lines.txt"
        # The sandbox runs no other program than the harness, so no addr2line: the harness gets the line table
        # (which accesses share a line) and names code addresses, which get their lines afterwards.
        table = run_sandboxed(self.isolation, ["sh", "-c", 'exec readelf --debug-dump=decodedline "$1" > "$2"', "sh",
                                               str(harness), str(scratch / "readelf.txt")],
                              timeout=min(60.0, timeout), read_only=[harness], writable=[scratch])
        if table.status == 0:
            lines.write_text(counters.line_table(_read_own_file(scratch / "readelf.txt", 256 << 20)))
        server = HarnessServer(harness, None, sandbox=self.isolation, scratch=scratch,
                               env={"CUDA_CPU_PROFILE": str(counts), "CUDA_CPU_PROFILE_LINES": str(lines)})
        try:
            reply = server.request({"op": "check", "task": task, "dtype": dtype, "shape": shape, "seed": seed,
                                    "check_runs": 1, "fixed_placement": True}, timeout)
            # Each launch's line is written whole when it ends: the reply comes after the last.
            if reply.get("status") != CaseStatus.OK:
                outcome.status = ProfileStatus.SKIPPED
                outcome.message = f"not counted: its profile case ({shape}) ended {reply.get('status')}"
            else:
                text = _read_own_file(counts, counters.MAX_BYTES + 1)
                outcome = counters.outcome(task, dtype, shape, text, self._addr2line(harness, scratch))
        except HarnessFailure as failure:
            outcome.message = ("the count did not finish within its limit" if failure.kind == CaseStatus.TIMEOUT
                               else str(failure))
        finally:
            server.close()
            shutil.rmtree(scratch, ignore_errors=True)
        outcome.seconds = time.monotonic() - start
        return outcome

    def _addr2line(self, harness: Path, scratch: Path):
        """A symbolizer for the counts' code addresses: addr2line on the submission's harness, in the sandbox."""
        def symbolize(addresses: list[str]) -> dict[str, str]:
            try:
                done = run_sandboxed(self.isolation, ["addr2line", "-a", "-i", "-e", str(harness),
                                                      *addresses[:4096]],
                                     timeout=60, read_only=[harness], writable=[scratch])
            except OSError:
                return {}
            return counters.places(done.stdout) if done.status == 0 else {}
        return symbolize


def _read_own_file(path: Path, limit: int) -> str:
    """At most `limit` bytes of a file the sandbox wrote, as text; "" unless it is a plain file there (never a
    link the code inside left, which could point at any file the grader may read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return ""
        return f.read(limit).decode(errors="replace")


class CpuKind(Kind):
    name = "cpu"
    sandboxed = True
    uses_gpus = False  # a Slurm array task asks for CPUs only (--cpus-per-task; no --gres)
    ARCH = "cpu"  # what a build cache and a Slurm batch record as its architecture

    def devices(self, spec: str) -> list[str]:
        """One worker: the harness spreads each launch's blocks over every core itself."""
        if spec != "all":
            raise GraderError(f"--gpus {spec}: --device cpu grades with one worker, which runs each kernel's blocks on "
                              "all of this machine's cores; leave --gpus out")
        return ["cpu"]

    def arch(self, given: str | None) -> str:
        if given and given != self.ARCH:
            raise GraderError(f"--arch {given} names a GPU architecture; --device cpu builds for this machine's "
                              "processor: leave --arch out")
        return self.ARCH

    def toolchain(self) -> dict:
        """The compiler cpu/cudacpu.py builds with, the python3 that runs it, and the header libraries' folder."""
        python = shutil.which("python3")
        if python is None:
            raise GraderError("--device cpu: python3 is not on PATH (the CPU backend's compiler driver runs with it)")
        return {"cxx": compiler_version(), "python3": str(Path(python).resolve()),
                "deps_include": os.environ.get("DEPS_INCLUDE", "")}

    def build_cache(self, folder: Path, arch: str | None, jobs: int, rubric: Path) -> dict:
        """The pristine harness with the CPU runtime, and the solution, built once (trusted code: no sandbox)."""
        self.toolchain()
        old = os.umask(0o022)
        try:
            ws = Workspace(Path(folder) / "work", cpu=True)
            registry = Registry.from_harness(ws.prepare(jobs))
            load_rubric(rubric, registry)
        finally:
            os.umask(old)
        return {"registry": registry.raw, "harness_version": registry.harness_version + CpuBackend.HARNESS_SUFFIX,
                "arch": self.ARCH}

    def open(self, folder: Path, cached: dict, work: Path, sandbox, arch: str | None):
        backend = CpuBackend(work, sandbox)
        return backend, backend.use_cache(folder, cached)

    def local(self, work: Path, arch: str | None, sandbox, jobs: int):
        self.arch(arch)
        self.toolchain()
        backend = CpuBackend(work, sandbox)
        print(f"building the harness and the solution for the CPU backend in {backend.workspace.work} ...",
              file=sys.stderr)
        return backend, backend.prepare(jobs)


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


def get(name: str) -> Kind:
    """The backend kind called `name`; a one-line GraderError for a name that is unknown or not available here.
    `auto` (a Gradescope or Autolab runner, where one machine grades each submission as it comes): the GPU when
    this machine has one, else the CPU backend, correctness only, which every report then says."""
    if name == "auto":
        why = gpu_missing()
        if not why:
            return GpuKind()
        print(f"--device auto: {why}: grading correctness only, on the CPU backend", file=sys.stderr)
        return CpuKind()
    if name == "gpu":
        return GpuKind()
    if name == "cpu":
        return CpuKind()
    if name == "simulated":
        if os.environ.get(TEST_BACKENDS_ENV) != "1":
            raise GraderError(f"--device simulated is the grader's own tests' stand-in (it builds nothing and runs "
                              f"no student code); it is available only with {TEST_BACKENDS_ENV}=1, which only the "
                              "tests set")
        from grader.tests.fakes import SimulatedKind  # the tests' own code, imported only when they ask for it
        return SimulatedKind()
    raise GraderError(f"--device {name}: no such backend (gpu: this machine's NVIDIA GPUs; cpu: correctness only, "
                      "on the CPU; auto: the GPU when there is one, else the CPU)")

