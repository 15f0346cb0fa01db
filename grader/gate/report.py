"""The gate's verdict on one submission: its findings, and which task files it kept from being linked."""
from __future__ import annotations

from dataclasses import dataclass, field

from grader.gate.check import Finding


@dataclass
class GateReport:
    findings: list[Finding] = field(default_factory=list)
    # Task files whose device code, read from their GPU objects, neither touches shared memory nor uses atomics
    # (objects.py's SHARED_OR_ATOMIC_SASS): racecheck has nothing to look at there. Empty where nothing was read.
    no_shared_memory: frozenset[str] = frozenset()

    def enforced(self, file: str) -> list[Finding]:
        """The findings that kept this task file out of the build, the named rules before the catch-all
        `only-listed-calls` (which says less about what the file tried)."""
        found = [f for f in self.findings if f.file == file and f.enforced]
        return sorted(found, key=lambda f: f.rule == "only-listed-calls")

    @property
    def forbidden_files(self) -> list[str]:
        return sorted({f.file for f in self.findings if f.enforced})

    def case_message(self, file: str) -> str:
        """What each case of a forbidden task says: everything the file did against the first rule it
        broke, and how many other rules it broke."""
        found = self.enforced(file)
        if not found:
            return ""
        first = [f for f in found if f.rule == found[0].rule]
        what = ", ".join(f.what + (f" (line {f.line})" if f.line else "") for f in first)
        others = len({f.rule for f in found}) - 1
        return (f"not run: {file} {what}: {first[0].description} (rule: {first[0].rule})" +
                (f" (and {others} more rule{'s' * (others != 1)}: see the build gate section)" if others else ""))

    def to_json(self) -> list[dict]:
        return [f.to_json() for f in self.findings]

    @classmethod
    def from_json(cls, data: list[dict]) -> "GateReport":
        return cls([Finding.from_json(d) for d in data])
