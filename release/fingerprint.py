"""Token fingerprints: does one file contain another's code, whatever its name, layout or identifiers?

A file is reduced to its tokens with comments and whitespace gone (and, for
HTML, its markup), identifiers and numbers replaced by placeholders so that
renaming does not hide a copy; the fingerprint is the set of hashes of every
run of K consecutive tokens ("shingles"). How much of a secret file's
fingerprint appears in another file says how much of it was copied there.
"""
from __future__ import annotations

import hashlib
import html
import io
import re
import tokenize
from dataclasses import dataclass

BINARY_SUFFIXES = (".npy", ".png", ".jpg", ".gz", ".zip")
K = 12  # tokens per shingle: long enough that boilerplate (includes, a signature) rarely matches by chance

_C_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<line_comment>//[^\n]*)
  | (?P<block_comment>/\*.*?(?:\*/|\Z))
  | (?P<string>"(?:\\.|[^"\\\n])*")
  | (?P<char>'(?:\\.|[^'\\\n])*')
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[A-Za-z]*)
  | (?P<name>[A-Za-z_]\w*)
  | (?P<op><<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||::|[-+*/%&|^!~<>=?:;,.(){}\[\]\#])
  | (?P<other>.)
""", re.S | re.X)


def c_tokens(text: str) -> list[str]:
    """C, C++ and CUDA (and a fair approximation for any other text): names and numbers as placeholders."""
    out = []
    for m in _C_TOKEN.finditer(text):
        kind = m.lastgroup
        if kind in ("space", "line_comment", "block_comment"):
            continue
        out.append("N" if kind == "name" else "0" if kind == "number" else m.group())
    return out


def python_tokens(text: str) -> list[str]:
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                            tokenize.ENDMARKER):
                continue
            out.append("N" if tok.type == tokenize.NAME else "0" if tok.type == tokenize.NUMBER else tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return c_tokens(text)
    return out


def tokens(name: str, text: str) -> list[str]:
    if name.endswith(".py"):
        return python_tokens(text)
    if name.endswith((".html", ".htm")):
        # Code in HTML is escaped and cut up by highlighting spans: drop the markup, keep the text.
        text = html.unescape(re.sub(r"<[^>]*>", "", text))
    return c_tokens(text)


def shingles(toks: list[str], k: int = K) -> frozenset[bytes]:
    return frozenset(hashlib.blake2b("\x1f".join(toks[i:i + k]).encode(), digest_size=8).digest()
                     for i in range(len(toks) - k + 1))


@dataclass(frozen=True)
class Fingerprint:
    name: str
    shingles: frozenset[bytes]

    @classmethod
    def of(cls, name: str, data: bytes) -> "Fingerprint | None":
        """None for the binary formats the tarball holds (data arrays, images): there is no code in them.
        Everything else is compared as text, valid UTF-8 or not, so an odd byte cannot hide a copy."""
        if name.endswith(BINARY_SUFFIXES):
            return None
        return cls(name, shingles(tokens(name, data.decode("utf-8", errors="replace"))))

    def shared_with(self, other: "Fingerprint") -> int:
        return len(self.shingles & other.shingles)
