"""python3 -m release: the student tarball.

  dist          write dist/<assignment>-starter.tar.gz (what `make dist` runs)
  leaks FILE    run the leak check on a tarball, or on a folder (an extracted one)

Exit status: 0 done (dist) or no leak found (leaks); 1 when the tarball could
not be made or a leak was found (each one is named); 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

from grader.core.rubric import DEFAULT_RUBRIC
from handout.record import RECORD, SOLUTION_KERNELS
from release import leaks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m release", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    dist = commands.add_parser("dist", help="write the student tarball")
    dist.add_argument("--out", type=Path, default=leaks.REPO / "dist", help="output folder (default dist/)")
    dist.add_argument("--record", type=Path, default=RECORD,
                      help="the solution's measured bench: the handout quotes it, the tarball ships it as "
                           "starter/bench/reference.json (default: that file)")
    dist.add_argument("--kernels", type=Path, default=SOLUTION_KERNELS,
                      help="the solution the record must have measured (default solution/kernels)")
    dist.add_argument("--rubric", type=Path, default=DEFAULT_RUBRIC)
    dist.add_argument("--harness", type=Path, default=None,
                      help="a built harness to read the task registry from (default: the checked-in "
                           "starter/harness/registry.json)")
    dist.add_argument("--deps-include", type=Path, default=None,
                      help="folder holding doctest/, nlohmann/ and CLI/ (default: the compiler's include path)")
    check = commands.add_parser("leaks", help="leak-check a tarball or an extracted folder")
    check.add_argument("target", type=Path)
    args = parser.parse_args(argv)

    if args.command == "leaks":
        if not args.target.exists():
            print(f"python3 -m release leaks: {args.target}: no such tarball or folder", file=sys.stderr)
            return 2
        secrets = leaks.secrets()
        found = (leaks.check(leaks.tree_files(args.target), secrets) if args.target.is_dir()
                 else leaks.check_tarball(args.target, secrets))
        for leak in found:
            print(f"LEAK {leak}", file=sys.stderr)
        print(f"{args.target}: {'no leak' if not found else f'{len(found)} leak(s)'} "
              f"(checked against {len(secrets)} secret files)")
        return 1 if found else 0

    # Only dist renders (jinja2, the handout): `leaks` runs on any python3, standard library alone.
    from grader.core.registry import Registry, RegistryError
    from grader.core.rubric import RubricError
    from handout.record import RecordError
    from handout.render import HandoutError
    from release.dist import DistError, DistOptions, build
    from release.headers import HeaderError
    try:
        registry = Registry.from_harness(args.harness) if args.harness else Registry.from_file()
        path = build(DistOptions(registry=registry, out=args.out, record=args.record, solution_kernels=args.kernels,
                                 rubric=args.rubric, deps_include=args.deps_include))
    except (DistError, HandoutError, HeaderError, RecordError, RegistryError, RubricError) as e:
        print(f"make dist: {e}", file=sys.stderr)
        return 1
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    print(f"wrote {path} ({path.stat().st_size // 1024} KiB, sha256 {digest}); leak check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
