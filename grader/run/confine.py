"""The last step inside the sandbox before student code: a seccomp filter, then the command.

    python3 -I -S confine.py PROFILE -- COMMAND [ARGS...]

Installs the profile's filter (grader/run/seccomp.py, built with libseccomp; PR_SET_NO_NEW_PRIVS first, as the
kernel requires of an unprivileged process) and executes COMMAND, found on PATH, with the environment it was given. A
profile that forbids running programs ("run") still lets this one execve through: the filter allows
execve only with the exact path, argv and envp pointers that this launcher passes, which it places at
a random address of a page of its own. After the exec that page is gone and the numbers are nowhere in
the new program, so its code (the student's) cannot make them up.

Standard library only (and libseccomp.so.2 through ctypes), run by the system's python3 inside the sandbox (bound
read-only with seccomp.py).
Exit status 126 when it cannot confine or execute the command (with one line on stderr).
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import secrets
import shutil
import sys
from pathlib import Path

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
PROT_READ, PROT_WRITE, MAP_PRIVATE, MAP_ANONYMOUS = 1, 2, 0x02, 0x20
PAGE = 4096


def _seccomp_module():
    spec = importlib.util.spec_from_file_location("grader_seccomp", Path(__file__).resolve().parent / "seccomp.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _fail(message: str) -> int:
    print(f"confine: {message}", file=sys.stderr, flush=True)
    return 126


def _strings_at_random_address(libc, path: bytes, argv: list[bytes], envp: list[bytes]) -> tuple[int, int, int]:
    """path, argv[] and envp[] laid out in a fresh private page at a random address (and a random
    offset in it); returns their addresses."""
    body = sum(len(s) + 1 for s in [path, *argv, *envp]) + 8 * (len(argv) + len(envp) + 2)
    size = (body + 2 * PAGE + PAGE - 1) // PAGE * PAGE
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    hint = (secrets.randbelow((1 << 46) - (1 << 33)) + (1 << 33)) & ~(PAGE - 1)
    base = libc.mmap(hint, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
    if base in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "mmap failed")
    cursor = base + 8 * secrets.randbelow(PAGE // 8)

    def put(data: bytes) -> int:
        nonlocal cursor
        at = cursor
        ctypes.memmove(at, data, len(data))
        cursor += len(data)
        cursor = (cursor + 7) & ~7
        return at

    p_path = put(path + b"\0")
    arg_ptrs = [put(a + b"\0") for a in argv]
    env_ptrs = [put(e + b"\0") for e in envp]
    p_argv = put(b"".join(p.to_bytes(8, "little") for p in arg_ptrs) + bytes(8))
    p_envp = put(b"".join(p.to_bytes(8, "little") for p in env_ptrs) + bytes(8))
    return p_path, p_argv, p_envp


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        return _fail("usage: confine.py PROFILE -- COMMAND [ARGS...]")
    profile_name, command = argv[0], argv[2:]
    seccomp = _seccomp_module()
    profile = seccomp.PROFILES.get(profile_name)
    if profile is None:
        return _fail(f"unknown profile {profile_name!r} (profiles: {', '.join(seccomp.PROFILES)})")
    program = command[0] if "/" in command[0] else shutil.which(command[0])
    if program is None:
        return _fail(f"{command[0]}: command not found")
    libc = ctypes.CDLL(None, use_errno=True)
    encode = os.fsencode
    try:
        pointers = _strings_at_random_address(libc, encode(program), [encode(a) for a in command],
                                              [encode(f"{k}={v}") for k, v in os.environ.items()])
        bpf = seccomp.compile_filter(profile, exec_once=None if profile.programs else pointers)
        execve = seccomp.syscall_number("execve")  # the number the filter knows it by
    except (OSError, ValueError) as e:
        return _fail(f"cannot prepare the {profile_name} filter: {e}")
    code = ctypes.create_string_buffer(bpf, len(bpf))
    fprog = _Fprog(len(bpf) // 8, ctypes.cast(code, ctypes.c_void_p))
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        return _fail(f"PR_SET_NO_NEW_PRIVS failed: {os.strerror(ctypes.get_errno())}")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0) != 0:
        return _fail(f"installing the {profile_name} filter failed: {os.strerror(ctypes.get_errno())}")
    sys.stderr.flush()
    # The system call itself, not libc's execve: a library preloaded into this process (compute-sanitizer's
    # injection, when this launcher is the tool's target) may wrap execve and pass other pointers.
    libc.syscall.argtypes = [ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    libc.syscall(execve, *pointers)  # returns only when it failed
    return _fail(f"cannot execute {program}: {os.strerror(ctypes.get_errno())}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
