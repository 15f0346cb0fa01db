"""The command line of `cudacpu.py compile|link|scan`: nvcc's common flags,
so that a Makefile written for nvcc can call the driver instead.

GPU-only flags (-arch, -gencode, -lineinfo, -Xptxas, --use_fast_math, ...)
are accepted and ignored; -Xcompiler passes flags to the host compiler.
"""
from __future__ import annotations

from dataclasses import dataclass, field


class UsageError(ValueError):
    pass


# nvcc flags with no meaning on the CPU, each with how many arguments it takes.
_IGNORED_WITH_VALUE = {"-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code", "--gpu-code",
                       "-Xptxas", "--ptxas-options", "-ccbin", "--compiler-bindir", "-maxrregcount",
                       "--maxrregcount", "-Xnvlink", "-Xfatbin", "--default-stream", "-t", "--threads", "-x"}
_IGNORED = {"-lineinfo", "--generate-line-info", "--use_fast_math", "-use_fast_math", "--expt-relaxed-constexpr",
            "--expt-extended-lambda", "--extended-lambda", "-rdc=true", "-rdc=false", "-G", "--device-debug",
            "--resource-usage", "-dlto", "-cudart=static", "-cudart=shared", "--cudart=static", "-lcudart",
            "-lcuda", "-lcudadevrt", "-lcudart_static", "-dc", "-dw", "--keep", "-src-in-ptx"}
_IGNORED_PREFIXES = ("-arch=", "--gpu-architecture=", "-gencode=", "--generate-code=", "-code=", "-Xptxas=",
                     "--ptxas-options=", "-maxrregcount=", "--maxrregcount=", "-ccbin=", "--default-stream=",
                     "-rdc=", "--relocatable-device-code=", "-cudart=", "--cudart=", "-t=", "--threads=")


@dataclass
class Options:
    inputs: list[str] = field(default_factory=list)
    output: str | None = None
    compile_only: bool = False
    preprocess_only: bool = False  # -E: the preprocessor alone (what a file includes, with -Xcompiler -H)
    host_flags: list[str] = field(default_factory=list)      # for the compiler (-I, -D, -O2, -W...)
    preprocessor_flags: list[str] = field(default_factory=list)  # -I, -D, -U, -isystem, -include
    link_flags: list[str] = field(default_factory=list)       # -L, -l, -Wl,...
    std: str = "c++17"
    asan: bool = True
    racecheck: bool = False
    cxx: str | None = None
    runtime: str | None = None
    keep: bool = False


def _split_xcompiler(value: str) -> list[str]:
    return [v for v in value.split(",") if v]


def parse(args: list[str]) -> Options:
    o = Options()
    i = 0

    def value(flag: str) -> str:
        nonlocal i
        if i + 1 >= len(args):
            raise UsageError(f"{flag} needs a value")
        i += 1
        return args[i]

    while i < len(args):
        a = args[i]
        if a in _IGNORED or a.startswith(_IGNORED_PREFIXES):
            pass
        elif a in _IGNORED_WITH_VALUE:
            value(a)
        elif a == "-c":
            o.compile_only = True
        elif a == "-E":
            o.preprocess_only = True
        elif a == "-o":
            o.output = value(a)
        elif a in ("-I", "-D", "-U", "-isystem", "-include", "-iquote"):
            o.preprocessor_flags += [a, value(a)]
        elif a.startswith(("-I", "-D", "-U")) and len(a) > 2:
            o.preprocessor_flags.append(a)
        elif a.startswith("-std="):
            o.std = a.split("=", 1)[1]
        elif a in ("-std", "--std"):
            o.std = value(a)
        elif a in ("-Xcompiler", "--compiler-options"):
            o.host_flags += _split_xcompiler(value(a))
        elif a.startswith(("-Xcompiler=", "--compiler-options=")):
            o.host_flags += _split_xcompiler(a.split("=", 1)[1])
        elif a in ("-Xlinker", "--linker-options"):
            o.link_flags += ["-Wl," + v for v in _split_xcompiler(value(a))]
        elif a in ("-L", "-l"):
            o.link_flags += [a + value(a)]
        elif a.startswith(("-L", "-l")):
            o.link_flags.append(a)
        elif a.startswith("-Wl,") or a in ("-pthread", "-rdynamic"):
            o.link_flags.append(a)
        elif a.startswith(("-O", "-g", "-W", "-f", "-m")):
            o.host_flags.append(a)
        elif a in ("-MMD", "-MD", "-MP"):
            o.host_flags.append(a)
        elif a in ("-MF", "-MT", "-MQ"):
            o.host_flags += [a, value(a)]
        elif a == "--no-asan":
            o.asan = False
        elif a == "--racecheck":
            o.racecheck = True
        elif a == "--asan":
            o.asan = True
        elif a.startswith("--cxx="):
            o.cxx = a.split("=", 1)[1]
        elif a.startswith("--runtime="):
            o.runtime = a.split("=", 1)[1]
        elif a == "--keep":
            o.keep = True
        elif a.startswith("-"):
            raise UsageError(f"unknown option {a} (cudacpu.py --help lists the options)")
        else:
            o.inputs.append(a)
        i += 1
    if o.racecheck:
        o.asan = False  # the race checker's instrumentation and ASan's cannot share one build
    return o
