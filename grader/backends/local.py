"""Building a submission against a pristine copy of the harness.

Once per grading run the grader copies starter/ (the harness, the contract
headers, the stubs and the Makefile, never a student's) into its work
directory, builds the harness library there, and builds the solution. Each
submission then gets a fresh kernels folder holding only its recognized task
files (the stubs stand in for missing ones), which is compiled and linked
against that library with a wall-clock limit, inside the sandbox
(grader/run/sandbox.py): it sees the pristine harness, the library and its own
files read-only, and can write only its own build folder. With the rubric's
gate policy, the files are first compiled to objects and inspected
(grader/gate/): a file that breaks a rule is replaced by its stub before the link.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
import json
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor, TimeoutError as FutureTimeout
from pathlib import Path

from grader.run import ncu as ncu_tool
from grader.shared import sanitizer as tool_runs
from grader.backends.base import Backend, ToolTask
from grader.backends.build_view import BuildView, fixed_folder_names
from grader.backends.object_cache import ObjectCache
from grader.outcomes.build_result import NEEDS_GPU, BuildResult, renamed_folders
from grader.backends.compiler_log import own_messages
from grader.core.errors import GraderError
from grader.core.status import CaseStatus, ProfileStatus, SanitizerStatus
from grader.gate.build_gate import BuildGate, GateError, GateSetup, Target
from grader.gate.objects import find_cuobjdump, kernel_entries
from grader.core.gate_policy import GatePolicy
from grader.gate.report import GateReport
from grader.intake.submission import Submission
from grader.core.registry import Registry
from grader.outcomes.results import ProfileOutcome, SanitizerOutcome
from grader.run.runner import HarnessFailure, HarnessServer
from grader.run.sandbox import ResourceLimits, Unsandboxed, run

REPO = Path(__file__).resolve().parents[2]
BUILD_LOG_CAP = 20000  # characters of compiler output kept for feedback
HARNESS_CANNOT_RUN = 4  # the harness's exit status when it could not run at all (no CUDA device, ...)


# A submission's build runs beside another's cases and tools (the service's build stage, grade's pool of builds):
# on the host's cores the code being graded comes first, and its compiler waits (no verdict depends on a build's
# pace; a case's limit is measured against its own run).
BUILD_NICENESS = 10

CHECKS_PRELUDE_MADE = "made-in-sandbox"  # Workspace.checks_prelude's mark, in the precompiled headers' folder


def run_limited(cmd: list[str], timeout: float, cwd: Path | None = None) -> tuple[int | None, str]:
    """Runs cmd in its own process group; returns (exit status or None on timeout, combined output)."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out


def _remove(path: Path):
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


class Workspace:
    """The grader's private build tree for one grading run. Submissions are built in `sandbox`
    (without one, only a wall clock and output cap apply: for trusted code and tests)."""

    def __init__(self, work: Path, arch: str | None = None, repo: Path = REPO, sandbox=None, cpu: bool = False):
        self.repo = repo
        self.cpu = cpu  # built for the CPU backend (make CPU=1): no GPU architecture, no nvcc
        self.work = Path(work).resolve()
        self.pristine = self.work / "pristine"
        self.build_dir = self.work / "build"
        self.kernel_dirs = self.work / "kernels"
        self.scratch = self.work / "scratch"
        self.arch = None if cpu else arch
        self.sandbox = sandbox if sandbox is not None else Unsandboxed()
        # Header libraries outside the system's include path (make's DEPS_INCLUDE), shown to builds read-only.
        deps = os.environ.get("DEPS_INCLUDE", "")
        self.deps_include = Path(deps).resolve() if deps and Path(deps).is_dir() else None
        self._gate = GateSetup()
        self._gates: dict[str, BuildGate] = {}  # the gate each submission was built through (its race harness's too)
        self._race_builds: dict[str, Future] = {}  # submission key: its race harness's build started early
        self._race_builds_lock = threading.Lock()
        self._checks_prelude_lock = threading.Lock()  # checks_prelude: made once, by the first build
        self._checks_prelude_tried = False
        self.objects: ObjectCache | None = None  # the compiled task files shared by every build (use_built)
        self._library_kernels: Counter | None = None  # the harness library's kernels (harness_only_kernels)

    @property
    def solution_kernels(self) -> Path:
        """The solution's task files, which its harness is built from."""
        return self.repo / "solution" / "kernels"

    def _make(self, *args: str, pristine: Path | None = None, build: Path | None = None) -> list[str]:
        """make in the pristine tree (`pristine` and `build`: where a sandboxed build sees them)."""
        pristine, build = pristine or self.pristine, build or self.build_dir
        cmd = ["make", "-s", "-C", str(pristine), f"BUILD={build}", *args]
        if self.cpu:  # its runtime library beside the harness's (what a sandboxed build reads, read-only)
            return cmd + ["CPU=1", f"CUDACPU_BUILD={build / 'lib' / 'cpu'}"]
        return cmd + ["CPU=0"] + ([f"ARCH={self.arch}"] if self.arch else [])

    def prepare(self, jobs: int) -> Path:
        """Copies the harness, builds its library, the solution and (on the CPU) the stubs' objects; returns the
        solution's harness. A build cache entry's build (a kind's build_cache): every grading run opens one."""
        if self.pristine.exists():
            shutil.rmtree(self.pristine)
        shutil.copytree(self.repo / "starter", self.pristine, ignore=shutil.ignore_patterns("build", "__pycache__"))
        self.kernel_dirs.mkdir(parents=True, exist_ok=True)
        if not self.arch and not self.cpu:  # detected once, here; a sandboxed build then needs no nvidia-smi
            status, out = run_limited(["make", "-s", "--no-print-directory", "-C", str(self.pristine), "print-arch"],
                                      timeout=120)
            self.arch = out.strip() if status == 0 and out.strip().startswith("sm_") else None
        # The CPU backend's runtime library too (build/lib/cpu): a sandboxed build sees it read-only.
        status, out = run_limited(self._make(f"-j{jobs}", "lib", *(["cudacpu-lib"] if self.cpu else [])),
                                  timeout=1800)
        if status != 0:
            raise GraderError(f"building the pristine harness failed:\n{out[-4000:]}")
        solution = self.solution_kernels
        status, out = run_limited(self._make(f"-j{jobs}", "harness", f"KERNELS={solution}", "KTAG=solution"),
                                  timeout=1800)
        if status != 0:
            raise GraderError(f"building the solution failed:\n{out[-4000:]}")
        if self.cpu:  # the stubs' objects, once: every submission's missing files link these (_reuse_stubs), the
            # race checker's too
            status, out = run_limited(self._make(f"-j{jobs}", "objects", "race-objects",
                                                 f"KERNELS={self.pristine / 'kernels'}", "KTAG=stubs"), timeout=1800)
            if status != 0:
                raise GraderError(f"building the stubs failed:\n{out[-4000:]}")
        return self.build_dir / "solution" / "harness"

    def use_built(self, built: Path, key: str | None = None):
        """This work folder over a build cache entry's (`built`: its pristine/ and build/; `key`: the entry's, which
        opens the object store beside the entries, backends/object_cache.py): it links to the pristine
        sources and the library, which a submission's build only reads (in the sandbox, read-only), and copies the
        solution's and the stubs' objects (small; what make writes if it ever finds them stale is then this
        folder's own copy, never the shared entry). What an earlier run left here is replaced: a work folder is
        the grader's own, and `grade` reuses RESULTS/work."""
        self.work.mkdir(parents=True, exist_ok=True)
        self.build_dir.mkdir(parents=True, exist_ok=True)
        for link, target in ((self.pristine, built / "pristine"), (self.build_dir / "lib", built / "build" / "lib")):
            _remove(link)
            link.symlink_to(target, target_is_directory=True)
        for tag in ("solution", "stubs"):
            _remove(self.build_dir / tag)
            if (built / "build" / tag).is_dir():
                shutil.copytree(built / "build" / tag, self.build_dir / tag, symlinks=True)
        self.kernel_dirs.mkdir(parents=True, exist_ok=True)
        self._library_kernels = None
        if key is not None:
            self.objects = ObjectCache(Path(built).resolve().parent.parent / "objects", key)

    def _reuse_stubs(self, kernels: Path, out_dir: Path, handed_in=(), folder: str = "kernels"):
        """A task file that is the stub (missing from the submission, refused by the gate, or handed in untouched)
        gets the stub's object, compiled once per work folder (the gate's reference objects on the GPU, prepare()
        on the CPU), newer than its source so make keeps it. Most submissions lack some files, and each stub
        costs an nvcc run of seconds (a cudacpu.py one with AddressSanitizer on the CPU): a one-file hostile
        entry compiled six stubs for one file of its own. Files in `handed_in` are left to make: the gate reads
        what their own compilation wrote (the .d list of the files it read), even where they equal the stub.
        folder "racecheck/kernels": the same for the CPU backend's race checker's objects."""
        built = self.build_dir / "stubs" / folder
        for name, data in self.stub_files().items():
            obj = built / (Path(name).stem + ".o")
            if name not in handed_in and obj.is_file() and (kernels / name).read_bytes() == data:
                (out_dir / folder).mkdir(parents=True, exist_ok=True)
                shutil.copyfile(obj, out_dir / folder / obj.name)  # (a copy's time is now: after the source's)

    def stub_files(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in (self.pristine / "kernels").glob("*.cu")}

    def checks_prelude(self, timeout: float) -> None:
        """The CPU backend's nvcc-rules check and its compiles read their preludes precompiled
        (starter/cpu/driver/precompiled.py, host_prelude.py: 0.25 s of CPU a task file for the check, not 0.43;
        0.07 s less for each compile), made where the build folder can be written. A submission's sandboxed build
        sees that folder read-only, at the fixed layout's paths, which a header made outside does not match: so the
        first build of a build cache entry makes them in the sandbox, compiling one stub for the graded build and
        for the race checker's (trusted input: a stub and the prelude) with that one folder writable; every later
        build reads them. Marked done in the folder; where they cannot be made, builds go without, as before."""
        folder = (self.build_dir / "lib" / "cpu" / "nvcc-rules").resolve()
        with self._checks_prelude_lock:
            if self._checks_prelude_tried or not self.cpu or not getattr(self.sandbox, "can_place", False) \
                    or (folder / CHECKS_PRELUDE_MADE).is_file():
                return
            self._checks_prelude_tried = True
            scratch = self.scratch / "checks-prelude"
            shutil.rmtree(scratch, ignore_errors=True)
            (scratch / "kernels").mkdir(parents=True)
            name, data = min(self.stub_files().items())
            (scratch / "kernels" / name).write_bytes(data)
            view = self.view(scratch / "kernels", scratch / "build")
            seen = view.seen["build"] / "lib" / "cpu" / "nvcc-rules"
            try:
                done = self._sandboxed_make("objects", view, timeout, "-j1", writable=[(folder, seen)])
                if done.status == 0:
                    done = self._sandboxed_make("race-objects", view, timeout, "-j1", writable=[(folder, seen)])
                if done.status == 0:
                    (folder / CHECKS_PRELUDE_MADE).write_text(f"made by a sandboxed compile of {name}\n")
            except (OSError, GraderError):  # a cache entry this grader cannot write: its checks go without
                pass
            shutil.rmtree(scratch, ignore_errors=True)

    def build(self, sub: Submission, timeout: float, gate: GatePolicy | None = None) -> BuildResult:
        self.checks_prelude(timeout)
        # Folders named by the submission's key (its id and the entry it came from), never by the bare id: two
        # entries of one student, built at the same time, must not share a folder.
        kernels = self.kernel_dirs / sub.key
        if kernels.exists():
            shutil.rmtree(kernels)
        kernels.mkdir(parents=True)
        for name, data in {**self.stub_files(), **sub.files}.items():
            (kernels / name).write_bytes(data)
        out_dir = self.build_dir / f"submission-{sub.key}"
        shutil.rmtree(out_dir, ignore_errors=True)
        out_dir.mkdir(parents=True)
        view = self.view(kernels, out_dir)
        start = time.monotonic()
        report, status, timed_out, out = None, 0, False, ""
        if gate:  # the same gate on both backends: the pre-check, then each compiled object
            # Before compiling: what each file includes, as the preprocessor read it (its messages are not kept);
            # a file whose #include breaks a rule is replaced by its stub, so the compiler never quotes what it names.
            # The files are listed in parallel, and the gate's setup (once per grader process: its reference objects
            # and symbol lists, about 1 s of CPU) runs beside them: a first upload's build waited 1.1 s for each.
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="gate-setup") as setting_up:
                setup = setting_up.submit(self.gate, gate)
                listed = self._sandboxed_make("includes", view, timeout, f"-j{os.cpu_count() or 1}",
                                              f"INCLUDES_OF={' '.join(sorted(sub.files))}")
                checker = setup.result()
            self._gates[sub.key] = checker
            timed_out = listed.timed_out
            view.host_files(out_dir / "kernels", (".includes",))
            screened = checker.screen(kernels, sub.files, out_dir / "kernels")
            self._reuse_stubs(kernels, out_dir, handed_in=sub.files)  # the files the submission lacks
            if not timed_out:
                status, timed_out, out = self._compile("objects", view, sub.files, "kernels",
                                                       max(1.0, timeout - (time.monotonic() - start)))
            report = checker.inspect(kernels, out_dir / "kernels", sub.files, screened) if status == 0 \
                else GateReport(screened)
        elif not timed_out:
            status, timed_out, out = self._compile("objects", view, sub.files, "kernels", timeout)
        if status == 0 and not timed_out:
            self._reuse_stubs(kernels, out_dir)  # (again: the gate may have put stubs in for files it refused)
            done = self._sandboxed_make("harness", view, max(1.0, timeout - (time.monotonic() - start)))
            status, timed_out, out = done.status, done.timed_out, out + done.stdout
        seconds = time.monotonic() - start
        names = self.folder_names(kernels)
        log = self._readable(out, kernels)
        if timed_out:
            return BuildResult(False, None, seconds, log, f"the build took longer than its limit of {timeout:g} s",
                               report, folder_names=names)
        if status != 0:
            return BuildResult(False, None, seconds, log, "your code does not compile (the compiler's messages follow)",
                               report, folder_names=names)
        unbuilt = self._unbuilt(out_dir / "harness.tasks.json", kernels, sub.files)
        return BuildResult(True, out_dir / "harness", seconds, log, gate=report,
                           unbuilt={f: r for f, r in unbuilt.items() if not r.startswith(NEEDS_GPU)},
                           needs_gpu={f: r for f, r in unbuilt.items() if r.startswith(NEEDS_GPU)},
                           folder_names=names, harness_kernels=self.harness_only_kernels(out_dir / "harness"))

    def harness_only_kernels(self, program: Path) -> tuple[str, ...]:
        """The harness library's kernels (the inputs, poison, float64 references and comparisons every request
        launches) that `program` defines no more often than the library does, by mangled name: racecheck leaves
        them out, and takes half the time on the tasks it checks (docs/gpu-runs/2026-12-05-h200-issue-43-racecheck.md).
        A task file's kernel of the same mangled name (a harness kernel's `static` namesake, say) adds to the
        program's count, so that name stays checked. Empty on the CPU backend, without cuobjdump, or where either
        cannot be read: racecheck then checks every kernel, as before. Read here, in the build, off the GPU."""
        found = None if self.cpu else find_cuobjdump()
        if found is None:
            return ()
        try:
            if self._library_kernels is None:
                self._library_kernels = kernel_entries(self.build_dir / "lib" / "libharness.a", found)
            linked = kernel_entries(program, found)
        except (OSError, RuntimeError, subprocess.SubprocessError):
            return ()
        return tuple(sorted(name for name, count in self._library_kernels.items() if linked[name] == count))

    def start_race_harness(self, sub: Submission, timeout: float) -> None:
        """Builds the submission's race harness in a thread of its own, beside its cases (whose runs leave cores
        idle: the cases of small shapes run on one), so that its checks and counters find it built; within
        `timeout` seconds (a tool's limit, which bounded this build when the first tool made it). race_harness
        waits for it."""
        future, mine = self._race_build(sub)
        if mine:
            threading.Thread(target=self._complete, args=(future, sub, timeout), name=f"race-harness-{sub.key}",
                             daemon=True).start()

    def finish_race_harness(self, sub: Submission) -> None:
        """Waits for the race harness build of the submission, if one was started (a grading that needed none
        ends after it), and forgets it."""
        with self._race_builds_lock:
            future = self._race_builds.pop(sub.key, None)
        if future is not None:
            future.exception()  # waits; what went wrong was for a tool to report, and none asked

    def race_harness(self, sub: Submission, timeout: float) -> tuple[Path | None, str]:
        """The CPU backend's race checker for a built submission: its task files as the gate left them, compiled
        again with --racecheck, sealed as its other objects were, linked into a harness of their own (once; a
        second caller meanwhile waits for the first's build, up to `timeout` seconds, as does one after
        start_race_harness). (harness, "") or (None, why it could not be built)."""
        future, mine = self._race_build(sub)
        if mine:
            self._complete(future, sub, timeout)
        try:
            return future.result(timeout)
        except FutureTimeout:
            return None, f"building the race checker took longer than {timeout:g} s"

    def _race_build(self, sub: Submission) -> tuple[Future, bool]:
        """The submission's race harness build, and whether the caller is the one to do it: it was not begun, or
        it ended without a harness (each caller tries again, as every tool did when it built its own)."""
        with self._race_builds_lock:
            future = self._race_builds.get(sub.key)
            if future is not None and not (future.done() and (future.exception() or future.result()[0] is None)):
                return future, False
            future = self._race_builds[sub.key] = Future()
            return future, True

    def _complete(self, future: Future, sub: Submission, timeout: float) -> None:
        try:
            future.set_result(self._build_race_harness(sub, timeout))
        except BaseException as e:  # the waiting tool reports it, as it would its own build's
            future.set_exception(e)

    def _build_race_harness(self, sub: Submission, timeout: float) -> tuple[Path | None, str]:
        kernels, out_dir = self.kernel_dirs / sub.key, self.build_dir / f"submission-{sub.key}"
        harness = out_dir / "racecheck" / "harness"
        if harness.is_file():
            return harness, ""
        start = time.monotonic()
        view = self.view(kernels, out_dir)
        self._reuse_stubs(kernels, out_dir, handed_in=sub.files, folder="racecheck/kernels")
        status, timed_out, said = self._compile("race-objects", view, sub.files, "racecheck/kernels", timeout)
        gate = self._gates.get(sub.key)
        if status == 0 and not timed_out and gate is not None:
            unsealed = gate.seal_folder(out_dir / "racecheck" / "kernels", sub.files)
            if unsealed:
                return None, f"the race checker's objects could not be sealed: {', '.join(unsealed)}"
        if status == 0 and not timed_out:
            done = self._sandboxed_make("race-harness", view, max(1.0, timeout - (time.monotonic() - start)))
            status, timed_out, said = done.status, done.timed_out, said + done.stdout
        if timed_out:
            return None, f"building the race checker took longer than {timeout:g} s"
        if status != 0 or not harness.is_file():
            return None, "the race checker did not build: " + self._readable(said, kernels)[-600:]
        return harness, ""

    def view(self, kernels: Path, out_dir: Path) -> BuildView:
        """Where this submission's sandboxed build sees its folders: the fixed layout where the sandbox can show a
        folder elsewhere (so that its objects are anyone's: backends/build_view.py), else the real ones."""
        return BuildView(self.pristine, self.build_dir, kernels, out_dir, self.deps_include,
                         fixed=getattr(self.sandbox, "can_place", False))

    def _compile(self, target: str, view: BuildView, files: dict[str, bytes], folder: str,
                 timeout: float) -> tuple[int | None, bool, str]:
        """make TARGET (objects, race-objects) for the submission's own task files, into out_dir/`folder`: those
        the object store holds are taken from it, the rest compiled, in parallel, and stored. (exit status,
        whether it ran out of time, what the compilers said.)"""
        objects = view.out_dir / folder
        store = self.objects if view.fixed else None  # objects built at the real folders name them: not shared
        handed_in = sorted(name for name in files if (view.kernels / name).is_file())
        said, fresh = [], []
        for name in handed_in:
            if store is not None:
                found = store.fetch(target, name, (view.kernels / name).read_bytes(), objects, view)
                if found is not None:
                    said.append(found)
                    continue
            fresh.append(name)
        if not fresh and handed_in:  # every object came from the store (the stubs' were put in before)
            return 0, False, "".join(said)
        jobs = max(1, min(len(fresh), os.cpu_count() or 1))
        done = self._sandboxed_make(target, view, timeout, f"-j{jobs}")
        if done.status == 0 and not done.timed_out and store is not None:
            for name in fresh:
                if (objects / (Path(name).stem + ".o")).is_file():
                    store.store(target, name, (view.kernels / name).read_bytes(), objects, view)
        view.host_files(objects, (".d",))
        return done.status, done.timed_out, "".join(said) + done.stdout

    def _sandboxed_make(self, target: str, view: BuildView, timeout: float, *settings: str, writable=()):
        """make TARGET for one submission in the sandbox: its kernels, the pristine tree and the library
        read-only, only its own build folder writable, each where `view` says the build sees it (`writable`:
        more, as (folder, where the build sees it) pairs: the grader's own builds of trusted code alone)."""
        seen = view.seen
        make = self._make(target, f"KERNELS={seen['kernels']}", f"KTAG={view.tag}", *settings,
                          pristine=seen["pristine"], build=seen["build"])
        if self.deps_include:
            make.append(f"DEPS_INCLUDE={self.deps_include}")
        make = ["nice", "-n", str(BUILD_NICENESS), *make]
        read_only, own = view.mounts()
        done = run(self.sandbox, make, timeout=timeout, read_only=read_only, writable=[*own, *writable],
                   cwd=seen["out_dir"], merge_stderr=True)
        if done.stdout.startswith("bwrap: "):  # the sandbox itself failed before any student code ran
            raise GraderError(f"the sandbox could not start a build: {done.stdout.strip()[:1000]}")
        return done

    def gate(self, policy: GatePolicy) -> BuildGate:
        """The build gate for this workspace and policy, set up on first use: the same rules on the objects of
        either backend (the CPU backend's are g++'s, with its runtime and AddressSanitizer to link)."""
        def compile_objects(kernels: Path, tag: str):
            status, out = run_limited(self._make(f"-j{os.cpu_count() or 2}", "objects", f"KERNELS={kernels}",
                                                 f"KTAG={tag}"), timeout=1800)
            if status != 0:
                raise GraderError(f"building the gate's reference objects ({tag}) failed:\n{out[-4000:]}")

        def make() -> BuildGate:
            target = Target.cpu(self.pristine, self.build_dir) if self.cpu else Target.gpu()
            return BuildGate(self.pristine, self.build_dir, policy, compile_objects, target=target)
        try:
            return self._gate.get(policy, make)
        except GateError as e:
            raise GraderError(f"the build gate cannot run: {e}") from e

    def _unbuilt(self, report: Path, kernels: Path, files: dict[str, bytes]) -> dict[str, str]:
        """The submission's own task files that did not build, from the link's report (a stub that stood
        in for a missing or refused file always builds)."""
        try:
            tasks = json.loads(report.read_text())["tasks"]
        except (OSError, ValueError, KeyError) as e:
            raise GraderError(f"the build left no readable report of its task files ({report}: {e})") from None
        return {e["file"]: self._readable(e["reason"], kernels) for e in tasks.values()
                if not e["built"] and e["file"] in files}

    def folder_names(self, kernels: Path) -> tuple[tuple[str, str], ...]:
        """The grader's folders as a student's own checkout names them: the submission's files in kernels/, the
        starter's tree at its top, the build in build/."""
        return ((str(kernels) + "/", "kernels/"), (str(self.pristine) + "/", ""), (str(self.build_dir) + "/", "build/"),
                *fixed_folder_names())

    def _readable(self, out: str, kernels: Path) -> str:
        """The compiler's output with the grader's paths taken out and only the student's own lines quoted in it
        (compiler_log.own_messages), capped for feedback."""
        lines = [line for line in out.splitlines() if not line.startswith(("make:", "make["))]
        named = renamed_folders("\n".join(lines), self.folder_names(kernels))
        tasks = set(self.stub_files())
        return own_messages(named, lambda path: path.startswith("kernels/") or Path(path).name in tasks)[-BUILD_LOG_CAP:]


class LocalBackend(Backend):
    """Builds with nvcc in a private workspace and runs harnesses on this machine's GPUs; student code
    (its build, its harness processes, its sanitizer runs) in `isolation` (grader.run.sandbox). With `cpu=True`
    the same, built for the CPU backend (grader/backends/cpu.py's CpuBackend)."""

    device_words = "the GPU"  # what check_gpu's message says the harness must reach

    def __init__(self, work: Path, arch: str | None = None, isolation=None, cpu: bool = False):
        self.isolation = isolation if isolation is not None else Unsandboxed()
        if getattr(self.isolation, "privileged", False):
            os.umask(os.umask(0) & 0o022)  # what the grader writes stays readable to the sandbox's own user
        self.workspace = Workspace(work, arch, sandbox=self.isolation, cpu=cpu)
        self.solution: Path | None = None
        self.registry: Registry | None = None

    @property
    def sandbox(self) -> str:
        """How student code is isolated, in words (stored with the grading run)."""
        return self.isolation.description

    def set_limits(self, limits):
        """The rubric's [limits] for everything student code runs (grader.core.rubric.Limits)."""
        self.isolation.limits = ResourceLimits.from_rubric(limits)

    @property
    def harness_version(self) -> str:
        return self.registry.harness_version

    def build(self, sub: Submission, timeout: float, gate: GatePolicy | None = None) -> BuildResult:
        return self.workspace.build(sub, timeout, gate)

    @property
    def case_clock(self) -> str:
        """What a case's limit counts (grader/run/runner.py): on the CPU backend the CPU time its process got, as
        its kernels share this machine's cores with whatever else runs (a correct kernel starved by a busy machine
        is not a hang); on a GPU the wall clock (a host waiting for its kernel uses no CPU)."""
        return "cpu" if self.workspace.cpu else "wall"

    def student_server(self, build: BuildResult, gpu: str | None) -> HarnessServer:
        scratch = self.workspace.scratch / build.harness.parent.name / "serve"
        shutil.rmtree(scratch, ignore_errors=True)
        return HarnessServer(build.harness, gpu, sandbox=self.isolation, scratch=scratch, clock=self.case_clock)

    def solution_server(self, gpu: str | None) -> HarnessServer:
        return HarnessServer(self.solution, gpu, clock=self.case_clock)

    def use_cache(self, folder: Path, cached: dict) -> Registry:
        """Grade against the pristine harness, library and solution that a kind's build_cache built in `folder`
        (grader/backends/build_cache.py; Workspace.use_built)."""
        self.workspace.use_built(Path(folder) / "work", cached["key"])
        self.solution = self.workspace.build_dir / "solution" / "harness"
        self.registry = Registry.from_json(cached["registry"])
        return self.registry

    def check_gpu(self, gpu: str | None):
        """The solution's harness, started in the sandbox, must reach the GPU: otherwise every student's
        case would fail for a reason that is the grader's, not theirs."""
        with HarnessServer(self.solution, gpu) as outside:  # the driver makes its device nodes on first use
            outside.request({"op": "hello"}, 120)
        scratch = self.workspace.scratch / "gpu-check"
        shutil.rmtree(scratch, ignore_errors=True)
        server = HarnessServer(self.solution, gpu, sandbox=self.isolation, scratch=scratch)
        try:
            server.request({"op": "hello"}, 120)
        except Exception as e:  # noqa: BLE001 - any failure here is the sandbox's
            raise GraderError(f"the harness cannot use {self.device_words} inside the sandbox ({e}): "
                              f"{server.stderr.strip()[-1500:] or 'no message'}") from None
        finally:
            server.close()

    def gpu_profile(self, sub: Submission | None, build: BuildResult | None, task: str, dtype: str, shape: str,
                    gpu: str | None, seed: int, timeout: float) -> ProfileOutcome | None:
        """Nsight Compute over the task's profile case, in the sandbox as compute-sanitizer runs (ncu under the tool
        profile, the harness under the run profile, preloaded); the counts of the kernels the task's file declares
        (the harness's own are left out)."""
        found = ncu_tool.find_ncu()
        if found is None:
            return ProfileOutcome(task, dtype, shape, ProfileStatus.SKIPPED,
                                  message="Nsight Compute (ncu) is not installed on the grading machine")
        harness = build.harness if build is not None else self.solution
        file = self.registry.task(task).file
        source = (sub.files.get(file, b"") if sub is not None else
                  (self.workspace.solution_kernels / file).read_bytes())
        scratch = self.workspace.scratch / harness.parent.name / f"ncu-{task}"
        shutil.rmtree(scratch, ignore_errors=True)
        start = time.monotonic()
        done = run(self.isolation, ncu_tool.command(found, harness, task, dtype, seed),
                   timeout=timeout, read_only=[harness.parent, found.parent], writable=[scratch], gpu=gpu,
                   profile="tool", confine_exe=harness)
        shutil.rmtree(scratch, ignore_errors=True)
        outcome = ProfileOutcome(task, dtype, shape, ProfileStatus.COUNTED, seconds=time.monotonic() - start)
        launches = ncu_tool.own_launches(ncu_tool.launches(done.stdout),
                                         ncu_tool.declared_kernels(source.decode("utf-8", "replace")))
        said = ncu_tool.errors(done.stdout + "\n" + done.stderr)
        if done.status is None:
            outcome.status, outcome.message = ProfileStatus.FAILED, f"Nsight Compute did not finish within {timeout:g} s"
        elif not launches:
            outcome.status = ProfileStatus.FAILED
            outcome.message = ("Nsight Compute saw no kernel of yours run in the profile case"
                               + (f": {said}" if said else f" (exit status {done.status})"))
        else:
            outcome.numbers = ncu_tool.task_numbers(launches)
            if done.status != 0:
                outcome.message = "the profile case's check failed or the harness stopped early" + \
                                  (f": {said}" if said else f" (exit status {done.status})")
        return outcome

    def sanitize(self, sub: Submission, build: BuildResult, gpu: str | None, tool: str, task: str, dtype: str,
                 shape: str, seed: int, timeout: float, shapes: list[str] | None = None) -> SanitizerOutcome:
        """compute-sanitizer over the student's `harness --serve`, in the sandbox (the tool under the tool
        profile, the harness under the run profile), sent the requests a graded run of the task gets:
        its graded shapes in order, up to a random cut at or after its small case (sanitize.sanitized_shapes)."""
        part = ToolTask(task, dtype, shape, tuple(shapes or [shape]))
        return self._tool_run(sub, build, gpu, tool, [part], seed, timeout)[0]

    def sanitize_tasks(self, sub: Submission, build: BuildResult, gpu: str | None, tool: str, tasks: list[ToolTask],
                       seed: int, timeout: float, skipped) -> list[SanitizerOutcome]:
        """One run of the tool for all the tasks, each task's requests in turn (as `sanitize` sends them), in
        `timeout` per task. A run and its CUDA context cost more than a task's requests under the tool (memcheck
        0.6 s a run, racecheck 1.9 s: docs/gpu-runs/2026-11-29-h200-issue-29-sanitizer.md), so a clean run for all
        saves most of them. Any other end (a finding, a fault, a timeout) runs each task alone, as grading always
        did, so a finding is the task's own and its verdict the same as a run of that task alone."""
        if len(tasks) > 1 and not any(skipped(t) for t in tasks):
            together = self._tool_run(sub, build, gpu, tool, tasks, seed, timeout)
            if all(o.status == SanitizerStatus.CLEAN for o in together):
                return together
        return super().sanitize_tasks(sub, build, gpu, tool, tasks, seed, timeout, skipped)

    def _tool_run(self, sub: Submission, build: BuildResult, gpu: str | None, tool: str, parts: list[ToolTask],
                  seed: int, timeout: float) -> list[SanitizerOutcome]:
        """One compute-sanitizer process over `harness --serve`, sent each part's requests in turn, each part in
        `timeout` seconds (so a part slow under the tool costs one part's limit, not all of them); an outcome per
        part, each with the run's verdict (a finding is the run's, not yet any one part's) and an equal share of
        its seconds."""
        found = tool_runs.find_tool()
        if not found:
            return [SanitizerOutcome(p.task, tool, p.dtype, p.shape, SanitizerStatus.UNAVAILABLE,
                                     message="compute-sanitizer is not installed on the grading machine")
                    for p in parts]
        name = parts[0].task if len(parts) == 1 else "tasks"
        scratch = self.workspace.scratch / build.harness.parent.name / f"{tool}-{name}"
        shutil.rmtree(scratch, ignore_errors=True)
        prefix = tool_runs.new_prefix()
        log = scratch / f"{prefix.strip('=')}.log"
        chosen = [tool_runs.sanitized_shapes(list(p.shapes), p.shape) for p in parts]
        start = time.monotonic()
        deadline = start + sum(p.within(timeout) for p in parts)
        command = tool_runs.serve_command(found, tool, str(log), prefix)
        if tool == "racecheck":  # the harness's own kernels: no student code runs in them
            command += [o for name in build.harness_kernels for o in ("--kernel-name-exclude", f"kne={name}")]
        server = HarnessServer(build.harness, gpu, sandbox=self.isolation, scratch=scratch, tool=command)
        status, timed_out, said = None, False, ""
        # (request, its part if it is the part's first request, else None: each part's time starts there)
        messages = [(m, p if k == 0 else None) for p, shapes in zip(parts, chosen)
                    for k, m in enumerate(tool_runs.requests(tool, p.task, p.dtype, shapes, seed))]
        part_ends = deadline
        # (the log's size when each request was answered, its shape): the tool reports what a request's launches
        # did before the harness answers it, so the first finding's offset names the shape it happened at
        answered: list[tuple[int, str]] = []
        try:
            for i, (message, first_of_part) in enumerate(messages):
                if first_of_part:
                    part_ends = min(deadline, time.monotonic() + first_of_part.within(timeout))
                reply = server.request(message, max(1.0, part_ends - time.monotonic()))
                answered.append((log.stat().st_size if log.is_file() else 0, message["shape"]))
                if i == 0 and self.isolation is not None and getattr(self.isolation, "filters", None) \
                        and (server.seccomp_filters() or 0) < 2:
                    # The tool's own filter and the run profile's: the student's code must not run under the
                    # tool with less than a graded run has. (The grader's problem, never the student's.)
                    raise HarnessFailure("the harness under compute-sanitizer was not under the run profile's "
                                         "seccomp filter; the tool's run was stopped", CaseStatus.CRASHED)
                if reply.get("context_lost"):
                    break
            # The tool writes its summary once the harness has quit; a process the code left behind could
            # keep the tool waiting: it gets what is left of the limit, then the whole sandbox is killed.
            status = server.finish(max(5.0, deadline - time.monotonic()))
            if status is None:
                said = ("compute-sanitizer did not end after the harness quit (a process your code left running "
                        "kept it waiting)")
        except HarnessFailure as failure:
            timed_out = failure.kind == CaseStatus.TIMEOUT
            said = str(failure)
            status = server.proc.poll()
        finally:
            server.close()
        text = log.read_text(errors="replace") if log.is_file() else ""
        output = server.stderr
        shutil.rmtree(scratch, ignore_errors=True)
        findings = tool_runs.parse(text, prefix)
        at = tool_runs.first_finding_at(text, prefix) if findings.errors else None
        found_at = next((shape for size, shape in answered if at is not None and size > at), None)
        report = self.workspace._readable(findings.report, self.workspace.kernel_dirs / sub.key)
        seconds = (time.monotonic() - start) / len(parts)
        outcomes = []
        for p, shapes in zip(parts, chosen):
            outcome = SanitizerOutcome(p.task, tool, p.dtype, shapes[-1], SanitizerStatus.CLEAN, 0, report,
                                       seconds=seconds)
            if timed_out and not findings.errors:
                outcome.status = SanitizerStatus.TIMEOUT
                outcome.message = f"compute-sanitizer did not finish within {p.within(timeout):g} s"
            elif findings.errors:
                outcome.status, outcome.errors = SanitizerStatus.ERRORS, findings.errors
                if len(parts) == 1 and found_at in shapes:  # else (after the last answer): the last shape sent
                    outcome.shape = found_at
            elif findings.errors is None or status == HARNESS_CANNOT_RUN or said:
                outcome.status = SanitizerStatus.FAILED
                outcome.message = (f"compute-sanitizer gave no verdict (exit status {status}): "
                                   + (said + "\n" + output).strip()[-1000:])
            outcomes.append(outcome)
        return outcomes
