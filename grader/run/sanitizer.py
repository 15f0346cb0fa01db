"""compute-sanitizer's command and report parsing, shared with the students' `make test`:
the one copy is starter/tools/sanitize.py (standard library only, shipped with the starter)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_SOURCE = Path(__file__).resolve().parents[2] / "starter" / "tools" / "sanitize.py"


def _load():
    name = "grader_shared_sanitize"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _SOURCE)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while the class is made
        spec.loader.exec_module(module)
    return sys.modules[name]


_shared = _load()
ERROR_EXIT, PRINT_LIMIT, REPORT_LINES, TOOL_WORDS = (_shared.ERROR_EXIT, _shared.PRINT_LIMIT, _shared.REPORT_LINES,
                                                     _shared.TOOL_WORDS)
Findings, find_tool, new_prefix, command, parse = (_shared.Findings, _shared.find_tool, _shared.new_prefix,
                                                   _shared.command, _shared.parse)
meaning, location, summary_sentence = _shared.meaning, _shared.location, _shared.summary_sentence
serve_command, sanitized_shapes, requests = _shared.serve_command, _shared.sanitized_shapes, _shared.requests
LINE_CHARS, MEMCHECK_FINDS = _shared.LINE_CHARS, _shared.MEMCHECK_FINDS
cpu_findings, cpu_location, cpu_finding_words = _shared.cpu_findings, _shared.cpu_location, _shared.cpu_finding_words
CPU_TOOL_WORDS = _shared.CPU_TOOL_WORDS
