"""The service's log lines arrive whole (grader/service/log.py): a reader tailing the log never sees a line
without its end, and threads logging at once never interleave, even with stderr unbuffered as the service runs."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SERVICE = REPO / "grader" / "service"

MANY_THREADS = """
import threading
from grader.service.log import say
def speak(n):
    for i in range(3000):
        say(f"thread {n} line {i}")
threads = [threading.Thread(target=speak, args=(n,)) for n in range(8)]
for t in threads: t.start()
for t in threads: t.join()
"""


def test_eight_threads_logging_at_once_to_unbuffered_stderr_leave_every_line_whole(tmp_path):
    log = tmp_path / "service.log"
    with open(log, "w") as out:
        subprocess.run([sys.executable, "-c", MANY_THREADS], cwd=REPO, stdout=out, stderr=out, check=True,
                       env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO)})
    lines = log.read_text().split("\n")
    assert lines[-1] == "" and len(lines) == 8 * 3000 + 1
    broken = [line for line in lines[:-1] if not line.startswith("service: thread ") or line.count("service:") != 1]
    assert not broken, broken[:5]


def test_no_service_module_writes_its_log_but_through_say():
    """`print(..., file=sys.stderr)` is two writes when unbuffered; the service's modules log through `say`."""
    offenders = []
    for path in sorted(SERVICE.glob("*.py")):
        if path.name in {"log.py", "bench.py"}:  # bench is a client that prints its own report, not the service
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                offenders.append(f"{path.name}:{node.lineno}")
    assert not offenders, offenders
