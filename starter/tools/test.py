#!/usr/bin/env python3
"""make test: the student suite, then what the grader also checks, then one summary line.

    python3 tools/test.py --suite build/starter/student_suite --harness build/starter/harness \\
        --kernels kernels [--task ID[,ID]] [--seed N] [--data-dir ../data] [--no-sanitizer]

1. The student suite (every task's "test" shapes of the registry, which hold
   every shape the grader grades, and the stored cases in data/).
2. For each task that passed: compute-sanitizer's tools on the task's
   sanitizer case, with the same command the grader runs (tools/sanitize.py),
   where compute-sanitizer is installed; on the CPU (--on-cpu), the CPU
   backend's own checks in their place: the harness with AddressSanitizer for
   memcheck, the --racecheck harness (--race-harness) for racecheck, which
   also sees races between blocks (--no-sanitizer, or SANITIZE=0, skips
   them for a quick loop).
3. The grader's source rules (tools/precheck.py) on each task file.
4. One line that counts what the grader would: e.g.
   "6/7 tasks pass; matmul_tiled: racecheck finds a race on shared memory at
   matmul_tiled.cu:22 (the grader deducts 25% of its correctness points)".

Exit status: 0 when every task passes all three; 1 otherwise; the suite's own
status when it could not run (2 bad arguments, 4 no GPU or no data).
Standard library only: it ships with the starter.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
REGISTRY = TOOLS.parent / "harness" / "registry.json"
RULES = TOOLS / "rules.json"
SANITIZER_TIMEOUT = 300  # seconds for one tool run on one small case (the tools slow a kernel 10-100x)


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"starter_{name}", TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run_suite(args, outcomes: Path) -> int:
    cmd = [args.suite, f"--data-dir={args.data_dir}", f"--outcomes={outcomes}"]
    cmd += [f"--task={args.task}"] if args.task else []
    cmd += [f"--seed={args.seed}"] if args.seed else []
    return subprocess.run(cmd).returncode


def cpu_check_findings(args, task: dict, tools: list[str], seed: int, sanitize) -> list[str]:
    """Without a GPU: the CPU backend's own check for each tool on the task's sanitizer case (the harness with
    AddressSanitizer for memcheck, the --racecheck harness for racecheck), as sentences naming the line."""
    found = []
    shape, dtype = task["shape_sets"]["sanitize"][0], task["dtypes"][0]
    harnesses = {"memcheck": args.harness, "racecheck": args.race_harness}
    for tool in tools:
        with tempfile.TemporaryDirectory() as scratch:
            records = Path(scratch) / "records.jsonl"
            cmd = sanitize.cpu_command(harnesses[tool], task["id"], dtype, shape, seed, str(records),
                                       case_timeout=SANITIZER_TIMEOUT - 15)
            try:
                subprocess.run(cmd, capture_output=True, text=True, timeout=SANITIZER_TIMEOUT, cwd=args.cwd)
            except subprocess.TimeoutExpired:
                found.append(f"{tool} did not finish within {SANITIZER_TIMEOUT} s")
                continue
            findings = sanitize.parse_cpu(records.read_text(errors="replace") if records.is_file() else "")
        if findings.errors is None:
            found.append(f"{tool} gave no verdict (run it yourself: make {tool} TASK={task['id']})")
        elif findings.errors:
            where = sanitize.cpu_location(findings.report)
            what, advice = sanitize.cpu_finding_words(findings.report)
            found.append(f"{tool} finds {what}{' at ' + where if where else ''}{': ' + advice if advice else ''} "
                         f"(make {tool} TASK={task['id']} shows it)")
            print(f"\n{task['id']} {dtype} {shape}: the CPU backend's {tool} ({sanitize.CPU_TOOL_WORDS[tool]}) "
                  f"stopped the kernel:\n{findings.report}")
    return found


def sanitizer_findings(args, task: dict, tools: list[str], seed: int, sanitize) -> list[str]:
    """What each tool found on the task's sanitizer case: sentences naming the file and line."""
    if args.on_cpu is not None:
        return cpu_check_findings(args, task, tools, seed, sanitize)
    found = []
    shape, dtype = task["shape_sets"]["sanitize"][0], task["dtypes"][0]
    for tool in tools:
        with tempfile.TemporaryDirectory() as scratch:
            prefix = sanitize.new_prefix()
            log = Path(scratch) / "sanitizer.log"
            cmd = sanitize.command(args.sanitizer, tool, args.harness, task["id"], dtype, shape, seed, str(log),
                                   prefix, case_timeout=SANITIZER_TIMEOUT - 15)
            try:
                subprocess.run(cmd, capture_output=True, text=True, timeout=SANITIZER_TIMEOUT, cwd=args.cwd)
            except subprocess.TimeoutExpired:
                found.append(f"{tool} did not finish within {SANITIZER_TIMEOUT} s")
                continue
            findings = sanitize.parse(log.read_text(errors="replace") if log.is_file() else "", prefix)
        if findings.errors is None:
            found.append(f"{tool} gave no verdict (run it yourself: make {tool} TASK={task['id']})")
        elif findings.errors:
            where = sanitize.location(findings.report)
            what = "finds a race on shared memory" if tool == "racecheck" else "finds an out-of-bounds or misaligned access"
            found.append(f"{tool} {what}{' at ' + where if where else ''} (make {tool} TASK={task['id']} shows it)")
            print(f"\n{task['id']} {dtype} {shape}: {sanitize.summary_sentence(tool, findings.errors)}: "
                  f"{sanitize.meaning(findings.report)}\n{findings.report}")
    return found


def precheck_findings(args, task: dict, precheck, rules: dict) -> list[str]:
    path = Path(args.kernels) / task["file"]
    if not path.is_file():
        return []
    problems = precheck.check_file(path, rules, str(path))
    for q in problems:
        print(q.render())
    return [f"{q.what} (line {q.line}; rule: {q.rule})" for q in problems[:1]]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tools/test.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--suite", required=True, help="the student suite binary")
    p.add_argument("--harness", required=True, help="the harness binary (for compute-sanitizer's runs)")
    p.add_argument("--kernels", required=True, help="the task files' folder")
    p.add_argument("--data-dir", default="../data")
    p.add_argument("--task", default="", help="comma-separated task ids (default: every task)")
    p.add_argument("--seed", default="")
    p.add_argument("--no-sanitizer", action="store_true", help="skip compute-sanitizer (a quick loop)")
    p.add_argument("--on-cpu", metavar="WHY", default=None,
                   help="the suite was built for the CPU backend (make test CPU=1), and why: said first")
    p.add_argument("--race-harness", default="",
                   help="on the CPU: the harness built with --racecheck (the CPU backend's racecheck)")
    args = p.parse_args(argv)
    args.cwd = os.getcwd()
    sanitize, precheck = load("sanitize"), load("precheck")
    registry = {t["id"]: t for t in json.loads(REGISTRY.read_text())["tasks"]}
    rules = precheck.load_rules(RULES)
    policy = rules.get("sanitizer", {"tools": [], "penalty": 0})

    if args.on_cpu is not None:
        # compute-sanitizer needs a GPU: the CPU backend's own checks stand in for its tools (cpu_check_findings).
        print(f"Running on the CPU: {args.on_cpu}. Correctness only (times need a GPU); "
              "make test CPU=0 insists on the GPU.", flush=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        outcomes_file = Path(scratch) / "outcomes.json"
        status = run_suite(args, outcomes_file)
        if not outcomes_file.is_file():  # the suite could not run at all (its message is above)
            return status
        outcomes = json.loads(outcomes_file.read_text())

    args.sanitizer = None if args.no_sanitizer else "cpu" if args.on_cpu is not None else sanitize.find_tool()
    notes, passed, failing, not_implemented, needs_gpu = [], 0, [], [], []
    if outcomes["tasks"] and not args.no_sanitizer and policy["tools"] and not args.sanitizer:
        print("\n(compute-sanitizer is not installed here: the grader's memcheck and racecheck were not run)")
    for entry in outcomes["tasks"]:
        task = registry[entry["id"]]
        findings = []
        if entry["outcome"] == "pass" and args.sanitizer and policy["tools"]:
            for found in sanitizer_findings(args, task, policy["tools"], outcomes["seed"], sanitize):
                findings.append(f"{task['id']}: {found} (the grader deducts {policy['penalty']:.0%} of its "
                                "correctness points)")
        elif entry["outcome"] == "fail" and args.sanitizer and args.on_cpu is not None and policy["tools"]:
            # On the CPU the race checker is cheap and deterministic, and often says why a result was wrong (a race
            # between blocks loses an update only now and then); memcheck's checks already ran in the suite.
            races = [tool for tool in policy["tools"] if tool == "racecheck"]
            findings += [f"{task['id']}: {found}" for found in
                         sanitizer_findings(args, task, races, outcomes["seed"], sanitize)]
        refused = precheck_findings(args, task, precheck, rules)
        if refused:
            findings.append(f"{task['id']}: {task['file']} {refused[0]}: the grader does not run this file, "
                            "so the task scores 0")
        notes += findings
        if entry["outcome"] == "pass" and not findings:
            passed += 1
        elif entry["outcome"] == "not_implemented":
            not_implemented.append(task["id"])
        elif entry["outcome"] == "needs_gpu":
            needs_gpu.append(task["id"])
        elif entry["outcome"] != "pass":
            failing.append(task["id"])
    line = f"{passed}/{len(outcomes['tasks'])} tasks pass"
    line += f"; failing: {', '.join(failing)}" if failing else ""
    line += f"; not implemented yet: {', '.join(not_implemented)}" if not_implemented else ""
    line += f"; needs a GPU (not run on the CPU): {', '.join(needs_gpu)}" if needs_gpu else ""
    if outcomes.get("lost_context_in"):
        line += f" (the crash in {outcomes['lost_context_in']} left the GPU unusable for the rest)"
    line += "".join(f"; {n}" for n in notes)
    print(f"\n{line}")
    if args.on_cpu is not None:
        print(f"(the suite ran on the CPU in {time.monotonic() - started:.0f} s)")
    # On the CPU a task whose file needs a GPU is not counted against the run: it was not run.
    everything = passed + len(needs_gpu) == len(outcomes["tasks"]) and outcomes["tasks"]
    return 0 if everything and status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
