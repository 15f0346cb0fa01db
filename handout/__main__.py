"""python3 -m handout: render the handout (what `make handout` runs).

Writes OUT/assignment.md and OUT/assignment.html (default handout/build/).
Exit status 0 when both were written, 1 when something they need is missing
or wrong (the message names it), 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader.registry import Registry, RegistryError
from grader.rubric import DEFAULT_RUBRIC
from handout.render import FIGURES, HERE, HandoutError, Inputs, build

REPO = HERE.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m handout", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "build", help="output folder (default handout/build)")
    parser.add_argument("--figures", type=Path, default=FIGURES,
                        help="folder with bench.json and its plots (default handout/figures)")
    parser.add_argument("--rubric", type=Path, default=DEFAULT_RUBRIC, help="the grading policy (default grader/rubric.toml)")
    parser.add_argument("--harness", type=Path, default=None,
                        help="a built harness to read the task registry from (default: the checked-in "
                             "starter/harness/registry.json)")
    args = parser.parse_args(argv)
    try:
        registry = Registry.from_harness(args.harness) if args.harness else Registry.from_file()
        md, html = build(args.out, Inputs(registry=registry, rubric=args.rubric, figures=args.figures))
    except (HandoutError, RegistryError) as e:
        print(f"make handout: {e}", file=sys.stderr)
        return 1
    print(f"wrote {md} and {html}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
