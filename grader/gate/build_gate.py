"""The build gate over one submission's kernels folder, between compiling and linking.

    screen(): the source pre-check (starter/tools/precheck.py, the students' own) on every task
              file; a file with a forbidden #include is replaced by its stub before it is compiled,
              so the compiler never reads what it names.
    inspect(): each compiled object against the rules (check.py); a file that breaks one is
              replaced by its stub and its object removed, so the link that follows builds the stub.

The objects are the authority: source findings that the object does not confirm are kept as
notes (enforced=False), and object findings borrow the pre-check's line numbers when it saw them.
"""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from grader.shared import student_tools
from typing import Callable

from grader.gate.check import Expected, Finding, check_dependencies, check_object
from grader.gate.elf import ElfError
from grader.gate.objects import SHARED_OR_ATOMIC_SASS, find_cuobjdump, may_touch_shared_memory, read_object
from grader.core.gate_policy import GatePolicy
from grader.gate.report import GateReport

REPO = Path(__file__).resolve().parents[2]
PRECHECK = REPO / "starter" / "tools" / "precheck.py"
SYSTEM_LIBRARIES = ("libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1")
CUDA_LIBRARIES = ("libcudart_static.a", "libcublas.so", "libcublasLt.so")
# The CPU backend's programs also link its runtime (built beside the harness's library) and AddressSanitizer's.
CPU_RUNTIME = Path("lib") / "cpu" / "libcudacpu.a"
SANITIZER_LIBRARIES = ("libasan.so",)


class GateError(RuntimeError):
    """The gate itself cannot work (a tool or library missing): the grader's problem, not the student's."""


def load_precheck(path: Path = PRECHECK):
    """The students' pre-check (stdlib only, shipped in starter/tools), imported from the repository."""
    return student_tools.load("precheck", path)


def _names(args: list[str]) -> set[str]:
    """Symbol names nm lists (POSIX format), versions stripped."""
    out = subprocess.run(["nm", "-P", *args], capture_output=True, text=True, errors="replace", timeout=300)
    if out.returncode != 0:
        raise GateError(f"nm {' '.join(args)} failed: {out.stderr.strip()[:500]}")
    return {line.split()[0].split("@", 1)[0] for line in out.stdout.splitlines()
            if line.strip() and not line.rstrip().endswith(":")}


def cuda_home() -> Path:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise GateError("nvcc is not on PATH")
    return Path(nvcc).resolve().parents[1]


def compiler_library(name: str, cxx: str = "g++") -> Path | None:
    """Where the C++ compiler finds a library (None when it does not: it prints the bare name back)."""
    try:
        path = subprocess.run([*cxx.split(), f"-print-file-name={name}"], capture_output=True, text=True,
                              timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(path).resolve() if path and Path(path).is_absolute() and Path(path).exists() else None


def exports(libraries: list[Path], shared_only: bool = False) -> set[str]:
    """What these libraries define (a static one: every member's global symbols; a shared one: its dynamic
    exports). shared_only: the shared ones alone."""
    names = set()
    for path in libraries:
        if shared_only and path.suffix == ".a":
            continue
        names |= _names(["-g", "--defined-only", str(path)] if path.suffix == ".a" else
                        ["-D", "--defined-only", str(path)])
    return names


@dataclass(frozen=True)
class Target:
    """What a backend's task objects are made of and linked with: the libraries whose names a task file must not
    define again, where the toolchain's own headers live (files a compilation may read besides the task file and
    the assignment's headers), and whether its objects carry device code to read back."""
    name: str
    libraries: tuple[Path, ...]
    system_roots: tuple[Path, ...]
    device_code: bool

    @staticmethod
    def gpu() -> "Target":
        home = cuda_home()
        found = []
        for name in CUDA_LIBRARIES:
            hits = [p for p in (home / "lib64" / name, *home.glob(f"targets/*/lib/{name}")) if p.exists()]
            if not hits:
                raise GateError(f"{name} is not in {home}: the gate checks that a task file does not redefine its "
                                "symbols")
            found.append(hits[0])
        roots = [(home / "include").resolve(), *[p.resolve() for p in home.glob("targets/*/include")],
                 Path("/usr/include"), Path("/usr/lib/gcc")]
        return Target("gpu", (*found, *_system_libraries("g++")), tuple(roots), device_code=True)

    @staticmethod
    def cpu(pristine: Path, build_dir: Path, cxx: str = "") -> "Target":
        """The CPU backend (starter/cpu/): its programs link its runtime and AddressSanitizer's besides the C and
        C++ libraries; its task files read its own CUDA headers and the C++ compiler's. No CUDA toolkit needed."""
        cxx = cxx or os.environ.get("CXX") or "g++"
        runtime = Path(build_dir) / CPU_RUNTIME
        if not runtime.is_file():
            raise GateError(f"the CPU backend's runtime {runtime} is not built")
        sanitizers = [p for p in (compiler_library(n, cxx) for n in SANITIZER_LIBRARIES) if p is not None]
        roots = (Path(pristine) / "cpu" / "include", *search_dirs(cxx), Path("/usr/include"))
        return Target("cpu", (runtime, *sanitizers, *_system_libraries(cxx)), tuple(p.resolve() for p in roots),
                      device_code=False)


def _system_libraries(cxx: str) -> list[Path]:
    found = []
    for name in SYSTEM_LIBRARIES:
        path = compiler_library(name, cxx)
        if path is None:
            raise GateError(f"the compiler {cxx} cannot find {name}")
        found.append(path)
    return found


def search_dirs(cxx: str) -> list[Path]:
    """The folders the C++ compiler looks for <headers> in, as it lists them (`-E -v`)."""
    try:
        done = subprocess.run([*cxx.split(), "-x", "c++", "-E", "-v", "-"], input="", capture_output=True, text=True,
                              timeout=60, env={**os.environ, "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError) as e:
        raise GateError(f"the compiler {cxx} cannot run here ({e})") from None
    lines = done.stderr.splitlines()
    try:
        start = lines.index("#include <...> search starts here:")
    except ValueError:
        raise GateError(f"{cxx} -E -v did not list its header folders") from None
    dirs = []
    for line in lines[start + 1:]:
        if not line.startswith(" "):
            break
        dirs.append(Path(line.strip().split(" (", 1)[0]).resolve())
    return dirs


class BuildGate:
    """Set up once per grading run: the stubs' and the solution's objects (what a task file is
    expected to define), and what the harness and the libraries define (what it must not)."""

    def __init__(self, pristine: Path, build_dir: Path, policy: GatePolicy,
                 compile_objects: Callable[[Path, str], None], solution: Path = REPO / "solution" / "kernels",
                 target: Target | None = None):
        self.pristine, self.build_dir, self.policy = Path(pristine), Path(build_dir), policy
        self.target = target or Target.gpu()
        self.precheck = load_precheck()
        self.rules_json = policy.to_json()
        for kernels, tag in ((self.pristine / "kernels", "stubs"), (Path(solution), "solution")):
            compile_objects(kernels, tag)
        lib = self.build_dir / "lib"
        harness_objects = [str(lib / "libharness.a"), str(lib / "harness" / "main.cpp.o")]
        harness = _names(["-g", *harness_objects])
        libraries = list(self.target.libraries)
        self.taken = frozenset(harness | exports(libraries))
        # What the harness calls out of line in a shared library (libstdc++'s explicitly instantiated string and
        # stream members, libc): a definition of one in a task file, even a COMDAT copy from an explicit
        # specialization, is what the static linker binds the harness's calls to. An honest file compiled with
        # the same headers and flags leaves these undefined too.
        called = _names(["-g", "--undefined-only", *harness_objects])
        self.interposable = frozenset(called & exports(libraries, shared_only=True))
        trusted, stubs = set(), {}
        for tag in ("stubs", "solution"):
            for obj in sorted((self.build_dir / tag / "kernels").glob("*.o")):
                names = {d.name for d in read_object(obj).defined}
                trusted |= names
                if tag == "stubs":
                    stubs[obj.stem + ".cu"] = names
        self.trusted = frozenset(trusted)
        # A task's launchers: what its stub defines and no other stub does (the rest comes from headers).
        self.launchers = {file: names - set().union(*(n for f, n in stubs.items() if f != file))
                          for file, names in stubs.items()}
        self.system_roots = list(self.target.system_roots)
        self._instructions = policy.rules["no-syscalls"].instructions
        device = self.target.device_code
        self._sass = tuple(p for rule in policy.rules.values() for p in rule.sass) if device else ()
        self._ptx = tuple(p for rule in policy.rules.values() for p in rule.ptx) if device else ()
        self.cuobjdump = find_cuobjdump() if device else None
        if (self._sass or self._ptx) and self.cuobjdump is None:
            raise GateError("cuobjdump (and nvdisasm) are not installed: the gate reads device code with them "
                            "(they come with the CUDA toolkit, or pip install -r grader/requirements.txt)")
        if self.cuobjdump is not None:  # which files racecheck has something to look at in (GateReport)
            self._sass += SHARED_OR_ATOMIC_SASS
        self._warned_compressed = False

    def stub(self, file: str) -> bytes:
        return (self.pristine / "kernels" / file).read_bytes()

    def screen(self, kernels: Path, files: dict[str, bytes], listings: Path | None = None) -> list[Finding]:
        """The pre-check on each of the submission's task files, what each includes decided by what the compiler
        read (tools/includes.py's lists in `listings`, made in the sandbox; a file without one is refused: what
        it includes could not be read); those with a forbidden #include are replaced by their stubs now, before
        anything is compiled, so no compiler message ever quotes what they name."""
        findings = []
        for name, data in sorted(files.items()):
            rules = self.policy.for_file(name)
            if rules is None:
                continue
            listing = None
            if listings is not None:
                try:
                    listing = self.precheck.read_listing(listings, name)
                except (OSError, ValueError):
                    listing = {"error": "no list of what it includes was made"}
            problems = self.precheck.check_text(data.decode("utf-8", "replace"), name, self.rules_json,
                                                listing=listing)
            stop = False
            for p in problems:
                include = p.rule == "includes" or p.what.startswith("#")
                stop |= include
                findings.append(Finding(name, p.rule, p.what, p.description, include, p.line, p.text.strip()))
            if stop:
                (kernels / name).write_bytes(self.stub(name))
        return findings

    def inspect(self, kernels: Path, objects: Path, files: dict[str, bytes], screened: list[Finding]) -> GateReport:
        """Each compiled task file against its rules; those that break one are replaced by their stubs
        and their objects removed, so the link builds the stubs instead."""
        stopped = {f.file for f in screened if f.enforced}
        # A file stopped before compiling shows every problem the pre-check found in it.
        findings = [Finding(f.file, f.rule, f.what, f.description, True, f.line, f.source)
                    for f in screened if f.file in stopped]
        todo = [name for name in sorted(files) if self.policy.for_file(name) is not None and name not in stopped
                and (objects / (Path(name).stem + ".o")).exists()]
        read = self._read_all({name: objects / (Path(name).stem + ".o") for name in todo})
        no_shared_memory: set[str] = set()
        for name in sorted(files):
            rules = self.policy.for_file(name)
            if rules is None or name in stopped:
                continue
            obj, dep = objects / (Path(name).stem + ".o"), objects / (Path(name).stem + ".d")
            if name not in read:
                # It did not compile: nothing of it can be linked, and the link's report gives the compiler's
                # own message (build_error), not a rule it did not break.
                continue
            try:
                facts = read[name]()
            except (ElfError, struct.error, IndexError, ValueError, RuntimeError, OSError,
                    subprocess.SubprocessError) as e:  # fail closed: what cannot be read is not linked
                findings.append(Finding(name, "only-listed-calls", f"could not be inspected ({e})",
                                        rules.rule("only-listed-calls").description))
                (kernels / name).write_bytes(self.stub(name))
                obj.unlink(missing_ok=True)
                dep.unlink(missing_ok=True)
                continue
            if facts.device_unreadable and not self._warned_compressed and self.cuobjdump is None:
                # This toolkit compresses device code: say so once rather than judge what cannot be read.
                # (With whole-program compilation, device code can reach only printf, assert and malloc.)
                self._warned_compressed = True
                print(f"build gate: warning: {obj.name}'s device code is compressed in its fat binary, so device-side "
                      "symbols are not inspected (host code is); nvcc --compress-mode=none would allow it",
                      file=sys.stderr)
            if self.cuobjdump is not None and not may_touch_shared_memory(facts):
                no_shared_memory.add(name)
            expected = Expected(self.trusted, self.taken,
                                frozenset().union(*(n for f, n in self.launchers.items() if f != name)),
                                self.interposable)
            found = check_object(facts, rules, expected)
            found += check_dependencies(dep, rules, kernels / name,
                                        [self.pristine / "include" / h for h in self.policy.project_headers],
                                        self.system_roots, self.pristine)
            notes = [f for f in screened if f.file == name]
            findings += _with_lines(found, notes)
            if found:
                (kernels / name).write_bytes(self.stub(name))
                obj.unlink(missing_ok=True)
                dep.unlink(missing_ok=True)
            elif not self.seal(obj, name, facts):  # fail closed: an object that cannot be sealed is not linked
                findings.append(Finding(name, "no-redefinition", "could not be sealed (objcopy failed on its object)",
                                        rules.rule("no-redefinition").description))
                (kernels / name).write_bytes(self.stub(name))
                obj.unlink(missing_ok=True)
                dep.unlink(missing_ok=True)
        return GateReport(findings, frozenset(no_shared_memory - {f.file for f in findings if f.enforced}))

    def _read_all(self, objects: dict[str, Path]) -> dict:
        """Each object read at once (cuobjdump and the disassembly of a GPU object take about 0.6 s each, one after
        another 4.4 s of a 7-file build on an H200's host): task file name -> a call that returns its facts or
        raises what reading it raised."""
        def read(obj: Path):
            try:
                facts = read_object(obj, self._instructions, self._sass, self._ptx, self.cuobjdump)
                return lambda: facts
            except Exception as e:  # noqa: BLE001 - raised again, in the caller's order, where it is judged
                def again(e=e):
                    raise e
                return again
        if not objects:
            return {}
        with ThreadPoolExecutor(max_workers=min(len(objects), os.cpu_count() or 1)) as pool:
            found = list(pool.map(read, objects.values()))
        return dict(zip(objects, found))

    def seal_folder(self, objects: Path, files: dict[str, bytes]) -> list[str]:
        """Seals the objects of the submission's own task files in another build of them (the CPU backend's race
        checker compiles them again): the task files whose object could not be sealed, which is then removed."""
        failed = []
        for name in sorted(files):
            obj = objects / (Path(name).stem + ".o")
            if self.policy.for_file(name) is None or not obj.is_file():
                continue
            try:
                sealed = self.seal(obj, name, read_object(obj))
            except (ElfError, struct.error, IndexError, ValueError, RuntimeError, OSError, subprocess.SubprocessError):
                sealed = False
            if not sealed:
                obj.unlink(missing_ok=True)
                failed.append(name)
        return failed

    def seal(self, obj: Path, file: str, facts) -> bool:
        """Every global the object defines made local to it, but its task's launchers (what its stub defines) and
        its inline and template copies (COMDAT: the linker keeps the harness's copy, linked first, and drops the
        file's, so those must keep their names). A name the file shares with a library the harness calls (a C
        function of its reply writer, one of the CPU runtime's) then binds nothing outside the file, whatever
        no-redefinition missed: the harness's and the libraries' definitions win the link. COMDAT copies of such
        names, which only a deliberate specialization makes, are made local too."""
        kept = set(self.launchers.get(file, ())) | {d.name for d in facts.defined
                                                    if d.comdat and d.name.split("@", 1)[0] not in self.interposable}
        keep = obj.with_suffix(".keep")
        keep.write_text("".join(f"{name}\n" for name in sorted(kept)))
        done = subprocess.run(["objcopy", f"--keep-global-symbols={keep}", str(obj)], capture_output=True,
                              text=True, errors="replace", timeout=120)
        keep.unlink(missing_ok=True)
        return done.returncode == 0


def _name(what: str) -> str:
    """The name a finding is about: "calls fopen" -> "fopen"."""
    return what.split(" (", 1)[0].split()[-1] if what.startswith(("calls ", "uses ")) else ""


def _with_lines(found: list[Finding], notes: list[Finding]) -> list[Finding]:
    """Object findings with the pre-check's first line for the same name (cublasSgemm in the source
    is cublasSgemm_v2 in the object); the pre-check's findings under rules the object confirmed are
    folded in, the rest stay as notes (enforced=False): the compiled code does not do them."""
    out, confirmed = [], {f.rule for f in found}
    for f in found:
        name = _name(f.what)
        note = next((n for n in notes if n.rule == f.rule and name and _name(n.what) and
                     name.startswith(_name(n.what))), None)
        if note is None and f.rule in ("no-syscalls", "no-static-constructors"):
            note = next((n for n in notes if n.rule == f.rule), None)
        if note is not None:
            f = Finding(f.file, f.rule, f.what, f.description, True, note.line, note.source)
        out.append(f)
    out += [Finding(n.file, n.rule, n.what, n.description, False, n.line, n.source)
            for n in notes if n.rule not in confirmed]
    return out


class GateSetup:
    """Builds a workspace's BuildGate on first use, once per policy, from any build thread."""

    def __init__(self):
        self._lock = threading.Lock()
        self._gates: dict[int, BuildGate] = {}

    def get(self, policy: GatePolicy, make: Callable[[], BuildGate]) -> BuildGate:
        with self._lock:
            if id(policy) not in self._gates:
                self._gates[id(policy)] = make()
            return self._gates[id(policy)]
