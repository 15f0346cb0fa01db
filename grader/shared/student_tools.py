"""The students' own scripts (starter/tools/*.py: standard library only, shipped in their tarball) loaded as
modules of the grader, so that the grader runs the very code the students run: the pre-check (the build gate),
the CPU backend's sanitizer checks, and the service client and `make submit`'s packer (the Gradescope bridge)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[2] / "starter" / "tools"


def load(name: str, path: Path | None = None):
    """starter/tools/NAME.py (or `path`) as a module, loaded once."""
    module_name = f"grader_student_tool_{name}"
    if module_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(module_name, path or TOOLS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # dataclasses look their module up while the class is made
        spec.loader.exec_module(module)
    return sys.modules[module_name]
