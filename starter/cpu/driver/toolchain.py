"""Runs the host compiler: scan, rewrite and compile a .cu file; compile a
.cpp file against the CUDA stand-in; link with the runtime library."""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from . import frontend, host_prelude, messages, scan
from .flags import Options
from .rewrite import RewriteError, rewrite

CPU_DIR = Path(__file__).resolve().parent.parent
INCLUDE_DIR = CPU_DIR / "include"
DEFAULT_RUNTIME = CPU_DIR.parent / "build" / "cpu" / "libcudacpu.a"

# Exit codes
OK, COMPILE_ERROR, USAGE, NEEDS_GPU = 0, 1, 2, 3

_CUDA_NAME = re.compile(r"^(cuda[A-Z]\w*|cu[A-Z]\w*|nv\w+|__nv\w+|__[a-z]\w*|cub|thrust|curand\w*|cublas\w*)$")
# g++ and clang++ saying a name is unknown.
_UNDECLARED = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):\d+: error: (?:['‘](?P<gcc>[\w:]+)['’] was not declared in this scope|"
    r"['‘](?P<type>[\w:]+)['’] does not name a type|"
    r"(?:use of undeclared identifier|unknown type name|no type named) ['‘](?P<clang>[\w:]+)['’]|"
    r"['‘](?P<ns>[\w:]+)['’] has not been declared)", re.M)
# The compilers' messages in plain ASCII, whatever the user's locale.
_COMPILER_ENV = dict(os.environ, LC_ALL="C")


class DriverError(RuntimeError):
    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def compiler(o: Options) -> str:
    cxx = o.cxx or os.environ.get("CXX") or "g++"
    if not shutil.which(cxx.split()[0]):
        raise DriverError(f"cudacpu: the C++ compiler '{cxx}' was not found (set CXX or --cxx=)", USAGE)
    return cxx


def _safe_preprocessor_flags(o: Options) -> list[str]:
    """The user's -I flags, minus any that would shadow the CPU backend's CUDA headers."""
    out, skip = [], False
    flags = o.preprocessor_flags
    for k, f in enumerate(flags):
        if skip:
            skip = False
            continue
        path = None
        if f in ("-I", "-isystem") and k + 1 < len(flags):
            path, skip = flags[k + 1], True
            pair = [f, flags[k + 1]]
        elif f.startswith("-I"):
            path, pair = f[2:], [f]
        else:
            pair = [f]
        if path and (Path(path) / "cuda_runtime.h").exists() and Path(path).resolve() != INCLUDE_DIR.resolve():
            continue  # a CUDA toolkit's include folder: ours must win
        out += pair
    return out


def _sanitizer_flags(o: Options, linking: bool = False) -> list[str]:
    if o.racecheck:
        # ThreadSanitizer's instrumentation calls the race checker in the CPU
        # runtime (src/racecheck.cpp); ThreadSanitizer's own runtime is not linked.
        # The same build counts accesses for the performance counters (src/profile.cpp): g++ would
        # split the copy of a float4 or an aligned struct into one access per field (scalar
        # replacement), where nvcc makes it one 16-byte instruction; clang keeps it one copy anyway.
        keep_copies = [] if _is_clang(compiler(o)) else ["-fno-tree-sra"]
        return [] if linking else ["-fsanitize=thread", "-fno-omit-frame-pointer", *keep_copies]
    return ["-fsanitize=address", "-fsanitize-recover=address", "-fno-omit-frame-pointer"] if o.asan else []


# The graded build (AddressSanitizer), the race checker's and the counters' (ThreadSanitizer's instrumentation) and
# a build without either must compile a task file to the same code: the code checked is the code graded. GCC and
# clang predefine a macro for each sanitizer; these come undefined in every build, so no task file reads which one
# it is in. (The macro sets of the three builds are otherwise the same: tests/test_driver.py.)
_SANITIZER_MACROS = ["-U__SANITIZE_ADDRESS__", "-U__SANITIZE_THREAD__"]
_BUILDS = {"address": ["-fsanitize=address"], "thread": ["-fsanitize=thread"], "none": []}


def _task_file_view(o: Options, source: Path) -> list[str]:
    """What every compile and preprocessing of a task file is given: CUDA's macros as nvcc defines them on the
    host side, the CPU backend's headers and prelude, the file's folder for its quoted includes, the user's -I."""
    return [*_SANITIZER_MACROS, "-D__CUDACC__", "-D__CUDACC_VER_MAJOR__=13", "-D__CUDACC_VER_MINOR__=0",
            "-DCUDACPU_BACKEND=1", "-isystem", str(INCLUDE_DIR), "-include", "cudacpu/kernel_prelude.h",
            "-iquote", str(source.parent), *_safe_preprocessor_flags(o)]


@functools.lru_cache(maxsize=None)
def _has_feature_test(cxx: str) -> bool:
    """Whether the compiler answers __has_feature(...) (clang; GCC from 14), which tells a sanitizer's build from
    the others and cannot be undefined."""
    done = subprocess.run([*cxx.split(), "-x", "c++", "-E", "-P", "-"], input="#ifdef __has_feature\nyes\n#endif\n",
                          capture_output=True, text=True, errors="replace", env=_COMPILER_ENV)
    return "yes" in done.stdout


def _student_lines(preprocessed: str, display: str) -> list[tuple[int, str]]:
    """The preprocessed lines that come from the student's file, with their line numbers in it."""
    out, here, line = [], False, 0
    for text in preprocessed.splitlines():
        marker = re.match(r'^# (\d+) "((?:[^"\\]|\\.)*)"', text)
        if marker:
            line, here = int(marker.group(1)), marker.group(2) == display
            continue
        if here and text.strip():
            out.append((line, text.strip()))
        line += 1
    return out


def check_same_in_every_build(cxx: str, o: Options, text: str, source: Path, display: str) -> None:
    """Refuses a task file whose code differs between the graded build and the checkers' (__has_feature(...)
    answers differently in each), naming its first line that does: on GCC before 14 no file can tell them apart."""
    if not _has_feature_test(cxx):
        return
    views = {}
    for name, flags in _BUILDS.items():
        cmd = [*cxx.split(), f"-std={o.std}", "-x", "c++", "-E", *flags, *_task_file_view(o, source), "-"]
        done = subprocess.run(cmd, input=text, capture_output=True, text=True, errors="replace", env=_COMPILER_ENV)
        if done.returncode != 0:
            return  # the compile itself says what is wrong
        views[name] = _student_lines(done.stdout, display)
    graded = views["address"]
    for name, lines in views.items():
        if lines != graded:
            first = next((a[0] for a, b in zip(graded, lines) if a != b), (graded or lines)[-1][0])
            build = {"thread": "the race checker's", "none": "a build without AddressSanitizer"}[name]
            raise DriverError(f"{source}:{first}: error: this code is not the same in {build} build as in the "
                              f"graded one (it asks __has_feature about a sanitizer): the checks must see the code "
                              f"that is graded, so a task file may not tell the builds apart", COMPILE_ERROR)


def _is_clang(cxx: str) -> bool:
    if "clang" in Path(cxx.split()[0]).name:
        return True
    if sys.platform != "darwin":
        return False
    # macOS's g++ and c++ are Apple's clang, under GCC's names.
    done = subprocess.run([*cxx.split(), "--version"], capture_output=True, text=True, errors="replace")
    return "clang" in done.stdout


def _error_limit(cxx: str) -> list[str]:
    return ["-ferror-limit=5"] if _is_clang(cxx) else ["-fmax-errors=5"]


# GNU as, and clang's integrated assembler, refusing PTX.
_ASSEMBLER = re.compile(r"Error: (?:no such instruction|unknown mnemonic|unknown pseudo-op): [`'](?P<what>[^'`\n]+)|"
                        r"error: invalid instruction mnemonic '(?P<clang>[^'\n]+)'")


def _explain_compile_failure(stderr: str, display: str, shown: str | None = None) -> DriverError:
    """What a failed compile says. The needs-a-GPU checks read the compiler's own output (`stderr`); the student is
    shown `shown`, the same output told in terms of their file (messages.py), where there is one."""
    m = _ASSEMBLER.search(stderr)
    if m:  # PTX the scan did not see (inside a macro): the CPU's assembler cannot read it
        what = (m.group("what") or m.group("clang")).strip()
        return DriverError(f"needs a GPU: uses inline PTX ({what}) in {display}", NEEDS_GPU)
    m = _UNDECLARED.search(stderr)
    if m:
        name = m.group("gcc") or m.group("type") or m.group("clang") or m.group("ns")
        base = name.split("::")[0]
        if _CUDA_NAME.match(base):
            return DriverError(f"needs a GPU: uses {name}, which the CPU backend does not emulate, "
                               f"at {m.group('file')}:{m.group('line')}", NEEDS_GPU)
    text = stderr if shown is None else shown
    return DriverError(text.rstrip() + f"\ncudacpu: {display} did not compile (the errors above are the compiler's)",
                       COMPILE_ERROR)


def _about_student_code(cxx: str, stderr: str, source: Path, original: str, rewritten: str) -> str:
    """The compiler's output told in terms of the student's file (messages.py). That module only rewords: should it
    fail on an output it was not written for, the compiler's own words are shown rather than none."""
    try:
        return messages.clean(stderr, str(source), original, rewritten, display_columns=not _is_clang(cxx))
    except Exception:  # noqa: BLE001 - a message tidied is not worth a compile lost
        return stderr


def scan_file(o: Options, source: Path) -> None:
    """Raises DriverError(NEEDS_GPU) if the file uses what the CPU backend cannot run."""
    cxx = compiler(o)
    try:
        text = scan.preprocess_device_view(cxx, source, INCLUDE_DIR, _safe_preprocessor_flags(o))
    except scan.PreprocessError as e:
        found = scan.missing_gpu_header(e.output)
        if found:
            raise DriverError(found.message(), NEEDS_GPU) from None
        raise DriverError(e.output.rstrip() + f"\ncudacpu: {source} did not preprocess", COMPILE_ERROR) from None
    found = scan.scan_preprocessed(text, INCLUDE_DIR)
    if found:
        raise DriverError(found.message(), NEEDS_GPU)


def _note_no_clang() -> None:
    """Says once per build folder (not once per file: make compiles each in its own process) that the check was
    skipped; the first process to create the mark says it."""
    mark = pch_folder().parent / "nvcc-rules-skipped"
    try:
        mark.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:
        return
    print(f"cudacpu: the nvcc-rules check (what nvcc refuses that g++ takes) was skipped: no clang; "
          f"{frontend.INSTALL_HINT}", file=sys.stderr)


def pch_folder() -> Path:
    """Where the precompiled preludes are kept (the nvcc-rules check's, the compile's: host_prelude.py): the build
    folder's (cpu.mk's CUDACPU_BUILD)."""
    return Path(os.environ.get("CUDACPU_BUILD") or DEFAULT_RUNTIME.parent) / "nvcc-rules"


def nvcc_rules(o: Options, source: Path) -> None:
    """Refuses, as a compile error of the file, what nvcc would refuse (CUDA's execution-space rules)."""
    clang = frontend.find_clang()
    if clang is None:
        _note_no_clang()
        return
    errors = frontend.check(clang, source, str(source), _safe_preprocessor_flags(o), o.std, pch_folder=pch_folder())
    if errors:
        raise DriverError("\n".join(errors) + f"\n{source}: nvcc would refuse this file (CUDA's rules above); "
                          "fix it before it can be built", COMPILE_ERROR)


def compile_cu(o: Options, source: Path, output: Path) -> None:
    cxx = compiler(o)
    scan_file(o, source)
    try:
        original = source.read_text(errors="replace")
    except OSError as e:
        raise DriverError(f"cudacpu: cannot read {source}: {e.strerror}", USAGE) from None
    try:
        result = rewrite(original)
    except RewriteError as e:
        raise DriverError(f"{source}:{e.line}: error: {e} (the CPU backend could not rewrite this)"
                          f"{_quoted(original, e.line)}", COMPILE_ERROR) from None
    if result.device_launches:
        raise DriverError(f"needs a GPU: uses dynamic parallelism (a kernel launch inside a kernel) at "
                          f"{source}:{result.device_launches[0]}", NEEDS_GPU)
    # After the GPU-only features: a file that needs a GPU is not refused for them. Not again in the --racecheck
    # build: make test and the grader compile every file for the plain build too, which refuses it (0.4 s of
    # CPU a file, twice per first build otherwise).
    if not o.racecheck:
        nvcc_rules(o, source)
    display = str(source).replace("\\", "\\\\").replace('"', '\\"')
    text = f'#line 1 "{display}"\n' + result.text
    check_same_in_every_build(cxx, o, text, source, display)
    if o.keep:
        output.with_suffix(output.suffix + ".cpu.cpp").write_text(text)
    # DWARF 4: binutils' addr2line (the symbolizer without ASan) misreads the
    # file table GCC 12 writes in DWARF 5 for a source read from stdin.
    cmd = [*cxx.split(), f"-std={o.std}", "-x", "c++", "-gdwarf-4", "-O2", "-pthread", *_sanitizer_flags(o),
           *_error_limit(cxx), *_task_file_view(o, source), *o.host_flags, "-c", "-", "-o", str(output)]
    # Task files (compiled with AddressSanitizer, and again for the race checker: make test and grading compile
    # each twice, and again after each change), not the harness's own files, built once per build folder.
    if (o.asan or o.racecheck) and not _is_clang(cxx):
        cmd = host_prelude.with_precompiled(cmd, pch_folder(), INCLUDE_DIR, _COMPILER_ENV)
    done = subprocess.run(cmd, input=text, capture_output=True, text=True, errors="replace", env=_COMPILER_ENV)
    shown = _about_student_code(cxx, done.stderr, source, original, result.text) if done.stderr else ""
    if done.returncode != 0:
        raise _explain_compile_failure(done.stderr, str(source), shown)
    sys.stderr.write(shown)


def _quoted(text: str, line: int) -> str:
    """The student's line, quoted as the compilers quote a line a message is about."""
    lines = text.splitlines()
    return f"\n{line:5} | {lines[line - 1]}" if 0 < line <= len(lines) else ""


def preprocess(o: Options, source: Path, output: Path | None) -> int:
    """`compile -E`: the file through the preprocessor alone, with the headers and macros a compile gives it (the
    CPU backend's CUDA headers, its prelude, __CUDA_ARCH__ undefined), the compiler's messages passed through (its
    -H list of the files it read, with -Xcompiler -H). The file as written, not rewritten: what it includes is the
    same. Returns the compiler's exit status."""
    cxx = compiler(o)
    cmd = [*cxx.split(), f"-std={o.std}", "-x", "c++", "-E", *_task_file_view(o, source), *o.host_flags,
           str(source), "-o", str(output) if output else os.devnull]
    done = subprocess.run(cmd, capture_output=True, text=True, errors="replace", env=_COMPILER_ENV)
    sys.stderr.write(done.stderr)
    return done.returncode


def compile_cpp(o: Options, source: Path, output: Path) -> None:
    cxx = compiler(o)
    cmd = [*cxx.split(), f"-std={o.std}", "-gdwarf-4", "-O2", "-pthread", *_sanitizer_flags(o), *_error_limit(cxx),
           "-DCUDACPU_BACKEND=1", "-isystem", str(INCLUDE_DIR), *_safe_preprocessor_flags(o), *o.host_flags, "-c",
           str(source), "-o", str(output)]
    done = subprocess.run(cmd, capture_output=True, text=True, errors="replace", env=_COMPILER_ENV)
    if done.stderr and done.returncode == 0:
        sys.stderr.write(done.stderr)
    if done.returncode != 0:
        raise _explain_compile_failure(done.stderr, str(source))


def runtime_library(o: Options) -> Path:
    """The runtime library, built with make if it is not there yet."""
    lib = Path(o.runtime or os.environ.get("CUDACPU_RUNTIME") or DEFAULT_RUNTIME)
    if lib.exists() and not o.runtime:
        # Rebuild when a runtime source is newer than the library.
        sources = list((CPU_DIR / "src").iterdir()) + list(INCLUDE_DIR.rglob("*.h"))
        if all(s.stat().st_mtime <= lib.stat().st_mtime for s in sources):
            return lib
    if o.runtime:
        if not lib.exists():
            raise DriverError(f"cudacpu: the runtime library {lib} does not exist", USAGE)
        return lib
    cxx = compiler(o)
    done = subprocess.run(["make", "--no-print-directory", "-s", "-f", str(CPU_DIR / "cpu.mk"), f"CXX={cxx}",
                           f"CUDACPU_BUILD={lib.parent}", "cudacpu-lib"], capture_output=True, text=True)
    if done.returncode != 0 or not lib.exists():
        raise DriverError(done.stdout + done.stderr + "\ncudacpu: could not build the runtime library", COMPILE_ERROR)
    return lib


def runtime_dependencies(lib: Path) -> list[str]:
    """What the runtime library needs linked after it: Boost.Context's library, as cpu.mk found it and wrote
    beside the library (nothing where the fibers switch with <ucontext.h>)."""
    listed = lib.with_suffix(".link")
    return listed.read_text().split() if listed.exists() else []


# The AddressSanitizer hooks the runtime declares weak: ELF leaves an undefined weak symbol null, Apple's
# linker wants to be told that each may stay undefined.
_WEAK_DECLARATION = re.compile(r"(\w+)\([^;]*\)\s*__attribute__\(\(weak\)\);")


def _platform_link_flags() -> list[str]:
    if sys.platform != "darwin":
        return []
    hooks = _WEAK_DECLARATION.findall((CPU_DIR / "src" / "sanitizer_hooks.h").read_text())
    return [f"-Wl,-U,_{name}" for name in hooks]


def link(o: Options, inputs: list[str], output: Path) -> None:
    cxx = compiler(o)
    lib = runtime_library(o)
    cmd = [*cxx.split(), "-o", str(output), *inputs, str(lib), *runtime_dependencies(lib), "-pthread",
           *_sanitizer_flags(o, linking=True), *_platform_link_flags(), *o.host_flags, *o.link_flags]
    done = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    if done.returncode != 0:
        raise DriverError(done.stderr.rstrip() + f"\ncudacpu: linking {output} failed", COMPILE_ERROR)
