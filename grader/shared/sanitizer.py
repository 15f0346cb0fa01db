"""compute-sanitizer's command and report parsing, shared with the students' `make test`:
the one copy is starter/tools/sanitize.py (standard library only, shipped with the starter)."""
from __future__ import annotations

from pathlib import Path

from grader.shared import student_tools

_SOURCE = Path(__file__).resolve().parents[2] / "starter" / "tools" / "sanitize.py"


_shared = student_tools.load("sanitize", _SOURCE)
ERROR_EXIT, PRINT_LIMIT, REPORT_LINES, TOOL_WORDS = (_shared.ERROR_EXIT, _shared.PRINT_LIMIT, _shared.REPORT_LINES,
                                                     _shared.TOOL_WORDS)
Findings, find_tool, new_prefix, command, parse = (_shared.Findings, _shared.find_tool, _shared.new_prefix,
                                                   _shared.command, _shared.parse)
meaning, location, summary_sentence = _shared.meaning, _shared.location, _shared.summary_sentence
serve_command, sanitized_shapes, requests = _shared.serve_command, _shared.sanitized_shapes, _shared.requests
LINE_CHARS, MEMCHECK_FINDS = _shared.LINE_CHARS, _shared.MEMCHECK_FINDS
cpu_findings, cpu_location, cpu_finding_words = _shared.cpu_findings, _shared.cpu_location, _shared.cpu_finding_words
first_cpu_finding, first_finding_at = _shared.first_cpu_finding, _shared.first_finding_at
CPU_TOOL_WORDS = _shared.CPU_TOOL_WORDS
