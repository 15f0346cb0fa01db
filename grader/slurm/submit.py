"""`bin/grader grade SUBMISSIONS --slurm`: write a batch, build once, submit the array and the merge.

In order, so that nothing is submitted that could not run:
  1. the Slurm options are checked (one GPU per task), and the cluster is asked for its partitions (which
     proves that sinfo, the controller and MUNGE work, and that --partition exists);
  2. an earlier batch of these results whose jobs are still queued or running stops it (one batch at a time:
     its shards' stores are being written); otherwise what earlier batches' shards stored and their merge has
     not merged yet (a merge job that was cancelled) is merged now;
  3. the build cache is found, or built here (grader/backends/build_cache.py);
  4. the submissions are read (grader/grading/plan.py, as `grade` reads them); those graded already with the same
     sha256, harness version and rubric hash are left out (all of them are graded again with --regrade);
  5. the manifest is written, then the array (sbatch --array=0-N%K, one GPU per task) and the merge job
     (--dependency=afterany:ARRAY, no GPU). If the merge job cannot be submitted, the array is cancelled.
"""
from __future__ import annotations

import math
import random
import shlex
import shutil
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

from grader import backends
from grader.backends.local import REPO
from grader.core.errors import GraderError
from grader.grading.plan import check_folder, plan_intake
from grader.core.registry import Registry
from grader.intake.roster import Person
from grader.intake.submission import Entry
from grader.core.rubric import Rubric, load_rubric
from grader.backends import build_cache as cache
from grader.slurm import scheduler
from grader.slurm.batch import SLURM_FOLDER, Manifest, batches, new_batch_id, now
from grader.slurm.merge import merge_results
from grader.store.store import Store

SETUP_SECONDS = 15 * 60  # a task's own start: the cache's key, the sandbox and GPU checks, the solution's limits


@dataclass
class SlurmOptions:
    partition: str | None = None
    account: str | None = None
    gres: str = "gpu:1"
    time: str | None = None  # default: from the rubric's limits (default_time)
    max_parallel: int | None = None  # the array's %K
    cpus_per_task: int = 4
    shard_size: int = 8
    merge_time: str = "1:00:00"
    sbatch: list[str] = field(default_factory=list)  # more sbatch arguments, for both jobs
    cache: Path | None = None  # default: RESULTS/slurm/cache


@dataclass
class Submitted:
    batch: str | None  # None: nothing to grade, nothing submitted
    to_grade: int
    already_graded: int
    shards: int = 0
    array: str | None = None
    merge: str | None = None
    merged_before: int = 0  # earlier batches' submissions merged now, before submitting
    cache_built: bool = False
    notes: list[str] = field(default_factory=list)
    not_on_roster: list[str] = field(default_factory=list)  # ids submitted that the roster lacks (graded all the same)
    no_submission: list[str] = field(default_factory=list)  # the roster's students with no entry


def one_gpu(gres: str) -> str:
    """--gres must give each task exactly one GPU: gpu:1, gpu:TYPE:1 (or gpu, gpu:TYPE)."""
    parts = gres.split(":")
    count = parts[-1] if len(parts) > 1 and parts[-1].isdigit() else "1"
    if parts[0] != "gpu" or count != "1" or len(parts) > 3:
        raise GraderError(f"--gres {gres}: each array task grades on one GPU (a submission is timed beside the "
                          "solution on the same GPU, never across two): give gpu:1 or gpu:TYPE:1")
    return gres


def default_time(rubric: Rubric, shard_size: int) -> str:
    """Long enough for a shard whose every submission uses its whole build and submission limits."""
    seconds = shard_size * (rubric.limits.build + rubric.limits.submission) + SETUP_SECONDS
    minutes = math.ceil(seconds / 60)
    return f"{minutes // 60}:{minutes % 60:02d}:00"


def shards_of(count: int, size: int) -> list[list[int]]:
    """count submissions in ceil(count/size) shards, dealt round-robin (a shard is not all of one kind)."""
    n = max(1, math.ceil(count / size)) if count else 0
    return [list(range(i, count, n)) for i in range(n)]


def _script(path: Path, lines: list[str]):
    path.write_text("#!/bin/bash\n" + "\n".join(lines) + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _refuse_running(found: list[Manifest]):
    jobs = {m.batch: [m.jobs[k] for k in ("array", "merge") if m.jobs.get(k)] for m in found}
    busy = scheduler.queued([j for ids in jobs.values() for j in ids])
    for batch, ids in jobs.items():
        if any(j.split("_")[0] in ids for j, state in busy.items() if not state.ended):
            raise GraderError(f"batch {batch} of these results is still in Slurm's queue (jobs "
                              f"{', '.join(ids)}): wait for it (bin/grader status), or scancel it first")


def submit(submissions: Path, results: Path, options: SlurmOptions, *, device: str, arch: str | None,
           rubric_path: Path, regrade: bool = False, seed: int | None = None, unsafe: bool = False,
           bwrap: str | None = None, jobs: int = 2, python: str = sys.executable, repo: Path = REPO,
           source: str = "plain", roster: list[Person] | None = None, student: str | None = None,
           lms_times: Path | None = None, entries: list[Entry] | None = None, batch: str | None = None,
           service_jobs: dict[str, int] | None = None) -> Submitted:
    """Reads the submissions as `grade` does (--from SOURCE, the course system's times, ids named by the roster,
    --student alone and graded again), then submits an array that grades those not yet graded and a merge job
    after it. Each entry's time received, and where it came from, is decided here and written into the
    manifest: the shards grade with what this step read. `entries`: these entries of `submissions` only, as
    given (the grading service's uploads, with its own received times); `batch`: the batch's id (default: a new
    one); `service_jobs`: the service's job of each entry's student, kept in the manifest."""
    results, submissions, rubric_path = Path(results).resolve(), Path(submissions).resolve(), Path(rubric_path)
    kind = backends.get(device)
    gpus = kind.uses_gpus  # the CPU backend's tasks ask Slurm for CPUs only: no --gres
    if gpus:
        one_gpu(options.gres)
    if options.max_parallel is not None and options.max_parallel < 1:
        raise GraderError("--max-parallel must be 1 or more")
    if options.shard_size < 1 or options.cpus_per_task < 1:
        raise GraderError("--shard-size and --cpus-per-task must be 1 or more")
    check_folder(submissions)
    scheduler.run(["sbatch", "--version"])  # sbatch is there
    scheduler.check_partition(options.partition)

    found = batches(results)
    _refuse_running(found)
    merged_before = merge_results(results).merged if found else 0

    arch = kind.arch(arch)
    print(f"build cache: the harness and the solution for {arch} ...", file=sys.stderr)
    entry, built = cache.ensure(options.cache or results / SLURM_FOLDER / "cache", kind, arch, jobs, rubric_path,
                                repo)
    registry = Registry.from_json(entry.record["registry"])
    rubric = load_rubric(rubric_path, registry)

    plan = plan_intake(submissions, source, roster, student, regrade, results / "grades.sqlite", rubric=rubric,
                       registry=registry, harness_version=entry.harness_version, lms_times=lms_times,
                       entries=entries)
    todo, notes = plan.work, plan.skipped_entries
    store = Store(results / "grades.sqlite")  # made here, as before: status and merge find it
    try:
        if roster is not None:
            store.save_roster(roster)  # the merge's reports list the roster's students who submitted nothing
    finally:
        store.close()
    out = Submitted(None, len(todo), len(plan.latest) - len(todo), merged_before=merged_before, cache_built=built,
                    notes=notes, not_on_roster=plan.not_on_roster, no_submission=plan.no_submission)
    if not todo:
        return out

    manifest = Manifest(
        batch=batch or new_batch_id(), results=str(results), submissions=str(submissions), source=source,
        entries=[{**e.record(), "sha256": s.sha256} for e, s in todo],
        shards=shards_of(len(todo), options.shard_size),
        seed=seed if seed is not None else random.getrandbits(53), device=kind.name, arch=arch,
        cache=str(entry.folder), cache_key=entry.key, harness_version=entry.harness_version,
        rubric=str(rubric_path.resolve()), rubric_sha256=rubric.sha256, repo=str(Path(repo).resolve()),
        python=python, unsafe_no_sandbox=unsafe, bwrap=bwrap, skipped_same=out.already_graded,
        service_jobs=dict(service_jobs or {}),
        options={"partition": options.partition, "account": options.account, "gres": options.gres if gpus else None,
                 "time": options.time or default_time(rubric, options.shard_size),
                 "max_parallel": options.max_parallel, "cpus_per_task": options.cpus_per_task,
                 "shard_size": options.shard_size, "merge_time": options.merge_time, "sbatch": options.sbatch})
    folder = manifest.folder
    manifest.save()
    (folder / "logs").mkdir(exist_ok=True)
    header = f"# Grading batch {manifest.batch}, written by `bin/grader grade --slurm` ({now()})."
    _script(folder / "shard.sh", [
        header, "# One array task: grades shard $SLURM_ARRAY_TASK_ID of manifest.json into shards/NNN/ (docs/slurm.md).",
        f"cd {shlex.quote(manifest.repo)}",
        f"exec {shlex.quote(python)} -m grader shard {shlex.quote(str(manifest.path))}"])
    _script(folder / "merge.sh", [
        header, "# After the array: merges every shard's store into grades.sqlite, then writes the reports.",
        f"cd {shlex.quote(manifest.repo)}",
        f"exec {shlex.quote(python)} -m grader merge --results {shlex.quote(str(results))} "
        f"--rubric {shlex.quote(manifest.rubric)}"])

    common = ([f"--partition={options.partition}"] if options.partition else []) + \
             ([f"--account={options.account}"] if options.account else [])
    throttle = f"%{options.max_parallel}" if options.max_parallel else ""
    array_args = [f"--job-name=grader-{manifest.batch}", f"--array=0-{len(manifest.shards) - 1}{throttle}",
                  *([f"--gres={options.gres}"] if gpus else []), f"--cpus-per-task={options.cpus_per_task}",
                  f"--time={manifest.options['time']}", f"--output={folder / 'logs' / 'shard-%a.out'}",
                  "--open-mode=append", *common, *options.sbatch]
    try:
        array = scheduler.sbatch(array_args, folder / "shard.sh")
    except GraderError:
        shutil.rmtree(folder)  # nothing was submitted: no batch for status, merge or the next submission to read
        raise
    manifest.record_jobs(array=array, submitted=now(), commands=[shlex.join(["sbatch", *array_args, "shard.sh"])])
    merge_args = [f"--job-name=grader-merge-{manifest.batch}", f"--dependency=afterany:{array}",
                  "--cpus-per-task=1", f"--time={options.merge_time}", f"--output={folder / 'logs' / 'merge.out'}",
                  "--open-mode=append", *common, *options.sbatch]
    try:
        merge = scheduler.sbatch(merge_args, folder / "merge.sh")
    except GraderError as e:
        scheduler.cancel(array)
        raise GraderError(f"{e} (the array {array} is cancelled again: nothing would merge its shards)") from None
    manifest.record_jobs(merge=merge, commands=manifest.jobs["commands"] + [shlex.join(["sbatch", *merge_args,
                                                                                         "merge.sh"])])
    out.batch, out.shards, out.array, out.merge = manifest.batch, len(manifest.shards), array, merge
    return out


def sbatch_arguments(given: list[str]) -> list[str]:
    """--sbatch "ARGS" (repeatable): more sbatch options for both jobs, split as a shell would."""
    args = [a for text in given for a in shlex.split(text)]
    if args and not args[0].startswith("-"):
        raise GraderError(f"--sbatch {given[0]!r}: give sbatch options (e.g. --sbatch '--qos=short --mem=16G')")
    return args
