"""Which of the run profile's denials does the CUDA driver need? Variants of the run profile on a tiny probe."""
import os, re, shutil, subprocess, sys, time
from pathlib import Path
HERE = Path(__file__).resolve().parent
STAGE = HERE.parent

def sh(cmd, timeout=120):
    t = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        out, status = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out, status = "", "TIMEOUT"
    print(f"--- {' '.join(map(str, cmd))[-150:]}\n    status={status} {time.monotonic() - t:.1f}s\n" +
          "\n".join("    " + l for l in out.strip().splitlines()[-8:]), flush=True)
    return status, out

def variant(name, edits):
    d = HERE / "variants2" / name
    d.mkdir(parents=True, exist_ok=True)
    src = (STAGE / "grader" / "seccomp.py").read_text()
    for a, b in edits:
        assert a in src, a
        src = src.replace(a, b)
    (d / "seccomp.py").write_text(src)
    shutil.copy(STAGE / "grader" / "confine.py", d / "confine.py")
    return d / "confine.py"

RUN = 'PROFILE_RUN = Profile("run", processes=False, programs=False, sessions=False, unix_sockets=False)'
TOOL = 'PROFILE_TOOL = Profile("tool", processes=True, programs=True, sessions=True, unix_sockets=True, personality=True)'
V = {
    "prod": [],
    "procs": [(RUN, RUN.replace("processes=False", "processes=True"))],
    "progs": [(RUN, RUN.replace("programs=False", "programs=True"))],
    "sess": [(RUN, RUN.replace("sessions=False", "sessions=True"))],
    "unix": [(RUN, RUN.replace("unix_sockets=False", "unix_sockets=True"))],
    "perso": [(RUN, RUN.replace("unix_sockets=False", "unix_sockets=False, personality=True"))],
    "clone3": [('_rule(p, table["clone3"], lambda: p.ret(ENOSYS))', '_rule(p, table["clone3"], lambda: p.ret(RET_ALLOW))')],
    "noeverywhere": [("for name in DENIED_EVERYWHERE:", "for name in ():")],
    "log": [("EPERM = errno_action(errno.EPERM)", "EPERM = 0x7FFC0000"), ("ENOSYS = errno_action(errno.ENOSYS)", "ENOSYS = 0x7FFC0000")],
}
P = str(HERE / "probe")
if not Path(P).exists():
    sh(["nvcc", "-O2", "-std=c++17", "-o", P, str(HERE / "cuda_probe.cu")], timeout=300)
sh(["dmesg", "-C"])
for name, edits in V.items():
    c = variant(name, edits)
    print(f"[{name}]")
    sh(["/usr/bin/python3", "-I", "-S", str(c), "run", "--", P, "ok"])
st, out = sh(["dmesg"])
print("\n".join(l for l in out.splitlines() if "type=1326" in l or "syscall=" in l)[-3000:])
# compute-sanitizer chain with the raw execve, prod tool + prod/unix targets
CS = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
for tv, rv in [("prod", "prod"), ("prod", "unix"), ("prod", "noeverywhere"), ("prod", "log")]:
    print(f"[tool={tv} target={rv}]")
    sh(["/usr/bin/python3", "-I", "-S", str(variant(tv, V[tv])), "tool", "--", CS, "--tool", "memcheck",
        "/usr/bin/python3", "-I", "-S", str(variant(rv, V[rv])), "run", "--", P, "oob"])
st, out = sh(["dmesg"])
print("\n".join(l for l in out.splitlines() if "type=1326" in l or "syscall=" in l)[-3000:])
