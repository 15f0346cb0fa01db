"""What a compiled task file uses, defines and runs by itself: facts read from its object.

The facts are gathered once per object and judged in check.py, so the rules
(which change per task) never touch ELF.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from grader.gate import elf

# Sections whose entries the C runtime calls by itself, before main or at exit.
STARTUP_ARRAYS = (".init_array", ".preinit_array", ".ctors", ".fini_array", ".dtors")
STARTUP_CODE = (".init", ".fini")
NVCC_REGISTRATION = "__sti____cudaRegisterAll()"  # nvcc's constructor: registers the file's kernels


@dataclass(frozen=True)
class Defined:
    name: str  # as in the object (mangled)
    demangled: str
    weak: bool
    kind: str  # FUNC, OBJECT, IFUNC, ...
    comdat: bool  # in a COMDAT group: an inline function or template instance from a header


@dataclass(frozen=True)
class Startup:
    """A function the object asks to run by itself (a static constructor or destructor)."""
    section: str
    function: str  # demangled
    references: tuple[str, ...]  # demangled names its code refers to

    @property
    def is_nvcc_registration(self) -> bool:
        return self.function == NVCC_REGISTRATION


@dataclass
class ObjectFacts:
    path: Path
    undefined: list[str] = field(default_factory=list)  # host symbols used, demangled
    device_undefined: list[str] = field(default_factory=list)
    device_unreadable: int = 0  # device images that could not be read (compressed)
    defined: list[Defined] = field(default_factory=list)  # non-local symbols the object defines
    startup: list[Startup] = field(default_factory=list)
    startup_code: list[str] = field(default_factory=list)  # .init/.fini sections holding code
    instructions: list[tuple[str, str]] = field(default_factory=list)  # (instruction, function) matches
    executable_stack: bool = False
    # Device code, read by cuobjdump: (mnemonic, function) of every SASS instruction matching the gate's
    # patterns, and of every PTX one.
    sass: list[tuple[str, str]] = field(default_factory=list)
    ptx: list[tuple[str, str]] = field(default_factory=list)


def demangle(names: list[str]) -> dict[str, str]:
    """name -> demangled name, in one c++filt call."""
    unique = sorted(set(names))
    if not unique:
        return {}
    out = subprocess.run(["c++filt"], input="\n".join(unique) + "\n", capture_output=True, text=True,
                         check=True, timeout=120).stdout.splitlines()
    if len(out) != len(unique):
        raise RuntimeError("c++filt returned a different number of names than it was given")
    return dict(zip(unique, out))


def _comdat_sections(obj: elf.Elf) -> set[int]:
    """Indices of sections that belong to a COMDAT group (SHT_GROUP lists its members)."""
    members = set()
    for sec in obj.sections:
        if sec.type == 17:  # SHT_GROUP: a flag word, then member section indices
            data = obj.section_bytes(sec)
            members.update(int.from_bytes(data[i:i + 4], "little") for i in range(4, len(data), 4))
    return members


def _references(obj: elf.Elf, relocations: list[elf.Relocation], fn: elf.Symbol) -> list[str]:
    return [obj.target(r) for r in relocations
            if r.section == fn.section and fn.value <= r.offset < fn.value + max(fn.size, 1)]


def _startup(obj: elf.Elf, relocations: list[elf.Relocation]) -> tuple[list[tuple[str, str, list[str]]], list[str]]:
    entries, code = [], []
    for sec in obj.sections:
        if sec.name in STARTUP_CODE or any(sec.name.startswith(p + ".") for p in STARTUP_CODE):
            if sec.size:
                code.append(sec.name)
        if not any(sec.name == p or sec.name.startswith(p + ".") for p in STARTUP_ARRAYS):
            continue
        patched = [r for r in relocations if r.section == sec.index]
        if not patched and sec.size:  # an entry without a relocation: an absolute address
            entries.append((sec.name, f"an absolute address in {sec.name}", []))
        for rel in patched:
            sym = rel.symbol
            fn = sym if sym.type != elf.STT_SECTION else obj.function_at(sym.section, rel.points_at)
            if fn is None:
                entries.append((sec.name, obj.target(rel), []))
            else:
                entries.append((sec.name, fn.name, _references(obj, relocations, fn) if fn.defined else []))
    return entries, code


def scan_instructions(path: Path, patterns: tuple[str, ...]) -> list[tuple[str, str]]:
    """(instruction, function) for each host instruction matching one of the patterns, e.g. `syscall`
    or `int $0x80`, in every executable section of the object (objdump's linear disassembly)."""
    if not patterns:
        return []
    wanted = re.compile(r"(?:^|\s)(?:" + "|".join(re.escape(" ".join(p.split())) for p in patterns) + r")(?:$|\s)")
    out = subprocess.run(["objdump", "-d", "-C", "-w", "--no-show-raw-insn", str(path)], capture_output=True,
                         text=True, errors="replace", check=True, timeout=300).stdout
    found, function = [], "?"
    for line in out.splitlines():
        header = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if header:
            function = header.group(1)
            continue
        insn = re.match(r"^\s*[0-9a-f]+:\s+(.*)$", line)
        if insn:
            text = " ".join(insn.group(1).split("#", 1)[0].split())
            if wanted.search(text):
                found.append((text, function))
    return found


def find_cuobjdump() -> str | None:
    """cuobjdump (with nvdisasm beside it, which it needs for SASS): on PATH, in the toolkit of `nvcc`, or
    from PyPI's nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm wheels (grader/requirements.txt)."""
    candidates = [shutil.which("cuobjdump")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(str(Path(nvcc).resolve().parent / "cuobjdump"))
    try:
        import nvidia  # the wheels' namespace package
        for root in getattr(nvidia, "__path__", []):
            candidates += sorted(str(p) for p in Path(root).glob("cu*/bin/cuobjdump"))
            candidates.append(str(Path(root) / "cuda_cuobjdump" / "bin" / "cuobjdump"))
    except ImportError:
        pass
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK) and \
                ((Path(c).parent / "nvdisasm").exists() or shutil.which("nvdisasm")):
            return c
    return None


def kernel_entries(path: Path, cuobjdump: str) -> Counter:
    """The kernels (STO_ENTRY functions) of an object, library or program, by their mangled names, each counted
    once for every device image that defines it."""
    done = subprocess.run([cuobjdump, "-symbols", str(path)], capture_output=True, text=True, errors="replace",
                          timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"cuobjdump -symbols {path.name}: {done.stderr.strip()[:300] or done.returncode}")
    return Counter(re.findall(r"STO_ENTRY\s+(\S+)", done.stdout))


# SASS that may touch shared memory (its loads, stores, atomics and copies, and the generic LD/ST, which may
# address it), or that is an atomic anywhere: racecheck looks only at shared memory, so a task file with none of
# these has nothing for it (grader/grading/tools.py). Read by the build gate from every GPU object.
SHARED_OR_ATOMIC_SASS = ("LDS*", "STS*", "LDSM*", "STSM*", "ATOMS*", "LDGSTS*", "LD", "LD.*", "ST", "ST.*",
                         "ATOM", "ATOM.*", "ATOMG*", "RED*", "UBLKCP*", "UTMA*")


def may_touch_shared_memory(facts: ObjectFacts) -> bool:
    """Whether the object's device code may touch shared memory or use atomics (a device image that could not
    be read may)."""
    from grader.core.gate_policy import glob_regex
    wanted = glob_regex(SHARED_OR_ATOMIC_SASS)
    return bool(facts.device_unreadable) or any(wanted.match(m) for m, _ in facts.sass)


_SASS_LINE = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)")
_PTX_INSN = re.compile(r"^\s*(?:@!?%?\w+\s+)?([a-z][a-z0-9_]*(?:\.[a-z0-9_:]+)+)")


def scan_device_code(path: Path, cuobjdump: str, sass_patterns: tuple[str, ...],
                     ptx_patterns: tuple[str, ...]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(mnemonic, mangled function) of each SASS and PTX instruction in the object's fat binary that matches a
    pattern (globs), read by cuobjdump (which also reads compressed device code)."""
    from grader.core.gate_policy import glob_regex
    env = {**os.environ, "PATH": f"{Path(cuobjdump).parent}:{os.environ.get('PATH', '')}"}

    def dump(flag: str) -> str:
        done = subprocess.run([cuobjdump, flag, str(path)], capture_output=True, text=True, errors="replace",
                              timeout=300, env=env)
        if done.returncode != 0 and "does not contain" not in done.stderr:
            raise RuntimeError(f"cuobjdump {flag} failed: {done.stderr.strip()[:300]}")
        return done.stdout
    sass, ptx = [], []
    wanted = glob_regex(sass_patterns)
    if wanted is not None:
        function = "?"
        for line in dump("-sass").splitlines():
            header = re.match(r"^\s*Function\s*:\s*(\S+)", line)
            if header:
                function = header.group(1)
                continue
            insn = _SASS_LINE.match(line)
            if insn and wanted.match(insn.group(1)):
                sass.append((insn.group(1), function))
    wanted = glob_regex(ptx_patterns)
    if wanted is not None:
        function = "?"
        for line in dump("-ptx").splitlines():
            header = re.match(r"^\s*(?:\.visible\s+|\.weak\s+)?\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)", line)
            if header:
                function = header.group(1)
                continue
            insn = _PTX_INSN.match(line)
            if insn and wanted.match(insn.group(1)):
                ptx.append((insn.group(1), function))
    return sass, ptx


def read_object(path: Path, instruction_patterns: tuple[str, ...] = (), sass_patterns: tuple[str, ...] = (),
                ptx_patterns: tuple[str, ...] = (), cuobjdump: str | None = None) -> ObjectFacts:
    obj = elf.read(path)
    relocations = obj.relocations()
    facts = ObjectFacts(Path(path))
    undefined = sorted({s.name for s in obj.symbols if not s.defined and s.name})
    comdat = _comdat_sections(obj)
    defined = [s for s in obj.symbols if s.defined and not s.local and s.name]
    entries, facts.startup_code = _startup(obj, relocations)
    devices, facts.device_unreadable = elf.device_images(obj)
    device_undefined = sorted({s.name for d in devices for s in d.symbols if not s.defined and s.name})
    names = demangle(undefined + [s.name for s in defined] + device_undefined +
                     [n for _, fn, refs in entries for n in [fn, *refs]])
    facts.undefined = [names[n] for n in undefined]
    facts.device_undefined = [names[n] for n in device_undefined]
    facts.defined = [Defined(s.name, names[s.name], s.bind == 2, elf.SYMBOL_TYPES.get(s.type, str(s.type)),
                             s.section in comdat) for s in defined]
    facts.startup = [Startup(sec, names[fn], tuple(names[r] for r in refs)) for sec, fn, refs in entries]
    stack = next((s for s in obj.sections if s.name == ".note.GNU-stack"), None)
    facts.executable_stack = stack is None or stack.executable
    facts.instructions = scan_instructions(path, instruction_patterns)
    if (sass_patterns or ptx_patterns) and any(sec.name == ".nv_fatbin" for sec in obj.sections):
        if cuobjdump is None:
            raise RuntimeError("cuobjdump is not installed: device code cannot be inspected")
        sass, ptx = scan_device_code(path, cuobjdump, sass_patterns, ptx_patterns)
        named = demangle([fn for _, fn in sass + ptx])
        facts.sass = [(m, named.get(fn, fn)) for m, fn in sass]
        facts.ptx = [(m, named.get(fn, fn)) for m, fn in ptx]
    return facts
