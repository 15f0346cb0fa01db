#!/usr/bin/env python3
"""cudacpu.py — compile CUDA .cu files for the CPU backend (no GPU, no CUDA toolkit).

    cudacpu.py compile [flags] -c kernels/add.cu -o build/add.o   a .cu (or .cpp) file to an object
    cudacpu.py compile [flags] -E kernels/add.cu [-o out.ii]      the preprocessor alone (-Xcompiler -H: what it read)
    cudacpu.py link -o program a.o b.o [-lfoo]                    link with the CPU runtime
    cudacpu.py scan [flags] kernels/matmul_fast.cu                only check what the file uses
    cudacpu.py rewrite kernels/add.cu                             print the C++ the file becomes
    cudacpu.py check [flags] kernels/*.cu                         only the nvcc-rules check (needs clang)

`compile` first reads the file as the GPU compiler would (__CUDA_ARCH__ = 900)
and stops with "needs a GPU: uses inline PTX at file.cu:LINE" (exit 3) if it
uses something the CPU cannot run; then clang's CUDA front end checks it
against nvcc's rules (a __host__ function called from a kernel...; skipped,
once said, without clang: driver/frontend.py); then it rewrites kernel launches and
__shared__ variables (line numbers unchanged) and compiles with the host C++
compiler ($CXX, default g++; clang++ works too) and AddressSanitizer.

Flags: nvcc's usual ones (-I -D -U -O -g -std= -Xcompiler -Xlinker -l -L; GPU
ones such as -arch, -gencode, -lineinfo are ignored), plus
    --no-asan        compile without AddressSanitizer (faster, no out-of-bounds reports)
    --racecheck      report data races instead (slow: for small cases; no ASan); also to link
    --cxx=COMPILER   the host compiler (default $CXX or g++)
    --runtime=LIB    link with this libcudacpu.a (default: built on demand in starter/build/cpu)
    --keep           also write the rewritten source next to the object (OBJECT.cpu.cpp)
Environment: CUDACPU_ASAN=0 is --no-asan.

Exit status: 0 done, 1 the compiler failed (its messages are shown), 2 bad
command line, 3 the file needs a GPU, 70 a bug in the driver itself.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from driver import flags, frontend, toolchain  # noqa: E402
from driver.rewrite import RewriteError, rewrite  # noqa: E402
from driver.toolchain import DriverError  # noqa: E402

COMMANDS = ("compile", "link", "scan", "rewrite", "check")


def _options(args: list[str]) -> flags.Options:
    o = flags.parse(args)
    if os.environ.get("CUDACPU_ASAN") == "0":
        o.asan = False
    return o


def _existing(path: str) -> Path:
    p = Path(path)
    if not p.is_file():
        raise DriverError(f"cudacpu: no such file: {path}", toolchain.USAGE)
    return p


def cmd_compile(args: list[str]) -> None:
    o = _options(args)
    if len(o.inputs) != 1:
        raise DriverError("cudacpu: compile takes exactly one source file (e.g. compile -c kernels/add.cu -o add.o)",
                          toolchain.USAGE)
    source = _existing(o.inputs[0])
    if o.preprocess_only:
        sys.exit(toolchain.preprocess(o, source, Path(o.output) if o.output else None))
    if not o.compile_only:
        raise DriverError("cudacpu: compile needs -c (link objects with `cudacpu.py link`)", toolchain.USAGE)
    output = Path(o.output) if o.output else source.with_suffix(".o")
    if output.parent and not output.parent.exists():
        output.parent.mkdir(parents=True, exist_ok=True)
    if source.suffix == ".cu":
        toolchain.compile_cu(o, source, output)
    elif source.suffix in (".cpp", ".cc", ".cxx", ".C"):
        toolchain.compile_cpp(o, source, output)
    else:
        raise DriverError(f"cudacpu: {source} is neither a .cu nor a .cpp file", toolchain.USAGE)


def cmd_link(args: list[str]) -> None:
    o = _options(args)
    if not o.output:
        raise DriverError("cudacpu: link needs -o PROGRAM", toolchain.USAGE)
    if not o.inputs:
        raise DriverError("cudacpu: link needs object files", toolchain.USAGE)
    for i in o.inputs:
        _existing(i)
    toolchain.link(o, o.inputs, Path(o.output))


def cmd_scan(args: list[str]) -> None:
    o = _options(args)
    if not o.inputs:
        raise DriverError("cudacpu: scan needs a .cu file", toolchain.USAGE)
    for i in o.inputs:
        toolchain.scan_file(o, _existing(i))
    print("the CPU backend can run " + ", ".join(o.inputs))


def cmd_check(args: list[str]) -> None:
    """Every file's errors, then the exit status of a compile error if any file has one."""
    o = _options(args)
    if not o.inputs:
        raise DriverError("cudacpu: check needs .cu files", toolchain.USAGE)
    clang = frontend.find_clang()
    if clang is None:
        raise DriverError(f"cudacpu: check needs clang: {frontend.INSTALL_HINT}", toolchain.USAGE)
    sources = [_existing(i) for i in o.inputs]
    flags = toolchain._safe_preprocessor_flags(o)
    # Imported here: it costs 9 ms (logging with it) of every compile's start, and only `check` uses it.
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = list(pool.map(lambda s: frontend.check(clang, s, str(s), flags, o.std), sources))
    failed = [str(s) for s, errors in zip(sources, results) if errors]
    for errors in results:
        for e in errors:
            print(e, file=sys.stderr)
    if failed:
        raise DriverError(f"nvcc would refuse {', '.join(failed)}", toolchain.COMPILE_ERROR)
    print("nvcc's rules: " + ", ".join(o.inputs) + " clean")


def cmd_rewrite(args: list[str]) -> None:
    if len(args) != 1:
        raise DriverError("cudacpu: rewrite takes one .cu file", toolchain.USAGE)
    source = _existing(args[0])
    try:
        sys.stdout.write(rewrite(source.read_text(errors="replace")).text)
    except RewriteError as e:
        raise DriverError(f"{source}:{e.line}: error: {e}", toolchain.COMPILE_ERROR) from None


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__.strip())
        return 0 if argv else toolchain.USAGE
    command, args = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"cudacpu: unknown command '{command}'; use one of {', '.join(COMMANDS)} (--help explains them)",
              file=sys.stderr)
        return toolchain.USAGE
    try:
        {"compile": cmd_compile, "link": cmd_link, "scan": cmd_scan, "rewrite": cmd_rewrite,
         "check": cmd_check}[command](args)
    except flags.UsageError as e:
        print(f"cudacpu: {e}", file=sys.stderr)
        return toolchain.USAGE
    except DriverError as e:
        print(str(e), file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        return 130
    except OSError as e:
        print(f"cudacpu: {e.strerror}: {e.filename}", file=sys.stderr)
        return toolchain.USAGE
    except Exception as e:  # a bug of the driver's: one line, not a traceback (CUDACPU_DEBUG=1 shows it)
        if os.environ.get("CUDACPU_DEBUG"):
            raise
        print(f"cudacpu: internal error ({type(e).__name__}: {e}); please report it with the file you compiled",
              file=sys.stderr)
        return 70
    return toolchain.OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
