"""The sample class graded through a one-node Slurm on this machine, compared with a grading on one machine.

    python3 docs/gpu-runs/slurm_gpu.py --out DIR [--reference results/demo] [--device gpu]
                                       [--submissions data/sample-submissions]

docs/gpu-runs/slurm_gpu.sh runs it on a GPU machine, as root, with Slurm unpacked from Debian's packages
(GRADER_SLURM_TREE). It starts a private Slurm (grader/tests/slurm_cluster.py) whose one node has this machine's
GPUs as its GRES (gres.conf names links to the real /dev/nvidiaN), submits the class with `grade --slurm`, waits
for the array and the merge job, and compares the merged store with the reference results (those of
`make demo`, graded here without Slurm when --reference has no store yet): the same status for every
submission, the same verdict for every case, the same correctness points for every task. Performance points
come from timings and are listed beside each other, not compared. Everything goes to DIR: the grader's output,
`status` before and after, the cluster's logs, and slurm_gpu.txt, the record.

With --device simulated (GRADER_TEST_BACKENDS=1, the tests' stand-in) and no GPU, the node gets two made-up
GPUs: what grader/tests/test_slurm_gpu_script.py runs, without a GPU.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import pandas as pd  # noqa: E402

from grader.store.store import Store  # noqa: E402
from grader.tests.slurm_cluster import PARTITION, Cluster, ClusterUnavailable  # noqa: E402


def gpu_device_links(folder: Path) -> list[Path] | None:
    """Links nvidia0..N-1 in `folder` to this machine's /dev/nvidiaM, in minor-number order (a container may
    show one GPU as /dev/nvidia3; Slurm numbers a node's GPUs by their place in gres.conf, as CUDA does the
    visible ones). None where there is no NVIDIA device file."""
    found = sorted((p for p in Path("/dev").glob("nvidia*") if re.fullmatch(r"nvidia[0-9]+", p.name)),
                   key=lambda p: int(p.name[6:]))
    if not found:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    links = []
    for i, device in enumerate(found):
        link = folder / f"nvidia{i}"
        link.symlink_to(device)
        links.append(link)
    return links


def grader(env: dict, log: Path, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "grader", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)
    with open(log, "a") as out:
        out.write(f"$ python3 -m grader {' '.join(args)}\n{done.stdout}{done.stderr}(exit {done.returncode})\n\n")
    return done


def verdicts(results: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Each student's latest submission's status, its cases' verdicts and its tasks' points."""
    store = Store.existing(results / "grades.sqlite")
    try:
        subs = store.latest_submissions()[["id", "student", "status"]]
        ids = subs["id"].tolist()
        cases = store.cases_for(ids).merge(subs[["id", "student"]], left_on="submission_id", right_on="id")
        scores = store.scores(ids).merge(subs[["id", "student"]], left_on="submission_id", right_on="id")
    finally:
        store.close()
    case_keys = ["student", "task", "dtype", "shape", "kind"]
    return (subs.drop(columns="id").set_index("student").sort_index(),
            cases[case_keys + ["status"]].set_index(case_keys).sort_index(),
            scores[["student", "task", "correctness", "performance"]].set_index(["student", "task"]).sort_index())


def compare(slurm: Path, reference: Path) -> tuple[list[str], str]:
    """(every difference in verdicts, one line each; the performance points side by side)."""
    a, b = verdicts(slurm), verdicts(reference)
    differences = []
    for name, mine, theirs, column in (("submission", a[0], b[0], "status"), ("case", a[1], b[1], "status"),
                                       ("correctness points", a[2], b[2], "correctness")):
        joined = mine[[column]].join(theirs[[column]], how="outer", lsuffix="_slurm", rsuffix="_reference")
        for key, row in joined.iterrows():
            left, right = row[f"{column}_slurm"], row[f"{column}_reference"]
            if not (left == right or (pd.isna(left) and pd.isna(right))):
                differences.append(f"{name} {key}: {left} through Slurm, {right} in the reference")
    performance = a[2][["performance"]].join(b[2][["performance"]], lsuffix="_slurm", rsuffix="_reference")
    return differences, performance.to_string()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="where the record and the logs go")
    p.add_argument("--submissions", default=str(REPO / "data" / "sample-submissions"))
    p.add_argument("--reference", default=str(REPO / "results" / "demo"),
                   help="results to compare with (default: make demo's); graded here first if they have no store")
    p.add_argument("--device", default="gpu")
    p.add_argument("--rubric", default=None, help="the rubric (default: the grader's)")
    p.add_argument("--timeout", type=float, default=1500, help="seconds to wait for the array and the merge")
    args = p.parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    record, log = out / "slurm_gpu.txt", out / "grader.log"
    rubric = ["--rubric", args.rubric] if args.rubric else []

    def note(line: str):
        print(line, flush=True)
        with open(record, "a") as f:
            f.write(line + "\n")

    root = Path(tempfile.mkdtemp(prefix="slurm-gpu-"))
    links = gpu_device_links(root / "gpus") if args.device == "gpu" else None
    if args.device == "gpu" and not links:
        note("no /dev/nvidiaN here: this run needs the GPU machine")
        return 1
    # On the lent GPU machine (cgroup v2, no systemd) slurmd's cgroup plugin needs the tree prepared first.
    cluster = Cluster(root / "cluster", devices=links, own_cgroups=args.device == "gpu")
    try:
        cluster.start(timeout=60)
    except ClusterUnavailable as e:
        cluster.stop()
        note(f"Slurm did not start: {e}")
        return 1
    try:
        if cluster.cgroup_note:
            note(cluster.cgroup_note)
        env = cluster.env
        note(f"slurm: {cluster.run('sinfo', '-V').stdout.strip()} from {cluster.bin.tree or 'PATH'}; node "
             f"{cluster.run('scontrol', 'show', 'node').stdout.split('Gres=')[1].split()[0]} "
             f"({', '.join(f'{d} -> {os.path.realpath(d)}' for d in links or [])})")
        results = root / "results"  # (its build cache is large: only the store and grades.csv go to `out`)
        started = time.monotonic()
        done = grader(env, log, "grade", args.submissions, "--slurm", "--device", args.device, "--results",
                      str(results), "--partition", PARTITION, "--shard-size", "3", "--cpus-per-task", "2", *rubric)
        if done.returncode != 0:
            note(f"grade --slurm failed (exit {done.returncode}): {(done.stdout + done.stderr).strip()[-2000:]}")
            return 1
        ids = re.search(r"submitted job array (\d+) and merge job (\d+)", done.stdout)
        note(done.stdout.strip())
        time.sleep(3)
        note(grader(env, log, "status", "--results", str(results)).stdout.strip())
        cluster.wait_gone([ids[1], ids[2]], timeout=args.timeout)
        note(f"array and merge done in {time.monotonic() - started:.0f} s")
        note(grader(env, log, "status", "--results", str(results)).stdout.strip())
        reference = Path(args.reference).resolve()
        if not (reference / "grades.sqlite").is_file():
            note(f"no store in {reference}: grading the class there without Slurm, as make demo does")
            local = grader(env, log, "grade", args.submissions, "--device", args.device, "--results",
                           str(reference), "--regrade", "--no-progress", *rubric)
            if local.returncode != 0:
                note(f"the reference grading failed (exit {local.returncode})")
                return 1
        store = Store.existing(results / "grades.sqlite")
        try:
            note("where each submission was graded:\n"
                 + store.submission_devices()[["student", "host", "gpu", "gpu_name", "uuid", "nvidia_driver"]]
                 .to_string(index=False))
        finally:
            store.close()
        differences, performance = compare(results, reference)
        note(f"performance points (timings: not compared):\n{performance}")
        if differences:
            note(f"DIFFERENT from {reference}: {len(differences)} verdicts\n" + "\n".join(differences[:100]))
            return 1
        note(f"SAME verdicts as {reference}: every submission's status, every case's verdict, every task's "
             "correctness points")
        return 0
    finally:
        cluster.stop()
        shutil.copytree(cluster.root / "log", out / "cluster-logs", dirs_exist_ok=True)
        for shard_log in (root / "results" / "slurm").glob("*/logs/*.out"):
            shutil.copy(shard_log, out / "cluster-logs" / f"{shard_log.parent.parent.name}-{shard_log.name}")
        for name in ("grades.sqlite", "grades.csv"):
            if (root / "results" / name).is_file():
                shutil.copy(root / "results" / name, out / f"slurm-{name}")
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
