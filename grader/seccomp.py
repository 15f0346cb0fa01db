"""Seccomp filters for every process of student code, compiled here to classic BPF (no libseccomp).

Standard library only: the sandbox's launcher (grader/confine.py) imports this file inside the sandbox.

A filter is a program the kernel runs on every system call of the process (and of everything it starts,
for good: a filter cannot be removed, and a child inherits it). Ours, in order:

 1. the architecture: a call made through another ABI than the machine's own (x86-64's `int $0x80`
    i386 entry, its x32 calls, aarch64's 32-bit compat) kills the process, so no call escapes the
    table below by its number meaning something else;
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
"""
from __future__ import annotations

import errno
import platform
import struct

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6];
OFF_NR, OFF_ARCH = 0, 4


def OFF_ARG_LO(i: int) -> int:  # the low 32 bits of argument i (little-endian machines)
    return 16 + 8 * i


def OFF_ARG_HI(i: int) -> int:
    return 20 + 8 * i


AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
X32_SYSCALL_BIT = 0x40000000

RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000

# BPF opcodes: load word at absolute offset, jump if equal / greater-or-equal / any bit set, return.
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K, JA = 0x20, 0x15, 0x35, 0x45, 0x06, 0x05

CLONE_THREAD = 0x00010000
CLONE_NAMESPACES = (0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
                    | 0x00000080)  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
AF_UNIX = 1
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
PERSONALITY_QUERY = 0xFFFFFFFF

# System call numbers of the calls the filters name: x86-64's own table, and the generic one aarch64 uses.
SYSCALLS = {
    "x86_64": {
        "fork": 57, "vfork": 58, "clone": 56, "clone3": 435, "execve": 59, "execveat": 322, "socket": 41,
        "socketpair": 53, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "setsid": 112,
        "setpgid": 109, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "unshare": 272,
        "setns": 308, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
        "fspick": 433, "mount_setattr": 442, "kexec_load": 246, "kexec_file_load": 320, "init_module": 175,
        "finit_module": 313, "delete_module": 176, "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163,
        "syslog": 103, "quotactl": 179, "quotactl_fd": 443, "iopl": 172, "ioperm": 173, "modify_ldt": 154,
        "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159, "sethostname": 170,
        "setdomainname": 171, "lookup_dcookie": 212, "vhangup": 153, "bpf": 321, "perf_event_open": 298,
        "userfaultfd": 323, "keyctl": 250, "add_key": 248, "request_key": 249, "io_uring_setup": 425,
        "io_uring_enter": 426, "io_uring_register": 427, "open_by_handle_at": 304, "name_to_handle_at": 303,
        "kcmp": 312, "pidfd_getfd": 438, "process_madvise": 440, "process_mrelease": 448, "personality": 135,
        "uselib": 134, "vmsplice": 278, "ioctl": 16, "fanotify_init": 300, "nfsservctl": 180,
    },
    "aarch64": {
        "clone": 220, "clone3": 435, "execve": 221, "execveat": 281, "socket": 198, "socketpair": 199,
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "setsid": 157, "setpgid": 154,
        "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "unshare": 97, "setns": 268, "open_tree": 428,
        "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
        "kexec_load": 104, "kexec_file_load": 294, "init_module": 105, "finit_module": 273, "delete_module": 106,
        "reboot": 142, "swapon": 224, "swapoff": 225, "acct": 89, "syslog": 116, "quotactl": 60,
        "quotactl_fd": 443, "settimeofday": 170, "clock_settime": 112, "clock_adjtime": 266, "adjtimex": 171,
        "sethostname": 161, "setdomainname": 162, "lookup_dcookie": 18, "vhangup": 58, "bpf": 280,
        "perf_event_open": 241, "userfaultfd": 282, "keyctl": 219, "add_key": 217, "request_key": 218,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_by_handle_at": 265,
        "name_to_handle_at": 264, "kcmp": 272, "pidfd_getfd": 438, "process_madvise": 440,
        "process_mrelease": 448, "personality": 92, "vmsplice": 75, "ioctl": 29, "fanotify_init": 262,
        "nfsservctl": 42,
    },
}

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


class _Program:
    """Instructions with forward jumps to labels, resolved at the end."""

    def __init__(self):
        self.code: list[tuple[int, object, object, int]] = []  # (opcode, jt, jf, k): jt/jf ints or label names
        self.labels: dict[str, int] = {}
        self._fresh = 0

    def label(self) -> str:
        self._fresh += 1
        return f"L{self._fresh}"

    def place(self, name: str):
        self.labels[name] = len(self.code)

    def emit(self, op: int, k: int = 0, jt=0, jf=0):
        self.code.append((op, jt, jf, k & 0xFFFFFFFF))

    def ret(self, action: int):
        self.emit(RET_K, action)

    def load(self, offset: int):
        self.emit(LD_W_ABS, offset)

    def assemble(self) -> bytes:
        out = []
        for i, (op, jt, jf, k) in enumerate(self.code):
            jt = self.labels[jt] - i - 1 if isinstance(jt, str) else jt
            jf = self.labels[jf] - i - 1 if isinstance(jf, str) else jf
            if not (0 <= jt <= 255 and 0 <= jf <= 255):
                raise ValueError(f"seccomp: a jump too long at instruction {i}")
            out.append(struct.pack("<HBBI", op, jt, jf, k))
        if len(out) > 4096:
            raise ValueError("seccomp: the program is longer than the kernel's 4096 instructions")
        return b"".join(out)


def errno_action(code: int) -> int:
    return RET_ERRNO | (code & 0xFFFF)


EPERM = errno_action(errno.EPERM)
ENOSYS = errno_action(errno.ENOSYS)


def _rule(p: _Program, number: int, body) -> None:
    """`if nr == number: body` (body must end every path in a return); the number is reloaded after."""
    skip = p.label()
    p.load(OFF_NR)
    p.emit(JEQ_K, number, 0, skip)
    body()
    p.place(skip)


def _arg_equals_64(p: _Program, arg: int, value: int, mismatch: str):
    """Falls through when argument `arg` equals `value` (all 64 bits); else jumps to `mismatch`."""
    p.load(OFF_ARG_LO(arg))
    p.emit(JEQ_K, value & 0xFFFFFFFF, 0, mismatch)
    p.load(OFF_ARG_HI(arg))
    p.emit(JEQ_K, (value >> 32) & 0xFFFFFFFF, 0, mismatch)


def compile_filter(profile: Profile | str, arch: str | None = None,
                   exec_once: tuple[int, int, int] | None = None) -> bytes:
    """The filter for one profile, as the kernel takes it (an array of struct sock_filter).

    exec_once: (path, argv, envp) pointers for which one execve stays allowed in a profile that
    forbids programs (the launcher's own exec of the command)."""
    profile = PROFILES[profile] if isinstance(profile, str) else profile
    arch = arch or machine()
    table = SYSCALLS[arch]
    p = _Program()
    kill = p.label()
    p.load(OFF_ARCH)
    p.emit(JEQ_K, AUDIT_ARCH[arch], 0, kill)
    if arch == "x86_64":
        p.load(OFF_NR)
        p.emit(JGE_K, X32_SYSCALL_BIT, kill, 0)

    for name in DENIED_EVERYWHERE:
        if name in table and not (name == "ptrace" and profile.ptrace):
            _rule(p, table[name], lambda: p.ret(EPERM))

    def clone_body():
        deny = p.label()
        p.load(OFF_ARG_LO(0))
        p.emit(JSET_K, CLONE_NAMESPACES, deny, 0)
        if not profile.processes:
            thread = p.label()
            p.emit(JSET_K, CLONE_THREAD, thread, deny)
            p.place(thread)
            p.load(OFF_ARG_HI(0))
            p.emit(JEQ_K, 0, 0, deny)
        p.ret(RET_ALLOW)
        p.place(deny)
        p.ret(EPERM)
    _rule(p, table["clone"], clone_body)
    _rule(p, table["clone3"], lambda: p.ret(ENOSYS))  # its flags sit in memory a filter cannot read
    if not profile.processes:
        for name in ("fork", "vfork"):
            if name in table:
                _rule(p, table[name], lambda: p.ret(EPERM))
    if not profile.programs:
        def execve_body():
            deny = p.label()
            if exec_once is not None:
                for arg, value in enumerate(exec_once):
                    _arg_equals_64(p, arg, value, deny)
                p.ret(RET_ALLOW)
            p.place(deny)
            p.ret(EPERM)
        _rule(p, table["execve"], execve_body)
        _rule(p, table["execveat"], lambda: p.ret(EPERM))
    if not profile.sessions:
        for name in ("setsid", "setpgid"):
            _rule(p, table[name], lambda: p.ret(EPERM))

    def socket_body():
        deny = p.label()
        if profile.unix_sockets:
            p.load(OFF_ARG_LO(0))
            p.emit(JEQ_K, AF_UNIX, 0, deny)
            p.ret(RET_ALLOW)
        p.place(deny)
        p.ret(EPERM)
    for name in ("socket", "socketpair"):
        _rule(p, table[name], socket_body)

    def ioctl_body():
        deny = p.label()
        p.load(OFF_ARG_LO(1))
        p.emit(JEQ_K, TIOCSTI, deny, 0)
        p.emit(JEQ_K, TIOCLINUX, deny, 0)
        p.ret(RET_ALLOW)
        p.place(deny)
        p.ret(EPERM)
    _rule(p, table["ioctl"], ioctl_body)
    if not profile.personality:
        def personality_body():
            deny = p.label()
            p.load(OFF_ARG_LO(0))
            p.emit(JEQ_K, PERSONALITY_QUERY, 0, deny)
            p.ret(RET_ALLOW)
            p.place(deny)
            p.ret(EPERM)
        _rule(p, table["personality"], personality_body)

    p.ret(RET_ALLOW)
    p.place(kill)
    p.ret(RET_KILL_PROCESS)
    return p.assemble()


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
