"""Seccomp filters for every process of student code, built with libseccomp (Debian's libseccomp2).

Standard library only: the sandbox's launcher (grader/run/confine.py) imports this file inside the sandbox, run by
the system's python3 with -I -S (no site-packages), so no Python binding can be installed for it; it reaches
libseccomp.so.2 through ctypes, calling the few functions below. (The grader's own venv Python cannot import
Debian's python3-seccomp either; on PyPI, pyseccomp is a ctypes binding last released in 2021 and
mephi42-seccomp a third party's packaging of libseccomp's bindings: neither is the library's own release.)

A filter is a program the kernel runs on every system call of the process (and of everything it starts,
for good: a filter cannot be removed, and a child inherits it). Ours, in order:

 1. the architecture: a call made through another ABI than the machine's own (x86-64's `int $0x80`
    i386 entry, its x32 calls, aarch64's 32-bit compat) kills the process (libseccomp's bad-architecture
    action; for x32, whose calls carry x86-64's audit number, libseccomp itself checks bit 30 of the call
    number), so no call escapes the rules below by its number meaning something else;
 2. a list of calls that no student process ever needs, answered EPERM (a denylist: everything else
    is allowed). A denylist, because what must keep working is large and not ours (nvcc, cicc,
    ptxas, gcc, make, Python, the CUDA driver, compute-sanitizer) and an allowlist that misses one
    call the driver makes on some machine fails every submission; the calls an attack needs are few
    and known. EPERM rather than killing: a library that probes (a driver that looks for a helper
    daemon) carries on, and an attack gets an error, not a way around;
 3. per profile:
      build  make and the compilers: processes and programs, but no new session or process group, no
             sockets of any kind;
      tool   compute-sanitizer's own process: like build, and AF_UNIX sockets (the CUDA driver of its
             target needs them);
      run    the harness with student code: threads only (clone with CLONE_THREAD; clone3 answers
             ENOSYS so that glibc falls back to clone, whose flags a filter can read), no fork, no
             other program (execve is allowed once, for the exact pointers the launcher passes,
             which are random and known to nobody after that exec), no new session or group, no
             socket but AF_UNIX (the CUDA driver's own; nothing to reach in the sandbox).

Denied everywhere: namespaces (unshare, setns, clone with CLONE_NEW*), mounts, chroot, ptrace and
process_vm_readv/writev, kernel modules, kexec, reboot, swap, the clock, bpf, perf_event_open,
userfaultfd, io_uring (whose requests bypass seccomp), keyrings, file handles (open_by_handle_at),
pidfd_getfd, kcmp, personality changes, TIOCSTI/TIOCLINUX (typing into a terminal), iopl/ioperm/
modify_ldt, uselib, vmsplice, fanotify, quotas, acct, syslog, the host name.
Signals (kill, tgkill, ...) are allowed: the sandbox's own pid namespace and uid confine them to its
own processes.

Argument rules compare what the kernel reads: clone's flags and ioctl's request number in their low 32
bits (the kernel truncates both), execve's pointers in all 64; socket's family and personality's value in
all 64, which refuses a little more than the kernel would read (a family or persona with high bits set:
glibc never passes one).
"""
from __future__ import annotations

import ctypes
import errno
import os
import platform

LIBRARY = "libseccomp.so.2"

# Architecture tokens (libseccomp's SCMP_ARCH_*, the kernel's AUDIT_ARCH_* values).
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
SCMP_ARCH_NATIVE = 0

# Actions (SCMP_ACT_*).
ACT_KILL_PROCESS = 0x80000000
ACT_ALLOW = 0x7FFF0000
ACT_ERRNO = 0x00050000


def errno_action(code: int) -> int:
    return ACT_ERRNO | (code & 0xFFFF)


EPERM = errno_action(errno.EPERM)
ENOSYS = errno_action(errno.ENOSYS)

# Filter attributes and comparisons (enum scmp_filter_attr, enum scmp_compare).
FLTATR_ACT_BADARCH = 2
CMP_NE, CMP_EQ, CMP_GT, CMP_MASKED_EQ = 1, 4, 6, 7
NR_SCMP_ERROR = -1  # seccomp_syscall_resolve_name*'s answer for a name it does not know

CLONE_THREAD = 0x00010000
CLONE_NAMESPACES = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000,
                    0x00000080)  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
LOW_32 = 0xFFFFFFFF
AF_UNIX = 1
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
PERSONALITY_QUERY = 0xFFFFFFFF

DENIED_EVERYWHERE = (
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr", "ptrace", "process_vm_readv", "process_vm_writev", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct",
    "syslog", "quotactl", "quotactl_fd", "iopl", "ioperm", "modify_ldt", "settimeofday", "clock_settime",
    "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "lookup_dcookie", "vhangup", "bpf",
    "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "open_by_handle_at", "name_to_handle_at", "kcmp", "pidfd_getfd", "process_madvise",
    "process_mrelease", "uselib", "vmsplice", "fanotify_init", "nfsservctl",
)


class SeccompError(OSError):
    """libseccomp cannot be used here, or refused the policy; the message is one line naming why."""


class Profile:
    """What one kind of process may do beyond the calls denied everywhere."""

    def __init__(self, name: str, *, processes: bool, programs: bool, sessions: bool, unix_sockets: bool,
                 ptrace: bool = False, personality: bool = False):
        self.name = name
        self.processes = processes  # fork, vfork, clone without CLONE_THREAD
        self.programs = programs  # execve, execveat
        self.sessions = sessions  # setsid, setpgid
        self.unix_sockets = unix_sockets  # socket/socketpair with AF_UNIX (no other family, ever)
        self.ptrace = ptrace
        self.personality = personality  # personality() that changes it (a query is always allowed)


PROFILE_BUILD = Profile("build", processes=True, programs=True, sessions=False, unix_sockets=False)
# compute-sanitizer starts its target (fork and exec); it needed nothing more on an H100 (2026-11-23: no new
# session, no personality change, no ptrace), and the CUDA driver in its target needs AF_UNIX sockets.
PROFILE_TOOL = Profile("tool", processes=True, programs=True, sessions=False, unix_sockets=True)
# The CUDA driver opens AF_UNIX sockets when it starts (cuInit fails with "OS call failed" without them:
# H100, driver 580, 2026-11-23). In the sandbox they reach nothing: no socket of the host is bound in, and
# abstract ones belong to the sandbox's own, empty network namespace.
PROFILE_RUN = Profile("run", processes=False, programs=False, sessions=False, unix_sockets=True)
PROFILES = {p.name: p for p in (PROFILE_BUILD, PROFILE_TOOL, PROFILE_RUN)}


def machine() -> str:
    arch = platform.machine()
    if arch in ("amd64", "x86-64"):
        arch = "x86_64"
    if arch == "arm64":
        arch = "aarch64"
    if arch not in AUDIT_ARCH:
        raise OSError(f"no seccomp filter for this machine's architecture ({arch}): only x86_64 and aarch64")
    return arch


class _Compare(ctypes.Structure):  # struct scmp_arg_cmp
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


class _Version(ctypes.Structure):  # struct scmp_version
    _fields_ = [("major", ctypes.c_uint), ("minor", ctypes.c_uint), ("micro", ctypes.c_uint)]


_lib = None


def library() -> ctypes.CDLL:
    """libseccomp, loaded once, with the signatures this module calls."""
    global _lib
    if _lib is None:
        try:
            lib = ctypes.CDLL(LIBRARY, use_errno=True)
        except OSError as e:
            raise SeccompError(f"libseccomp ({LIBRARY}) cannot be loaded ({e}): install Debian's libseccomp2 "
                               "(apt-get install libseccomp2)") from None
        ctx = ctypes.c_void_p
        for name, restype, argtypes in (
                ("seccomp_init", ctx, [ctypes.c_uint32]),
                ("seccomp_release", None, [ctx]),
                ("seccomp_attr_set", ctypes.c_int, [ctx, ctypes.c_int, ctypes.c_uint32]),
                ("seccomp_arch_add", ctypes.c_int, [ctx, ctypes.c_uint32]),
                ("seccomp_arch_remove", ctypes.c_int, [ctx, ctypes.c_uint32]),
                ("seccomp_syscall_resolve_name", ctypes.c_int, [ctypes.c_char_p]),
                ("seccomp_syscall_resolve_name_arch", ctypes.c_int, [ctypes.c_uint32, ctypes.c_char_p]),
                ("seccomp_rule_add_array", ctypes.c_int,
                 [ctx, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(_Compare)]),
                ("seccomp_export_bpf", ctypes.c_int, [ctx, ctypes.c_int])):
            function = getattr(lib, name)
            function.restype, function.argtypes = restype, argtypes
        _lib = lib
    return _lib


def version() -> str:
    """The loaded libseccomp's version ("2.5.4")."""
    lib = library()
    lib.seccomp_version.restype = ctypes.POINTER(_Version)
    v = lib.seccomp_version().contents
    return f"{v.major}.{v.minor}.{v.micro}"


def syscall_number(name: str, arch: str | None = None) -> int:
    """The number of system call `name` on `arch` (this machine's by default), from libseccomp's tables; a
    negative number when the call does not exist there (fork on aarch64)."""
    number = library().seccomp_syscall_resolve_name_arch(AUDIT_ARCH[arch or machine()], name.encode())
    if number == NR_SCMP_ERROR:
        raise SeccompError(f"libseccomp {version()} does not know the system call {name}: its tables are older "
                           "than the grader's policy; install a newer libseccomp2")
    return number


class _Filter:
    """One libseccomp filter context: rules in, classic BPF out."""

    def __init__(self, arch: str):
        self.lib = library()
        self.arch = arch
        self.ctx = self.lib.seccomp_init(ACT_ALLOW)
        if not self.ctx:
            raise SeccompError("libseccomp could not start a filter (seccomp_init failed)")
        # The bad-architecture action kills the whole process (libseccomp's default kills only the thread).
        self._check(self.lib.seccomp_attr_set(self.ctx, FLTATR_ACT_BADARCH, ACT_KILL_PROCESS),
                    "set the bad-architecture action to kill the process (libseccomp 2.4 or later)")
        if AUDIT_ARCH[arch] != AUDIT_ARCH.get(_native()):  # a filter for another machine (the tests')
            self._check(self.lib.seccomp_arch_add(self.ctx, AUDIT_ARCH[arch]), f"add the {arch} architecture")
            self._check(self.lib.seccomp_arch_remove(self.ctx, SCMP_ARCH_NATIVE), "remove this machine's architecture")

    def _check(self, result: int, what: str):
        if result < 0:
            raise SeccompError(f"libseccomp {version()} could not {what}: {os.strerror(-result)}")

    def rule(self, action: int, name: str, *compares: tuple[int, int, int, int]):
        """`action` for system call `name` when every comparison (arg, op, a, b) holds; rules of one call with
        the same action hold when any of them does. A call that does not exist on the filter's architecture
        gets no rule there."""
        syscall_number(name, self.arch)  # known to this libseccomp (else a clear error, not a missing rule)
        number = self.lib.seccomp_syscall_resolve_name(name.encode())  # native numbering: libseccomp translates
        array = (_Compare * max(1, len(compares)))(*[_Compare(*c) for c in compares])
        self._check(self.lib.seccomp_rule_add_array(self.ctx, action, number, len(compares), array),
                    f"add the rule for {name}")

    def export(self) -> bytes:
        fd = os.memfd_create("seccomp-bpf")
        try:
            self._check(self.lib.seccomp_export_bpf(self.ctx, fd), "export the filter")
            os.lseek(fd, 0, os.SEEK_SET)
            chunks = []
            while chunk := os.read(fd, 1 << 16):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def release(self):
        self.lib.seccomp_release(self.ctx)


def _native() -> str | None:
    try:
        return machine()
    except OSError:
        return None


def compile_filter(profile: Profile | str, arch: str | None = None,
                   exec_once: tuple[int, int, int] | None = None) -> bytes:
    """The filter for one profile, as the kernel takes it (an array of struct sock_filter).

    exec_once: (path, argv, envp) pointers for which one execve stays allowed in a profile that
    forbids programs (the launcher's own exec of the command)."""
    profile = PROFILES[profile] if isinstance(profile, str) else profile
    f = _Filter(arch or machine())
    try:
        for name in DENIED_EVERYWHERE:
            if not (name == "ptrace" and profile.ptrace):
                f.rule(EPERM, name)
        for flag in CLONE_NAMESPACES:  # any namespace flag (the kernel reads clone's flags in their low 32 bits)
            f.rule(EPERM, "clone", (0, CMP_MASKED_EQ, flag, flag))
        if not profile.processes:
            f.rule(EPERM, "clone", (0, CMP_MASKED_EQ, CLONE_THREAD, 0))  # a new process, not a thread
            f.rule(EPERM, "clone", (0, CMP_GT, LOW_32, 0))  # flags beyond the low 32 bits: not glibc's thread
        f.rule(ENOSYS, "clone3")  # its flags sit in memory a filter cannot read
        if not profile.processes:
            for name in ("fork", "vfork"):
                f.rule(EPERM, name)
        if not profile.programs:
            if exec_once is None:
                f.rule(EPERM, "execve")
            for arg, value in enumerate(exec_once or ()):  # any pointer other than the launcher's
                f.rule(EPERM, "execve", (arg, CMP_NE, value, 0))
            f.rule(EPERM, "execveat")
        if not profile.sessions:
            for name in ("setsid", "setpgid"):
                f.rule(EPERM, name)
        for name in ("socket", "socketpair"):
            if profile.unix_sockets:
                f.rule(EPERM, name, (0, CMP_NE, AF_UNIX, 0))
            else:
                f.rule(EPERM, name)
        for request in (TIOCSTI, TIOCLINUX):
            f.rule(EPERM, "ioctl", (1, CMP_MASKED_EQ, LOW_32, request))
        if not profile.personality:
            f.rule(EPERM, "personality", (0, CMP_NE, PERSONALITY_QUERY, 0))
        return f.export()
    finally:
        f.release()


def preload_source(bpf: bytes) -> str:
    """C for a library that, preloaded (LD_PRELOAD) into every process of a sandbox, installs `bpf` in the one
    process whose executable is $GRADER_CONFINE_EXE, before that program's own code runs: how the harness under
    compute-sanitizer gets the run profile (the tool must start it itself, and loses track of a target that
    replaces itself with execve, so the launcher cannot be used there)."""
    data = ",".join(str(b) for b in bpf)
    return f"""#define _GNU_SOURCE
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static const unsigned char filter[] = {{{data}}};

__attribute__((constructor)) static void grader_confine(void) {{
    const char* target = getenv("GRADER_CONFINE_EXE");
    char self[PATH_MAX], real[PATH_MAX];
    if (!target || !realpath(target, real)) return;
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return;
    self[n] = 0;
    if (strcmp(self, real) != 0) return;
    struct sock_fprog prog = {{(unsigned short)(sizeof filter / 8), (struct sock_filter*)filter}};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {{
        fprintf(stderr, "confine: cannot install the run filter\\n");
        _exit(126);
    }}
}}
"""


def describe(profile: Profile | str) -> str:
    """One line for the sandbox's description."""
    profile = PROFILES[profile] if isinstance(profile, str) else profile
    allowed = [what for what, yes in (("processes", profile.processes), ("programs", profile.programs),
                                      ("sessions", profile.sessions), ("AF_UNIX sockets", profile.unix_sockets))
               if yes]
    return f"{profile.name}: " + (", ".join(allowed) if allowed else "threads only, no programs, sessions or sockets")
