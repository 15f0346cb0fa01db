"""Run profile with AF_UNIX; compute-sanitizer's own needs (tool variants); the run filter installed in the
sanitizer's target by an LD_PRELOAD constructor keyed to the target's executable."""
import os, re, shutil, subprocess, sys, time
from pathlib import Path
HERE = Path(__file__).resolve().parent
STAGE = HERE.parent
sys.path.insert(0, str(STAGE))
from grader import seccomp

def sh(cmd, timeout=120, env=None):
    t = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        out, status = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out, status = "", "TIMEOUT"
    print(f"--- {' '.join(map(str, cmd))[-160:]}\n    status={status} {time.monotonic() - t:.1f}s\n" +
          "\n".join("    " + l for l in out.strip().splitlines()[-6:]), flush=True)
    return status, out

def variant(name, edits):
    d = HERE / "variants3" / name
    d.mkdir(parents=True, exist_ok=True)
    src = (STAGE / "grader" / "seccomp.py").read_text()
    for a, b in edits:
        assert a in src, a
        src = src.replace(a, b)
    (d / "seccomp.py").write_text(src)
    shutil.copy(STAGE / "grader" / "confine.py", d / "confine.py")
    return d / "confine.py"

TOOL = 'PROFILE_TOOL = Profile("tool", processes=True, programs=True, sessions=True, unix_sockets=True, personality=True)'
V = {"prod": [], "tool_nosess": [(TOOL, TOOL.replace("sessions=True", "sessions=False"))],
     "tool_noperso": [(TOOL, TOOL.replace("personality=True", "personality=False"))],
     "tool_nounix": [(TOOL, TOOL.replace("unix_sockets=True", "unix_sockets=False"))]}
P = str(HERE / "probe")
if not Path(P).exists():
    sh(["nvcc", "-O2", "-std=c++17", "-o", P, str(HERE / "cuda_probe.cu")], timeout=300)
CS = shutil.which("compute-sanitizer")
PY = ["/usr/bin/python3", "-I", "-S"]
print("== A: run profile with AF_UNIX")
sh([*PY, str(variant("prod", [])), "run", "--", P, "ok"])
sh([*PY, str(variant("prod", [])), "run", "--", P, "detach"])
print("== B: tool variants, target direct")
for v in V:
    sh([*PY, str(variant(v, V[v])), "tool", "--", CS, "--tool", "memcheck", P, "oob"])
sh([*PY, str(variant("prod", [])), "build", "--", CS, "--tool", "memcheck", P, "oob"])
print("== C: LD_PRELOAD constructor installs the run filter in the target only")
bpf = seccomp.compile_filter("run")
src = HERE / "confine_preload.c"
src.write_text("""#define _GNU_SOURCE
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
static const unsigned char filter[] = {""" + ",".join(str(b) for b in bpf) + """};
__attribute__((constructor)) static void confine(void) {
    const char* target = getenv("GRADER_CONFINE_EXE");
    char self[PATH_MAX], real[PATH_MAX];
    ssize_t n;
    if (!target || !realpath(target, real)) return;
    n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return;
    self[n] = 0;
    if (strcmp(self, real) != 0) return;
    struct sock_fprog prog = { (unsigned short)(sizeof filter / 8), (struct sock_filter*)filter };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        fprintf(stderr, "confine: cannot install the run filter\\n");
        _exit(126);
    }
}
""")
so = HERE / "libconfine.so"
sh(["gcc", "-shared", "-fPIC", "-O2", "-o", str(so), str(src)])
env = {**os.environ, "LD_PRELOAD": str(so), "GRADER_CONFINE_EXE": P}
sh([P, "detach"], env=env)
for tool in ("memcheck", "racecheck"):
    sh([*PY, str(variant("prod", [])), "tool", "--", CS, "--tool", tool, P, "oob" if tool == "memcheck" else "detach"], env=env, timeout=60)
# filters in force in the target while it runs under the tool
probe_sleep = HERE / "sleepy.cu"
probe_sleep.write_text('#include <cstdio>\n#include <unistd.h>\nint main(){int*d;cudaMalloc(&d,4);FILE*f=fopen("/proc/self/status","r");char l[256];while(fgets(l,256,f))if(!strncmp(l,"Seccomp",7))fputs(l,stdout);return 0;}\n'.replace("#include <unistd.h>", "#include <unistd.h>\n#include <cstring>"))
sh(["nvcc", "-o", str(HERE / "sleepy"), str(probe_sleep)], timeout=120)
env2 = {**env, "GRADER_CONFINE_EXE": str(HERE / "sleepy")}
sh([*PY, str(variant("prod", [])), "tool", "--", CS, "--tool", "memcheck", str(HERE / "sleepy")], env=env2)
