"""Judging a task file's object against the rules in force for its task.

Each broken rule gives a Finding whose message a student reads, e.g.
  matmul_fast.cu calls cublasSgemm_v2: library calls are not allowed in this
  task: write the kernels yourself (...) (rule: no-libraries)
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path

from grader.gate.objects import ObjectFacts
from grader.core.gate_policy import FileRules

# What <iostream>'s own static object (std::ios_base::Init, before GCC 13) refers to: the only
# code besides nvcc's registration that may run when the program starts.
IOSTREAM_INIT = {"std::__ioinit", "std::ios_base::Init::Init()", "std::ios_base::Init::~Init()", "__dso_handle",
                 "__cxa_atexit"}
# Names the C++ standard library owns (mangled): std::, its abbreviations (std::allocator,
# std::basic_string, std::string, std::istream, std::ostream, std::iostream) and __gnu_cxx::.
# A local static of such a function (_ZZ..., its guard _ZGVZ...) is the standard library's too.
STANDARD_LIBRARY = re.compile(r"_Z(?:T[IVST]|TT|GV)?Z?N?[rVKRO]*(?:St|S[abdios]|9__gnu_cxx)")
NVCC_DEVICE_STUB = "__device_stub__"
# A sanitizer's own module constructor and destructor, which the compiler adds to every object it instruments
# (the CPU backend's, built with AddressSanitizer): GCC names them _sub_I_00099_1 and _sub_D_00099_0, clang
# asan.module_ctor. Each registers the file's globals with the sanitizer and calls nothing of the file's own.
SANITIZER_STARTUP = re.compile(r"_sub_[ID]_00099_\d+|[at]san\.module_[cd]tor")
# AddressSanitizer brackets a file's dynamic initializers with these (naming the file by a string constant, .LC*).
ASAN_DYNAMIC_INIT = {"__asan_before_dynamic_init", "__asan_after_dynamic_init"}
# The globals AddressSanitizer defines beside each of the file's own (its one-definition-rule indicators).
SANITIZER_DEFINED = re.compile(r"__odr_asan[._].*")
SANITIZER_REGISTRATION = re.compile(r"__asan_(?:init|version_mismatch_check_v\d+|(?:un)?register_(?:elf_)?globals)"
                                    r"|__tsan_init")


@dataclass(frozen=True)
class Finding:
    file: str  # the task file, e.g. "matmul_fast.cu"
    rule: str
    what: str  # what the file does, e.g. "calls cublasSgemm_v2"
    description: str  # the rule's description, from the rubric
    enforced: bool = True  # False: the source pre-check saw it, the compiled code does not do it
    line: int | None = None  # where the pre-check saw it in the source
    source: str = ""  # that line of source

    @property
    def message(self) -> str:
        where = f" (line {self.line}: {self.source.strip()})" if self.line else ""
        return f"{self.file} {self.what}{where}: {self.description} (rule: {self.rule})"

    def to_json(self) -> dict:
        return {**asdict(self), "message": self.message}

    @classmethod
    def from_json(cls, data: dict) -> "Finding":
        return cls(**{k: v for k, v in data.items() if k != "message"})


@dataclass(frozen=True)
class Expected:
    """What a task file is expected to define, and what it must not, for the no-redefinition rule."""
    trusted: frozenset[str]  # mangled names the stubs and the solution define: launchers, the contract headers'
    taken: frozenset[str]  # names the harness or a linked library defines or uses
    foreign: frozenset[str] = frozenset()  # the other tasks' launchers (each task is judged by its own rules)
    interposable: frozenset[str] = frozenset()  # what the harness calls out of line in a shared library


def _finding(rules: FileRules, rule: str, what: str) -> Finding:
    return Finding(rules.file, rule, what, rules.rule(rule).description)


# glibc's checked copies of C library functions, which _FORTIFY_SOURCE (on by default in some compilers, e.g.
# Ubuntu's) calls in place of the function the source names: dprintf compiles to __dprintf_chk there.
FORTIFIED = re.compile(r"__(?!stack_)(\w+)_chk")


def as_written(name: str) -> str:
    """The function the source called, for a glibc checked copy of it (__dprintf_chk -> dprintf): the rules and
    the student's message are about what the file says, whichever compiler built it."""
    match = FORTIFIED.fullmatch(name.split("@", 1)[0])
    return match.group(1) if match else name


def check_symbols(facts: ObjectFacts, rules: FileRules) -> list[Finding]:
    out = []
    for where, names in (("calls", facts.undefined), ("uses in device code", facts.device_undefined)):
        for name in dict.fromkeys(as_written(n) for n in names):
            rule = rules.symbol_rule(name)
            if rule is not None:
                out.append(_finding(rules, rule, f"{where} {name}"))
    return out


def check_startup(facts: ObjectFacts, rules: FileRules) -> list[Finding]:
    if not rules.in_force("no-static-constructors"):
        return []
    out = []
    for entry in facts.startup:
        own = {r for r in entry.references if r not in ASAN_DYNAMIC_INIT and not r.startswith(".LC")}
        if entry.is_nvcc_registration or (own and own <= IOSTREAM_INIT) or is_sanitizer_registration(entry):
            continue
        if entry.function.startswith("_GLOBAL__sub_I_"):
            uses = sorted({r for r in entry.references if not r.startswith(("_GLOBAL", ".")) and r not in IOSTREAM_INIT
                           and r not in ASAN_DYNAMIC_INIT})
            what = ("runs code when the program starts (the constructor of a global object, or the computed value "
                    "of a global variable)")
            what += f", which uses {', '.join(uses[:6])}" if uses else ""
        elif entry.function.startswith("_GLOBAL__sub_D_") or entry.section.startswith((".fini", ".dtors")):
            what = f"runs code when the program ends: {entry.function}"
        else:
            what = f"runs code when the program starts: {entry.function}"
        out.append(_finding(rules, "no-static-constructors", what))
    for section in facts.startup_code:
        out.append(_finding(rules, "no-static-constructors", f"puts code in the {section} section, which runs by itself"))
    for d in facts.defined:
        if d.kind == "IFUNC":
            out.append(_finding(rules, "no-static-constructors",
                                f"defines {d.demangled} as an ifunc, whose resolver runs when the program loads"))
    return out


def is_sanitizer_registration(entry) -> bool:
    """The sanitizer's constructor or destructor: its compiler-given name, and references to the sanitizer's
    registration functions and the object's own data sections only."""
    calls = [r for r in entry.references if not r.startswith(".")]
    return (SANITIZER_STARTUP.fullmatch(entry.function) is not None and bool(calls)
            and all(SANITIZER_REGISTRATION.fullmatch(r) for r in calls))


def check_instructions(facts: ObjectFacts, rules: FileRules) -> list[Finding]:
    if not rules.in_force("no-syscalls"):
        return []
    where: dict[str, list[str]] = {}
    for insn, function in facts.instructions:
        where.setdefault(insn, []).append(function)
    return [_finding(rules, "no-syscalls", f"contains the instruction `{insn}` in host code "
                                           f"(in {', '.join(dict.fromkeys(functions))})")
            for insn, functions in where.items()]


def check_device_instructions(facts: ObjectFacts, rules: FileRules) -> list[Finding]:
    """Device instructions a rule forbids (tensor cores in a plain-FP32 task), each named with its functions."""
    where: dict[tuple[str, str], list[str]] = {}
    for kind, found in (("SASS", facts.sass), ("PTX", facts.ptx)):
        for mnemonic, function in found:
            rule = rules.device_instruction_rule(mnemonic, ptx=kind == "PTX")
            if rule is not None:
                where.setdefault((rule, mnemonic), []).append(function)
    out = []
    for (rule, mnemonic), functions in where.items():
        shown = ", ".join(list(dict.fromkeys(functions))[:3])
        out.append(_finding(rules, rule, f"uses the instruction {mnemonic} in device code (in {shown})"))
    return out[:8]


def check_definitions(facts: ObjectFacts, rules: FileRules, expected: Expected) -> list[Finding]:
    """Only the task's launchers, what the contract headers define, and the file's own names. The
    standard library's templates instantiated from its headers are the same code wherever they are
    instantiated, so those may coincide with the harness's."""
    if not rules.in_force("no-redefinition"):
        return []
    out = []
    for d in facts.defined:
        name = d.name.split("@", 1)[0]
        if name in expected.foreign:
            out.append(_finding(rules, "no-redefinition", f"defines {d.demangled}, which is another task's launcher"))
            continue
        if name in expected.interposable:  # COMDAT or not: the linker would bind the harness's calls to it
            out.append(_finding(rules, "no-redefinition",
                                f"defines {d.demangled}{' (an inline or template copy)' if d.comdat else ''}, which "
                                "the harness calls in a shared library: this copy would replace the library's "
                                "for the harness too"))
            continue
        if name in expected.trusted or name.startswith(NVCC_DEVICE_STUB) or SANITIZER_DEFINED.fullmatch(name):
            continue
        standard = STANDARD_LIBRARY.match(name) is not None
        if name in expected.taken and not (standard and d.comdat):
            what = f"defines {d.demangled}, which the harness or a library it links with already defines"
        elif standard and not d.comdat:
            what = f"defines {d.demangled} in the standard library's namespace"
        elif not name.startswith("_Z") and re.match(r"_[_A-Z]", name):
            what = f"defines {d.demangled}, a name reserved for the compiler and its libraries"
        else:
            continue
        out.append(_finding(rules, "no-redefinition", what))
    return out


def check_object(facts: ObjectFacts, rules: FileRules, expected: Expected) -> list[Finding]:
    out = check_symbols(facts, rules) + check_startup(facts, rules) + check_instructions(facts, rules)
    out += check_device_instructions(facts, rules)
    out += check_definitions(facts, rules, expected)
    if facts.executable_stack and rules.in_force("no-memory-mapping"):
        out.append(_finding(rules, "no-memory-mapping", "asks for an executable stack"))
    return _unique(out)


def listed_dependencies(depfile_text: str) -> list[str]:
    """The files a -MMD list names for its object: its first rule (-MP's empty rules for each header follow it)."""
    first = depfile_text.replace("\\\n", " ").split("\n", 1)[0]
    return first.partition(": ")[2].split()


def check_dependencies(depfile: Path, rules: FileRules, source: Path, project: list[Path],
                       system_roots: list[Path], cwd: Path) -> list[Finding]:
    """Every file the compiler read (its -MMD list) must be the task file, an assignment header, or
    a header of the toolchain: never the solution, another submission, or the harness's insides."""
    if not depfile.exists():
        return [_finding(rules, "includes", "left no list of the files its compilation read")]
    deps = listed_dependencies(depfile.read_text(errors="replace"))
    allowed = {p.resolve() for p in [source, *project]}
    roots = [r.resolve() for r in system_roots]
    out = []
    for dep in deps:
        path = (cwd / dep).resolve()
        if path in allowed or any(path.is_relative_to(root) for root in roots):
            continue
        out.append(_finding(rules, "includes", f"reads {dep} while it compiles"))
    return out


def _unique(findings: list[Finding]) -> list[Finding]:
    seen, out = set(), []
    for f in findings:
        if (f.rule, f.what) not in seen:
            seen.add((f.rule, f.what))
            out.append(f)
    return out
