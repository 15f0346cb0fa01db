"""How student code was isolated in a grading run: one record, stored as JSON with the run.

The sandbox (grader/run/sandbox.py) describes itself with this record; the store
keeps it in `grading_runs.isolation`; grades.csv, the feedback and the summary
show it from its fields. Its words (the sentence the store also keeps in
`grading_runs.sandbox` for people reading the file) are made from the fields,
never read back.

    {"kind": "bubblewrap", "version": "0.8.0", "binary": "/usr/bin/bwrap", "user": "user-namespace",
     "uid": 65534, "limits": {"cpu_seconds": 60, "file_size_mib": 256, "processes": 64, "output_kib": 1024},
     "unsafe": false, "note": "", "text": ""}

kind     "bubblewrap" (isolated), "none" (not isolated), or "unknown" (an old store's words that named neither)
user     who the code ran as: "user-namespace" (uid `uid` inside it), "setpriv" (a fresh unprivileged uid
         per sandbox: the grader is root), "grader" (the grader's own user, uid `uid`)
limits   what one sandboxed process tree may use; {} when none were set
unsafe   the grader was told --unsafe-no-sandbox
note     what the fields cannot say (the tests' simulated backend)
text     for a run stored before the record existed: its words, exactly as the old grader wrote them
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields

UNSAFE_FLAG = "--unsafe-no-sandbox"
KINDS = ("bubblewrap", "none", "unknown")


class IsolationError(ValueError):
    pass


@dataclass(frozen=True)
class Isolation:
    kind: str
    version: str = ""
    binary: str = ""
    user: str = ""
    uid: int | None = None
    limits: dict = field(default_factory=dict, hash=False)
    unsafe: bool = False
    note: str = ""
    text: str = ""

    @property
    def isolated(self) -> bool:
        return self.kind == "bubblewrap"

    @property
    def label(self) -> str:
        """The short form for tables: 'bubblewrap 0.8.0', 'NONE (--unsafe-no-sandbox)', 'none (...)'."""
        if self.kind == "bubblewrap":
            return f"bubblewrap {self.version}".strip()
        if self.unsafe:
            return f"NONE ({UNSAFE_FLAG})"
        if self.kind == "none":
            return f"none ({self.note})" if self.note else "none"
        return self.text or "unknown"

    @property
    def words(self) -> str:
        """The whole record as a sentence."""
        if self.text:
            return self.text
        if self.kind == "bubblewrap":
            who = ("a fresh unprivileged uid per sandbox (setpriv; the grader is root)" if self.user == "setpriv"
                   else f"uid {self.uid} in a user namespace")
            return (f"{self.label} ({self.binary}): no network, read-only system, writable scratch only, own "
                    f"pid/ipc/uts namespaces, {who}, GPU device nodes passed through to runs, seccomp filters "
                    f"(student code: threads only, no processes, programs, sessions or sockets){self._limit_words()}")
        if self.unsafe:
            return (f"{self.label}: student code ran as the grader's user ({self.uid}), without isolation; it could "
                    "read and write whatever the grader can")
        return self.label

    def _limit_words(self) -> str:
        n = self.limits
        if not n:
            return ""
        return (f"; limits per sandbox: {n['cpu_seconds']} CPU-s per process, files up to {n['file_size_mib']} MiB, "
                f"{n['processes']} processes, output {n['output_kib']} KiB per stream")

    def __str__(self) -> str:
        return self.words

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Isolation:
        try:
            doc = json.loads(text)
        except (TypeError, json.JSONDecodeError) as e:
            raise IsolationError(f"not a JSON isolation record ({e})") from None
        if not isinstance(doc, dict) or doc.get("kind") not in KINDS:
            raise IsolationError(f"not an isolation record (kind must be one of {', '.join(KINDS)})")
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in doc.items() if k in known})

    @classmethod
    def from_legacy(cls, text: str) -> Isolation:
        """The record of a run stored before there was one, from the words the old grader wrote: it wrote
        'bubblewrap VERSION (PATH): ...' or 'NONE (--unsafe-no-sandbox): ...'; anything else is unknown.
        Run once per run by the store's migration; the words are kept whole in `text`."""
        first = text.split()
        if first and first[0] == "bubblewrap":
            version = first[1] if len(first) > 1 and not first[1].startswith("(") else ""
            return cls("bubblewrap", version=version, text=text)
        if text.startswith(f"NONE ({UNSAFE_FLAG})"):
            return cls("none", unsafe=True, text=text)
        return cls("unknown", text=text)

    @classmethod
    def stored(cls, record: str | None, words: str) -> Isolation:
        """A grading run's record as the store holds it; one damaged by hand shows as unknown, with its words."""
        try:
            return cls.from_json(record)
        except IsolationError:
            return cls("unknown", text=words or "")
