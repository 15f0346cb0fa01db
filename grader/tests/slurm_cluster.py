"""A private single-host Slurm for the tests: munged, slurmctld and slurmd, children of the test process.

Everything lives in one temporary folder: a MUNGE key and socket of its own, a slurm.conf on free ports with
one node, `gradernode`, that has two GPUs (GresTypes=gpu, Gres=gpu:2, and a gres.conf whose File= lines name
device files made with mknod, major 195 like NVIDIA's: Slurm binds a job's GPUs by those files and sets
CUDA_VISIBLE_DEVICES from them), and a partition `grading`. Nothing outside the folder is touched, and stop()
ends exactly the three daemons it started.

The binaries are Debian's packages (slurmctld, slurmd, slurm-client, munge: `make deps-slurm`) found on PATH, or
an unpacked tree of the same packages (`dpkg -x` each .deb into one folder: `tree`), which is what a machine
without a package index carries (docs/slurm.md). Every reason it cannot start is a ClusterUnavailable naming
it, for the tests to skip with.

One exception, asked for by name (own_cgroups=True, docs/gpu-runs/slurm_gpu.py on a lent GPU machine): on
cgroup v2 without systemd, slurmd's cgroup plugin can start only after prepare_cgroup_v2() has rearranged the
machine's cgroup tree (see there).
"""
from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import time
from pathlib import Path

NODE = "gradernode"
PARTITION = "grading"
MULTIARCH = "x86_64-linux-gnu"


class ClusterUnavailable(RuntimeError):
    pass


def _free_port() -> int:
    """A port below the kernel's range for outgoing connections (ip_local_port_range): one picked from that range is
    free now but may be taken by any client's connection before slurmctld binds it (the service's flood test, on the
    other xdist worker, opens 20,000 of them; CI's run of 2026-12-02 lost a cluster so)."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    for _ in range(200):
        port = random.randrange(10000, max(10001, low))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise ClusterUnavailable(f"no free port between 10000 and {low}")


class Binaries:
    """Where each program is: on PATH (the packages installed), or in an unpacked tree of them."""

    def __init__(self, tree: Path | None = None):
        self.tree = Path(tree).resolve() if tree else None

    def find(self, name: str) -> str:
        if self.tree is None:
            found = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}",) if Path(p).exists()), None)
        else:  # the unpacked tree has Debian's real names (/usr/sbin/slurmd is an alternatives link)
            candidates = [self.tree / "usr" / d / n for d in ("sbin", "bin") for n in (f"{name}-wlm", name)]
            found = next((str(p) for p in candidates if p.exists()), None)
        if not found:
            where = f"in {self.tree}" if self.tree else "on PATH (Debian: slurmctld slurmd slurm-client munge)"
            raise ClusterUnavailable(f"{name} is not installed {where}")
        return found

    def env(self) -> dict[str, str]:
        """What a process needs to find the tree's programs and libraries (the binaries' RUNPATH is /usr/lib/...)."""
        if self.tree is None:
            return {}
        lib = self.tree / "usr" / "lib" / MULTIARCH
        return {"PATH": f"{self.tree / 'usr' / 'bin'}:{os.environ.get('PATH', '')}",
                "LD_LIBRARY_PATH": ":".join(p for p in (str(lib / "slurm-wlm"), str(lib),
                                                        str(self.tree / "lib" / MULTIARCH),  # libreadline's
                                                        os.environ.get("LD_LIBRARY_PATH", "")) if p)}

    @property
    def plugins(self) -> Path | None:
        return self.tree / "usr" / "lib" / MULTIARCH / "slurm-wlm" if self.tree else None


TREE_ENV = "GRADER_SLURM_TREE"  # an unpacked tree of the packages, used instead of PATH's (docs/slurm.md)


CGROUP = Path("/sys/fs/cgroup")
LEAF = "grader-init"  # where prepare_cgroup_v2 moves the processes of the namespace's root cgroup


def prepare_cgroup_v2(root: Path = CGROUP) -> str:
    """Makes a cgroup v2 tree without systemd (a container) one that Slurm 22.05's slurmd, started by hand, can use.

    slurmd always starts a cgroup plugin. With IgnoreSystemd=yes, cgroup/v2 makes ROOT/system.slice/
    slurmstepd.scope with mkdir (not mkdir -p: system.slice must exist; on the H100 machine it did not, and slurmd
    stopped with "Plugin init() callback failed"), moves itself into it and enables the controllers there, which
    the kernel allows only where the parent enables them in cgroup.subtree_control. So system.slice is made and
    enables every controller the root has. Where ROOT is a cgroup namespace's root rather than the machine's (it
    has a cgroup.type file; the real root has none), the kernel also refuses controllers for the children of a
    cgroup that holds processes: those move into ROOT/grader-init first (limits set on ROOT still apply to them).
    Returns what it did, one line; "" where nothing was needed (cgroup v1, or systemd's tree). Raises
    ClusterUnavailable, naming the file, where the kernel refuses.
    """
    root = Path(root)
    if not (root / "cgroup.controllers").is_file() or (root / "system.slice" / "cgroup.procs").exists():
        return ""
    done = []
    try:
        if (root / "cgroup.type").exists() and (root / "cgroup.procs").read_text().split():
            leaf = root / LEAF
            leaf.mkdir(exist_ok=True)
            moved = 0
            for _ in range(5):  # processes started meanwhile land in the root: go round again
                pids = (root / "cgroup.procs").read_text().split()
                for pid in pids:
                    try:
                        (leaf / "cgroup.procs").write_text(pid)
                        moved += 1
                    except ProcessLookupError:
                        pass  # it ended meanwhile
                if not pids:
                    break
            done.append(f"moved {moved} processes of the namespace's root into {leaf}")
        controllers = (root / "cgroup.controllers").read_text().split()
        wanted = " ".join(f"+{c}" for c in controllers)
        (root / "cgroup.subtree_control").write_text(wanted)
        (root / "system.slice").mkdir(exist_ok=True)
        (root / "system.slice" / "cgroup.subtree_control").write_text(wanted)
    except OSError as e:
        raise ClusterUnavailable(f"could not prepare the cgroup v2 tree for slurmd ({e.filename}: {e.strerror})") \
            from None
    done.append(f"made {root / 'system.slice'} with {', '.join(controllers) or 'no controllers'} enabled")
    return "cgroup v2 without systemd: " + "; ".join(done)


class Cluster:
    """devices: the node's GPU device files, nvidia0 to nvidiaN-1 of one folder (the real /dev/nvidia* on a GPU
    machine); None: `gpus` made-up ones, made with mknod in the cluster's folder."""

    def __init__(self, root: Path, tree: Path | None = None, gpus: int = 2, devices: list[Path] | None = None,
                 own_cgroups: bool = False):
        self.root = Path(root)
        self.own_cgroups = own_cgroups  # prepare_cgroup_v2 first (it changes the machine's cgroup tree)
        self.cgroup_note = ""
        self.bin = Binaries(tree if tree is not None else os.environ.get(TREE_ENV) or None)
        self.devices = [Path(d) for d in devices] if devices else None
        self.gpus = len(self.devices) if self.devices else gpus
        self.procs: list[subprocess.Popen] = []
        self.conf = self.root / "slurm.conf"
        self.socket = self.root / "munge" / "munge.socket"

    @property
    def env(self) -> dict[str, str]:
        """The environment for Slurm's clients (and, through sbatch, for the jobs)."""
        return {**os.environ, **self.bin.env(), "SLURM_CONF": str(self.conf)}

    def run(self, *cmd: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(list(cmd), env=self.env, capture_output=True, text=True, timeout=timeout)

    def _spawn(self, cmd: list[str], log: str):
        out = open(self.root / "log" / log, "ab")
        self.procs.append(subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                           start_new_session=True))

    def _wait(self, what: str, ready, timeout: float):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return
            dead = [p for p in self.procs if p.poll() is not None]
            if dead:
                break
            time.sleep(0.1)
        raise ClusterUnavailable(f"{what} did not come up: {self.log_tail()}")

    def log_tail(self, lines: int = 4) -> str:
        said = []
        for path in sorted((self.root / "log").glob("*")):
            text = [t for t in path.read_text(errors="replace").splitlines() if t.strip()]
            if text:
                said.append(f"{path.name}: " + " | ".join(text[-lines:]))
        return "; ".join(said) or "no log"

    def write_conf(self, auth_socket: Path | None = None) -> str:
        host = socket.gethostname()
        plugins = f"PluginDir={self.bin.plugins}\n" if self.bin.plugins else ""
        debug = "DebugFlags=CGROUP\n" if self.own_cgroups else ""  # the plugin's steps in slurmd.log
        return f"""ClusterName=gradertest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={self.ports[0]}
SlurmdPort={self.ports[1]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={auth_socket or self.socket}
{plugins}StateSaveLocation={self.root / 'state'}
SlurmdSpoolDir={self.root / 'spool'}
SlurmctldPidFile={self.root / 'slurmctld.pid'}
SlurmdPidFile={self.root / 'slurmd.pid'}
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
GresTypes=gpu
KillWait=5
MinJobAge=600
{debug}
InactiveLimit=0
NodeName={NODE} NodeHostname={host} NodeAddr=127.0.0.1 CPUs=8 RealMemory=4000 Gres=gpu:{self.gpus} State=UNKNOWN
PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
"""

    def start(self, timeout: float = 30):
        if os.geteuid() != 0:
            raise ClusterUnavailable("slurmd runs jobs as the users who submit them, which needs root")
        programs = {name: self.bin.find(name) for name in ("munged", "slurmctld", "slurmd", "sbatch", "sinfo")}
        stepd = self.bin.find("slurmstepd") if self.bin.tree else None
        for sub in ("munge", "state", "spool", "log", "dev", "sbin"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        if self.bin.tree:
            # Slurm's daemons tell what they are by the name they were started as (a slurmctld started as
            # slurmctld-wlm loads no node's GRES), which Debian's alternatives links give: so do links here.
            for name in ("slurmctld", "slurmd", "slurmstepd"):
                link = self.root / "sbin" / name
                link.symlink_to(stepd if name == "slurmstepd" else programs[name])
                if name == "slurmstepd":
                    stepd = str(link)
                else:
                    programs[name] = str(link)
        os.chmod(self.root / "munge", 0o755)
        devices = self.devices or [self.root / "dev" / f"nvidia{i}" for i in range(self.gpus)]
        try:
            for i, node in enumerate(devices if self.devices is None else []):
                os.mknod(node, 0o666 | 0o020000, os.makedev(195, i))  # character devices, as NVIDIA's
        except OSError as e:
            raise ClusterUnavailable(f"mknod is not permitted here ({e.strerror}): Slurm's gres.conf needs device "
                                     "files for the GPUs") from None
        if [d.name for d in devices] != [f"nvidia{i}" for i in range(self.gpus)] or len({d.parent for d in devices}) > 1:
            raise ClusterUnavailable(f"the GPU device files must be nvidia0 to nvidia{self.gpus - 1} of one folder")
        missing = [str(d) for d in devices if not d.exists()]
        if missing:
            raise ClusterUnavailable(f"no GPU device file {', '.join(missing)}")
        if self.own_cgroups:
            self.cgroup_note = prepare_cgroup_v2()
        key = self.root / "munge.key"
        key.write_bytes(os.urandom(128))
        key.chmod(0o600)
        first = _free_port()
        self.ports = (first, next(p for p in iter(_free_port, None) if p != first))
        self.conf.write_text(self.write_conf())
        # Beside slurm.conf, where slurmd looks for it. slurmd always starts a cgroup plugin; on cgroup v2 it asks
        # systemd over D-Bus for a scope, and a container or CI runner has neither: it makes the folders itself.
        (self.root / "cgroup.conf").write_text("CgroupPlugin=autodetect\nIgnoreSystemd=yes\n")
        # One line for all of them (Slurm 22.05 miscounts one line per file against the node's Gres=gpu:N).
        (self.root / "gres.conf").write_text(
            f"NodeName={NODE} Name=gpu File={devices[0].parent}/nvidia[0-{self.gpus - 1}]\n")
        self._spawn([programs["munged"], "-F", "--force", f"--key-file={key}", f"--socket={self.socket}",
                     f"--pid-file={self.root / 'munge' / 'munged.pid'}", f"--log-file={self.root / 'log' / 'munged.log'}",
                     f"--seed-file={self.root / 'munge' / 'munged.seed'}"], "munged.out")
        self._wait("munged", self.socket.exists, timeout)
        self._spawn([programs["slurmctld"], "-D", "-c", "-f", str(self.conf)], "slurmctld.log")
        self._spawn([programs["slurmd"], "-D", "-f", str(self.conf), "-N", NODE] + (["-d", stepd] if stepd else []),
                    "slurmd.log")

        def idle() -> bool:
            done = self.run(programs["sinfo"], "-h", "-n", NODE, "-o", "%t")
            return done.returncode == 0 and done.stdout.strip() == "idle"
        self._wait("the Slurm node", idle, timeout)

    def wait_gone(self, jobs: list[str], timeout: float = 120):
        """Until none of these jobs (or their array tasks) is in the queue."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            listed = self.run("squeue", "-h", "-r", "-j", ",".join(jobs), "-o", "%i")
            if listed.returncode != 0 or not listed.stdout.strip():
                return
            time.sleep(0.2)
        raise TimeoutError(f"jobs {jobs} still queued after {timeout:.0f} s: {self.run('squeue').stdout}")

    def stop(self):
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in reversed(self.procs):
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()
