"""Grading a class on a Slurm cluster: one job array, one store, resumable (docs/slurm.md).

`bin/grader grade SUBMISSIONS --slurm` (submit.py) writes a batch, builds the harness and the solution once
into the shared cache (cache.py), and submits two jobs: a job array whose every task grades one shard of the
batch on its one GPU into a store of its own (shard.py), and a merge job that runs after the whole array,
whatever became of its tasks (afterany), merges every shard's store into RESULTS/grades.sqlite, one transaction
per submission, and writes the reports (merge.py). `bin/grader status` (status.py) reads the batch, the
shards' progress and the scheduler (scheduler.py: sbatch, squeue, sacct, scontrol).

    RESULTS/slurm/cache/<key>/              the build, shared by every batch with the same sources and toolchain
    RESULTS/slurm/<batch>/manifest.json     what to grade: submissions, shards, seed, rubric, cache entry, backend
    RESULTS/slurm/<batch>/jobs.json         the array's and the merge job's ids, and the sbatch command lines
    RESULTS/slurm/<batch>/shard.sh, merge.sh   what the jobs run
    RESULTS/slurm/<batch>/shards/NNN/       shard NNN: grades.sqlite, progress.json
    RESULTS/slurm/<batch>/logs/             shard-N.out (one per array task), merge.out
    RESULTS/slurm/<batch>/merged.json       written by the merge: what it merged, when

A batch holds only what is not graded yet (same sha256, harness version and rubric hash in grades.sqlite).
A shard's store keeps every finished submission (one transaction each); a task that is cancelled, fails or runs
out of time loses at most its submission in flight, the merge job still merges what it stored, and the next
`grade --slurm` submits only what is missing.
"""
