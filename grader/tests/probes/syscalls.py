"""What a process may do, tried one call at a time; prints {name: "ok" or the error} as JSON.

Run inside the sandbox by test_seccomp.py under each seccomp profile."""
import ctypes
import json
import os
import socket
import sys
import threading

libc = ctypes.CDLL(None, use_errno=True)


def checked(result):
    if result == -1:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def thread():
    box = []
    t = threading.Thread(target=lambda: box.append(1))
    t.start()
    t.join()
    assert box == [1]


def fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


def spawn():
    pid = os.posix_spawn("/bin/true", ["/bin/true"], {})
    os.waitpid(pid, 0)


def execve():
    argv = (ctypes.c_char_p * 2)(b"/bin/true", None)
    libc.execve.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p]
    checked(libc.execve(b"/bin/true", argv, None))


def new_socket(family):
    def make():
        socket.socket(family, socket.SOCK_STREAM).close()
    return make


def socketpair():
    a, b = socket.socketpair()
    a.close()
    b.close()


TRIES = {
    "thread": thread,
    "fork": fork,
    "spawn": spawn,
    "socket_inet": new_socket(socket.AF_INET),
    "socket_inet6": new_socket(socket.AF_INET6),
    "socket_unix": new_socket(socket.AF_UNIX),
    "socketpair": socketpair,
    "setsid": os.setsid,
    "setpgid": lambda: os.setpgid(0, 0),
    "ptrace": lambda: checked(libc.ptrace(0, 0, None, None)),  # PTRACE_TRACEME
    "process_vm_readv": lambda: checked(libc.process_vm_readv(os.getppid(), None, 0, None, 0, 0)),
    "unshare": lambda: checked(libc.unshare(0x10000000)),  # CLONE_NEWUSER
    "personality": lambda: checked(libc.personality(0x0040000)),  # ADDR_NO_RANDOMIZE
    "clone3": lambda: checked(libc.syscall(435 if os.uname().machine == "x86_64" else 435, None, 0)),
    "io_uring_setup": lambda: checked(libc.syscall(425, 1, None)),
    "kill_self": lambda: os.kill(os.getpid(), 0),
    "execve": execve,  # last: where it is allowed, it replaces this process
}

if __name__ == "__main__":
    wanted = sys.argv[1:] or list(TRIES)
    out = {}
    for name in wanted:
        if name == "execve":
            print(json.dumps(out), flush=True)  # what was found so far, in case the exec succeeds
            out = {}
        try:
            TRIES[name]()
            out[name] = "ok"
        except OSError as e:
            out[name] = os.strerror(e.errno) if e.errno else str(e)
    print(json.dumps(out), flush=True)
