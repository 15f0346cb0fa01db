"""The build gate's rules, from the rubric's [gate] section and its [tasks.<id>.gate] overrides.

Every pattern is a glob (`*` any run of characters, `?` one) matched against a
whole name: a demangled symbol such as `std::thread::join()`, or a header
name as written between the brackets of an #include.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Callable

# Rules whose checks are the gate's own code rather than lists of symbols; the rubric must
# describe each of them.
BUILTIN_RULES = ("includes", "only-listed-calls", "no-static-constructors", "no-redefinition", "no-syscalls")
# These two are the allowlists themselves: a task widens them (allow_symbols, allow_headers)
# instead of turning them off.
NOT_LOOSENABLE = ("includes", "only-listed-calls")
RULE_KEYS = {"description", "symbols", "headers", "source", "instructions", "sass", "ptx"}
TASK_KEYS = {"allow", "allow_symbols", "allow_headers"}
GATE_KEYS = {"project_headers", "system_headers", "allowed", "rules"}


def glob_regex(patterns: tuple[str, ...] | list[str]) -> re.Pattern | None:
    """One regex matching any of the globs against a whole name; None for no patterns."""
    if not patterns:
        return None
    parts = ["".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in p) for p in patterns]
    return re.compile("(?:" + "|".join(parts) + r")\Z", re.DOTALL)


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    symbols: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()
    source: tuple[str, ...] = ()
    instructions: tuple[str, ...] = ()
    sass: tuple[str, ...] = ()  # device machine instructions (globs over cuobjdump's mnemonics: HMMA*)
    ptx: tuple[str, ...] = ()  # PTX instructions (globs: mma.*), for the PTX a newer GPU would compile

    def to_json(self) -> dict:
        return {"description": self.description, "symbols": list(self.symbols), "headers": list(self.headers),
                "source": list(self.source), "instructions": list(self.instructions), "sass": list(self.sass),
                "ptx": list(self.ptx)}


@dataclass(frozen=True)
class TaskGate:
    """A task's loosening of the rules."""
    allow: tuple[str, ...] = ()
    allow_symbols: tuple[str, ...] = ()
    allow_headers: tuple[str, ...] = ()


@dataclass
class FileRules:
    """The rules in force for one task file, with the matchers built once."""
    file: str
    task: str
    rules: dict[str, Rule]  # every rule, by name
    active: tuple[str, ...]  # rule names in force, in the rubric's order
    project_headers: tuple[str, ...]
    allowed_symbols: tuple[str, ...]
    allowed_headers: tuple[str, ...]
    extra_symbols: tuple[str, ...] = ()  # the task's allow_symbols: allowed even where a rule names them
    extra_headers: tuple[str, ...] = ()
    _symbol_rules: list[tuple[str, re.Pattern]] = field(default_factory=list, repr=False)
    _header_rules: list[tuple[str, re.Pattern]] = field(default_factory=list, repr=False)
    _allowed_symbols: re.Pattern | None = field(default=None, repr=False)
    _allowed_headers: re.Pattern | None = field(default=None, repr=False)
    _extra_symbols: re.Pattern | None = field(default=None, repr=False)
    _extra_headers: re.Pattern | None = field(default=None, repr=False)

    def __post_init__(self):
        for name in self.active:
            rule = self.rules[name]
            if rule.symbols:
                self._symbol_rules.append((name, glob_regex(rule.symbols)))
            if rule.headers:
                self._header_rules.append((name, glob_regex(rule.headers)))
        self._allowed_symbols = glob_regex(self.allowed_symbols)
        self._allowed_headers = glob_regex(self.allowed_headers)
        self._extra_symbols = glob_regex(self.extra_symbols)
        self._extra_headers = glob_regex(self.extra_headers)

    def rule(self, name: str) -> Rule:
        return self.rules[name]

    def in_force(self, name: str) -> bool:
        return name in self.active

    def device_instruction_rule(self, mnemonic: str, ptx: bool = False) -> str | None:
        """The rule a device instruction breaks (a SASS mnemonic such as HMMA.1688.F32.TF32, or a PTX one
        such as mma.sync.aligned.m16n8k8...), or None."""
        for name in self.active:
            patterns = self.rules[name].ptx if ptx else self.rules[name].sass
            regex = glob_regex(patterns)
            if regex is not None and regex.match(mnemonic):
                return name
        return None

    def symbol_rule(self, name: str) -> str | None:
        """The rule a use of this (demangled) symbol breaks, or None when it is allowed. A rule's
        own list wins over the allowlist, so `truncate` is file I/O even though `trunc*` is math."""
        name = name.split("@", 1)[0]  # versioned references, e.g. memcpy@GLIBC_2.14
        if self._extra_symbols is not None and self._extra_symbols.match(name):
            return None
        for rule, regex in self._symbol_rules:
            if regex.match(name):
                return rule
        if self._allowed_symbols is not None and self._allowed_symbols.match(name):
            return None
        return "only-listed-calls"

    def header_rule(self, header: str, quoted: bool) -> str | None:
        """The rule an `#include "header"` (quoted) or `#include <header>` breaks, or None."""
        if header in self.project_headers or (self._extra_headers is not None and self._extra_headers.match(header)):
            return None
        for rule, regex in self._header_rules:
            if regex.match(header):
                return rule
        if quoted or self._allowed_headers is None or not self._allowed_headers.match(header):
            return "includes"
        return None


@dataclass(frozen=True)
class GatePolicy:
    project_headers: tuple[str, ...]
    system_headers: tuple[str, ...]
    allowed: dict[str, tuple[str, ...]]  # category -> symbol patterns
    rules: dict[str, Rule]
    tasks: dict[str, TaskGate]  # task id -> its loosening (every graded task has an entry)
    files: dict[str, str]  # task file name -> task id, for every task of the harness, graded or not
    file_kib: float = 256  # the largest task file the pre-check reads (the rubric's [limits] task_file_kib)
    precheck_seconds: float = 20  # its time limit per file ([limits] precheck_seconds)

    def for_task(self, task: str) -> FileRules:
        loosen = self.tasks.get(task, TaskGate())
        file = next((f for f, t in self.files.items() if t == task), f"{task}.cu")
        active = tuple(r for r in self.rules if r not in loosen.allow)
        symbols = [p for patterns in self.allowed.values() for p in patterns]
        headers = list(self.system_headers)
        for name in loosen.allow:
            symbols += self.rules[name].symbols
            headers += self.rules[name].headers
        return FileRules(file, task, self.rules, active, self.project_headers, tuple(symbols), tuple(headers),
                         loosen.allow_symbols, loosen.allow_headers)

    def for_file(self, file: str) -> FileRules | None:
        task = self.files.get(file)
        return self.for_task(task) if task else None

    def to_json(self) -> dict:
        """What the students' pre-check needs (starter/tools/rules.json), keyed by task file name."""
        return {"generated": "from grader/rubric.toml by `bin/grader rules --export starter/tools/rules.json`;"
                             " edit the rubric, not this file",
                "limits": {"file_kib": self.file_kib, "seconds": self.precheck_seconds},
                "project_headers": list(self.project_headers), "system_headers": list(self.system_headers),
                "rules": {name: rule.to_json() for name, rule in self.rules.items()},
                "files": {file: {"task": task, "allow": list(self.tasks.get(task, TaskGate()).allow),
                                 "allow_symbols": list(self.tasks.get(task, TaskGate()).allow_symbols),
                                 "allow_headers": list(self.tasks.get(task, TaskGate()).allow_headers)}
                          for file, task in sorted(self.files.items())}}

    def export_text(self) -> str:
        return json.dumps(self.to_json(), indent=2) + "\n"


def parse_gate(data: dict, task_entries: dict[str, dict], files: dict[str, str],
               fail: Callable[[str, str], None], file_kib: float = 256, precheck_seconds: float = 20) -> GatePolicy:
    """The [gate] table and each [tasks.<id>.gate] table, checked; `fail(where, why)` raises."""
    gate = data.get("gate")
    if not isinstance(gate, dict):
        fail("top level", "missing the [gate] table (the build gate's rules)")

    def patterns(table: dict, key: str, where: str, required: bool = False) -> tuple[str, ...]:
        value = table.get(key, None if required else [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            fail(where, f"'{key}' must be a list of non-empty strings")
        if required and not value:
            fail(where, f"'{key}' must not be empty")
        return tuple(value)

    for key in gate.keys() - GATE_KEYS:
        fail("[gate]", f"unknown key '{key}' (expected {', '.join(sorted(GATE_KEYS))})")
    project = patterns(gate, "project_headers", "[gate]", required=True)
    system = patterns(gate, "system_headers", "[gate]", required=True)
    allowed_t = gate.get("allowed")
    if not isinstance(allowed_t, dict) or not allowed_t:
        fail("[gate]", "missing the [gate.allowed] table (the categories of symbols a task file may use)")
    allowed = {name: patterns(allowed_t, name, "[gate.allowed]", required=True) for name in allowed_t}

    rules_t = gate.get("rules")
    if not isinstance(rules_t, dict):
        fail("[gate]", "missing the [gate.rules] tables")
    rules = {}
    for name, entry in rules_t.items():
        where = f"[gate.rules.{name}]"
        if not isinstance(entry, dict):
            fail(where, "must be a table")
        for key in entry.keys() - RULE_KEYS:
            fail(where, f"unknown key '{key}' (expected {', '.join(sorted(RULE_KEYS))})")
        description = entry.get("description")
        if not isinstance(description, str) or not description.strip():
            fail(where, "'description' must say, in words a student understands, what the rule forbids")
        rules[name] = Rule(name, " ".join(description.split()), patterns(entry, "symbols", where),
                           patterns(entry, "headers", where), patterns(entry, "source", where),
                           patterns(entry, "instructions", where), patterns(entry, "sass", where),
                           patterns(entry, "ptx", where))
    for name in BUILTIN_RULES:
        if name not in rules:
            fail("[gate.rules]", f"missing the rule '{name}' (the gate checks it; the rubric describes it)")

    tasks = {}
    for task_id, entry in task_entries.items():
        where = f"[tasks.{task_id}.gate]"
        table = entry.get("gate", {})
        if not isinstance(table, dict):
            fail(where, "must be a table")
        for key in table.keys() - TASK_KEYS:
            fail(where, f"unknown key '{key}' (expected {', '.join(sorted(TASK_KEYS))})")
        allow = patterns(table, "allow", where)
        for name in allow:
            if name not in rules:
                fail(where, f"'allow' names the rule '{name}', which [gate.rules] does not define "
                            f"(rules: {', '.join(rules)})")
            if name in NOT_LOOSENABLE:
                fail(where, f"'{name}' cannot be turned off: widen it with "
                            f"{'allow_headers' if name == 'includes' else 'allow_symbols'} instead")
        tasks[task_id] = TaskGate(allow, patterns(table, "allow_symbols", where), patterns(table, "allow_headers", where))
    return GatePolicy(project, system, allowed, rules, tasks, files, file_kib, precheck_seconds)


def gate_tables_text(rubric_text: str) -> str:
    """The [gate...] tables of a rubric's text, as written (for test rubrics built from the default)."""
    out, keep = [], False
    for line in rubric_text.splitlines():
        if re.match(r"\[[^\]]", line):
            keep = line.startswith("[gate")
        if keep:
            out.append(line)
    return "\n".join(out) + "\n"
