"""Running a student's code inside bubblewrap (Debian's `bubblewrap`).

Every build and every run of student code goes through `Sandbox.wrap` (or
`run`, which also collects the output). Inside, the code sees:

- a read-only system: /usr (and the /bin, /lib... links into it), the few
  files of /etc that programs need to start, the CUDA toolkit where `nvcc`
  lives, /sys read-only and a /proc of its own;
- the paths the caller lists, bound at the same place as outside: read-only
  (the pristine harness, the submission's files, a built harness binary) or
  writable (its own scratch directory: nothing else is);
- a private /tmp and /dev/shm (tmpfs, size-limited), /dev with only the
  usual character devices plus the NVIDIA device nodes;
- no network (an empty network namespace), its own pid, ipc and uts
  namespaces, a new session (no terminal to inject keystrokes into), and no
  environment beyond PATH, HOME (the scratch directory), TMPDIR and the GPU
  selection.

It runs as an unprivileged user with RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_NPROC
and RLIMIT_CORE=0 set, and an OOM score that makes it the kernel's first
choice when memory runs out.

Every process in it runs under a seccomp filter (grader/run/seccomp.py, built with
libseccomp), given to bubblewrap as a BPF program (`--seccomp FD`): the `build` profile for
a build, the `tool` profile around a run and for compute-sanitizer's own
process. Student code itself gets the `run` profile on top: a run starts the
harness through grader/run/confine.py, which installs it just before it executes
the harness; under compute-sanitizer (which must start the harness itself) a
preloaded library installs it in the harness's process only. Threads but no
processes, no other programs, no new session, no socket but AF_UNIX. A build
sees neither /sys nor the GPU's device nodes. RLIMIT_NPROC counts processes per real user and
is not enforced for root, so:

- when the grader runs as root, bubblewrap runs privileged (no user
  namespace) and `setpriv` drops to a fresh random uid for each sandbox, so
  the limit counts exactly that sandbox's processes;
- otherwise bubblewrap makes a user namespace (uid 65534 inside) and the
  limit is set inside it, where it counts only that namespace's processes.

The wall-clock limit kills bubblewrap's process group; `--die-with-parent`
then takes the sandbox's pid 1, and with it every process in the sandbox.
"""
from __future__ import annotations

import atexit
import glob
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from grader.run import seccomp
from grader.run.capped import DEFAULT_CAP, CappedReader
from grader.outcomes.isolation import UNSAFE_FLAG, Isolation

BWRAP_ENV = "BWRAP"  # a bwrap binary that is not on PATH (e.g. Debian's package unpacked with dpkg -x)
SANDBOX_UID_RANGE = (1 << 30, (1 << 31) - 2)  # far from real users, subuid ranges and nobody
NAMESPACE_UID = 65534  # the uid code sees inside a user namespace ("nobody")
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives")  # what a dynamic program needs
DEVICE_GLOBS = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset",
                "/dev/nvidia[0-9]*", "/dev/nvidia-caps")
BASE_PATH = ("/usr/local/bin", "/usr/bin", "/bin")
# Raise the OOM score (inherited by every child) before anything else runs; then go on to the command.
OOM_WRAPPER = 'echo 1000 > /proc/self/oom_score_adj 2>/dev/null; exec "$@"'
CONFINE = Path(__file__).resolve().parent / "confine.py"  # the launcher that adds the run profile's filter
SECCOMP_SOURCE = Path(__file__).resolve().parent / "seccomp.py"
PROFILES = tuple(seccomp.PROFILES)  # build, tool, run


class SandboxError(RuntimeError):
    """The sandbox cannot be used on this machine; the message names the cause and the way out."""


@dataclass(frozen=True)
class ResourceLimits:
    """What one sandboxed process tree may use (grader/rubric.toml's [limits])."""
    cpu_seconds: int
    file_size: int  # bytes, the largest file it may write (and the size of its /tmp and /dev/shm)
    processes: int  # processes and threads at once
    output: int = DEFAULT_CAP  # bytes of stdout and of stderr kept

    @classmethod
    def from_rubric(cls, limits) -> ResourceLimits:
        return cls(int(limits.cpu_seconds), int(limits.file_size_mib * 1024 * 1024), int(limits.processes),
                   int(limits.output_mib * 1024 * 1024))

    def record(self) -> dict:
        """The limits as the isolation record stores them (grader/outcomes/isolation.py)."""
        return {"cpu_seconds": self.cpu_seconds, "file_size_mib": self.file_size // 2**20,
                "processes": self.processes, "output_kib": self.output // 1024}


@dataclass
class Completed:
    status: int | None  # exit status (negative: killed by that signal); None: killed at the time limit
    stdout: str
    stderr: str
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.status is None


def find_bwrap(explicit: str | None = None) -> Path | None:
    """--bwrap PATH, else $BWRAP, else `bwrap` on PATH."""
    for candidate in (explicit, os.environ.get(BWRAP_ENV)):
        if candidate:
            path = Path(candidate)
            if not (path.is_file() and os.access(path, os.X_OK)):
                raise SandboxError(f"bubblewrap: {path} (from {'--bwrap' if candidate == explicit else '$' + BWRAP_ENV})"
                                   " is not an executable file")
            return path.resolve()
    found = shutil.which("bwrap")
    return Path(found) if found else None


def missing_bwrap_message() -> str:
    return ("bubblewrap (bwrap) is not installed: the grader runs every build and run of student code inside it. "
            "Install Debian's package (sudo apt-get install bubblewrap), or point --bwrap PATH or $BWRAP at a bwrap "
            f"binary; or, knowing that student code then runs with the grader's rights, pass {UNSAFE_FLAG} "
            "(every result stored then says so).")


def _under(path: Path, roots) -> bool:
    return any(path == r or r in path.parents for r in roots)


def _toolkit_dirs() -> tuple[list[Path], list[str]]:
    """Where nvcc and compute-sanitizer live (as found on PATH and with links resolved), and their bin dirs."""
    roots, bins = [], []
    for tool in ("nvcc", "compute-sanitizer"):
        found = shutil.which(tool)
        if not found:
            continue
        bins.append(str(Path(found).parent))
        for root in (Path(found).parent.parent, Path(found).resolve().parent.parent):
            if root not in roots:
                roots.append(root)
    return roots, bins


def _device_nodes() -> list[Path]:
    return sorted({Path(p) for pattern in DEVICE_GLOBS for p in glob.glob(pattern)})


def _bwrap_environment(bwrap: Path) -> dict[str, str]:
    """The environment bwrap itself starts in: PATH, plus, for a bwrap unpacked with `dpkg -x` together with
    its libraries (libselinux1, libcap2, libpcre2-8-0) on a machine that lacks them, those libraries."""
    env = {"PATH": os.environ.get("PATH", ":".join(BASE_PATH))}
    try:
        subprocess.run([str(bwrap), "--version"], capture_output=True, text=True, env=env, check=True)
        return env
    except (OSError, subprocess.CalledProcessError):
        pass
    tree = bwrap.parent.parent.parent if bwrap.parent.name == "bin" and bwrap.parent.parent.name == "usr" else None
    unpacked = sorted(glob.glob(f"{tree}/usr/lib/*-linux-gnu") + glob.glob(f"{tree}/lib/*-linux-gnu")) if tree else []
    return {**env, "LD_LIBRARY_PATH": ":".join(unpacked)} if unpacked else env


def placed(item) -> tuple[Path, Path]:
    """(folder, where the sandbox shows it) for a mount item: a folder (at its own path) or such a pair."""
    source, destination = item if isinstance(item, tuple) else (item, item)
    return Path(source), Path(destination)


class Sandbox:
    """bubblewrap, configured once per grading run; `wrap` turns a command into its sandboxed form."""

    can_place = True  # a folder can be shown at another path inside (a build's fixed layout: backends/build_view.py)

    def __init__(self, bwrap: Path, limits: ResourceLimits | None = None):
        self.bwrap = Path(bwrap)
        self.limits = limits
        self.privileged = os.geteuid() == 0
        self.bwrap_env = _bwrap_environment(self.bwrap)
        try:
            about = [subprocess.run([str(self.bwrap), flag], capture_output=True, text=True, env=self.bwrap_env,
                                    check=True).stdout for flag in ("--help", "--version")]
        except (OSError, subprocess.CalledProcessError) as e:
            said = getattr(e, "stderr", "") or str(e)
            raise SandboxError(f"bubblewrap at {self.bwrap} does not start: {' '.join(said.split())[:500]}") from None
        self.can_disable_userns = "--disable-userns" in about[0]
        self.can_size_tmpfs = "--size" in about[0]  # bubblewrap 0.7 and later
        self.version = about[1].split()[-1] if about[1].split() else "?"
        self.toolkit, self.toolkit_bins = _toolkit_dirs()
        self.library_dirs = [Path(p) for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p and Path(p).is_dir()]
        self.can_seccomp = "--seccomp" in about[0]
        if not self.can_seccomp:
            raise SandboxError(f"bubblewrap at {self.bwrap} ({self.version}) has no --seccomp option: the grader "
                               "filters student code's system calls through it (bubblewrap 0.3 or later)")
        self.tools = {}
        for tool in ("prlimit", "setpriv") if self.privileged else ("prlimit",):
            found = shutil.which(tool)
            if not found or not Path(found).resolve().is_relative_to("/usr"):
                raise SandboxError(f"the sandbox needs `{tool}` from util-linux in /usr/bin (apt-get install util-linux)")
            self.tools[tool] = found
        # The launcher that adds the run profile's filter runs on the system's Python (what /usr holds is all
        # the sandbox sees); the build needs it anyway (tools/link_tasks.py).
        python = next((str(Path(d) / "python3") for d in ("/usr/bin", "/bin", "/usr/local/bin")
                       if (Path(d) / "python3").is_file() and (Path(d) / "python3").resolve().is_relative_to("/usr")),
                      None)
        if python is None:
            raise SandboxError("the sandbox needs the system's python3 in /usr/bin (apt-get install python3)")
        self.python = python
        try:
            self.filters = {name: seccomp.compile_filter(name) for name in PROFILES}
        except (OSError, ValueError) as e:
            raise SandboxError(f"cannot build the sandbox's seccomp filters: {e}") from None

    @property
    def description(self) -> Isolation:
        """How this sandbox isolates code: the record stored with each grading run (its words: str() of it)."""
        return Isolation("bubblewrap", version=self.version, binary=str(self.bwrap),
                         user="setpriv" if self.privileged else "user-namespace",
                         uid=None if self.privileged else NAMESPACE_UID,
                         limits=self.limits.record() if self.limits else {})

    def _binds(self, read_only, writable) -> list[str]:
        """bwrap's mount arguments, parents before children, with every directory it must create readable. Each
        item is a folder, shown at its own path, or a (folder, where the sandbox sees it) pair (`placed`)."""
        args = ["--ro-bind", "/usr", "/usr"]
        for link in SYSTEM_LINKS:
            p = Path(link)
            if p.is_symlink():
                args += ["--symlink", os.readlink(p), link]
            elif p.is_dir():
                args += ["--ro-bind", link, link]
        args += ["--perms", "0755", "--dir", "/etc"]  # bwrap would make it 0700, closed to the sandbox's user
        for name in ETC_FILES:
            args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        bound = [Path("/usr")] + [Path(link) for link in SYSTEM_LINKS]
        created = {Path("/"), Path("/etc"), Path("/tmp"), Path("/dev"), Path("/proc"), Path("/sys")}
        wanted = [(*placed(p), "--ro-bind") for p in [*self.toolkit, *self.library_dirs, *read_only]]
        wanted += [(*placed(p), "--bind") for p in writable]
        for source, path, how in sorted(wanted, key=lambda item: (len(item[1].parts), str(item[1]))):
            path = Path(os.path.abspath(path))
            if how == "--ro-bind" and source == path and _under(path, bound):
                continue  # already visible, read-only, through a bound parent
            for parent in reversed(path.parents):
                if parent not in created and not _under(parent, bound):
                    args += ["--perms", "0755", "--dir", str(parent)]
                    created.add(parent)
            args += [how, str(source), str(path)]
            bound.append(path)
        return args

    def confined(self, argv: list[str], profile: str = "run") -> list[str]:
        """argv started through the launcher that adds `profile`'s filter."""
        return [self.python, "-I", "-S", str(CONFINE), profile, "--", *[str(a) for a in argv]]

    def preload_library(self) -> Path:
        """The library that installs the run profile's filter in the harness under compute-sanitizer
        (seccomp.preload_source), compiled once per grader process with the system's C compiler."""
        if getattr(self, "_preload", None) is None:
            compiler = shutil.which("cc") or shutil.which("gcc")
            if compiler is None:
                raise SandboxError("the sandbox needs a C compiler (cc or gcc) to build its seccomp preload library")
            folder = Path(tempfile.mkdtemp(prefix="grader-confine-"))
            folder.chmod(0o755)
            atexit.register(shutil.rmtree, folder, True)
            source, library = folder / "confine_preload.c", folder / "libconfine.so"
            source.write_text(seccomp.preload_source(self.filters["run"]))
            done = subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", str(library), str(source)],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise SandboxError(f"cannot build the seccomp preload library: {done.stderr.strip()[:500]}")
            library.chmod(0o755)
            self._preload = library
        return self._preload

    def wrap(self, argv: list[str], *, read_only=(), writable=(), cwd: Path | None = None,
             gpu: str | None = None, profile: str = "build", confine_exe: Path | None = None,
             env: dict | None = None) -> tuple[list[str], dict]:
        """The sandboxed command for argv, and the keyword arguments for subprocess.Popen (use `spawn`,
        which closes the descriptor that hands bubblewrap the seccomp filter). The first writable
        directory is the code's HOME (and cwd, unless given).

        profile: "build" (compilers: processes and programs; no /sys, no GPU device nodes), "run" (student
        code itself: argv runs through confine.py with the run profile inside the build one) or "tool"
        (compute-sanitizer: the program at `confine_exe`, which the tool starts, gets the run profile from
        a preloaded library before its own code runs)."""
        if self.limits is None:
            raise SandboxError("the sandbox's resource limits were not set (they come from the rubric's [limits])")
        if profile not in PROFILES:
            raise ValueError(f"unknown sandbox profile {profile!r}")
        limits = self.limits
        read_only = [*read_only, CONFINE, SECCOMP_SOURCE]
        preload = self.preload_library() if profile == "tool" and confine_exe is not None else None
        if preload is not None:
            read_only.append(preload)
        home = placed(writable[0])[1] if writable else Path("/tmp")
        uid = random.randint(*SANDBOX_UID_RANGE) if self.privileged else None
        for directory, _ in map(placed, writable):
            directory.mkdir(parents=True, exist_ok=True)
            if uid is not None:
                _chown_tree(directory, uid)
        cmd = [str(self.bwrap)]
        if self.privileged:
            cmd += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        else:
            cmd += ["--unshare-all", "--unshare-user", "--uid", str(NAMESPACE_UID), "--gid", str(NAMESPACE_UID)]
            if self.can_disable_userns:
                cmd += ["--disable-userns"]
        cmd += ["--die-with-parent", "--new-session", "--hostname", "sandbox", "--proc", "/proc", "--dev", "/dev"]
        # A build needs neither the GPU nor /sys; the rest gets the device nodes (looked up each time: the
        # driver creates some only on first use) and /sys, which the CUDA driver reads.
        devices = _device_nodes() if profile != "build" else []
        for node in devices:
            cmd += ["--dev-bind", str(node), str(node)]
        if profile != "build":
            cmd += ["--ro-bind", "/sys", "/sys"]
        for mount, size in (("/tmp", limits.file_size), ("/dev/shm", limits.file_size)):
            cmd += ["--perms", "1777"] + (["--size", str(size)] if self.can_size_tmpfs else []) + ["--tmpfs", mount]
        cmd += self._binds(read_only, writable)  # after /tmp, so that paths under /tmp stay visible
        cmd += ["--chdir", str(cwd or home), "--clearenv"]
        environment = {**self._environment(home, gpu), **(env or {})}
        if preload is not None:
            environment.update({"LD_PRELOAD": str(preload), "GRADER_CONFINE_EXE": str(confine_exe)})
        for key, value in environment.items():
            cmd += ["--setenv", key, value]
        read_fd, write_fd = os.pipe()  # the outer filter, read by bubblewrap before it starts the command
        # The outer filter, for every process of the sandbox: a build's; else the tool's (AF_UNIX sockets, which
        # the CUDA driver opens), inside which the run profile's takes the harness itself.
        os.write(write_fd, self.filters["build" if profile == "build" else "tool"])
        os.close(write_fd)
        cmd += ["--seccomp", str(read_fd)]
        cmd += ["/bin/sh", "-c", OOM_WRAPPER, "sandbox"]
        if uid is not None:
            groups = sorted({os.stat(d).st_gid for d in devices if os.stat(d).st_mode & 0o006 != 0o006})
            cmd += [self.tools["setpriv"], f"--reuid={uid}", f"--regid={uid}",
                    f"--groups={','.join(map(str, groups))}" if groups else "--clear-groups",
                    "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
        argv = self.confined(argv, "run") if profile == "run" else [str(a) for a in argv]
        cmd += _prlimit(self.tools["prlimit"], limits) + argv
        return cmd, {"env": dict(self.bwrap_env), "umask": 0o022, "pass_fds": (read_fd,)}

    def _environment(self, home: Path, gpu: str | None) -> dict[str, str]:
        path = list(dict.fromkeys([*self.toolkit_bins, *BASE_PATH]))
        env = {"PATH": ":".join(path), "HOME": str(home), "TMPDIR": "/tmp"}
        for key in ("CUDA_DEVICE_ORDER", "LD_LIBRARY_PATH"):
            if os.environ.get(key):
                env[key] = os.environ[key]
        if gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = gpu
        return env

    def check(self, work: Path) -> None:
        """A trivial run through the whole sandbox; raises SandboxError naming the cause when it fails."""
        # A folder of its own: checks at once in one folder (the service's workers, test workers in /tmp) removed
        # each other's, and the one whose folder went failed ("not writable inside").
        Path(work).mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix="sandbox-check-", dir=Path(work).resolve()))
        probe = ('test -w "$HOME" || { echo "the scratch directory is not writable inside" >&2; exit 3; }; '
                 'for d in /dev/nvidiactl /dev/nvidia0; do if [ -e "$d" ] && ! [ -r "$d" -a -w "$d" ]; then '
                 'echo "$d is not readable and writable inside" >&2; exit 3; fi; done; echo sandbox-ok')
        saved, self.limits = self.limits, self.limits or ResourceLimits(60, 64 * 2**20, 64)
        try:
            done = run(self, ["/bin/sh", "-c", probe], timeout=60, writable=[scratch], profile="run")
        except OSError as e:
            raise SandboxError(f"bubblewrap at {self.bwrap} could not be started: {e}") from None
        finally:
            self.limits = saved
            shutil.rmtree(scratch, ignore_errors=True)
        if done.status != 0 or "sandbox-ok" not in done.stdout:
            raise SandboxError(explain_failure(self.bwrap, done, self.privileged))


def _prlimit(prlimit: str, limits: ResourceLimits) -> list[str]:
    # The CPU limit's hard value comes a little after the soft one: SIGXCPU first, then SIGKILL.
    return [prlimit, f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 5}", f"--fsize={limits.file_size}",
            f"--nproc={limits.processes}", "--core=0", "--"]


def _chown_tree(directory: Path, uid: int):
    os.chown(directory, uid, uid)
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), uid, uid)


def _sysctl(name: str) -> str | None:
    try:
        return Path("/proc/sys", *name.split(".")).read_text().strip()
    except OSError:
        return None


def explain_failure(bwrap: Path, done: Completed, privileged: bool) -> str:
    said = " ".join((done.stderr or done.stdout).split())[:600] or f"exit status {done.status}, no message"
    causes = []
    if _sysctl("kernel.unprivileged_userns_clone") == "0":
        causes.append("unprivileged user namespaces are disabled (sysctl kernel.unprivileged_userns_clone=0)")
    if _sysctl("user.max_user_namespaces") == "0":
        causes.append("user namespaces are disabled (sysctl user.max_user_namespaces=0)")
    if _sysctl("kernel.apparmor_restrict_unprivileged_userns") == "1":
        causes.append("AppArmor restricts unprivileged user namespaces "
                      "(sysctl kernel.apparmor_restrict_unprivileged_userns=1; Ubuntu ships a bwrap profile for this)")
    lowered = said.lower()
    if not causes and ("namespace" in lowered or "uid map" in lowered) and not privileged:
        causes.append("this kernel does not let an unprivileged user create a user namespace")
    if not causes and "operation not permitted" in lowered and privileged:
        causes.append("this process may not create namespaces or mounts even as root: probably a container "
                      "without CAP_SYS_ADMIN (grade on the host, or run the container with the rights bubblewrap needs)")
    if done.timed_out:
        causes.append("the trial run did not finish within 60 s")
    why = f" Likely cause: {'; '.join(causes)}." if causes else ""
    return (f"the sandbox does not work on this machine: a trial run of {bwrap} failed ({said}).{why} "
            f"Fix that, or grade with {UNSAFE_FLAG} (student code then runs with the grader's rights, "
            "and every result says so).")


class Unsandboxed:
    """--unsafe-no-sandbox: student code runs as the grader's user; only the resource limits and the
    wall clock apply (and RLIMIT_NPROC not at all for root). Every stored result says so."""

    privileged = False
    can_place = False  # what runs sees the real folders: no (folder, elsewhere) pair can be honoured

    def __init__(self, limits: ResourceLimits | None = None):
        self.limits = limits
        self.prlimit = shutil.which("prlimit")

    @property
    def description(self) -> Isolation:
        """The record stored with each grading run: no isolation, on purpose (its words say what that means)."""
        return Isolation("none", user="grader", uid=os.geteuid(), limits=self.limits.record() if self.limits else {},
                         unsafe=True)

    def confined(self, argv: list[str], profile: str = "run") -> list[str]:
        return [str(a) for a in argv]

    def wrap(self, argv: list[str], *, read_only=(), writable=(), cwd: Path | None = None,
             gpu: str | None = None, profile: str = "build", confine_exe: Path | None = None,
             env: dict | None = None) -> tuple[list[str], dict]:
        if any(isinstance(p, tuple) for p in [*read_only, *writable]):
            raise SandboxError("without a sandbox a folder cannot be shown somewhere else (Workspace asks can_place)")
        for directory in writable:
            Path(directory).mkdir(parents=True, exist_ok=True)
        environment = {**os.environ, **(env or {})}
        if gpu is not None:
            environment["CUDA_VISIBLE_DEVICES"] = gpu
        cwd = cwd or (Path(writable[0]) if writable else None)
        limit = _prlimit(self.prlimit, self.limits) if self.prlimit and self.limits else []
        return limit + [str(a) for a in argv], {"env": environment, "cwd": cwd}

    def check(self, work: Path) -> None:
        pass


def spawn(sandbox, argv: list[str], *, stdin, stdout, stderr, read_only=(), writable=(), cwd: Path | None = None,
          gpu: str | None = None, profile: str = "build", confine_exe: Path | None = None,
          env: dict | None = None) -> subprocess.Popen:
    """Starts argv in the sandbox, in a process group of its own (killed as one); `env` adds variables."""
    command, kwargs = sandbox.wrap(argv, read_only=read_only, writable=writable, cwd=cwd, gpu=gpu, profile=profile,
                                   confine_exe=confine_exe, env=env)
    try:
        return subprocess.Popen(command, stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True, **kwargs)
    finally:
        for fd in kwargs.get("pass_fds", ()):
            os.close(fd)


def run(sandbox, argv: list[str], *, timeout: float, read_only=(), writable=(), cwd: Path | None = None,
        gpu: str | None = None, merge_stderr: bool = False, profile: str = "build",
        confine_exe: Path | None = None) -> Completed:
    """Runs argv in the sandbox to completion or the wall-clock limit, output capped per stream."""
    cap = sandbox.limits.output if sandbox.limits else DEFAULT_CAP
    start = time.monotonic()
    proc = spawn(sandbox, argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                 stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE, read_only=read_only,
                 writable=writable, cwd=cwd, gpu=gpu, profile=profile, confine_exe=confine_exe)
    readers = [CappedReader(proc.stdout, cap)] + ([] if merge_stderr else [CappedReader(proc.stderr, cap)])
    for r in readers:
        r.start()
    try:
        status = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        status = None
    for r in readers:
        r.join(timeout=5)  # a pipe still held open by an escaped process must not hang the grader
    return Completed(status, readers[0].text(), "" if merge_stderr else readers[1].text(), time.monotonic() - start)


def kill_group(proc: subprocess.Popen):
    """SIGKILL to the process group (bwrap; with it, through --die-with-parent, the whole sandbox)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def make_sandbox(unsafe: bool, bwrap: str | None, work: Path) -> Sandbox | Unsandboxed:
    """What `grade` runs student code in: bubblewrap, checked to work here, or nothing when told so."""
    if unsafe:
        return Unsandboxed()
    path = find_bwrap(bwrap)
    if path is None:
        raise SandboxError(missing_bwrap_message())
    sandbox = Sandbox(path)
    sandbox.check(work)
    return sandbox
