"""Finds what in a .cu file the CPU backend cannot run.

The file is preprocessed the way the GPU compiler sees it (__CUDA_ARCH__ =
900), so code behind `#if __CUDA_ARCH__ >= 800` counts, and code in comments
or `#if 0` does not. Then the student's own files (not system headers) are
searched for the constructs in UNSUPPORTED. The first one found is reported
as "needs a GPU: uses inline PTX at matmul_fast.cu:155".
"""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .lexer import LexError, LineIndex, tokenize

# identifier -> what it is, in words a student recognizes
UNSUPPORTED = {
    "asm": "inline PTX",
    "__asm__": "inline PTX",
    "__asm": "inline PTX",
    "__pipeline_memcpy_async": "cp.async (__pipeline_memcpy_async)",
    "__pipeline_commit": "cp.async (__pipeline_commit)",
    "__pipeline_wait_prior": "cp.async (__pipeline_wait_prior)",
    "__pipeline_arrive_on": "cp.async (__pipeline_arrive_on)",
    "wmma": "tensor cores (wmma)",
    "nvcuda": "tensor cores (nvcuda::wmma)",
    "__half": "half precision (__half)",
    "__half2": "half precision (__half2)",
    "__nv_bfloat16": "bfloat16 (__nv_bfloat16)",
    "__nv_bfloat162": "bfloat16 (__nv_bfloat162)",
    "__nv_fp8_e4m3": "8-bit floats (__nv_fp8_e4m3)",
    "__nv_fp8_e5m2": "8-bit floats (__nv_fp8_e5m2)",
    "cooperative_groups": "cooperative groups",
    "tex1Dfetch": "textures (tex1Dfetch)",
    "tex1D": "textures (tex1D)",
    "tex2D": "textures (tex2D)",
    "tex3D": "textures (tex3D)",
    "cudaCreateTextureObject": "texture objects",
    "surf2Dread": "surfaces (surf2Dread)",
    "surf2Dwrite": "surfaces (surf2Dwrite)",
    "__cluster_dims__": "thread block clusters (__cluster_dims__)",
    "cudaLaunchKernelEx": "extended launches (cudaLaunchKernelEx)",
    "cudaLaunchCooperativeKernel": "cooperative launches",
    "__prof_trigger": "profiler triggers",
}

# GPU-only headers the CPU backend stands in for with a stub (include/),
# and library folders it does not provide at all.
GPU_HEADERS = {
    "mma.h": "tensor cores (<mma.h>)",
    "cuda_fp16.h": "half precision (<cuda_fp16.h>)",
    "cuda_fp16.hpp": "half precision (<cuda_fp16.hpp>)",
    "cuda_bf16.h": "bfloat16 (<cuda_bf16.h>)",
    "cuda_bf16.hpp": "bfloat16 (<cuda_bf16.hpp>)",
    "cuda_fp8.h": "8-bit floats (<cuda_fp8.h>)",
    "cuda_pipeline.h": "cp.async (<cuda_pipeline.h>)",
    "cuda_pipeline_primitives.h": "cp.async (<cuda_pipeline_primitives.h>)",
    "cuda_awbarrier.h": "asynchronous barriers (<cuda_awbarrier.h>)",
    "cuda_awbarrier_primitives.h": "asynchronous barriers (<cuda_awbarrier_primitives.h>)",
    "cooperative_groups.h": "cooperative groups (<cooperative_groups.h>)",
    "texture_fetch_functions.h": "textures (<texture_fetch_functions.h>)",
    "cublas_v2.h": "cuBLAS (<cublas_v2.h>)",
    "cublas.h": "cuBLAS (<cublas.h>)",
    "cublasLt.h": "cuBLASLt (<cublasLt.h>)",
    "curand.h": "cuRAND (<curand.h>)",
    "curand_kernel.h": "cuRAND (<curand_kernel.h>)",
    "cufft.h": "cuFFT (<cufft.h>)",
    "cusparse.h": "cuSPARSE (<cusparse.h>)",
    "cusolverDn.h": "cuSOLVER (<cusolverDn.h>)",
    "cudnn.h": "cuDNN (<cudnn.h>)",
}
_GPU_LIBRARY = re.compile(r"^(cub|thrust|cuda|cutlass|cute|cooperative_groups|nv)/|^(cu[a-z]*|nv[a-zA-Z]*)\.h|\.cuh$")
_MARKER = re.compile(r'^# (\d+) "((?:[^"\\]|\\.)*)"((?: \d)*)\s*$')
# g++ and clang++ on a missing #include.
_MISSING = re.compile(r"^(.*?):(\d+):\d+: fatal error: (?:([^:'\n]+): No such file or directory|'([^'\n]+)' file not found)",
                      re.M)


@dataclass
class Finding:
    what: str
    file: str
    line: int

    def message(self) -> str:
        return f"needs a GPU: uses {self.what} at {self.file}:{self.line}"


class PreprocessError(RuntimeError):
    """The preprocessor failed for a reason of the student's (its output is in .output)."""

    def __init__(self, output: str):
        super().__init__(output)
        self.output = output


def preprocess_device_view(cxx: str, source: Path, include_dir: Path, flags: list[str]) -> str:
    cmd = [cxx, "-E", "-x", "c++", "-std=c++17", "-D__CUDACC__", "-D__NVCC__", "-D__CUDA_ARCH__=900",
           "-DCUDACPU_SCANNING", "-DCUDACPU_BACKEND=1", "-isystem", str(include_dir), *flags, str(source)]
    done = subprocess.run(cmd, capture_output=True, text=True, errors="replace", env=dict(os.environ, LC_ALL="C"))
    if done.returncode != 0:
        raise PreprocessError(done.stderr)
    return done.stdout


def missing_gpu_header(output: str) -> Finding | None:
    """A failed #include of a CUDA library the CPU backend does not have."""
    m = _MISSING.search(output)
    if not m:
        return None
    header = (m.group(3) or m.group(4)).strip()
    if _GPU_LIBRARY.search(header):
        return Finding(f"<{header}>, which the CPU backend does not provide", m.group(1), int(m.group(2)))
    return None


def scan_preprocessed(text: str, include_dir: Path) -> Finding | None:
    """The first unsupported construct the student wrote, in the code the GPU would compile.

    The preprocessed text says which lines of which files are compiled (in
    the GPU's view) and which GPU-only headers are included; the constructs
    themselves are looked for in the files as written, so that a macro of a
    system header (doctest's breakpoint is an `asm` under clang) never
    counts as the student's.
    """
    ours = str(include_dir.resolve())
    stack: list[tuple[str, int, bool]] = []  # (file, line, system header?) of each open include
    file, line, system = "", 1, False
    active: dict[str, set[int]] = {}  # user file -> its lines that produced code
    for raw in text.split("\n"):
        m = _MARKER.match(raw)
        if m:
            new_line, new_file = int(m.group(1)), m.group(2).encode().decode("unicode_escape")
            flags = m.group(3).split()
            if "1" in flags:  # entering an include
                stack.append((file, line, system))
                name = Path(new_file).name
                try:
                    in_ours = str(Path(new_file).resolve().parent).startswith(ours)
                except OSError:
                    in_ours = False
                if in_ours and name in GPU_HEADERS:
                    # Named at the student's own #include, even when a library header included it.
                    parent = next(((f, ln) for f, ln, sys_header in reversed(stack) if f and not sys_header),
                                  (new_file, 1))
                    return Finding(GPU_HEADERS[name], parent[0], parent[1])
            elif "2" in flags and stack:  # back in the includer
                stack.pop()
            file, line, system = new_file, new_line, "3" in flags
            continue
        if not raw.startswith("#") and not system and raw.strip():
            active.setdefault(file, set()).add(line)
        line += 1
    for name, lines in active.items():
        found = _scan_written(name, lines)
        if found:
            return found
    return None


def _scan_written(name: str, lines: set[int]) -> Finding | None:
    """The first unsupported identifier in file `name` on one of `lines`."""
    path = Path(name)
    if not path.is_file():
        return None
    try:
        src = path.read_text(errors="replace")
        tokens = tokenize(src)
    except (OSError, LexError):
        return None
    index = LineIndex(src)
    for k, t in enumerate(tokens):
        what = None
        if t.kind == "ident" and t.text in UNSUPPORTED:
            what = UNSUPPORTED[t.text]
        elif t.kind == "ident" and t.text == "cuda" and k + 1 < len(tokens) and tokens[k + 1].is_("::"):
            what = "libcu++ (cuda::)"
        if what:
            ln = index.line(t.start)
            if ln in lines:
                return Finding(what, name, ln)
    return None
