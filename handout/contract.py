"""What the handout says about each task that is already written elsewhere, read from there.

- the launcher's declaration, from starter/include/tasks.h (the contract the
  harness and the grader compile against);
- the stub's own explanation, the comment at the top of starter/kernels/<file>;
- the handout's extra hints, from handout/hints.md (one `## <task>` section per
  task; a section for a task the registry does not have is an error, so a
  renamed task cannot leave stale advice behind).
"""
from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TASKS_H = REPO / "starter" / "include" / "tasks.h"
KERNELS = REPO / "starter" / "kernels"
CPU_NEEDS = REPO / "starter" / "cpu" / "NEEDS.md"  # what a build needs, per platform: one account for every reader
HINTS = HERE / "hints.md"


class ContractError(ValueError):
    pass


def declaration(task_id: str, header: Path = TASKS_H) -> str:
    """The launcher's declaration as tasks.h writes it, e.g. `void fill(std::int32_t* out, int rows, int cols);`."""
    text = header.read_text(encoding="utf-8")
    match = re.search(r"^(?:template\s*<[^>]*>\s*\n)?void\s+" + re.escape(task_id) + r"\s*\([^;]*\);", text, re.M)
    if match is None:
        raise ContractError(f"{header}: no declaration of the launcher '{task_id}'")
    return match.group(0)


def stub_notes(file_name: str, kernels: Path = KERNELS) -> str:
    """The stub's leading comment without its `Check it:` line: what the task asks, in the stub's words."""
    path = kernels / file_name
    if not path.is_file():
        raise ContractError(f"{path}: the task's stub is missing")
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("//"):
            break
        lines.append(line[3:] if line.startswith("// ") else line[2:])
    text = "\n".join(line for line in lines if not line.lstrip().startswith("Check it:")).strip()
    if not text:
        raise ContractError(f"{path}: the stub has no explanatory comment at its top")
    return text


def hints(task_ids: list[str], path: Path = HINTS) -> dict[str, str]:
    """`## task` sections of hints.md, by task; every task must have one and no other task may."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in path.read_text(encoding="utf-8").splitlines():
        heading = re.fullmatch(r"##\s+(\S+)\s*", line)
        if heading:
            current = heading.group(1)
            if current in sections:
                raise ContractError(f"{path}: '## {current}' appears twice")
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    unknown = sorted(set(sections) - set(task_ids))
    if unknown:
        raise ContractError(f"{path}: hints for tasks the harness does not have: {', '.join(unknown)} "
                            f"(its tasks: {', '.join(task_ids)})")
    missing = [t for t in task_ids if t not in sections]
    if missing:
        raise ContractError(f"{path}: no '## <task>' section for {', '.join(missing)}")
    return {task: "\n".join(body).strip() for task, body in sections.items()}
