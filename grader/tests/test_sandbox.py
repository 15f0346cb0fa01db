"""The sandbox itself, with real commands on this machine: what student code cannot see, reach, write or
exhaust, and what the grader does when bubblewrap is missing or does not work."""
from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from grader.run.sandbox import (NAMESPACE_UID, ResourceLimits, Sandbox, SandboxError, Unsandboxed, find_bwrap,
                            make_sandbox, missing_bwrap_message, run)
from grader.tests.conftest import REPO, sandbox_unavailable

pytestmark = pytest.mark.slow  # runs everything in bubblewrap

LIMITS = ResourceLimits(cpu_seconds=60, file_size=8 * 2**20, processes=32, output=2**20)


@pytest.fixture(scope="module")
def bwrap() -> Path:
    path = find_bwrap()
    if path is None:
        pytest.fail(missing_bwrap_message() + " (make check installs it)", pytrace=False)
    return path


def sandbox_with(bwrap: Path, work: Path, **changes) -> Sandbox:
    limits = ResourceLimits(**{**LIMITS.__dict__, **changes})
    sandbox = Sandbox(bwrap, limits)
    try:
        sandbox.check(work)
    except SandboxError as e:  # listed in the summary: this machine does not allow the sandbox at all
        sandbox_unavailable(f"bubblewrap cannot run here: {e}")
    return sandbox


@pytest.fixture
def sandbox(bwrap, tmp_path) -> Sandbox:
    return sandbox_with(bwrap, tmp_path)


def sh(sandbox, script: str, tmp_path: Path, timeout: float = 30, **kwargs):
    scratch = tmp_path / "scratch"
    return run(sandbox, ["/bin/sh", "-c", script], timeout=timeout, writable=[scratch], **kwargs)


def processes_with(marker: str) -> list[int]:
    """Live (not zombie) processes whose command line holds marker, seen from outside the sandbox."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                    if state not in ("Z", "X"):
                        found.append(int(entry.name))
            except OSError:
                pass
    return found


def test_the_network_is_unreachable(sandbox, tmp_path):
    """Two layers: no socket can be made at all (seccomp), and there is no interface but loopback to reach
    anything through (an empty network namespace)."""
    done = sh(sandbox, "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), timeout=5)\" 2>&1; "
                       "cat /proc/net/dev", tmp_path)
    assert "PermissionError: [Errno 1] Operation not permitted" in done.stdout
    interfaces = re.findall(r"^\s*([\w.-]+):\s+\d", done.stdout, re.M)  # /proc/net/dev's rows
    assert interfaces == ["lo"], done.stdout


def test_the_repository_results_and_other_submissions_are_invisible(sandbox, tmp_path):
    other = tmp_path / "work" / "kernels" / "someone-else"
    other.mkdir(parents=True)
    (other / "add.cu").write_text("// another student's work\n")
    mine = tmp_path / "work" / "kernels" / "me"
    mine.mkdir(parents=True)
    (mine / "add.cu").write_text("// mine\n")
    results = tmp_path / "results"
    results.mkdir()
    (results / "grades.sqlite").write_text("secret")
    probes = [REPO / "solution" / "kernels" / "add.cu", REPO / "grader" / "rubric.toml", other / "add.cu",
              results / "grades.sqlite", Path("/root"), Path("/home"), Path("/etc/shadow"), Path("/etc/passwd")]
    script = "; ".join(f"test -e '{p}' && echo 'visible: {p}'" for p in probes) + f"; cat '{mine}/add.cu'"
    done = sh(sandbox, script, tmp_path, read_only=[mine])
    assert "visible" not in done.stdout, done.stdout
    assert "// mine" in done.stdout  # what was bound is there


def test_writes_outside_the_scratch_directory_fail(sandbox, tmp_path):
    given = tmp_path / "given"
    given.mkdir()
    targets = ["/usr/evil", "/etc/evil", "/evil", str(given / "evil"), str(REPO / "evil")]
    script = "; ".join(f"touch '{t}' 2>/dev/null && echo 'wrote {t}'" for t in targets)
    done = sh(sandbox, script + '; touch "$HOME/mine" && echo scratch-ok; id -u', tmp_path, read_only=[given])
    assert "wrote" not in done.stdout, done.stdout
    assert "scratch-ok" in done.stdout
    assert not (given / "evil").exists() and not (REPO / "evil").exists()
    assert (tmp_path / "scratch" / "mine").exists()
    assert int(done.stdout.split()[-1]) != 0  # an unprivileged user


def test_nothing_runs_as_root_or_keeps_a_capability(sandbox, tmp_path):
    done = sh(sandbox, "id -u; grep -E '^Cap(Eff|Prm|Bnd|Amb)' /proc/self/status; env", tmp_path, gpu="0")
    lines = done.stdout.splitlines()
    assert lines[0] != "0"
    assert all(line.split()[1] == "0000000000000000" for line in lines[1:5]), lines[1:5]
    env = dict(line.split("=", 1) for line in lines[5:] if "=" in line)
    assert set(env) <= {"PATH", "HOME", "TMPDIR", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "LD_LIBRARY_PATH",
                        "PWD", "SHLVL", "_"}, env  # the grader's environment stays outside
    assert env["CUDA_VISIBLE_DEVICES"] == "0"


FORK_BOMB = textwrap.dedent("""\
    import os, sys, time
    born = 0
    while True:
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        born += 1
    print("children", born, flush=True)
    time.sleep(60)
    """)


def test_a_fork_bomb_stops_at_the_process_limit_and_dies_with_the_sandbox(bwrap, tmp_path):
    sandbox = sandbox_with(bwrap, tmp_path, processes=32)
    marker = f"bomb{secrets.token_hex(4)}"
    done = sh(sandbox, f"exec python3 -c '{FORK_BOMB}' {marker}", tmp_path, timeout=8)
    assert done.timed_out  # it sleeps on: the wall clock ends it
    born = int(done.stdout.split()[-1])
    assert 0 < born < 32, done.stdout  # the limit, not the machine, stopped it
    time.sleep(0.5)
    assert processes_with(marker) == []  # every child went with the sandbox


def test_a_shell_fork_bomb_leaves_the_grader_and_the_machine_alone(bwrap, tmp_path):
    sandbox = sandbox_with(bwrap, tmp_path, processes=64)
    marker = f"shbomb{secrets.token_hex(4)}"
    start = time.monotonic()
    done = sh(sandbox, f"bomb() {{ bomb | bomb & }}; bomb; sleep 30 # {marker}", tmp_path, timeout=6)
    assert time.monotonic() - start < 20
    assert done.timed_out or done.status != 0
    time.sleep(0.5)
    assert processes_with(marker) == []
    assert subprocess.run(["true"]).returncode == 0  # the grader can still start processes


def test_the_wall_clock_kills_the_whole_sandbox_even_processes_in_new_sessions(sandbox, tmp_path):
    marker = f"{secrets.randbelow(10**6) + 10**6}"
    done = sh(sandbox, f"setsid sleep {marker} & nohup sleep {marker} & sleep {marker}", tmp_path, timeout=2)
    assert done.timed_out and done.seconds < 10
    time.sleep(0.5)
    assert processes_with(f"sleep\0{marker}") == []


def test_processes_left_behind_die_when_the_command_exits(sandbox, tmp_path):
    marker = f"{secrets.randbelow(10**6) + 10**6}"
    done = sh(sandbox, f"setsid sleep {marker} & echo started", tmp_path)
    assert done.status == 0 and "started" in done.stdout
    time.sleep(0.5)
    assert processes_with(f"sleep\0{marker}") == []


def test_the_cpu_time_limit_stops_a_spinning_process(bwrap, tmp_path):
    sandbox = sandbox_with(bwrap, tmp_path, cpu_seconds=1)
    done = sh(sandbox, "python3 -c 'while True: pass'; echo status $?", tmp_path, timeout=30)
    assert not done.timed_out
    assert f"status {128 + signal.SIGXCPU}" in done.stdout or f"status {128 + signal.SIGKILL}" in done.stdout


def test_the_file_size_limit_stops_a_huge_file(bwrap, tmp_path):
    sandbox = sandbox_with(bwrap, tmp_path, file_size=2**20)
    done = sh(sandbox, 'head -c 20000000 /dev/zero > "$HOME/big"; echo status $?', tmp_path)
    assert f"status {128 + signal.SIGXFSZ}" in done.stdout or "File too large" in done.stdout + done.stderr
    assert (tmp_path / "scratch" / "big").stat().st_size <= 2**20


def test_tmp_is_private_and_limited_too(bwrap, tmp_path):
    sandbox = sandbox_with(bwrap, tmp_path, file_size=2**20)
    done = sh(sandbox, "for i in 1 2 3; do head -c 900000 /dev/zero > /tmp/f$i || echo full; done; ls /tmp", tmp_path)
    assert "full" in done.stdout  # /tmp is a tmpfs of the file-size limit, not the host's /tmp


def test_output_beyond_the_cap_is_dropped_and_the_cut_marked(bwrap, tmp_path):
    sandbox = sandbox_with(bwrap, tmp_path, output=2**20)
    done = sh(sandbox, "head -c 5000000 /dev/zero | tr '\\0' x; head -c 3000000 /dev/zero | tr '\\0' y >&2", tmp_path)
    assert done.status == 0
    assert done.stdout.startswith("x" * 1000) and len(done.stdout) < 2**20 + 200
    assert "[... 3951424 more bytes cut: output is capped at 1048576 bytes]" in done.stdout
    assert "[... 1951424 more bytes cut" in done.stderr


def test_a_user_namespace_sandbox_also_holds_when_the_grader_is_not_root(bwrap, tmp_path):
    """An instructor's own account: bubblewrap makes a user namespace and the limits are set inside it."""
    if os.geteuid() != 0:
        pytest.skip("this test drops from root to another user; the suite runs as that kind of user already")
    shared = Path(os.environ.get("TMPDIR", "/tmp")) / f"sandbox-userns-{secrets.token_hex(4)}"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    script = textwrap.dedent(f"""\
        import json, sys
        sys.path.insert(0, {str(REPO)!r})
        from pathlib import Path
        from grader.run.sandbox import ResourceLimits, Sandbox, run
        sandbox = Sandbox(Path({str(bwrap)!r}), ResourceLimits(60, 2**20, 16))
        sandbox.check(Path({str(shared)!r}))
        bomb = run(sandbox, ["python3", "-c", {FORK_BOMB!r}], timeout=6, writable=[Path({str(shared)!r}) / "s"])
        probe = run(sandbox, ["/bin/sh", "-c", "id -u; touch /usr/x 2>/dev/null && echo wrote; touch $HOME/y && echo ok"],
                    timeout=30, writable=[Path({str(shared)!r}) / "s"])
        print(json.dumps({{"bomb": bomb.stdout, "probe": probe.stdout, "privileged": sandbox.privileged}}))
        """)
    (shared / "probe.py").write_text(script)
    try:
        done = subprocess.run(["setpriv", "--reuid=4242", "--regid=4242", "--clear-groups", sys.executable,
                               str(shared / "probe.py")], capture_output=True, text=True, timeout=120,
                              env={"PATH": os.environ["PATH"], "HOME": str(shared)})
        if "sandbox does not work" in done.stderr:
            pytest.skip(f"unprivileged user namespaces are not allowed here: {done.stderr.strip()[-300:]}")
        assert done.returncode == 0, done.stderr[-3000:]
        out = json.loads(done.stdout.strip().splitlines()[-1])
        assert out["privileged"] is False
        assert 0 < int(out["bomb"].split()[-1]) < 16
        assert out["probe"].split() == [str(NAMESPACE_UID), "ok"]
    finally:
        subprocess.run(["rm", "-rf", str(shared)])


def test_a_bwrap_that_does_not_work_is_refused_with_the_cause_named(tmp_path, monkeypatch):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'bubblewrap 0.8.0'; exit 0; fi\n"
                    "if [ \"$1\" = --help ]; then echo '--disable-userns --size --seccomp'; exit 0; fi\n"
                    "echo 'bwrap: setting up uid map: Permission denied' >&2; exit 1\n")
    fake.chmod(0o755)
    with pytest.raises(SandboxError) as e:
        make_sandbox(False, str(fake), tmp_path)
    message = str(e.value)
    assert "setting up uid map: Permission denied" in message and "--unsafe-no-sandbox" in message


def test_without_bwrap_grading_is_refused_unless_told_to_run_unsafe(tmp_path, monkeypatch):
    monkeypatch.delenv("BWRAP", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap anywhere
    with pytest.raises(SandboxError) as e:
        make_sandbox(False, None, tmp_path)
    assert "apt-get install bubblewrap" in str(e.value) and "--unsafe-no-sandbox" in str(e.value)
    unsafe = make_sandbox(True, None, tmp_path)
    assert isinstance(unsafe, Unsandboxed) and unsafe.description.unsafe
    assert unsafe.description.words.startswith("NONE (--unsafe-no-sandbox)")


def test_a_bwrap_path_that_is_not_a_program_is_named(tmp_path):
    with pytest.raises(SandboxError, match="is not an executable file"):
        find_bwrap(str(tmp_path / "nope"))


def test_a_harness_that_crashes_in_the_sandbox_is_reported_with_its_signal(sandbox, tmp_path):
    """bubblewrap turns a child's signal into exit status 128 + N; the runner turns it back into words."""
    from grader.run.runner import HarnessFailure, HarnessServer
    fake = tmp_path / "bin" / "harness"
    fake.parent.mkdir()
    fake.write_text("#!/usr/bin/python3\nimport os, signal, sys\nsys.stdin.readline()\n"
                    "os.kill(os.getpid(), signal.SIGSEGV)\n")
    fake.chmod(0o755)
    server = HarnessServer(fake, sandbox=sandbox, scratch=tmp_path / "scratch")
    with pytest.raises(HarnessFailure) as e:
        server.request({"op": "check"}, 20)
    server.close()
    assert e.value.kind == "crashed" and "segmentation fault (SIGSEGV)" in str(e.value)


def test_a_bwrap_unpacked_with_its_libraries_finds_them(tmp_path):
    """On a machine without a package index, bubblewrap and the libraries it needs come unpacked (dpkg -x)
    in one tree; a bwrap whose libraries are missing from the system loads them from that tree."""
    from grader.run.sandbox import _bwrap_environment
    tree = tmp_path / "root"
    (tree / "usr" / "bin").mkdir(parents=True)
    (tree / "usr" / "lib" / "x86_64-linux-gnu").mkdir(parents=True)
    fake = tree / "usr" / "bin" / "bwrap"
    fake.write_text('#!/bin/sh\ncase ":$LD_LIBRARY_PATH:" in *"/usr/lib/x86_64-linux-gnu:"*) if [ "$1" = --help ]; then echo "--seccomp FD"; else echo "bubblewrap 0.8.0"; fi;;'
                    ' *) echo "bwrap: error while loading shared libraries: libselinux.so.1" >&2; exit 127;; esac\n')
    fake.chmod(0o755)
    env = _bwrap_environment(fake)
    assert env["LD_LIBRARY_PATH"] == str(tree / "usr" / "lib" / "x86_64-linux-gnu")
    assert Sandbox(fake).version == "0.8.0"


def test_a_bwrap_that_cannot_start_is_named(tmp_path):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'error while loading shared libraries: libcap.so.2' >&2; exit 127\n")
    fake.chmod(0o755)
    with pytest.raises(SandboxError, match="does not start: error while loading shared libraries: libcap.so.2"):
        Sandbox(fake)


def test_a_build_sees_neither_sys_nor_the_gpu_and_a_run_sees_both(sandbox, tmp_path):
    """A build needs the compilers only; the CUDA driver of a run reads /sys and opens the device nodes."""
    probe = "for p in /sys/kernel /dev/nvidiactl; do test -e $p && echo \"visible $p\"; done; echo done"
    build = sh(sandbox, probe, tmp_path, profile="build")
    assert build.stdout.split() == ["done"], build.stdout
    ran = run(sandbox, ["/bin/sh", "-c", "test -e /sys/kernel && echo visible"], timeout=30,
              writable=[tmp_path / "s2"], profile="tool")
    assert "visible" in ran.stdout


def test_checks_at_once_in_one_folder_all_pass(bwrap, tmp_path):
    """The service's workers check the sandbox at their start in one work folder, and test workers in /tmp: each
    check once removed a scratch folder another was using, which then failed (and a test module skipped)."""
    from concurrent.futures import ThreadPoolExecutor
    sandbox = Sandbox(bwrap, LIMITS)
    with ThreadPoolExecutor(6) as pool:
        failures = [f.exception() for f in [pool.submit(sandbox.check, tmp_path) for _ in range(6)]]
    assert failures == [None] * 6, failures
    assert not any(tmp_path.iterdir())  # each removed its own
