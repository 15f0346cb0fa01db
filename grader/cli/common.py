"""What every command group shares: the option sets several commands take (the rubric and results, the
sandbox, Slurm, one submission's), the usage error, the store's registry and rubric, the sandbox check, and the
built backend over its build cache entry."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path


from grader import backends
from grader.backends.base import Backend
from grader.core.errors import GraderError
from grader.core.late import lateness
from grader.core.registry import Registry
from grader.core.rubric import DEFAULT_RUBRIC, Rubric, load_rubric
from grader.run.sandbox import UNSAFE_FLAG, make_sandbox
from grader.store.store import Store


class UsageError(ValueError):
    """Options that do not go together: a bad argument (exit status 2)."""


def registry_from_store(results: Path) -> Registry:
    store = Store.existing(results / "grades.sqlite")
    try:
        run = store.latest_run()
    finally:
        store.close()
    if run is None:
        raise GraderError(f"{results / 'grades.sqlite'} holds no grading run yet: run `bin/grader grade` first")
    return Registry.from_json(json.loads(run["registry"]))


def stored_rubric(args, check: bool = True) -> Rubric:
    """--rubric, read against the registry of the store in --results (a one-line error where there is no store or
    no grading run, and never an empty new store); with `check`, also refused unless the stored scores were
    computed under it."""
    results = Path(args.results)
    rubric = load_rubric(Path(args.rubric), registry_from_store(results))
    if check:
        check_rubric_matches(results, rubric)
    return rubric


def isolation(args, work: Path):
    """The sandbox student code runs in, checked to work here; refuses without bubblewrap unless told."""
    work.mkdir(parents=True, exist_ok=True)
    chosen = make_sandbox(args.unsafe_no_sandbox, args.bwrap, work)
    if args.unsafe_no_sandbox:
        print(f"grader: WARNING: {UNSAFE_FLAG}: student code runs with this user's rights, without isolation; "
              "every result stored says so", file=sys.stderr)
    return chosen


BUILD_CACHE_ENV = "GRADER_BUILD_CACHE"


BUILD_CACHE_HELP = ("where the harness and the solution are built once for their sources and toolchain, and found "
                    f"after (default: ${BUILD_CACHE_ENV}, else WORK/cache)")


def build_cache_root(args, work: Path) -> Path:
    """Where the harness and the solution are built once for their sources and toolchain (grader/backends/build_cache.py):
    --build-cache, else $GRADER_BUILD_CACHE, else WORK/cache."""
    given = getattr(args, "build_cache", None) or os.environ.get(BUILD_CACHE_ENV)
    return Path(given).resolve() if given else Path(work).resolve() / "cache"


def prepared_backend(args, work: Path, jobs: int, gpu: str | None, sandbox) -> tuple[Backend, Registry, Rubric]:
    """The built backend (--device's kind: grader/backends/__init__.py) over its build cache entry (built now if
    these sources and this toolchain have none yet), its registry and the rubric checked against it; the sandbox
    gets the rubric's limits before its GPU check runs the solution through it."""
    from grader.backends import build_cache as cache
    kind = backends.get(getattr(args, "device", backends.DEFAULT_DEVICE))
    arch = kind.arch(args.arch)
    target = "the CPU backend" if kind.name == "cpu" else arch

    def announce(folder: Path):
        print(f"building the harness and the solution for {target} in {folder} (once for these sources and this "
              "toolchain) ...", file=sys.stderr)
    entry, _ = cache.ensure(build_cache_root(args, work), kind, arch, jobs, Path(args.rubric), announce=announce)
    backend, registry = kind.open(entry.folder, entry.record, Path(work).resolve(), sandbox, arch)
    rubric = load_rubric(Path(args.rubric), registry)
    backend.set_limits(rubric.limits)
    if kind.sandboxed and not args.unsafe_no_sandbox:
        backend.check_gpu(gpu)
    return backend, registry, rubric


# The Slurm options of `grade` and `serve` and their defaults (slurm_group): any other value without --slurm is a
# mistake (refuse_slurm_only).
SLURM_DEFAULTS = {"partition": None, "account": None, "gres": "gpu:1", "time": None, "max_parallel": None,
                  "cpus_per_task": 4, "shard_size": 8, "merge_time": "1:00:00", "sbatch": [], "cache": None}


def refuse_slurm_only(args) -> None:
    """Without --slurm, the Slurm options (of `grade` and `serve`) are a mistake."""
    given = [name for name, default in SLURM_DEFAULTS.items() if getattr(args, name) != default]
    if given:
        raise UsageError(f"--{given[0].replace('_', '-')} is an option of --slurm")


def slurm_options(args):
    """The Slurm options of `grade --slurm` and `serve --slurm`, checked against the device."""
    from grader.slurm.submit import SlurmOptions, sbatch_arguments
    if args.device == "auto":
        raise UsageError("--device auto decides by the machine it runs on, and with --slurm that is the login node, "
                         "not the nodes that grade: say --device gpu or --device cpu")
    if args.gres != SLURM_DEFAULTS["gres"] and not backends.get(args.device).uses_gpus:
        raise UsageError(f"--gres {args.gres}: --device {args.device} grades on the CPUs each array task gets "
                         "(--cpus-per-task) and asks Slurm for no GPU; leave --gres out")
    if args.unsafe_no_sandbox:
        print(f"grader: WARNING: {UNSAFE_FLAG}: on every node, student code runs with this user's rights, without "
              "isolation; every result stored says so", file=sys.stderr)
    return SlurmOptions(args.partition, args.account, args.gres, args.time, args.max_parallel, args.cpus_per_task,
                        args.shard_size, args.merge_time, sbatch_arguments(args.sbatch),
                        Path(args.cache) if args.cache else None)


def check_rubric_matches(results: Path, rubric: Rubric) -> None:
    """The scores in the store were computed under this very rubric and its extensions file as it is now, or an
    error that says to rescore."""
    store = Store.existing(results / "grades.sqlite")
    try:
        latest = store.latest_submissions()
    finally:
        store.close()
    used = sorted(set(latest["rubric_sha256"]))
    rescore = f"run `bin/grader rescore {results} --rubric {rubric.path}` first"
    if used and used != [rubric.sha256]:
        raise GraderError(f"{rubric.path} (sha256 {rubric.sha256[:12]}) is not the rubric the stored scores were "
                          f"computed with ({', '.join(u[:12] for u in used)}): {rescore}")
    # The extensions file is read with the rubric but is not part of its bytes: an extension granted since
    # grading changes a late penalty without changing the rubric's digest.
    stale = [(r.student, r.late, now.note) for r in latest.itertuples()
             if (now := lateness(rubric.late, r.student, r.received, r.received_from)).note != r.late
             or now.percent != r.late_percent]
    if stale:
        student, before, after = stale[0]
        where = rubric.late.extensions_file if rubric.late and rubric.late.extensions_file else rubric.path
        raise GraderError(f"{where} changed since grading: {len(stale)} stored submission(s) now have a different "
                          f"late penalty ({student}: stored '{before}', now '{after}'): {rescore}")


def common(q, results=True):
    q.add_argument("--rubric", default=str(DEFAULT_RUBRIC), help="the grading policy (default: %(default)s)")
    if results:
        q.add_argument("--results", default="results", help="results directory (default: %(default)s)")


def sandboxing(q):
    q.add_argument("--bwrap", default=None, metavar="PATH",
                   help="the bubblewrap binary to sandbox student code with (default: $BWRAP, else bwrap on PATH)")
    q.add_argument(UNSAFE_FLAG, action="store_true",
                   help="run student code without a sandbox, with this user's rights (every result says so)")


def slurm_group(q, what: str):
    """The Slurm options, the same for `grade --slurm` and `serve --slurm`."""
    c = q.add_argument_group("on a Slurm cluster (docs/slurm.md)")
    c.add_argument("--slurm", action="store_true", help=what)
    c.add_argument("--partition", help="sbatch --partition (default: the cluster's)")
    c.add_argument("--account", help="sbatch --account")
    c.add_argument("--gres", help="each task's GPU, one: gpu:1 or gpu:TYPE:1 (default: %(default)s)")
    c.add_argument("--time", help="each task's time limit (default: enough for every submission of a "
                   "shard to use its whole build and submission limits from the rubric)")
    c.add_argument("--max-parallel", type=int, metavar="K",
                   help="at most K tasks at once (the array's %%K; default: as many as Slurm gives)")
    c.add_argument("--cpus-per-task", type=int, help="CPUs per task, for builds (default: %(default)s)")
    c.add_argument("--shard-size", type=int, help="submissions per task (default: %(default)s)")
    c.add_argument("--merge-time", help="the merge job's time limit (default: %(default)s)")
    c.add_argument("--sbatch", action="append", metavar="ARGS",
                   help="more sbatch options for both jobs, e.g. --sbatch='--qos=short --mem=16G' (repeatable)")
    c.add_argument("--cache", metavar="DIR", help="the shared build cache, on a filesystem every "
                   "node sees (default: RESULTS/slurm/cache)")
    q.set_defaults(**SLURM_DEFAULTS)  # (each option's default, in its help too, from the one dict)
    return c


def one(q):
    q.add_argument("--results", default=None, help="grade into RESULTS/grades.sqlite and keep it (default: a "
                                                    "temporary folder, removed afterwards)")
    q.add_argument("--work", default="/tmp/grader-work", help="build directory (default: %(default)s)")
    q.add_argument("--build-cache", default=None, metavar="DIR", help=BUILD_CACHE_HELP)
    q.add_argument("--gpu", default=None, help="CUDA device index to use (default: the first visible)")
    q.add_argument("--arch", default=None, help="GPU architecture to build for, e.g. sm_90 (default: detected)")
    q.add_argument("--device", default="auto", metavar="NAME",
                   help="where the code runs: auto (default: the GPU when this machine has one, else the CPU "
                        "backend, correctness only: Gradescope's containers have no GPU), gpu or cpu")
    sandboxing(q)
