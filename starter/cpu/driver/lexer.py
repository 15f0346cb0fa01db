"""Splits C++ source into tokens, enough to find and rewrite CUDA constructs.

Comments and the insides of string and character literals never produce
tokens that the rewriter looks at, and preprocessor directives are kept as
one opaque token each, so a `<<<` in a comment or a `#define` is left alone.
Every token knows its offsets in the text, so that rewrites can replace
exact spans and keep every other byte (and so every line number) as it was.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

# Longest first: a punctuator is the longest of these that matches.
_PUNCTUATORS = sorted(
    ["<<<", ">>>", "...", "<<=", ">>=", "->*", "::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&",
     "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", ".*", "##", "[[", "]]"],
    key=len, reverse=True)
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_NUMBER = re.compile(r"\.?[0-9](?:[eEpP][+-]|'[0-9A-Za-z]|[0-9A-Za-z_.])*")
_RAW_STRING = re.compile(r'(?:u8|u|U|L)?R"([^()\\ \t\n]{0,16})\(')


@dataclass(frozen=True)
class Token:
    kind: str   # "ident", "number", "string", "punct", "directive"
    text: str
    start: int
    end: int

    def is_(self, text: str) -> bool:
        return self.kind in ("ident", "punct") and self.text == text


class LexError(ValueError):
    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset


def _skip_quoted(src: str, i: int, quote: str) -> int:
    """Returns the offset just past the literal whose opening quote is at i."""
    j = i + 1
    while j < len(src):
        c = src[j]
        if c == "\\":
            j += 2
            continue
        if c == quote:
            return j + 1
        if c == "\n":
            break
        j += 1
    raise LexError(f"unterminated {'string' if quote == chr(34) else 'character'} literal", i)


def tokenize(src: str) -> list[Token]:
    tokens: list[Token] = []
    i, n = 0, len(src)
    at_line_start = True
    while i < n:
        c = src[i]
        if c == "\n":
            at_line_start = True
            i += 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if c == "\\" and src.startswith("\n", i + 1):
            i += 2
            continue
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            if j < 0:
                raise LexError("unterminated /* comment", i)
            i = j + 2
            continue
        if c == "#" and at_line_start:
            # A directive runs to the end of the line, backslash continuations included.
            j = i
            while True:
                k = src.find("\n", j)
                if k < 0:
                    k = n
                    break
                if src[k - 1] == "\\" or (src[k - 1] == "\r" and src[k - 2] == "\\"):
                    j = k + 1
                    continue
                # A /* comment that starts on the directive line may continue it.
                line = src[i:k]
                if line.count("/*") > line.count("*/"):
                    end = src.find("*/", k)
                    if end >= 0:
                        j = end + 2
                        continue
                break
            tokens.append(Token("directive", src[i:k], i, k))
            i = k
            continue
        at_line_start = False
        m = _RAW_STRING.match(src, i)
        if m:
            close = ")" + m.group(1) + '"'
            j = src.find(close, m.end())
            if j < 0:
                raise LexError("unterminated raw string literal", i)
            tokens.append(Token("string", src[i:j + len(close)], i, j + len(close)))
            i = j + len(close)
            continue
        m = _IDENT.match(src, i)
        if m:
            # Prefixed literals: L"..", u8"..", u'..'.
            if m.group(0) in ("L", "u", "U", "u8") and m.end() < n and src[m.end()] in "\"'":
                j = _skip_quoted(src, m.end(), src[m.end()])
                tokens.append(Token("string", src[i:j], i, j))
                i = j
                continue
            tokens.append(Token("ident", m.group(0), i, m.end()))
            i = m.end()
            continue
        if c in "\"'":
            j = _skip_quoted(src, i, c)
            tokens.append(Token("string", src[i:j], i, j))
            i = j
            continue
        m = _NUMBER.match(src, i)
        if m:
            tokens.append(Token("number", m.group(0), i, m.end()))
            i = m.end()
            continue
        for p in _PUNCTUATORS:
            if src.startswith(p, i):
                tokens.append(Token("punct", p, i, i + len(p)))
                i += len(p)
                break
        else:
            tokens.append(Token("punct", c, i, i + 1))
            i += 1
    return tokens


class LineIndex:
    """Offset -> 1-based line number."""

    def __init__(self, src: str):
        self._starts = [0] + [m.end() for m in re.finditer(r"\n", src)]

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self._starts, offset)
