"""The compiler's messages about the student's own text.

The compiler sees the rewritten file (rewrite.py): a launch `k<<<g, b>>>(x)` is a call of the runtime's
`::cudacpu::launch(...)` with a lambda, and a kernel's opening line carries a prologue. Left alone, its messages
quote that code, point at its columns, name the lambda, walk through the runtime's and the standard library's
templates, and say each error of a function template once per instantiation. This module turns them back into
messages about what the student wrote: the student's line quoted and its columns, the runtime's and the standard
library's instantiation context left out, each error once, the launch named as the student wrote it.

A form it does not recognise passes through unchanged: a message is never lost, and an error always remains.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

# What the student never wrote: the rewrite's names and lambda, the runtime's namespace and headers.
_INTERNAL = re.compile(r"cudacpu|LaunchSite|PendingLaunch|<lambda\(auto:|\(lambda at |launch\.h")
_LAUNCH_SITE = re.compile(r'LaunchSite\{__FILE__, __LINE__, "(?P<name>[^"]*)"\}')
_CLANG_LAMBDA = re.compile(r"\(lambda at (?P<file>.+?):(?P<line>\d+):(?P<col>\d+)\)")
_GCC_LAMBDA = re.compile(r"::<lambda\(auto:\d+& \.\.\.\)>")
# The launch's machinery: what a message reached only through a launch names.
_LAUNCH_MACHINERY = re.compile(r"\(lambda at |<lambda\(auto:|PendingLaunch|launch_with|cudacpu_args_")

_DIAGNOSTIC = re.compile(r"^(?P<file>[^\s:][^:]*?):(?P<line>\d+):(?:(?P<col>\d+):)? "
                         r"(?P<kind>fatal error|error|warning|note): (?P<message>.*)$")
# g++'s instantiation context: "file:L:C:   required from ...", "file: In instantiation of ...:".
_REQUIRED = re.compile(r"^(?P<file>[^\s:][^:]*?):(?P<line>\d+):(?P<col>\d+):   "
                       r"(?P<message>(?:recursively )?required .*|\[ skipping \d+ instantiation contexts.*)$")
_IN_SCOPE = re.compile(r"^(?P<file>[^\s:][^:]*?): In (?P<message>.*):$")
# Include chains (both compilers) and g++'s inlining chain, each a run of lines.
_CHAIN_START = re.compile(r"^(?:In file included from |In function .*,$)")
_CHAIN_MORE = re.compile(r"^(?: {17}from |    inlined from )")
_QUOTE = re.compile(r"^(?P<number> *\d*) \| (?P<text>.*)$")


@dataclass
class Block:
    """One line of the compiler's output with the quoted-source lines that follow it."""
    kind: str                  # "primary" (error, warning), "note", "context", "chain" or "other"
    lines: list[str]
    file: str = ""
    line: int = 0
    col: int = 0
    message: str = ""


@dataclass
class Group:
    """An error or warning with the context before it and the notes after it."""
    blocks: list[Block] = field(default_factory=list)

    @property
    def primary(self) -> Block | None:
        return next((b for b in self.blocks if b.kind == "primary"), None)


class LineMap:
    """A rewritten line against the student's: the rewrite leaves a common prefix and suffix as they were."""

    def __init__(self, original: str, rewritten: str):
        self.original, self.rewritten = original, rewritten
        limit = min(len(original), len(rewritten))
        prefix = 0
        while prefix < limit and original[prefix] == rewritten[prefix]:
            prefix += 1
        suffix = 0
        while suffix < limit - prefix and original[-1 - suffix] == rewritten[-1 - suffix]:
            suffix += 1
        self.prefix, self.suffix = prefix, suffix
        self.launch_start = _name_start(original, prefix)

    def offset(self, at: int) -> int:
        """The student's offset (0-based, in characters) for an offset in the rewritten line."""
        if at < self.prefix:
            return at
        from_end = len(self.rewritten) - at
        if from_end <= self.suffix:
            return len(self.original) - from_end
        word, into = _word_at(self.rewritten, at)
        if word:  # a name the student wrote once in the changed part (a launch's configuration): point at it
            middle = self.original[self.prefix:len(self.original) - self.suffix]
            found = [m.start() for m in re.finditer(rf"(?<!\w){re.escape(word)}(?!\w)", middle)]
            if len(found) == 1:
                return self.prefix + found[0] + into
        return self.launch_start


def _name_start(text: str, at: int) -> int:
    """Where the (qualified) name that ends at or runs through `at` begins: the kernel's name of a launch."""
    while at > 0 and (text[at - 1].isalnum() or text[at - 1] in "_:"):
        at -= 1
    return at


def _word_at(text: str, at: int) -> tuple[str, int]:
    """The name the character at `at` is part of (unless it is one of the rewrite's), and how far into it."""
    if at >= len(text) or not (text[at].isalnum() or text[at] == "_"):
        return "", 0
    start = at
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    word = re.match(r"\w+", text[start:]).group(0)
    return ("", 0) if _INTERNAL.search(word) else (word, at - start)


def _display_to_offset(text: str, column: int) -> int:
    """The offset in `text` of a 1-based display column (tabs to the next multiple of 8, as both compilers draw)."""
    width = 0
    for k, ch in enumerate(text):
        width = (width // 8 + 1) * 8 if ch == "\t" else width + 1
        if width >= column:
            return k
    return len(text) + column - 1 - width


def _offset_to_display(text: str, offset: int) -> int:
    return len(text[:offset].expandtabs(8)) + 1 + max(0, offset - len(text))


class Source:
    """The student's file and the rewritten one, line by line."""

    def __init__(self, display: str, original: str, rewritten: str, display_columns: bool):
        self.display = display
        # The columns of "file:L:C:": g++ counts display columns (a tab to the next multiple of 8), clang bytes.
        self.display_columns = display_columns
        self.maps: dict[int, LineMap] = {}
        for n, (a, b) in enumerate(zip(original.splitlines(), rewritten.splitlines()), 1):
            if a != b:
                self.maps[n] = LineMap(a, b)

    def column(self, line: int, col: int) -> int:
        m = self.maps.get(line)
        if m is None or col <= 0:
            return col
        if self.display_columns:
            return _offset_to_display(m.original, m.offset(_display_to_offset(m.rewritten, col)))
        return m.offset(col - 1) + 1

    def kernel_at(self, line: int, col: int = 0) -> str | None:
        """The kernel launched on `line` (the launch whose lambda starts nearest before `col`, when given)."""
        m = self.maps.get(line)
        if m is None:
            return None
        sites = [(s.start(), s.group("name")) for s in _LAUNCH_SITE.finditer(m.rewritten)]
        before = [name for start, name in sites if not col or start < col]
        return (before or [name for _, name in sites] or [None])[-1]


def _parse(stderr: str) -> list[Block]:
    blocks: list[Block] = []
    for text in stderr.splitlines():
        quote = _QUOTE.match(text)
        if quote and blocks and blocks[-1].kind != "other":
            blocks[-1].lines.append(text)
            continue
        if _CHAIN_MORE.match(text) and blocks and blocks[-1].kind == "chain":
            blocks[-1].lines.append(text)
            continue
        m = _DIAGNOSTIC.match(text)
        if m:
            kind = "note" if m.group("kind") == "note" else "primary"
            blocks.append(Block(kind, [text], m.group("file"), int(m.group("line")), int(m.group("col") or 0),
                                m.group("message")))
            continue
        m = _REQUIRED.match(text)
        if m:
            blocks.append(Block("context", [text], m.group("file"), int(m.group("line")), int(m.group("col")),
                                m.group("message")))
            continue
        m = _IN_SCOPE.match(text)
        if m:
            blocks.append(Block("context", [text], m.group("file"), message=m.group("message")))
            continue
        if _CHAIN_START.match(text):
            if blocks and blocks[-1].kind == "chain" and text.startswith("In file included from "):
                blocks[-1].lines.append(text)  # clang writes each step of an include chain on its own line
            else:
                blocks.append(Block("chain", [text]))
            continue
        blocks.append(Block("other", [text]))
    return blocks


def _group(blocks: list[Block]) -> list[Group]:
    """Context and chains belong to the diagnostic after them (g++), notes to the one before them (both)."""
    groups: list[Group] = []
    current = Group()
    for b in blocks:
        starts_new = b.kind == "other" or (b.kind in ("context", "chain", "primary") and
                                           (current.primary is not None or _ends_with_other(current)))
        if starts_new and current.blocks:
            groups.append(current)
            current = Group()
        current.blocks.append(b)
    if current.blocks:
        groups.append(current)
    return groups


def _ends_with_other(g: Group) -> bool:
    return bool(g.blocks) and g.blocks[-1].kind == "other"


def _skeleton(message: str) -> str:
    """A message without what it quotes: the same error from another instantiation differs only in the types."""
    return re.sub(r"'[^']*'|‘[^’]*’", "''", message)


class Cleaner:
    """What to keep of the compiler's output, and how to say it, for one student's file."""

    def __init__(self, source: Source):
        self.source = source

    def mine(self, b: Block) -> bool:
        return b.file == self.source.display

    def keep_aside(self, b: Block) -> bool:
        """Whether a note, context line or chain is about the student's code."""
        if b.kind == "chain":
            return not any(_INTERNAL.search(t) or "<built-in>" in t or "<command-line>" in t for t in b.lines)
        return self.mine(b) and not _INTERNAL.search(self.rephrase(b.lines[0], b.line, b.col))

    def cascade(self, g: Group) -> bool:
        """An error or warning in a header, reached through a launch's lambda: the runtime's own code, instantiated
        for a launch whose mistake is reported at the student's line."""
        p = g.primary
        return p is not None and not self.mine(p) and any(
            _LAUNCH_MACHINERY.search(t) for b in g.blocks for t in b.lines)

    def rephrase(self, text: str, line: int, col: int) -> str:
        """The rewrite's lambda named as the launch the student wrote."""
        def clang(m: re.Match) -> str:
            n = int(m.group("line"))
            kernel = self.source.kernel_at(n, int(m.group("col")))
            return f"the launch of {kernel} at {m.group('file')}:{n}" if kernel else m.group(0)
        text = _CLANG_LAMBDA.sub(clang, text)
        kernel = self.source.kernel_at(line)
        m = _GCC_LAMBDA.search(text) if kernel else None
        while m:
            text = text[:_scope_start(text, m.start())] + f"the launch of {kernel}" + text[_with_end(text, m.end()):]
            m = _GCC_LAMBDA.search(text)
        return re.sub(r"cudacpu_args_(?:#\d+|\.\.\.)?", "the launch's arguments", text) if kernel else text

    def header(self, b: Block) -> str:
        text = b.lines[0]
        if self.mine(b) and b.col and b.line in self.source.maps:
            at = text.index(f"{b.file}:{b.line}:{b.col}:") + len(f"{b.file}:{b.line}:")
            text = text[:at] + text[at:].replace(str(b.col), str(self.source.column(b.line, b.col)), 1)
        return self.rephrase(text, b.line, b.col)

    def quotes(self, b: Block) -> list[str]:
        """The quoted lines, the student's where the compiler quoted a rewritten one; carets and fix-its moved."""
        out: list[str] = []
        current: LineMap | None = None
        for text in b.lines[1:]:
            q = _QUOTE.match(text)
            number = q.group("number").strip()
            if number:
                current = self.source.maps.get(int(number)) if self.mine(b) else None
                out.append(f"{q.group('number')} | {current.original.expandtabs(8)}" if current else text)
            elif current is not None:
                out.append(f"{q.group('number')} | {_move_marks(q.group('text'), current)}".rstrip())
            else:
                out.append(text)
        return out

    def render(self, b: Block) -> list[str]:
        if b.kind in ("other", "chain"):
            return b.lines
        return [self.header(b), *self.quotes(b)]


def _with_end(text: str, at: int) -> int:
    """Past g++'s " [with auto:3 = {...}]" after its lambda at `at`: the lambda's parameters are the rewrite's."""
    if not text.startswith(" [with auto:", at):
        return at
    depth = 0
    for k in range(at + 1, len(text)):
        depth += {"[": 1, "]": -1}.get(text[k], 0)
        if depth == 0:
            return k + 1
    return at


def _scope_start(text: str, at: int) -> int:
    """Where the enclosing function's name begins before g++'s `...::<lambda(auto:...)>`: back over balanced
    brackets to a space, quote or comma outside them."""
    depth, k = 0, at
    while k > 0:
        ch = text[k - 1]
        if ch in ")>]":
            depth += 1
        elif ch in "(<[":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and ch in " '‘,=":
            break
        k -= 1
    return k


def _move_marks(marks: str, m: LineMap) -> str:
    """A caret or fix-it line drawn under the rewritten line, redrawn under the student's. A run of carets and
    tildes is redrawn mark by mark, its gaps filled (a range that now spans less, or more, of the line); text (a
    fix-it, a label) moves whole, with its first column."""
    def moved(index: int) -> int:  # 0-based display columns, rewritten -> student's
        return _offset_to_display(m.original, m.offset(_display_to_offset(m.rewritten, index + 1))) - 1

    canvas: dict[int, str] = {}
    for run in re.finditer(r"\S+(?: \S+)*", marks):  # a label's words ("const float*") stay together
        if set(run.group(0)) <= set("^~ "):
            places = [(moved(run.start() + k), ch) for k, ch in enumerate(run.group(0))]
            for place, ch in sorted(places, key=lambda p: p[1] != "^"):  # a caret wins its column
                if ch != " ":
                    canvas.setdefault(place, ch)
            spots = {place for place, ch in places if ch != " "}
            if len(spots) == 1 and len(run.group(0)) > 1:  # a range inside the rewrite: under the launched name
                places.append((min(spots) + len(_name_under(m.original.expandtabs(8), min(spots))) - 1, "~"))
            for (a, x), (b, y) in zip(places, places[1:]):  # a range the rewrite stretched or shrank, whole
                for place in range(a + 1, b) if " " not in (x, y) else ():
                    canvas.setdefault(place, "~")
        else:
            start = moved(run.start())
            for k, ch in enumerate(run.group(0)):
                canvas.setdefault(start + k, ch)
    return "".join(canvas.get(k, " ") for k in range(max(canvas) + 1)) if canvas else ""


def _name_under(text: str, at: int) -> str:
    found = re.match(r"[\w:]+", text[at:])
    return found.group(0) if found else " "


def clean(stderr: str, display: str, original: str, rewritten: str, display_columns: bool) -> str:
    """The compiler's output about the student's file `display`, of which `rewritten` is the rewrite of `original`.
    `display_columns`: whether "file:L:C:" counts display columns (g++) or bytes (clang)."""
    cleaner = Cleaner(Source(display, original, rewritten, display_columns))
    groups = _group(_parse(stderr))
    out = _shown(groups, cleaner, drop_cascades=True)
    if _has_error(stderr.splitlines()) and not _has_error(out):  # an error must remain: the runtime's, then
        out = _shown(groups, cleaner, drop_cascades=False)
    if _has_error(stderr.splitlines()) and not _has_error(out):  # the compiler's own words rather than none
        return stderr
    out = _recounted(out)
    return "\n".join(out) + ("\n" if out else "")


_TOTALS = re.compile(r"^\d+ (?:errors?|warnings?)(?: and \d+ errors?)? generated\.$")


def _recounted(lines: list[str]) -> list[str]:
    """clang's closing "N errors generated." counts every error it wrote, the repeats dropped here too: it says
    what is shown instead."""
    kinds = [m.group("kind") for m in map(_DIAGNOSTIC.match, lines) if m]
    errors = sum(k in ("error", "fatal error") for k in kinds)
    warnings = kinds.count("warning")
    said = [f"{n} {word}{'s' if n != 1 else ''}" for n, word in ((warnings, "warning"), (errors, "error")) if n]
    total = f"{' and '.join(said)} generated." if said else None
    return [total if _TOTALS.match(text) else text for text in lines if total or not _TOTALS.match(text)]


def _shown(groups: list[Group], cleaner: Cleaner, drop_cascades: bool) -> list[str]:
    out: list[str] = []
    seen: set[tuple] = set()
    for g in groups:
        p = g.primary
        if p is not None:
            key = (p.file, p.line, p.col, p.kind, _skeleton(p.message))
            if key in seen or (drop_cascades and cleaner.cascade(g)):
                continue
            seen.add(key)
        elif all(b.kind in ("context", "chain") for b in g.blocks):
            continue  # g++'s context for an error it then left out as said already: nothing follows it
        for b in g.blocks:
            if b.kind in ("primary", "other") or cleaner.keep_aside(b):
                out += cleaner.render(b)
    return out


def _has_error(lines: list[str]) -> bool:
    return any(_is_error(t) for t in lines)


def _is_error(text: str) -> bool:
    m = _DIAGNOSTIC.match(text)
    return bool(m and m.group("kind") in ("error", "fatal error")) or text.startswith("fatal error:")
