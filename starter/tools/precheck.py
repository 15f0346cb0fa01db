#!/usr/bin/env python3
"""precheck.py: the grader's build-gate rules, checked on your source before you submit.

    python3 tools/precheck.py [--rules FILE] [--json] [--includes DIR] FILE.cu...   (run from starter/)
    make precheck                                                     (every file in kernels/)

With --includes (make precheck gives it), what each file includes is what the compiler read
(tools/includes.py's lists in DIR), not what its #include lines look like.

For each file it reports, like a compiler, every line that breaks a rule:
    kernels/matmul_fast.cu:3:1: error: includes <cublas_v2.h>: library calls are not allowed ... (rule: no-libraries)
        3 | #include <cublas_v2.h>
and exits with 0 when every file is clean, 1 when something breaks a rule, 2 when
it cannot run (a file or the rules missing). The rules come from the course's
rubric (tools/rules.json is generated from it; do not edit it).

The grader runs this same check, then inspects your compiled code, which is what
counts: a task file that breaks a rule is not run, and its task scores 0. An
#include this check refuses stops the file before it is even compiled.
"""
from __future__ import annotations

import argparse
import bisect
import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

DEFAULT_RULES = Path(__file__).resolve().parent / "rules.json"
# The global objects whose constructors or destructors would run by themselves (the ones a
# source check can recognize; the grader's object inspection sees every one).
NONTRIVIAL_STD_TYPES = ("string", "wstring", "vector", "map", "multimap", "unordered_map", "unordered_multimap",
                        "set", "multiset", "unordered_set", "list", "forward_list", "deque", "queue", "stack",
                        "priority_queue", "function", "shared_ptr", "unique_ptr", "ostringstream",
                        "istringstream", "stringstream", "ofstream", "ifstream", "fstream", "thread",
                        "random_device", "mt19937", "mt19937_64", "regex", "any", "locale")
STARTUP_ATTRIBUTES = re.compile(
    r"__attribute__\s*\(\(\s*(?:__)?(?:constructor|destructor|ifunc)(?:__)?\b"
    r"|\[\[\s*(?:gnu|__gnu__)\s*::\s*(?:constructor|destructor|ifunc)\b"
    r"|section\s*\(\s*\"\s*\.(?:init_array|preinit_array|fini_array|ctors|dtors|init|fini)\b")
ASSEMBLER_FILE_DIRECTIVES = re.compile(r"\.(?:incbin|include)\b")
DIRECTIVE = re.compile(r"^[ \t]*(?:#|%:)[ \t]*(include_next|include|import)\b(.*)$")
# A line splice as GCC reads one: a backslash, then (with a warning) spaces or tabs, then the end of the line.
SPLICE = re.compile(r"\\[ \t\f\v]*\n")
ASM_BODY_CHARS = 4096  # how much of an asm statement's parentheses is read (real ones are far shorter)
DEFAULT_MAX_BYTES = 256 * 1024  # a task file larger than this is not checked (the grader refuses it)
DEFAULT_SECONDS = 20.0  # the most one file's check may take (it is linear in the file's size)


class TooSlow(Exception):
    """The check ran past its time limit."""


class Deadline:
    def __init__(self, seconds: float | None):
        self.seconds = seconds
        self.at = time.monotonic() + seconds if seconds else None

    def check(self):
        if self.at is not None and time.monotonic() > self.at:
            raise TooSlow()


@dataclass
class Problem:
    file: str
    line: int
    column: int
    rule: str
    what: str
    description: str
    text: str  # the source line

    def render(self) -> str:
        return (f"{self.file}:{self.line}:{self.column}: error: {self.what}: {self.description} (rule: {self.rule})\n"
                f"{self.line:>5} | {self.text.rstrip()}")

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "column": self.column, "rule": self.rule, "what": self.what,
                "description": self.description, "source": self.text.rstrip()}


def instruction_regex(instructions):
    """Matches an instruction such as `int $0x80` however it is spaced, with or without the `$`."""
    forms = [r"\s+".join(r"\$?" + re.escape(t.lstrip("$")) for t in i.split()) for i in instructions]
    return re.compile(r"(?<![\w.$])(?:" + "|".join(forms) + r")(?![\w])", re.IGNORECASE)


def glob_regex(patterns):
    if not patterns:
        return None
    parts = ["".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in p) for p in patterns]
    return re.compile("(?:" + "|".join(parts) + r")\Z", re.DOTALL)


class Source:
    """A source file as the preprocessor sees it: line splices joined, comments blanked out (and,
    in `code`, the insides of string and character literals too), every offset traceable to its line
    and column in the file."""

    INTERESTING = re.compile(r"[\"'/R]")

    def __init__(self, text: str, deadline: Deadline | None = None):
        # Lines end as GCC ends them: at a newline, a carriage return and newline, or a lone carriage return.
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        self.deadline = deadline or Deadline(None)
        self.raw_lines = text.split("\n")
        self._newlines = [m.start() for m in re.finditer("\n", text)]
        parts, self._shifts, prev, removed, length = [], [], 0, 0, 0
        for m in SPLICE.finditer(text):  # backslash(-spaces)-newline: the line continues
            parts.append(text[prev:m.start()])
            length += m.start() - prev
            removed += m.end() - m.start()
            self._shifts.append((length, removed))
            prev = m.end()
        parts.append(text[prev:])
        self.logical = "".join(parts)
        self._shift_keys = [k for k, _ in self._shifts]
        self.nocomment, self.code, self.strings = self._strip(self.logical, self.deadline)

    @classmethod
    def _strip(cls, s: str, deadline: Deadline):
        """(comments blanked, comments and literal contents blanked, [(offset, literal text)])."""
        nocomment, code, strings = list(s), list(s), []
        i, n = 0, len(s)

        def blank(lo, hi, both=True):
            for k in range(lo, hi):
                if s[k] != "\n":
                    code[k] = " "
                    if both:
                        nocomment[k] = " "

        steps = 0
        while i < n:
            steps += 1
            if steps % 4096 == 0:
                deadline.check()
            m = cls.INTERESTING.search(s, i)
            if m is None:
                break
            i = m.start()
            c = s[i]
            if s.startswith("//", i):
                end = s.find("\n", i)
                end = n if end < 0 else end
                blank(i, end)
                i = end
            elif s.startswith("/*", i):
                end = s.find("*/", i + 2)
                end = n if end < 0 else end + 2
                blank(i, end)
                i = end
            elif c == '"' or (c == "R" and s[i + 1:i + 2] == '"'):
                # R"delim(...)delim" is raw when R (after an optional u8, u, U or L) starts a token.
                k = i
                while c == "R" and k > 0 and (s[k - 1].isalnum() or s[k - 1] == "_"):
                    k -= 1
                token = s[k:i + 1] if c == "R" else ""
                start = i + 1 if c == "R" else i
                raw = re.match(r'"([^()\\ \t\n]{0,16})\(', s[start:start + 20]) \
                    if token in ("R", "uR", "UR", "LR", "u8R") else None
                if raw:
                    close = s.find(")" + raw.group(1) + '"', start + raw.end())
                    end = n if close < 0 else close + len(raw.group(1)) + 2
                    strings.append((start, s[start + raw.end():max(start + raw.end(), end - len(raw.group(1)) - 2)]))
                    blank(start + 1, end - 1, both=False)
                    i = end
                    continue
                if c == "R":
                    i += 1
                    continue
                j = start + 1
                while j < n and s[j] != '"' and s[j] != "\n":
                    j += 2 if s[j] == "\\" else 1
                strings.append((start, s[start + 1:j]))
                blank(start + 1, j, both=False)
                i = j + 1
            elif c == "'":
                k = i - 1
                while k >= 0 and (s[k].isalnum() or s[k] in "_.'") and i - k < 64:
                    k -= 1
                if k + 1 < i and s[k + 1].isdigit():  # a digit separator: 1'000'000
                    i += 1
                    continue
                j = i + 1
                while j < n and s[j] != "'" and s[j] != "\n":
                    j += 2 if s[j] == "\\" else 1
                blank(i + 1, j, both=False)
                i = j + 1
            else:
                i += 1
        return "".join(nocomment), "".join(code), strings

    def closing_paren(self) -> dict[int, int]:
        """{offset of "(": offset of its ")"} over the comment-free text, computed once."""
        if not hasattr(self, "_closing"):
            self._closing, stack = {}, []
            for m in re.finditer(r"[()]", self.nocomment):
                if m.group(0) == "(":
                    stack.append(m.start())
                elif stack:
                    self._closing[stack.pop()] = m.start()
        return self._closing

    def position(self, offset: int):
        """(line, column) in the file of an offset in the joined text."""
        k = bisect.bisect_right(self._shift_keys, offset)
        physical = offset + (self._shifts[k - 1][1] if k else 0)
        line = bisect.bisect_left(self._newlines, physical)
        start = self._newlines[line - 1] + 1 if line else 0
        return line + 1, physical - start + 1

    def line_text(self, line: int) -> str:
        return self.raw_lines[line - 1] if 0 < line <= len(self.raw_lines) else ""


def _qualified_ok(code: str, start: int) -> bool:
    """Whether a name found at `start` means the global (or std::) one, not a member or another namespace's."""
    before = code[max(0, start - 256):start].rstrip()
    if before.endswith(".") or before.endswith("->"):
        return False
    if before.endswith("::"):
        m = re.search(r"([A-Za-z_]\w*)\s*$", before[:-2])
        return m is None or m.group(1) == "std"
    return True


CALL_KEYWORDS = {"return", "else", "do", "case", "throw", "co_return", "co_yield", "and", "or", "not"}


def _declares(code: str, start: int) -> bool:
    """Whether the name at `start`, followed by `(`, is being declared or defined (`int read(...)`,
    `char* wait(`) rather than called: a type name stands right before it."""
    before = code[max(0, start - 256):start].rstrip()
    m = re.search(r"[A-Za-z_]\w*$", before)
    if m:
        return m.group(0) not in CALL_KEYWORDS
    if before.endswith(">") and not before.endswith("->"):
        return True  # std::vector<int> read(
    if before.endswith(("*", "&")) and not before.endswith("&&"):
        return re.search(r"[\w>][\s*&]*$", before) is not None  # char* read(, const T& get(
    return False


class FileCheck:
    def __init__(self, rules: dict, file_name: str):
        self.rules = rules["rules"]
        entry = rules.get("files", {}).get(file_name, {})
        self.allowed_rules = set(entry.get("allow", []))
        self.active = [r for r in self.rules if r not in self.allowed_rules]
        self.project_headers = set(rules["project_headers"])
        self.extra_headers = glob_regex(entry.get("allow_headers", []))  # the task's own: before any rule
        headers = list(rules["system_headers"])
        for name in self.allowed_rules:
            headers += self.rules[name].get("headers", [])
        self.allowed_headers = glob_regex(headers)
        self.header_rules = [(r, glob_regex(self.rules[r]["headers"])) for r in self.active
                             if self.rules[r].get("headers")]
        allowed_symbols = glob_regex(entry.get("allow_symbols", []))
        self.call_rules, self.name_rules = [], []
        for r in self.active:
            calls = [p for p in self.rules[r].get("symbols", []) if re.fullmatch(r"[A-Za-z_]\w*\*?", p)]
            calls = [p for p in calls if not (allowed_symbols and allowed_symbols.match(p.rstrip("*")))]
            if calls:
                body = "|".join(re.escape(p[:-1]) + r"\w*" if p.endswith("*") else re.escape(p) for p in calls)
                self.call_rules.append((r, re.compile(r"(?<![\w$])(" + body + r")\s*\(")))
            names = self.rules[r].get("source", [])
            if names:
                body = "|".join(r"\s*::\s*".join(map(re.escape, n.split("::"))) for n in names)
                self.name_rules.append((r, re.compile(r"(?<![\w$])(" + body + r")(?![\w$])")))

    def header_rule(self, header: str, quoted: bool):
        if header in self.project_headers or (self.extra_headers and self.extra_headers.match(header)):
            return None
        for rule, regex in self.header_rules:
            if regex.match(header):
                return rule
        if quoted or self.allowed_headers is None or not self.allowed_headers.match(header):
            return "includes"
        return None

    def run(self, src: Source, file: str):
        problems = []

        def report(offset, rule, what):
            line, col = src.position(offset)
            problems.append(Problem(file, line, col, rule, what, self.rules[rule]["description"],
                                    src.line_text(line)))

        # #include lines (and their GNU and Objective-C cousins) and assembler file reads.
        offset = 0
        for line in src.nocomment.split("\n"):
            m = DIRECTIVE.match(line)
            if m:
                arg = m.group(2).strip()
                h = re.fullmatch(r'"([^"]*)"|<([^>]*)>', arg)
                if h is None:
                    report(offset, "includes", f"#{m.group(1)}s something other than \"file\" or <file> "
                                               f"(a macro): {arg or 'nothing'}")
                else:
                    header, quoted = (h.group(1), True) if h.group(1) is not None else (h.group(2), False)
                    rule = self.header_rule(header, quoted)
                    if rule:
                        shown = f'"{header}"' if quoted else f"<{header}>"
                        report(offset, rule, f"#{m.group(1)}s {shown}")
            offset += len(line) + 1
        # Adjacent literals are one string to the compiler (".inc" "bin"); and a directive written as code
        # can become a string by a macro's # (the build's sandbox is what holds against every other way).
        runs = []
        for k, (start, text) in enumerate(src.strings):
            prev_end = src.strings[k - 1][0] + len(src.strings[k - 1][1]) + 2 if k else None
            if prev_end is None or src.code[prev_end:start].strip():
                runs.append((start, text))
            else:
                runs[-1] = (runs[-1][0], runs[-1][1] + text)
        assembler = [(start, text) for start, text in runs if ASSEMBLER_FILE_DIRECTIVES.search(text)]
        assembler += [(m.start(), "") for m in re.finditer(r"(?<![\w.$])\.(?:incbin|include)\b", src.code)]
        for start, _ in sorted(assembler)[:1] + sorted(assembler)[1:]:
            report(start, "includes", "reads a file through the assembler (.incbin or .include)")

        # Calls and names the rules forbid.
        for rule, regex in self.call_rules:
            for m in regex.finditer(src.code):
                if _qualified_ok(src.code, m.start()) and not _declares(src.code, m.start()):
                    report(m.start(), rule, f"calls {m.group(1)}")
        for rule, regex in self.name_rules:
            for m in regex.finditer(src.code):
                if _qualified_ok(src.code, m.start()):
                    report(m.start(), rule, f"uses {' '.join(m.group(1).split())}")

        # Inline assembly with forbidden instructions.
        if "no-syscalls" in self.active and self.rules["no-syscalls"].get("instructions"):
            wanted = instruction_regex(self.rules["no-syscalls"]["instructions"])
            scanned = 0  # an asm statement inside one already read (asm(asm(...) was read with it: linear time
            for m in re.finditer(r"(?<![\w$])(?:asm|__asm__|__asm)\b", src.code):
                if m.start() < scanned:
                    continue
                src.deadline.check()
                body = self._parenthesized(src, m.end())
                scanned = m.end() + len(body or "")
                text = " ".join(re.findall(r'"((?:[^"\\]|\\.)*)"', body or ""))
                hit = wanted.search(re.sub(r"\\[nt]|;", " ", text))
                if hit:
                    report(m.start(), "no-syscalls",
                           f"uses the instruction `{' '.join(hit.group(0).split())}` in inline assembly")

        if "no-static-constructors" in self.active:
            for m in STARTUP_ATTRIBUTES.finditer(src.nocomment):
                report(m.start(), "no-static-constructors", "asks for code to run by itself when the program "
                                                            "starts or ends")
            for offset, declared in self._global_objects(src.code):
                report(offset, "no-static-constructors", f"declares a global {declared}, whose constructor runs "
                                                         "when the program starts")
        problems.sort(key=lambda p: (p.line, p.column))
        return problems

    @staticmethod
    def _parenthesized(src: Source, pos: int):
        """The text inside the parentheses that open after `pos` (skipping qualifiers), or None; at most
        ASM_BODY_CHARS of it. Matching parentheses are found in one pass over the file, so that many
        unclosed `asm(` stay linear."""
        text = src.nocomment
        m = re.compile(r"(?:\s|volatile\b|__volatile__\b|goto\b|inline\b)*\(").match(text, pos, pos + 256)
        if not m:
            return None
        start = m.end()
        close = src.closing_paren().get(start - 1, len(text))
        return text[start:min(close, start + ASM_BODY_CHARS)]

    @staticmethod
    def _global_objects(code: str):
        """(offset, type) of namespace-scope variables of standard-library types with constructors."""
        types = "|".join(NONTRIVIAL_STD_TYPES)
        # `T name(args);` is left out: at namespace scope it reads as a function declaration.
        decl = re.compile(r"(?:(?:static|const|inline|thread_local|extern)\s+)*std\s*::\s*(?:__cxx11\s*::\s*)?"
                          r"(" + types + r")\b\s*(?:<[^;{}]*>)?\s*(?:const\s+)?[A-Za-z_]\w*\s*(?:[;={\[,])")
        directives = {m.end() - 1 for m in re.finditer(r"(?m)^[ \t]*(?:#|%(?=:))", code)}
        scopes, statement_start = [], 0

        def declared(end: int):
            text = code[statement_start:end]
            m = decl.match(text.lstrip())
            return (statement_start + len(text) - len(text.lstrip()), "std::" + m.group(1)) if m else None

        i = 0
        for m in re.finditer(r"[{};#%]", code):
            if m.start() < i:
                continue  # inside a directive already skipped
            i, c = m.start(), m.group(0)
            if c in "#%":
                if i in directives:
                    end = code.find("\n", i)
                    end = len(code) if end < 0 else end
                    if code[statement_start:i].strip() == "":
                        statement_start = end + 1
                    i = end + 1
                continue
            if c == "{":
                head = code[max(statement_start, i - 512):i]
                namespace = re.search(r"(?:\bnamespace\b[\w\s:]*|\bextern\s*\"\s*\"\s*)$", head) is not None
                if all(scopes) and not namespace:
                    hit = declared(i + 1)
                    if hit:
                        yield hit
                scopes.append(namespace)
            elif c == "}":
                if scopes:
                    scopes.pop()
            elif all(scopes):  # ;
                hit = declared(i + 1)
                if hit:
                    yield hit
            statement_start = i + 1


def read_listing(folder: Path, file_name: str) -> dict:
    """tools/includes.py's list for a task file, from the folder `make includes` wrote it to (OSError or
    ValueError when it is missing or unreadable)."""
    return json.loads((Path(folder) / (Path(file_name).stem + ".includes")).read_text())


def check_file(path: Path, rules: dict, shown_as: str | None = None, listing: dict | None = None):
    """The problems in one file, named after the task file it would be (its base name)."""
    text = Path(path).read_bytes().decode("utf-8", "replace")
    return check_text(text, Path(path).name, rules, shown_as=shown_as or str(path), listing=listing)


INCLUDE_LINE = re.compile(r"(?:#|%:)\s*(?:include|include_next|import)\b")


def _line_of(text: str, name: str) -> tuple[int, str]:
    """Where the source most likely names an included file: a line with an #include and its name, else any line
    with its name (a macro that expands to it), else the first line."""
    lines = text.split("\n")
    base = name.rsplit("/", 1)[-1]
    for wanted in (lambda line: INCLUDE_LINE.search(line) and base in line, lambda line: base in line):
        for k, line in enumerate(lines):
            if wanted(line):
                return k + 1, line
    return 1, lines[0] if lines else ""


def listed_include_problems(listing: dict, rules: dict, file_name: str, text: str, shown: str) -> list[Problem]:
    """What the compiler read (tools/includes.py's list for the file), judged: each file it #included itself, by
    the name an #include gives it where it was found (the assignment's folder: its headers only; a folder of
    <headers>: the header rules); a file found anywhere else is refused by its place, whatever the #include line
    looked like to a line parser; a missing header by its name."""
    check = FileCheck(rules, file_name)
    problems = []

    def add(rule: str, what: str, name: str):
        line, source = _line_of(text, name)
        problems.append(Problem(shown, line, 1, rule, what, _description(rules, rule), source))

    if listing.get("error"):
        add("includes", f"could not be read by the preprocessor ({listing['error']})", "")
    for entry in listing.get("includes", []):
        name, place = str(entry.get("name", "")), entry.get("place")
        if place == "project":
            rule = None if name in check.project_headers else "includes"
        elif place == "system":
            rule = check.header_rule(name, quoted=False)
        else:
            rule = "includes"
            name = Path(name).name
        if rule:
            add(rule, f"#includes <{name}>" if place != "elsewhere" else f"#includes a file by its path ({name})",
                name)
    for name in listing.get("missing", []):
        rule = check.header_rule(str(name), quoted=False)
        if rule:
            add(rule, f"#includes <{name}>", str(name))
    return problems


def check_text(text: str, file_name: str, rules: dict, shown_as: str | None = None, listing: dict | None = None):
    """The problems in a task file's text (the grader calls this). A file larger than the rules' limit, or
    one whose check outlives its time limit, is one problem (rule: includes), not checked further. `listing`:
    what the compiler read (tools/includes.py); given, it decides what the file includes, and the #include
    lines' own findings are left out (a line parser can be fooled; the compiler's list cannot)."""
    limits = rules.get("limits", {})
    max_bytes = int(limits.get("file_kib", DEFAULT_MAX_BYTES // 1024) * 1024)
    seconds = float(limits.get("seconds", DEFAULT_SECONDS))
    shown = shown_as or file_name
    size = len(text.encode("utf-8", "replace"))
    if size > max_bytes:
        return [Problem(shown, 1, 1, "includes", f"is {-(-size // 1024)} KiB, larger than the {max_bytes // 1024} KiB "
                        "a task file may be (not checked)", _description(rules, "includes"), "")]
    try:
        deadline = Deadline(seconds)
        problems = FileCheck(rules, file_name).run(Source(text, deadline), shown)
        if listing is not None:
            problems = [q for q in problems if not q.what.startswith(("#include", "#import"))]
            problems = sorted(problems + listed_include_problems(listing, rules, file_name, text, shown),
                              key=lambda q: (q.line, q.column))
        return problems
    except TooSlow:
        return [Problem(shown, 1, 1, "includes", f"took longer than {seconds:g} s to check (not checked)",
                        _description(rules, "includes"), "")]


def _description(rules: dict, rule: str) -> str:
    return rules.get("rules", {}).get(rule, {}).get("description", rule)


def load_rules(path: Path) -> dict:
    data = json.loads(Path(path).read_text())
    for key in ("project_headers", "system_headers", "rules"):
        if key not in data:
            raise ValueError(f"{path}: missing '{key}'")
    return data


def nvcc_rules(files: list[str]) -> tuple[list[Problem], str]:
    """What nvcc would refuse in each file (the CPU backend's clang check: cpu/driver/frontend.py), as problems;
    and why it was not checked, if it was not."""
    starter = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(starter / "cpu"))
    try:
        from driver import frontend, toolchain
    except ImportError:
        return [], "nvcc's rules were not checked (no cpu/driver/frontend.py beside this tool)"
    clang = frontend.find_clang()
    if clang is None:
        return [], f"nvcc's rules (a __host__ function called from a kernel...) were not checked: no clang; " \
                   f"{frontend.INSTALL_HINT}"
    flags = ["-I", str(starter / "include"), "-I", str(starter / "harness")]
    pch = toolchain.pch_folder()  # the prelude precompiled where make test's compiles keep it, read by both
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        found = list(pool.map(lambda name: frontend.run(clang, Path(name), flags, pch_folder=pch), files))
    return [Problem(name, r.line, r.column, "nvcc-rules", "nvcc would refuse this", r.message, r.text)
            for name, refusals in zip(files, found) for r in refusals], ""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="precheck.py", description="Check task files against the grader's rules "
                                "before you submit (the grader inspects your compiled code as well).")
    p.add_argument("files", nargs="+", metavar="FILE.cu", help="task files, e.g. kernels/matmul_fast.cu")
    p.add_argument("--rules", default=str(DEFAULT_RULES), help="the rules (default: tools/rules.json)")
    p.add_argument("--json", action="store_true", help="print the problems as a JSON list instead")
    p.add_argument("--nvcc-rules", choices=("auto", "off"), default="auto",
                   help="auto (default): also check CUDA's rules as nvcc does (a __host__ function called from a "
                        "kernel...) when clang is installed")
    p.add_argument("--includes", metavar="DIR", help="the compiler's lists of what each file includes "
                                                     "(tools/includes.py: DIR/<name>.includes), which decide")
    args = p.parse_args(argv)
    try:
        rules = load_rules(Path(args.rules))
    except (OSError, ValueError) as e:
        print(f"precheck: cannot read the rules: {e}", file=sys.stderr)
        return 2
    problems, unknown = [], []
    for name in args.files:
        path = Path(name)
        if not path.is_file():
            print(f"precheck: {name}: no such file", file=sys.stderr)
            return 2
        if path.name not in rules.get("files", {}):
            unknown.append(path.name)
        try:
            listing = read_listing(Path(args.includes), path.name) if args.includes else None
        except (OSError, ValueError) as e:
            print(f"precheck: cannot read the list of what {path.name} includes in {args.includes}: {e}",
                  file=sys.stderr)
            return 2
        problems += check_file(path, rules, name, listing=listing)
    skipped = ""
    if args.nvcc_rules == "auto":
        found, skipped = nvcc_rules(args.files)
        problems += found
    if args.json:
        print(json.dumps([q.to_json() for q in problems], indent=2))
    else:
        for q in problems:
            print(q.render())
        for name in unknown:
            print(f"precheck: note: {name} is not a task file; the grader ignores it")
        if skipped:
            print(f"precheck: note: {skipped}")
        files = len({q.file for q in problems})
        print(f"precheck: {len(problems)} problem{'s' * (len(problems) != 1)} in {files} file{'s' * (files != 1)}"
              if problems else f"precheck: {len(args.files)} file{'s' * (len(args.files) != 1)} clean")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
