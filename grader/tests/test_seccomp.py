"""The seccomp filters (grader/run/seccomp.py, built with libseccomp; grader/run/confine.py): real bubblewrap, real system
calls, under each profile; and the programs libseccomp builds from the policy, run through a classic-BPF
interpreter for both architectures."""
from __future__ import annotations

import errno
import json
import platform
import shutil
import struct
import subprocess
import textwrap
from pathlib import Path

import pytest

from grader.run import seccomp
from grader.run.sandbox import ResourceLimits, Sandbox, SandboxError, find_bwrap, missing_bwrap_message, run
from grader.tests.conftest import REPO, sandbox_unavailable

pytestmark = pytest.mark.slow  # runs student-like programs in bubblewrap under the seccomp filters

PROBE = REPO / "grader" / "tests" / "probes" / "syscalls.py"
DENIED = "Operation not permitted"


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> Sandbox:
    bwrap = find_bwrap()
    if bwrap is None:
        pytest.fail(missing_bwrap_message(), pytrace=False)
    box = Sandbox(bwrap, ResourceLimits(cpu_seconds=60, file_size=8 * 2**20, processes=64))
    try:
        box.check(tmp_path_factory.mktemp("check"))
    except SandboxError as e:
        sandbox_unavailable(f"bubblewrap cannot run here: {e}")
    return box


def probe(sandbox, profile: str, tmp_path: Path, *names: str) -> dict[str, str]:
    done = run(sandbox, ["python3", str(PROBE), *names], timeout=60, read_only=[PROBE], writable=[tmp_path / "s"],
               profile=profile)
    found = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            found.update(json.loads(line))
    assert found, (done.status, done.stdout, done.stderr)
    return found


def test_student_code_gets_threads_and_nothing_that_starts_or_reaches_another_process(sandbox, tmp_path):
    found = probe(sandbox, "run", tmp_path)
    assert found.pop("thread") == "ok" and found.pop("kill_self") == "ok"  # threads and signals to itself
    assert found.pop("clone3") == "Function not implemented"  # so that glibc falls back to clone, which is checked
    # AF_UNIX: the CUDA driver's own (cuInit fails without); nothing in the sandbox to connect to
    assert found.pop("socket_unix") == found.pop("socketpair") == "ok"
    assert found == {name: DENIED for name in found}, found  # fork, spawn, execve, sockets, setsid, ptrace, ...
    assert {"fork", "spawn", "execve", "socket_inet", "socket_inet6", "setsid", "setpgid", "ptrace",
            "process_vm_readv", "unshare", "personality", "io_uring_setup"} <= set(found)


def test_a_build_may_start_programs_but_not_sessions_sockets_or_tracing(sandbox, tmp_path):
    found = probe(sandbox, "build", tmp_path)
    assert {k: found[k] for k in ("thread", "fork", "spawn")} == dict.fromkeys(("thread", "fork", "spawn"), "ok")
    assert "execve" not in found  # it went through: /bin/true replaced the probe before it could say so
    for name in ("socket_inet", "socket_inet6", "socket_unix", "socketpair", "setsid", "setpgid", "ptrace",
                 "process_vm_readv", "unshare", "personality", "io_uring_setup"):
        assert found[name] == DENIED, (name, found[name])


def test_the_sanitizers_own_process_gets_local_sockets_only(sandbox, tmp_path):
    found = probe(sandbox, "tool", tmp_path)
    assert found["fork"] == found["spawn"] == found["socket_unix"] == found["socketpair"] == "ok"
    for name in ("socket_inet", "socket_inet6", "ptrace", "process_vm_readv", "unshare", "io_uring_setup", "setsid",
                 "setpgid", "personality"):
        assert found[name] == DENIED, (name, found[name])


def test_under_the_tool_the_harness_gets_the_run_profile_from_the_preloaded_library(sandbox, tmp_path):
    """compute-sanitizer starts the harness itself; a library preloaded into the sandbox installs the run profile
    in the one process whose executable is the harness (here a stand-in for both), and in no other."""
    harness = tmp_path / "bin" / "harness"
    harness.parent.mkdir()
    shutil.copy(Path("/bin/sleep").resolve(), harness)  # any program: what counts is its filters
    script = (f"'{harness}' 5 & pid=$!; sleep 0.5; grep Seccomp_filters /proc/$pid/status; "
              "grep Seccomp_filters /proc/self/status; kill $pid")
    done = run(sandbox, ["/bin/sh", "-c", script], timeout=30, read_only=[harness], writable=[tmp_path / "s"],
               profile="tool", confine_exe=harness)
    filters = [int(line.split()[-1]) for line in done.stdout.splitlines() if line.startswith("Seccomp_filters")]
    assert filters == [2, 1], done  # the harness: the tool's filter and the run one; the tool's own processes: one


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the i386 entry point exists on x86-64 only")
def test_a_call_through_another_abi_kills_the_process(sandbox, tmp_path):
    """`int $0x80` reaches the i386 table, where the numbers mean other calls: the filter kills on sight."""
    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    source = tmp_path / "i386.c"
    source.write_text(textwrap.dedent("""\
        #include <stdio.h>
        int main(void) {
            long ret;
            printf("before\\n"); fflush(stdout);
            __asm__ volatile ("int $0x80" : "=a"(ret) : "a"(20L) : "memory");  /* getpid on i386 */
            printf("after %ld\\n", ret);
            return 0;
        }
        """))
    binary = tmp_path / "bin" / "i386"
    binary.parent.mkdir()
    subprocess.run(["gcc", "-O1", "-o", str(binary), str(source)], check=True)
    done = run(sandbox, [binary], timeout=30, read_only=[binary], writable=[tmp_path / "s"], profile="run")
    assert "before" in done.stdout and "after" not in done.stdout
    assert done.status == 128 + 31, done  # SIGSYS, reported by bubblewrap as 128 + N


def test_honest_work_runs_under_the_run_profile(sandbox, tmp_path):
    """Threads, memory, files in its scratch folder, printing: what the harness and a launcher do."""
    script = ("import threading, os, mmap; from concurrent.futures import ThreadPoolExecutor; "
              "print(sum(ThreadPoolExecutor(8).map(lambda i: i * i, range(1000)))); "
              "m = mmap.mmap(-1, 1 << 24); m[:5] = b'hello'; print(m[:5].decode()); "
              "open(os.environ['HOME'] + '/out.txt', 'w').write('x'); print('wrote')")
    done = run(sandbox, ["python3", "-c", script], timeout=60, writable=[tmp_path / "s"], profile="run")
    assert done.status == 0 and done.stdout.split() == ["332833500", "hello", "wrote"], done


# ---------------------------------------------------------------------------
# The programs libseccomp builds from our policy, judged instruction by instruction (both architectures, whatever
# this machine is).

def evaluate(program: bytes, nr: int, arch: str, args=(0, 0, 0, 0, 0, 0), audit_arch: int | None = None) -> int:
    """What the kernel would answer for one call: an interpreter of the classic BPF a seccomp filter may hold
    (loads of struct seccomp_data, ALU on the accumulator, jumps, returns)."""
    data = struct.pack("<IIQ6Q", nr & 0xFFFFFFFF, audit_arch if audit_arch is not None else seccomp.AUDIT_ARCH[arch],
                       0, *[a & 0xFFFFFFFFFFFFFFFF for a in (*args, 0, 0, 0, 0, 0, 0)[:6]])
    code = [struct.unpack("<HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    alu = {0x04: lambda a, k: a + k, 0x14: lambda a, k: a - k, 0x24: lambda a, k: a * k,
           0x44: lambda a, k: a | k, 0x54: lambda a, k: a & k, 0x64: lambda a, k: a << k,
           0x74: lambda a, k: a >> k, 0xA4: lambda a, k: a ^ k}
    jumps = {0x15: lambda a, k: a == k, 0x25: lambda a, k: a > k, 0x35: lambda a, k: a >= k,
             0x45: lambda a, k: bool(a & k)}
    pc, acc, scratch = 0, 0, [0] * 16
    while True:
        op, jt, jf, k = code[pc]
        pc += 1
        if op == 0x20:  # ld [k]
            acc = struct.unpack_from("<I", data, k)[0]
        elif op == 0x00:  # ld #k
            acc = k
        elif op == 0x60:  # ld M[k]
            acc = scratch[k]
        elif op == 0x02:  # st M[k]
            scratch[k] = acc
        elif op in alu:
            acc = alu[op](acc, k) & 0xFFFFFFFF
        elif op in jumps:
            pc += jt if jumps[op](acc, k) else jf
        elif op == 0x05:  # ja
            pc += k
        elif op == 0x06:  # ret #k
            return k
        else:
            raise AssertionError(f"unexpected opcode {op:#x} at {pc - 1}")


EPERM, ENOSYS = seccomp.ACT_ERRNO | errno.EPERM, seccomp.ACT_ERRNO | errno.ENOSYS
ALLOW, KILL = seccomp.ACT_ALLOW, seccomp.ACT_KILL_PROCESS
X32_SYSCALL_BIT = 0x40000000


def nr(name: str, arch: str) -> int:
    return seccomp.syscall_number(name, arch)


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_the_run_filter_allows_threads_only(arch):
    program = seccomp.compile_filter("run", arch)
    thread_flags = 0x3D0F00  # what glibc's pthread_create passes: VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|...
    assert evaluate(program, nr("clone", arch), arch, (thread_flags,)) == ALLOW
    assert evaluate(program, nr("clone", arch), arch, (0x01200011,)) == EPERM  # fork through clone (SIGCHLD|...)
    assert evaluate(program, nr("clone", arch), arch, (thread_flags | 0x10000000,)) == EPERM  # and CLONE_NEWUSER
    for flag in seccomp.CLONE_NAMESPACES:
        assert evaluate(program, nr("clone", arch), arch, (thread_flags | flag,)) == EPERM, hex(flag)
    assert evaluate(program, nr("clone", arch), arch, (thread_flags | (1 << 32),)) == EPERM
    assert evaluate(program, nr("clone3", arch), arch) == ENOSYS
    for name in ("execve", "execveat", "setsid", "setpgid", "ptrace", "unshare", "setns", "mount", "bpf",
                 "io_uring_setup", "process_vm_writev", "keyctl", "userfaultfd", "perf_event_open"):
        assert evaluate(program, nr(name, arch), arch) == EPERM, name
    assert evaluate(program, nr("socket", arch), arch, (1,)) == ALLOW  # AF_UNIX, which the CUDA driver opens
    assert evaluate(program, nr("socket", arch), arch, (2,)) == EPERM  # AF_INET
    assert evaluate(program, nr("socket", arch), arch, (10,)) == EPERM  # AF_INET6
    assert evaluate(program, nr("socket", arch), arch, (16,)) == EPERM  # AF_NETLINK
    assert evaluate(program, nr("socket", arch), arch, ((1 << 32) | 1,)) == EPERM  # high bits: all 64 compared
    assert evaluate(program, nr("ioctl", arch), arch, (0, seccomp.TIOCSTI)) == EPERM
    assert evaluate(program, nr("ioctl", arch), arch, (0, (1 << 32) | seccomp.TIOCSTI)) == EPERM  # the kernel's 32
    assert evaluate(program, nr("ioctl", arch), arch, (0, 0xC0104E2A)) == ALLOW  # a driver's ioctl
    assert evaluate(program, nr("personality", arch), arch, (0xFFFFFFFF,)) == ALLOW  # a query only
    assert evaluate(program, nr("personality", arch), arch, (0x0040000,)) == EPERM
    if arch == "x86_64":
        assert evaluate(program, nr("fork", arch), arch) == evaluate(program, nr("vfork", arch), arch) == EPERM
        assert evaluate(program, 39 | X32_SYSCALL_BIT, arch) == KILL  # an x32 call (getpid)
        assert evaluate(program, nr("execve", arch) | X32_SYSCALL_BIT, arch) == KILL
    assert evaluate(program, 0, arch) == ALLOW  # read / io_setup: everything else
    assert evaluate(program, 0, arch, audit_arch=0x40000003) == KILL  # i386 numbering
    assert evaluate(program, 0, arch, audit_arch=0x40000028) == KILL  # 32-bit arm numbering


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_exec_once_allows_exactly_the_launchers_pointers(arch):
    pointers = (0x7F12_3456_7000, 0x7F12_3456_7100, 0x7F12_3456_7200)
    program = seccomp.compile_filter("run", arch, exec_once=pointers)
    assert evaluate(program, nr("execve", arch), arch, pointers) == ALLOW
    for i in range(3):
        for wrong in (pointers[i] + 8, pointers[i] ^ (1 << 40)):  # the low or the high half differs
            args = list(pointers)
            args[i] = wrong
            assert evaluate(program, nr("execve", arch), arch, args) == EPERM
    assert evaluate(program, nr("execveat", arch), arch, pointers) == EPERM


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_the_build_filter_allows_processes_and_programs_but_no_sockets(arch):
    program = seccomp.compile_filter("build", arch)
    assert evaluate(program, nr("clone", arch), arch, (0x01200011,)) == ALLOW
    assert evaluate(program, nr("execve", arch), arch) == ALLOW
    assert evaluate(program, nr("socket", arch), arch, (1,)) == EPERM
    assert evaluate(program, nr("clone", arch), arch, (0x01200011 | 0x20000000,)) == EPERM  # CLONE_NEWPID
    assert evaluate(seccomp.compile_filter("tool", arch), nr("socket", arch), arch, (1,)) == ALLOW
    assert evaluate(seccomp.compile_filter("tool", arch), nr("socket", arch), arch, (2,)) == EPERM  # AF_INET


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_every_call_denied_everywhere_is_denied_by_every_profile(arch):
    for profile in seccomp.PROFILES:
        program = seccomp.compile_filter(profile, arch)
        for name in seccomp.DENIED_EVERYWHERE:
            number = nr(name, arch)
            if number >= 0:  # (iopl, ioperm, modify_ldt, uselib: x86-64 only)
                assert evaluate(program, number, arch) == EPERM, (profile, name)


def test_without_libseccomp_the_grader_says_what_to_install_in_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr(seccomp, "LIBRARY", "libseccomp-missing.so.2")
    monkeypatch.setattr(seccomp, "_lib", None)
    with pytest.raises(seccomp.SeccompError) as caught:
        seccomp.compile_filter("run")
    said = str(caught.value)
    assert "\n" not in said and "libseccomp-missing.so.2" in said and "apt-get install libseccomp2" in said
    bwrap = find_bwrap()
    if bwrap is None:
        pytest.skip("no bubblewrap: the sandbox's own wording needs it")
    with pytest.raises(SandboxError, match=r"seccomp filters: libseccomp .*\(apt-get install libseccomp2\)$"):
        Sandbox(bwrap, ResourceLimits(cpu_seconds=60, file_size=8 * 2**20, processes=64))


def test_an_unknown_architecture_is_refused_with_its_name(monkeypatch):
    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    with pytest.raises(OSError, match="riscv64"):
        seccomp.machine()


# ---------------------------------------------------------------------------
# What no scan of the code can find: the filter holds however the call is made.

@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 machine code")
def test_a_syscall_hidden_in_an_immediate_is_invisible_to_the_gate_and_refused_by_the_filter(sandbox, tmp_path):
    """As in hostile/hidden-syscall: `syscall` is the immediate of a `mov` that a jump lands inside."""
    from grader.gate.objects import scan_instructions
    source = tmp_path / "hidden.c"
    source.write_text(textwrap.dedent("""\
        #include <stdio.h>
        int main(void) {
            long ret = 41;  /* socket(AF_INET, SOCK_STREAM, 0) */
            __asm__ volatile ("jmp 1f + 1\\n1: .byte 0xb8, 0x0f, 0x05, 0x90, 0x90\\n"
                              : "+a"(ret) : "D"(2L), "S"(1L), "d"(0L) : "rcx", "r11", "memory");
            printf("socket returned %ld\\n", ret);
            return 0;
        }
        """))
    binary = tmp_path / "bin" / "hidden"
    binary.parent.mkdir()
    subprocess.run(["gcc", "-O1", "-c", "-o", str(tmp_path / "hidden.o"), str(source)], check=True)
    subprocess.run(["gcc", "-o", str(binary), str(tmp_path / "hidden.o")], check=True)
    assert scan_instructions(tmp_path / "hidden.o", ("syscall", "sysenter", "int $0x80")) == []  # the gate's view
    outside = subprocess.run([str(binary)], capture_output=True, text=True).stdout
    assert int(outside.split()[-1]) >= 0  # it works: a socket, outside the sandbox
    done = run(sandbox, [binary], timeout=30, read_only=[binary], writable=[tmp_path / "s"], profile="run")
    assert done.stdout.strip() == f"socket returned -{errno.EPERM}", done


def test_libc_functions_found_at_run_time_are_refused_by_the_filter(sandbox, tmp_path):
    """The hostile corpus's resolver (probes/resolve_at_run_time.cpp): fork, setsid and socket found by name with
    no symbol in the object, and called; only the thread is allowed."""
    if shutil.which("g++") is None:
        pytest.skip("no g++")
    binary = tmp_path / "bin" / "resolve"
    binary.parent.mkdir()
    subprocess.run(["g++", "-O2", "-pthread", "-o", str(binary), str(REPO / "grader" / "tests" / "probes" /
                                                                       "resolve_at_run_time.cpp")], check=True)
    symbols = subprocess.run(["nm", "-u", str(binary)], capture_output=True, text=True).stdout
    assert not any(f" {name}@" in symbols or symbols.endswith(f" {name}") for name in ("fork", "setsid", "socket"))
    done = run(sandbox, [binary], timeout=30, read_only=[binary], writable=[tmp_path / "s"], profile="run")
    results = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()}
    assert results == {"fork": ["1", "-1", "1"], "setsid": ["1", "-1", "1"], "socket": ["1", "-1", "1"],
                       "pthread_create": ["1", "0", "0"]}, done  # resolved; -1 with EPERM; the thread made
