"""The students' own scripts (starter/tools/*.py: standard library only, shipped in their tarball) loaded as
modules of the grader, so that the grader runs the very code the students run: the pre-check (the build gate),
the CPU backend's sanitizer checks, and the service client and `make submit`'s packer (the Gradescope bridge)."""
from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[2] / "starter" / "tools"


def load_driver(name: str):
    """starter/cpu/driver/NAME.py, as a module of the CPU backend's driver package (its modules import one another
    relatively), loaded once under a name of the grader's own."""
    package = "grader_student_cpu_driver"
    if package not in sys.modules:
        folder = TOOLS.parent / "cpu" / "driver"
        spec = importlib.util.spec_from_file_location(package, folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])
        sys.modules[package] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[package])
    return importlib.import_module(f"{package}.{name}")


def load(name: str, path: Path | None = None):
    """starter/tools/NAME.py (or `path`) as a module, loaded once."""
    module_name = f"grader_student_tool_{name}"
    if module_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(module_name, path or TOOLS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # dataclasses look their module up while the class is made
        spec.loader.exec_module(module)
    return sys.modules[module_name]
