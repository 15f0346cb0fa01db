"""The course's grading service: `serve` (workers on this machine's GPUs, or Slurm batches), its workers
(`serve-worker`) and its `tokens`."""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from pathlib import Path


from grader import backends
from grader.core.errors import GraderError
from grader.core.registry import Registry
from grader.intake.roster import read_roster, stored_people
from grader.core.rubric import load_rubric
from grader.run.sandbox import UNSAFE_FLAG
from grader.store.store import Store
from grader.cli.common import (BUILD_CACHE_HELP, build_cache_root, common, isolation, refuse_slurm_only, sandboxing,
                               slurm_group, slurm_options, UsageError)

BATCH_SECONDS = 20.0  # serve --slurm's default: how often a new batch may go to Slurm
BUILD_CORES, BUILD_GIB = 4, 4  # what one build thread is given by default: a build compiles its files in parallel


def default_builders(workers: int, cores: int | None = None, memory: int | None = None) -> int:
    """Build threads per worker (`serve --builders`'s default): this machine's cores and memory shared among its
    workers, BUILD_CORES cores and BUILD_GIB GiB a build, at least 1 and at most 4."""
    cores = cores or os.cpu_count() or 1
    if memory is None:
        try:
            memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            memory = 0
    by_memory = memory // (BUILD_GIB * 2**30 * workers) if memory else 1
    return max(1, min(4, cores // (BUILD_CORES * workers), by_memory))


def builder_count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= 64:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number from 1 to 64")
    return n


def cmd_serve(args) -> int:
    """Builds the solution once (the Slurm path's build cache), then serves; each worker opens that build."""
    from grader.service.connections import ConnectionLimits
    from grader.service.serve import ServeOptions, serve
    from grader.service.supervisor import Supervisor
    from grader.backends import build_cache as cache
    if args.slurm:
        return cmd_serve_slurm(args)
    refuse_slurm_only(args)
    if args.batch_seconds != BATCH_SECONDS:
        raise UsageError("--batch-seconds is an option of --slurm")
    results = Path(args.results).resolve()
    work = Path(args.work).resolve() if args.work else results / "work"
    kind = backends.get(args.device)
    if kind.sandboxed:
        isolation(args, work)  # refuses now, before a worker starts, where the sandbox cannot work
    gpus = kind.devices(args.gpus)
    registry = Registry.from_file()
    rubric = load_rubric(Path(args.rubric), registry)
    arch = kind.arch(args.arch)
    builders = args.builders or default_builders(len(gpus))

    def prepare() -> Supervisor:
        """The solution built once (or found in the build cache), then the workers that open it."""
        entry, built = cache.ensure(build_cache_root(args, work), kind, arch, os.cpu_count() or 2,
                                    Path(args.rubric))
        print(f"service: solution {'built' if built else 'already built'} in {entry.folder}", file=sys.stderr)

        def worker_command(name: str, gpu: str | None) -> list[str]:
            command = [sys.executable, "-m", "grader", "serve-worker", "--results", str(results), "--name", name,
                       "--device", args.device, "--rubric", str(Path(args.rubric).resolve()), "--cache",
                       str(entry.folder), "--work", str(work / name), "--parent", str(os.getpid()), "--arch", arch,
                       "--builders", str(builders)]
            command += ["--gpu", gpu] if gpu is not None else []
            command += [UNSAFE_FLAG] if args.unsafe_no_sandbox else (["--bwrap", args.bwrap] if args.bwrap else [])
            return command
        return Supervisor(results, gpus, worker_command, rubric.service, args.drain)

    doing = f"building the solution for {'the CPU' if args.device == 'cpu' else arch} (minutes the first time)"
    return serve(ServeOptions(results, args.host, args.port, args.leaderboard_ranked_only,
                              ConnectionLimits.from_args(args)), rubric, registry, prepare,
                 doing, kind.profiler)


def cmd_serve_slurm(args) -> int:
    """The service whose jobs go to Slurm in batches (grader/service/slurm_dispatch.py), through the build cache
    and the submission step of `grade --slurm`: the cache is made (or found) now, so the first batch waits for no
    build."""
    from grader.service.connections import ConnectionLimits
    from grader.service.serve import ServeOptions, serve
    from grader.service.slurm_dispatch import DispatchOptions, SlurmDispatcher
    from grader.backends import build_cache as cache
    from grader.slurm import scheduler
    from grader.slurm.batch import SLURM_FOLDER
    if args.gpus != "all" or args.work or args.builders:
        raise UsageError("--gpus, --work and --builders are for workers on this machine; with --slurm each array task "
                         "builds and grades on the node Slurm gives it (--gres)")
    if args.batch_seconds <= 0:
        raise UsageError("--batch-seconds must be more than 0")
    options = slurm_options(args)
    results = Path(args.results).resolve()
    kind = backends.get(args.device)
    scheduler.check_partition(options.partition)  # Slurm answers, and the partition exists, before serving
    registry = Registry.from_file()
    rubric = load_rubric(Path(args.rubric), registry)
    arch = kind.arch(args.arch)

    def prepare() -> SlurmDispatcher:
        entry, built = cache.ensure(options.cache or results / SLURM_FOLDER / "cache", kind, arch,
                                    os.cpu_count() or 2, Path(args.rubric))
        print(f"service: the batches' build {'made' if built else 'found'} in {entry.folder}", file=sys.stderr)
        return SlurmDispatcher(DispatchOptions(results, options, args.device, arch, Path(args.rubric).resolve(),
                                               rubric.service, args.batch_seconds, args.unsafe_no_sandbox,
                                               args.bwrap, os.cpu_count() or 2))
    return serve(ServeOptions(results, args.host, args.port, args.leaderboard_ranked_only,
                              ConnectionLimits.from_args(args)), rubric, registry, prepare,
                 "building the solution for the Slurm batches (minutes the first time)",
                 lambda: "its jobs are graded in Slurm batches, which do not profile")


def cmd_serve_worker(args) -> int:
    from grader.service.worker import GPU_FAILED, MACHINE_FAULT, Worker, WorkerOptions
    from grader.store.faults import fault_of
    from grader.store.jobs import Jobs

    def failed(reason: str, status: int, said: str = "") -> int:
        """The worker's row says why it stopped (`bin/grader status`); the supervisor decides what comes next."""
        try:
            store = Store(Path(args.results) / "grades.sqlite")
            try:
                jobs = Jobs(store)
                jobs.worker_started(args.name, args.gpu, os.getpid())
                jobs.worker_state(args.name, "failed", reason)
            finally:
                store.close()
        except Exception as e:  # a full disk: the supervisor starts the worker again once it is fixed
            if not fault_of(e):
                raise
            status = MACHINE_FAULT
        print(f"service: {args.name}: {said}{reason}", file=sys.stderr)
        return status

    kind = backends.get(args.device)
    try:
        # A fresh folder each life: what a killed worker or a stopped service left in it is stale, and the backend
        # links the cache's harness into a new one (only `current`, which the worker makes, is removed).
        work = Path(args.work) / "current"
        shutil.rmtree(work, ignore_errors=True)
        sandbox = isolation(args, work) if kind.sandboxed else None
        cached = json.loads((Path(args.cache) / "cache.json").read_text())
        backend, registry = kind.open(Path(args.cache), cached, work, sandbox, args.arch)
        rubric = load_rubric(Path(args.rubric), registry)
        backend.set_limits(rubric.limits)
    except (GraderError, OSError, ValueError, KeyError) as e:  # the supervisor tries again
        if fault_of(e):  # not the worker's: started again after a pause, not counted as one that cannot start
            print(f"service: {args.name}: could not start: the grading machine's {fault_of(e)}", file=sys.stderr)
            return MACHINE_FAULT
        return failed(f"could not start: {e if isinstance(e, GraderError) else f'{type(e).__name__}: {e}'}", 1)
    if kind.sandboxed and not args.unsafe_no_sandbox:
        try:
            backend.check_gpu(args.gpu)
        except GraderError as e:  # the GPU cannot run the solution here: no job is lost, the worker is not restarted
            return failed(str(e), GPU_FAILED, said="stopped taking jobs: ")
    options = WorkerOptions(Path(args.results), args.name, args.gpu, args.parent, shlex.join(sys.argv),
                            work=Path(args.work), builders=args.builders)
    return Worker(options, backend, registry, rubric).run()


def cmd_tokens(args) -> int:
    from grader.service import tokens
    from grader.store.jobs import Jobs
    results = Path(args.results)
    store = Store(results / "grades.sqlite")
    try:
        jobs = Jobs(store)
        if args.revoke:
            n = jobs.revoke(student=args.revoke)
            if not n:
                raise GraderError(f"{args.revoke} holds no token in force (bin/grader tokens --list)")
            print(f"revoked {n} token(s) of {args.revoke}; `bin/grader tokens --roster ...` gives them a new one")
        elif args.staff or args.assignment:
            role, name = ("staff", args.staff) if args.staff else ("assignment", args.assignment)
            token = tokens.issue_one(jobs, role, name)
            print(f"a {role} token for {name} (shown once; only its hash is stored):\n{token}")
        elif args.list:
            for t in jobs.tokens():
                state = f"revoked {t.revoked}" if t.revoked else "in force"
                print(f"{t.role:10} {t.student or t.name:24} {t.hash[:12]}  made {t.made}  {state}")
        else:
            people = read_roster(Path(args.roster)) if args.roster else None
            if people is None:
                stored = store.roster()
                if not len(stored):
                    raise UsageError("give --roster FILE (the class list): the store holds none yet")
                people = stored_people(stored)
            else:
                store.save_roster(people)
            issued = tokens.issue_students(jobs, people, renew=args.renew)
            rubric = load_rubric(Path(args.rubric), Registry.from_file())
            out = tokens.write_hand_out(issued, Path(args.out) if args.out else results / "tokens.csv")
            kept = len(people) - len(issued)
            print(f"{len(issued)} new student tokens in {out} (readable by you only: hand each student their row, "
                  "then delete it)" + (f"; {kept} students kept the token they have (--renew replaces them)"
                                       if kept else ""))
            if not rubric.service.url:
                print(f"note: {args.rubric} names no [service] url yet: set it before `make dist`, or the students' "
                      "`make upload` finds no service")
    finally:
        store.close()
    return 0


def add_commands(sub) -> None:
    """This group's commands, on the parser's subcommands."""
    sv = sub.add_parser("serve", help="the course's grading service: uploads over HTTP, one worker per GPU",
                        description="Serve the grading API (docs/service.md) on HOST:PORT, behind the course's "
                                    "reverse proxy with TLS; the queue and every result are in RESULTS/grades.sqlite. "
                                    "SIGTERM or Ctrl-C stops it cleanly.")
    common(sv)
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s: the proxy's side)")
    sv.add_argument("--port", type=int, default=8000, help="port (default: %(default)s)")
    sv.add_argument("--gpus", default="all", help="'all' or GPU indices such as 0,1: one worker per GPU")
    sv.add_argument("--device", default=backends.DEFAULT_DEVICE, metavar="NAME",
                    help="where student code runs: gpu (default), cpu (correctness only) or auto")
    sv.add_argument("--arch", default=None, help="GPU architecture to build for, e.g. sm_90 (default: detected)")
    sv.add_argument("--work", default=None, help="build directory (default: RESULTS/work)")
    sv.add_argument("--builders", type=builder_count, default=None, metavar="N",
                    help="build threads of each worker, which build the next jobs on this machine's cores while its "
                         "GPU runs one (default: 4 cores and 4 GiB of memory each, 1 to 4)")
    sv.add_argument("--build-cache", default=None, metavar="DIR", help=BUILD_CACHE_HELP)
    sv.add_argument("--leaderboard-ranked-only", action="store_true",
                    help="the live leaderboard page (/leaderboard) lists ranked entries only, as `leaderboard "
                         "--ranked-only` does")
    sv.add_argument("--drain", type=float, default=60.0, help="seconds a stopping service lets each worker finish "
                    "its job; after that the job goes back to the queue (default: %(default)s)")
    from grader.service import connections
    limits = connections.ConnectionLimits()
    group = sv.add_argument_group("connections (docs/service.md, \"Connections\"): the service's own limits, "
                                  "whatever proxy is in front of it")
    group.add_argument("--max-connections", type=connections.whole_number, metavar="N",
                       default=limits.max_connections,
                       help="connections open at once, all clients together: one more is answered 503 and closed "
                            "(default: %(default)s; lowered to fit the open-files limit)")
    group.add_argument("--max-per-address", type=connections.whole_number, metavar="N",
                       default=limits.max_per_address,
                       help="connections open at once from one client address (default: %(default)s)")
    group.add_argument("--proxy", action="append", default=list(limits.proxies), metavar="ADDRESS",
                       help="a reverse proxy's address, left out of --max-per-address (behind it every client has "
                            "its address); repeatable (default: none)")
    group.add_argument("--header-timeout", type=connections.seconds, default=limits.header_timeout, metavar="S",
                       help="seconds a connection has to send a request's whole headers, from connecting or from "
                            "its previous response (default: %(default)s)")
    group.add_argument("--body-timeout", type=connections.seconds, default=limits.body_timeout, metavar="S",
                       help="the longest pause in a request's body, in seconds; then it is answered 408 "
                            "(default: %(default)s)")
    group.add_argument("--keep-alive", type=connections.seconds, default=limits.keep_alive, metavar="S",
                       help="seconds an idle connection is kept after a response (default: %(default)s)")
    sandboxing(sv)
    on_slurm = slurm_group(sv, "grade on a Slurm cluster: the waiting jobs go to Slurm in batches (one job per "
                               "student each), through `grade --slurm`'s job array and merge, instead of workers on "
                               "this machine's GPUs")
    on_slurm.add_argument("--batch-seconds", type=float, default=BATCH_SECONDS, metavar="S",
                          help="how often a new batch may be submitted, when none is in Slurm's queue and jobs "
                               "wait (default: %(default)s)")
    sv.set_defaults(func=cmd_serve)

    sw = sub.add_parser("serve-worker", help="one GPU's worker of `serve` (the service starts it)")
    common(sw)
    sw.add_argument("--name", required=True)
    sw.add_argument("--gpu", default=None)
    sw.add_argument("--device", default=backends.DEFAULT_DEVICE)
    sw.add_argument("--arch", default=None)
    sw.add_argument("--cache", required=True, help="the solution's build (serve's)")
    sw.add_argument("--work", required=True)
    sw.add_argument("--parent", type=int, required=True, help="the service's pid")
    sw.add_argument("--builders", type=builder_count, default=1, metavar="N", help="build threads (serve's)")
    sandboxing(sw)
    sw.set_defaults(func=cmd_serve_worker)

    tk = sub.add_parser("tokens", help="the grading service's tokens: one per student, staff, the assignment's",
                        description="Make a token for every student of the roster who has none (only their hashes "
                                    "are stored) and write RESULTS/tokens.csv to hand out; or one staff or "
                                    "assignment (Gradescope bridge) token; or revoke or list them.")
    common(tk)
    tk.add_argument("--roster", default=None, help="the class list (default: the one stored)")
    tk.add_argument("--out", default=None, help="the file to hand out (default: RESULTS/tokens.csv)")
    tk.add_argument("--renew", action="store_true", help="new tokens for everyone, the old ones revoked")
    tk.add_argument("--staff", default=None, metavar="NAME", help="print a new staff token for NAME")
    tk.add_argument("--assignment", default=None, metavar="NAME",
                    help="print a new assignment token (the Gradescope bridge's), named NAME")
    tk.add_argument("--revoke", default=None, metavar="ID", help="revoke the student's tokens")
    tk.add_argument("--list", action="store_true", help="list the tokens (hash prefixes, never the tokens)")
    tk.set_defaults(func=cmd_tokens)
