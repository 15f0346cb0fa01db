"""Slurm's own tools, called as a user would: sbatch, scancel, sinfo, squeue, sacct, scontrol.

Every failure becomes one line that names what went wrong (SlurmError): a tool that is not installed, a
controller that does not answer, MUNGE that cannot vouch for the request, a partition that does not exist,
or what sbatch itself said.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from grader.core.errors import GraderError

MUNGE_KEY = Path("/etc/munge/munge.key")
# States of a job that is still in the queue, and those of one that ended (squeue's and sacct's words).
ENDED = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",
         "DEADLINE")


class SlurmError(GraderError):
    """Slurm cannot be used as asked; the message is one line naming why."""


def _lines(text: str) -> list[str]:
    return [re.sub(r"^\S+: (error|fatal): ", "", line.strip()) for line in text.splitlines() if line.strip()]


def explain(tool: str, stderr: str) -> SlurmError:
    """One line from what a Slurm tool printed when it failed."""
    lines = _lines(stderr) or ["no message"]
    munge = [line for line in lines if "munge" in line.lower()]
    if munge:
        key = "" if MUNGE_KEY.exists() else f" (and there is no MUNGE key at {MUNGE_KEY} on this machine)"
        return SlurmError(f"Slurm cannot authenticate this request through MUNGE ({tool}: {munge[0]}): munged must "
                          f"be running here with the cluster's key{key}")
    contact = [line for line in lines if "unable to contact slurm controller" in line.lower()
               or "connection refused" in line.lower()]
    if contact:
        return SlurmError(f"Slurm's controller does not answer ({tool}: {contact[0]})")
    return SlurmError(f"{tool}: {lines[-1]}")


def run(cmd: list[str], timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
    if shutil.which(cmd[0]) is None:
        raise SlurmError(f"{cmd[0]} is not on PATH: grading on a cluster goes through Slurm's own tools (load the "
                         "cluster's Slurm module, or grade on one machine without --slurm)")
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{cmd[0]} did not answer within {timeout:.0f} s (is Slurm's controller up?)") from None
    if check and done.returncode != 0:
        raise explain(cmd[0], done.stderr or done.stdout)
    return done


def partitions() -> list[str]:
    """The partitions sinfo lists (the default one first): also proves that the controller answers."""
    names = []
    for line in run(["sinfo", "-h", "-o", "%P"]).stdout.split():
        name = line.rstrip("*")
        if name not in names:
            names.insert(0, name) if line.endswith("*") else names.append(name)
    return names


def check_partition(partition: str | None) -> list[str]:
    known = partitions()
    if partition and partition not in known:
        raise SlurmError(f"partition '{partition}' does not exist on this cluster (sinfo lists: "
                         f"{', '.join(known) or 'none'})")
    return known


def sbatch(options: list[str], script: Path) -> str:
    """Submits; returns the job id (of the array, for an array)."""
    if shutil.which("sbatch") is None:
        run(["sbatch"])  # the one-line message for a missing tool
    done = subprocess.run(["sbatch", "--parsable", *options, str(script)], capture_output=True, text=True,
                          timeout=120)
    if done.returncode != 0:
        error = explain("sbatch", done.stderr or done.stdout)
        raise SlurmError(f"sbatch refused the job: {str(error).removeprefix('sbatch: ')}")
    job = done.stdout.strip().split(";")[0]
    if not job.isdigit():
        raise SlurmError(f"sbatch answered {done.stdout.strip()!r}, not a job id")
    return job


def cancel(job: str):
    run(["scancel", job], check=False)


@dataclass
class JobState:
    job: str  # "1234" or, for an array task, "1234_5"
    state: str  # PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
    node: str = ""
    reason: str = ""  # why it waits (squeue), or its exit code (when it ended)

    @property
    def ended(self) -> bool:
        return self.state.split()[0] in ENDED


def queued(jobs: list[str]) -> dict[str, JobState]:
    """The jobs still in the queue (each array task on its own line), by id; {} when none is."""
    if not jobs:
        return {}
    done = run(["squeue", "-h", "-r", "-j", ",".join(jobs), "-o", "%i|%T|%N|%r"], check=False)
    if done.returncode != 0:
        if "invalid job id" in done.stderr.lower():
            return {}  # none of them is in the queue any more
        raise explain("squeue", done.stderr)
    found = {}
    for line in done.stdout.splitlines():
        parts = line.split("|")
        if len(parts) == 4:
            found[parts[0]] = JobState(parts[0], parts[1], parts[2], parts[3] if parts[3] != "None" else "")
    return found


def ended(jobs: list[str]) -> dict[str, JobState]:
    """How jobs that left the queue ended, by id: from sacct where the cluster keeps accounting, else from
    scontrol, which remembers a job for MinJobAge (5 minutes by default) after it ends. A task cancelled before
    it started may be in neither."""
    if not jobs:
        return {}
    try:
        done = run(["sacct", "-n", "-P", "-X", "-j", ",".join(jobs), "-o", "JobID,State,NodeList,ExitCode"],
                   check=False)
    except SlurmError:  # not installed
        done = None
    found = {}
    if done is not None and done.returncode == 0:
        for line in done.stdout.splitlines():
            parts = line.split("|")
            if len(parts) == 4:
                found[parts[0]] = JobState(parts[0], parts[1].split()[0], parts[2], f"exit {parts[3]}")
        return found
    for job in jobs if shutil.which("scontrol") else []:
        listed = run(["scontrol", "-o", "show", "job", job], check=False)
        for line in listed.stdout.splitlines():
            fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
            array, task = fields.get("ArrayJobId"), fields.get("ArrayTaskId", "")
            name = f"{array}_{task}" if array and task.isdigit() else fields.get("JobId", job)
            found[name] = JobState(name, fields.get("JobState", "?"), fields.get("NodeList", ""),
                                   f"exit {fields.get('ExitCode', '?')}")
    return found
