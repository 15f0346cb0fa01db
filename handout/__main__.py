"""python3 -m handout: render the handout (what `make handout` runs).

Writes OUT/assignment.md, the measured record's plots and OUT/assignment.html
(default handout/build/). Exit status 0 when they were written, 1 when
something they need is missing or wrong (the message names it; a record that
did not measure today's solution is refused with the command that refreshes
it), 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader.core.registry import Registry, RegistryError
from grader.core.rubric import DEFAULT_RUBRIC
from handout.record import RECORD, SOLUTION_KERNELS
from handout.render import HERE, HandoutError, Inputs, build

REPO = HERE.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m handout", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "build", help="output folder (default handout/build)")
    parser.add_argument("--record", type=Path, default=RECORD,
                        help="the solution's measured bench (default starter/bench/reference.json)")
    parser.add_argument("--kernels", type=Path, default=SOLUTION_KERNELS,
                        help="the solution the record must have measured (default solution/kernels)")
    parser.add_argument("--rubric", type=Path, default=DEFAULT_RUBRIC, help="the grading policy (default grader/rubric.toml)")
    parser.add_argument("--harness", type=Path, default=None,
                        help="a built harness to read the task registry from (default: the checked-in "
                             "starter/harness/registry.json)")
    args = parser.parse_args(argv)
    try:
        registry = Registry.from_harness(args.harness) if args.harness else Registry.from_file()
        md, html = build(args.out, Inputs(registry=registry, rubric=args.rubric, record=args.record,
                                          solution_kernels=args.kernels))
    except (HandoutError, RegistryError) as e:
        print(f"make handout: {e}", file=sys.stderr)
        return 1
    print(f"wrote {md} and {html}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
