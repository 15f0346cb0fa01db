"""The grading policy itself: `rubric` checks and prints it, `rules` prints or exports the build gate's rules."""
from __future__ import annotations

from pathlib import Path

from grader.core.registry import Registry
from grader.core.rubric import Rubric, load_rubric
from grader.cli.common import common


def _built_registry(harness_arg: str | None) -> Registry:
    """A built harness's registry when given, else the checked-in one (no build needed)."""
    return Registry.from_harness(Path(harness_arg)) if harness_arg else Registry.from_file()


def cmd_rules(args) -> int:
    rubric = load_rubric(Path(args.rubric), _built_registry(args.harness))
    gate = rubric.gate
    if args.export:
        Path(args.export).write_text(rubric.student_rules_text())
        print(f"wrote {args.export}")
        return 0
    print("Rules (a task file that breaks one is not run):")
    for rule in gate.rules.values():
        print(f"  {rule.name}: {rule.description}")
    print("Allowed external symbols, by category: " + ", ".join(gate.allowed))
    for task, loosened in gate.tasks.items():
        if loosened.allow or loosened.allow_symbols or loosened.allow_headers:
            print(f"  {task}: allows rules {list(loosened.allow)}, symbols {list(loosened.allow_symbols)}, "
                  f"headers {list(loosened.allow_headers)}")
    return 0


def cmd_rubric(args) -> int:
    registry = _built_registry(args.harness)
    rubric: Rubric = load_rubric(Path(args.rubric), registry)
    import pandas as pd  # (for this table only)
    table = pd.DataFrame([{"task": t.id, "correctness": t.correctness_points, "performance": t.performance_points,
                           "types": ",".join(t.dtypes), "cases": len(t.dtypes) * len(t.shapes),
                           "timed": ",".join(t.timed), "s_zero": t.s_zero, "s_full": t.s_full} for t in rubric.tasks])
    print(f"{rubric.path}: valid; {rubric.max_points:.0f} points; sha256 {rubric.sha256[:12]}")
    print(table.to_string(index=False))
    return 0


def add_commands(sub) -> None:
    """This group's commands, on the parser's subcommands."""
    rb = sub.add_parser("rubric", help="check the rubric against the harness and print it",
                        description="Validate the rubric against the harness's task registry and print it.")
    common(rb, results=False)
    rb.add_argument("--harness", default=None, help="a built harness to read the registry from (default: the "
                                                    "checked-in starter/harness/registry.json)")
    rb.set_defaults(func=cmd_rubric)

    ru = sub.add_parser("rules", help="print the build gate's rules, or export them for the pre-check",
                        description="Print the build gate's rules from the rubric, or write them as JSON for "
                                    "starter/tools/precheck.py (--export starter/tools/rules.json).")
    common(ru, results=False)
    ru.add_argument("--harness", default=None, help="a built harness to read the registry from (default: the "
                                                    "checked-in starter/harness/registry.json)")
    ru.add_argument("--export", default=None, metavar="FILE", help="write the pre-check's rules.json here")
    ru.set_defaults(func=cmd_rules)
