"""The nvcc-rules check: a task file read by clang's CUDA front end, host side and device side, so that what nvcc
refuses (a __host__ function called from a kernel, std::string or throw in device code, a kernel that returns a
value...) is refused here too, in nvcc's words, before g++ (which knows nothing of CUDA's execution spaces) builds
it for the CPU. No CUDA toolkit: include/cudacpu/frontend/prelude.h stands in for it. Only the errors that are about
CUDA's rules are reported; anything else is left to the compile that follows, which says it better."""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import precompiled
from .rewrite import member_kernels

FRONTEND_DIR = Path(__file__).resolve().parent.parent / "include" / "cudacpu" / "frontend"
PRELUDE = FRONTEND_DIR / "prelude.h"
INSTALL_HINT = ("install clang to have it (Debian/Ubuntu: sudo apt-get install clang; macOS: see cpu/NEEDS.md), "
                "or set CUDACPU_CLANG=/path/to/clang++")
_ENV = dict(os.environ, LC_ALL="C")
# Names a student never wrote: a message naming one is about the check's own machinery.
INTERNAL = re.compile(r"cudacpu|cudaPushCallConfiguration|cudaConfigureCall|__clang_cuda|__cuda_builtin|__fetch_builtin|frontend|prelude|__nv_|__nvvm_")


def find_clang() -> str | None:
    """$CUDACPU_CLANG, else the newest clang++-NN on PATH, else clang++."""
    chosen = os.environ.get("CUDACPU_CLANG")
    if chosen:
        return chosen if shutil.which(chosen.split()[0]) else None
    versioned = set()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        try:
            versioned.update(p.name for p in Path(folder).glob("clang++-[0-9]*") if re.fullmatch(r"clang\+\+-\d+", p.name))
        except OSError:
            continue
    for name in sorted(versioned, key=lambda n: -int(n.split("-")[1])) + ["clang++"]:
        if shutil.which(name):
            return name
    return None


@functools.lru_cache(maxsize=None)
def _clang_facts(clang: str) -> tuple[int, str, str]:
    """The major version (sm_90 is known from clang 16), the resource folder (clang's own CUDA headers) and the
    --version text."""
    version = subprocess.run([*clang.split(), "--version"], capture_output=True, text=True, errors="replace",
                             env=_ENV).stdout
    m = re.search(r"clang version (\d+)", version)
    resource = subprocess.run([*clang.split(), "-print-resource-dir"], capture_output=True, text=True,
                              errors="replace", env=_ENV).stdout.strip()
    return (int(m.group(1)) if m else 0), resource, version


def _flags(clang: str, std: str) -> list[str]:
    """The check's command but the prelude, the file and its include flags."""
    major, resource, _ = _clang_facts(clang)
    return [*clang.split(), "-x", "cuda", f"--cuda-gpu-arch={'sm_90' if major >= 16 else 'sm_80'}",
            # No toolkit, found or not: the prelude is all of CUDA the check sees.
            "-nocudainc", "-nocudalib", f"--cuda-path={FRONTEND_DIR}",
            # clang's wrappers of <algorithm> give device code a std::min that nvcc's does not have; its own CUDA
            # headers stay reachable through the resource folder.
            "-nobuiltininc", "-isystem", f"{resource}/include",
            # nvcc makes a constexpr function callable from device code only with --expt-relaxed-constexpr.
            "-Xclang", "-fno-cuda-host-device-constexpr",
            "-fsyntax-only", "-w", "-ferror-limit=50", "-fno-color-diagnostics", f"-std={std}",
            "-isystem", str(FRONTEND_DIR)]


@dataclass
class Diagnostic:
    file: str
    line: int
    column: int
    message: str
    notes: list[tuple[str, str]]  # (file, message)


_DIAG = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): (?P<kind>error|fatal error|note|warning): "
                   r"(?P<msg>.*)$")


def parse(output: str) -> list[Diagnostic]:
    errors: list[Diagnostic] = []
    for text in output.splitlines():
        m = _DIAG.match(text)
        if not m:
            continue
        if m.group("kind") in ("error", "fatal error"):
            errors.append(Diagnostic(m.group("file"), int(m.group("line")), int(m.group("col")), m.group("msg"), []))
        elif m.group("kind") == "note" and errors:
            errors[-1].notes.append((m.group("file"), m.group("msg")))
    return errors


_SPACE_CALL = re.compile(r"call to (__\w+__) function from (__\w+__) function")
_CALLEE = [  # clang's error for a call that found no callable candidate, and what it was calling
    (re.compile(r"no matching function for call to '(.+?)'$"), "'{}'"),
    (re.compile(r"no matching constructor for initialization of '(.+?)'"), "the constructor of '{}'"),
    (re.compile(r"no viable conversion from .* to '(.+?)'"), "the constructor of '{}'"),
    (re.compile(r"no matching conversion for functional-style cast from .* to '(.+?)'"), "the constructor of '{}'"),
    (re.compile(r"invalid operands to binary expression \('(.+?)'"), "an operator of '{}'"),
    (re.compile(r"no viable overloaded operator\[\] for type '(.+?)'"), "operator[] of '{}'"),
    (re.compile(r"no matching function for call to object of type '(.+?)'"), "'{}'"),
    (re.compile(r"no matching member function for call to '(.+?)'"), "'{}'"),
]
_REFERENCE = re.compile(r"reference to (__\w+__) function '(.+?)' in (__\w+__) function")
_RULES = [  # clang's words -> nvcc's, with what to do
    (re.compile(r"call to global function '(.+?)' not configured"),
     "a __global__ function call must be configured: launch '{0}' with {0}<<<grid, block>>>(...)"),
    (re.compile(r"kernel call to non-global function '(.+?)'$"),
     "a function call cannot be configured: '{0}' is not a __global__ function, and only a kernel is launched "
     "with <<<grid, block>>> (declare it __global__ void, or call it without <<<>>>)"),
    (re.compile(r"kernel function type .* must have void return type"),
     "a __global__ function must have a void return type: return results through a pointer argument"),
    (re.compile(r"kernel function '(.+?)' must be a free function"),
     "a __global__ function cannot be a member function: declare '{0}' outside the class"),
    (re.compile(r"cannot use '(throw|try)' in (__\w+__) function"),
     "device code does not support exception handling ('{0}' in a {1} function): report errors through a value"),
    (re.compile(r"cannot use variable-length arrays in (__\w+__) functions?"),
     "a variable-length array is not allowed in a {0} function (its size must have a constant value): size it "
     "with a compile-time constant"),
    (re.compile(r"variable length array declaration cannot have 'static' storage duration"),
     "a variable length array cannot have static storage duration: a __shared__ array's size must be a constant "
     "(for a size known at launch: extern __shared__ T name[]; and the launch's third <<<>>> argument)"),
    (re.compile(r"__shared__ local variables not allowed in (__\w+__) functions"),
     "a __shared__ variable is not allowed inside a {0} function body (only in device code)"),
    (re.compile(r"__constant__ variables must be global"), "a __constant__ variable must be declared at file scope"),
    (re.compile(r"dynamic initialization is not supported for (.*) variables"),
     "dynamic initialization is not supported for {0} variables"),
    (re.compile(r"initialization is not supported for __shared__ variables"),
     "initialization is not supported for __shared__ variables: assign the value inside the kernel"),
]


def _hint(callee_space: str, caller_space: str, callee: str, in_library: bool) -> str:
    if callee_space == "__global__":
        return "a __global__ function call must be configured: a kernel is launched from host code with " \
               f"<<<grid, block>>>, not called from a {caller_space} function ({callee})"
    what = f"calling a {callee_space} function {callee} from a {caller_space} function is not allowed"
    if callee_space != "__host__":
        return what + ": it runs only on the GPU: compute the value on the host, or mark it __host__ __device__"
    name = callee.strip("'").split("<")[0]
    if name in ("min", "max", "std::min", "std::max"):
        return what + ": std::min and std::max are constexpr host functions (nvcc takes them in device code only " \
                      "with --expt-relaxed-constexpr): use min() and max(), or fminf() and fmaxf()"
    if name.startswith("cuda"):
        return what + ": the CUDA runtime API is called from host code, before or after the launch"
    if in_library:
        return what + ": it is host code of the C or C++ library, which cannot run on the GPU (printf works in " \
                      "device code)"
    return what + ": mark it __device__ (or __host__ __device__)"


def translate(d: Diagnostic) -> str | None:
    """nvcc's meaning of one clang error, or None when the error is not about CUDA's rules."""
    return _translate(d, source=None)[1]


def _translate(d: Diagnostic, source: Path | None) -> tuple[int, str | None]:
    """(priority, message): a rule clang names outright says more than a call it could not make."""
    for pattern, words in _RULES:
        m = pattern.search(d.message)
        if m:
            return 2, words.format(*m.groups())
    m = _REFERENCE.search(d.message)
    if m:
        return 1, _hint(m.group(1), m.group(3), f"'{m.group(2)}'", m.group(2).startswith("std::"))
    for file, note in d.notes:
        spaces = _SPACE_CALL.search(note)
        if spaces:
            callee = next((form.format(c.group(1)) for pattern, form in _CALLEE for c in [pattern.search(d.message)]
                           if c), "a function")
            in_library = source is None or not _same_file(file, source)
            return 1, _hint(spaces.group(1), spaces.group(2), callee, in_library)
    return 0, None


def _same_file(a: str, b: Path) -> bool:
    try:
        return Path(a).resolve() == b.resolve()
    except OSError:
        return False


@dataclass
class Refusal:
    line: int
    column: int
    message: str
    text: str  # the student's source line

    def render(self, display: str) -> str:
        return (f"{display}:{self.line}:{self.column}: error: {self.message}\n{self.line:>5} | {self.text.rstrip()}\n"
                f"      | {' ' * (self.column - 1)}^")


MEMBER_KERNEL = "a __global__ function cannot be a member function: declare the kernel outside the class"


def refusals(output: str, source: Path) -> list[Refusal]:
    """The student-facing errors in clang's output, and the member kernels the file's tokens show (clang's front end
    takes a static one, which nvcc refuses): each at the file and line, once."""
    try:
        text = source.read_text(errors="replace")
    except OSError:
        text = ""
    lines = text.splitlines()
    chosen: dict[int, tuple[int, str, int]] = {}  # line -> (priority, message, column): the error that says most
    for d in parse(output):
        if not _same_file(d.file, source):
            continue
        priority, message = _translate(d, source)
        if message is None or INTERNAL.search(message):
            continue
        if d.line not in chosen or priority > chosen[d.line][0]:
            chosen[d.line] = (priority, message, d.column)
    for line, column in member_kernels(text):  # below any clang error of the same line, which stays
        chosen.setdefault(line, (-1, MEMBER_KERNEL, column))
    return [Refusal(line, column, message, lines[line - 1] if 0 < line <= len(lines) else "")
            for line, (_, message, column) in sorted(chosen.items(), key=lambda c: (c[0], c[1][2]))]


# What clang says when it will not read a precompiled header (made by another clang, or its headers changed since).
_PCH_REFUSED = re.compile(r"precompiled header|PCH file|AST file|module file")


def _side(flags: list[str], side: str, prelude: list[str], source: Path, include_flags: list[str]):
    return subprocess.run([*flags, precompiled.SIDES[side], *prelude, "-iquote", str(source.parent), *include_flags,
                           str(source)], capture_output=True, text=True, errors="replace", env=_ENV)


def run(clang: str, source: Path, include_flags: list[str], std: str = "c++17",
        pch_folder: Path | None = None) -> list[Refusal]:
    """Runs the check on one file: what nvcc would refuse (nothing when it would accept it, as far as CUDA's
    rules go). Each side in its own clang, as clang's driver runs them in one: the host side, then, where it
    passed, the device side. With `pch_folder`, each reads the prelude precompiled there (precompiled.py), made on
    first use."""
    flags = _flags(clang, std)
    # A macro the command line defines could change what the prelude says, which its precompiled header fixed.
    defines = any(f.startswith(("-D", "-U")) for f in include_flags)
    pch = None if defines else precompiled.made(pch_folder, clang, _clang_facts(clang)[2], flags, PRELUDE, _ENV)
    for side in precompiled.SIDES:
        done = _side(flags, side, ["-include-pch", str(pch[side])] if pch else ["-include", str(PRELUDE)], source,
                     include_flags)
        if pch and done.returncode != 0 and _PCH_REFUSED.search(done.stderr):
            # Checked without it; and made again by the next check (a header rewritten with the same bytes, a
            # new mtime, keeps the name clang now refuses).
            precompiled.discard(pch[side])
            done = _side(flags, side, ["-include", str(PRELUDE)], source, include_flags)
        if done.returncode != 0:
            return refusals(done.stderr, source)
    return refusals("", source)  # (a member kernel clang takes is still refused)


def check(clang: str, source: Path, display: str, include_flags: list[str], std: str = "c++17",
          pch_folder: Path | None = None) -> list[str]:
    """run(), each error rendered as a compiler's, at `display` (the file's name as the student wrote it)."""
    return [r.render(display) for r in run(clang, source, include_flags, std, pch_folder)]
