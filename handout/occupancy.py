"""The occupancy rules and the grading GPU's limits, for the handout: one copy, starter/tools/occupancy.py
(with starter/tools/gpu.toml), which ships to students for `make profile`."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parents[1] / "starter" / "tools" / "occupancy.py"
_NAME = "starter_tools_occupancy"
if _NAME not in sys.modules:
    _spec = importlib.util.spec_from_file_location(_NAME, _PATH)
    sys.modules[_NAME] = importlib.util.module_from_spec(_spec)  # dataclasses look their module up
    _spec.loader.exec_module(sys.modules[_NAME])
_rules = sys.modules[_NAME]

GPU_FILE = _rules.GPU_FILE
Gpu, GpuError, Occupancy, SmLimits = _rules.Gpu, _rules.GpuError, _rules.Occupancy, _rules.SmLimits
load_gpu, occupancy = _rules.load_gpu, _rules.occupancy
