"""Rewrites a .cu file into C++ that the CPU backend's runtime can run.

Four rewrites, each on the spot and on the same lines, so that every line of
the result is the same line of the student's file (diagnostics, debuggers
and AddressSanitizer all point at the student's file:line):

  launches      kernel<<<grid, block, smem, stream>>>(args)
                -> ::cudacpu::launch(site, known, [&](auto&... a) { kernel(a...); }, grid, block, smem, stream)(args)
  __shared__    __shared__ float tile[32][33];
                -> static char k; float (&tile)[32][33] = ::cudacpu::shared_var<float[32][33], 0>(&k, "tile", ...);
                extern __shared__ float smem[];  ->  float* smem = ::cudacpu::dynamic_shared<float>(...);
  kernel bodies a prologue that tells the runtime which kernel it is (and its
                __launch_bounds__) when asked, and a note of the line before
                each `return` and the closing brace (where a thread ended)
  __noinline__  -> __attribute__((noinline)) (a macro would break libstdc++)

The rewriter works on tokens, not on a full C++ parse: a construct it cannot
make sense of raises RewriteError with the line, never produces wrong code
silently.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .lexer import LexError, LineIndex, Token, tokenize

_ATTRIBUTE_LIKE = {"__launch_bounds__", "__align__", "__attribute__", "alignas", "__declspec", "__maxnreg__",
                   "__cluster_dims__", "__builtin_align__"}
_SHARED_SPECIFIERS = {"extern", "static", "__shared__", "__device__", "__restrict__", "constexpr"}
_FUNCTION_MARKERS = {  # call -> index of the argument that names a kernel
    "cudaFuncSetAttribute": 0,
    "cudaFuncGetAttributes": 1,
    "cudaOccupancyMaxActiveBlocksPerMultiprocessor": 1,
}


class RewriteError(ValueError):
    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.line = line


@dataclass
class Edit:
    start: int
    end: int
    text: str


@dataclass
class Kernel:
    name: str
    body_open: int    # token index of "{"
    body_close: int   # token index of "}"
    launch_bounds: str = ""


@dataclass
class Result:
    text: str
    kernels: list[str] = field(default_factory=list)
    launches: int = 0
    shared: int = 0
    # (line, what) of device-side launches: dynamic parallelism, which needs a GPU.
    device_launches: list[int] = field(default_factory=list)


_DIRECTIVE = re.compile(r"#\s*(\w+)\s*(.*)", re.S)
_COMMENT = re.compile(r"//.*|/\*.*?\*/", re.S)
_CONSTANT = {"0": False, "false": False, "1": True, "true": True}


def live_code(tokens: list[Token]) -> list[Token]:
    """The code tokens (no directives) outside the conditional groups that are dead on every configuration: an
    `#if 0` group, the `#else` of an `#if 1`. A condition that names a macro may go either way, so its groups
    are kept, as nvcc's host and device passes may each take one."""
    stack: list[dict] = []  # per open #if: whether its current group is dead, whether an earlier one was taken

    def constant(condition: str):
        return _CONSTANT.get(" ".join(_COMMENT.sub(" ", condition).split()))

    live = []
    for t in tokens:
        if t.kind != "directive":
            if not (stack and stack[-1]["dead"]):
                live.append(t)
            continue
        m = _DIRECTIVE.match(t.text)
        name, rest = (m.group(1), m.group(2)) if m else ("", "")
        if name in ("if", "ifdef", "ifndef"):
            outer = bool(stack) and stack[-1]["dead"]
            value = constant(rest) if name == "if" else None
            stack.append({"outer": outer, "dead": outer or value is False, "taken": value is True})
        elif name in ("elif", "elifdef", "elifndef") and stack:
            group = stack[-1]
            value = constant(rest) if name == "elif" else None
            group["dead"] = group["outer"] or group["taken"] or value is False
            group["taken"] = group["taken"] or (value is True and not group["outer"])
        elif name == "else" and stack:
            group = stack[-1]
            group["dead"] = group["outer"] or group["taken"]
        elif name == "endif" and stack:
            stack.pop()
    return live


_UNROLL = re.compile(r"#\s*pragma\s+unroll\b")  # a directive token's text starts at its #


class _Rewriter:
    def __init__(self, src: str):
        self.src = src
        self.lines = LineIndex(src)
        try:
            self.tokens = tokenize(src)
        except LexError as e:
            raise RewriteError(str(e), self.lines.line(e.offset)) from None
        # Tokens without directives, which the structure is read from, and without the groups the preprocessor
        # removes whatever the macros are (#if 0): text there need not even balance its brackets.
        self.code = live_code(self.tokens)
        self.match = self._match_brackets()
        self.edits: list[Edit] = []

    # --- helpers -----------------------------------------------------------------------
    def line(self, i: int) -> int:
        return self.lines.line(self.code[i].start)

    def text(self, i: int, j: int) -> str:
        """Source text of code tokens i..j-1, as written (newlines included)."""
        if i >= j:
            return ""
        return self.src[self.code[i].start:self.code[j - 1].end]

    def flat(self, i: int, j: int) -> str:
        """The same on one line."""
        return " ".join(self.text(i, j).split())

    def is_(self, i: int, text: str) -> bool:
        return 0 <= i < len(self.code) and self.code[i].is_(text)

    def _match_brackets(self) -> dict[int, int]:
        match: dict[int, int] = {}
        stack: list[int] = []
        pairs = {")": "(", "]": "[", "}": "{"}
        for i, t in enumerate(self.code):
            if t.kind != "punct":
                continue
            if t.text in "([{" and len(t.text) == 1:
                stack.append(i)
            elif t.text in pairs and len(t.text) == 1:
                if not stack or self.code[stack[-1]].text != pairs[t.text]:
                    raise RewriteError(f"unbalanced '{t.text}'", self.line(i))
                j = stack.pop()
                match[i], match[j] = j, i
            elif t.text in ("[[", "]]"):
                pass
        if stack:
            raise RewriteError(f"'{self.code[stack[-1]].text}' is never closed", self.line(stack[-1]))
        return match

    def edit(self, start: int, end: int, text: str) -> None:
        """Replaces src[start:end] by text, padded with the newlines it removes."""
        removed = self.src.count("\n", start, end)
        added = text.count("\n")
        if added > removed:
            raise AssertionError("a rewrite may not add lines")
        self.edits.append(Edit(start, end, text + "\n" * (removed - added)))

    def insert(self, offset: int, text: str) -> None:
        self.edits.append(Edit(offset, offset, text))

    # --- kernels -----------------------------------------------------------------------
    def find_kernels(self) -> list[Kernel]:
        kernels = []
        for i, t in enumerate(self.code):
            if not t.is_("__global__"):
                continue
            j, name, bounds = i + 1, None, ""
            while j < len(self.code):
                tok = self.code[j]
                if tok.text in _ATTRIBUTE_LIKE and self.is_(j + 1, "("):
                    if tok.text == "__launch_bounds__":
                        bounds = self.flat(j + 2, self.match[j + 1])
                    j = self.match[j + 1] + 1
                    continue
                if tok.is_("[["):
                    while j < len(self.code) and not self.code[j].is_("]]"):
                        j += 1
                    j += 1
                    continue
                if tok.is_("("):
                    name = self.code[j - 1].text if self.code[j - 1].kind == "ident" else None
                    break
                if tok.is_(";") or tok.is_("{"):
                    break
                j += 1
            if name is None or not self.is_(j, "("):
                continue
            k = self.match[j] + 1
            while k < len(self.code) and not (self.is_(k, "{") or self.is_(k, ";")):
                if self.is_(k, "(") or self.is_(k, "["):
                    k = self.match[k]
                k += 1
            if k < len(self.code) and self.is_(k, "{"):
                kernels.append(Kernel(name, k, self.match[k], bounds))
        return kernels

    def rewrite_kernel(self, k: Kernel) -> None:
        open_tok, close_tok = self.code[k.body_open], self.code[k.body_close]
        bounds = f", {k.launch_bounds}" if k.launch_bounds else ""
        self.insert(open_tok.end,
                    " static const char cudacpu_kernel_key_ = 0; if (::cudacpu::detail::t_identify) {"
                    f" ::cudacpu::detail::identify_kernel(&cudacpu_kernel_key_, __func__{bounds}); return; }}")
        i = k.body_open + 1
        while i < k.body_close:
            if self.is_(i, "return"):
                end = i
                while end < k.body_close and not self.is_(end, ";"):
                    if self.is_(end, "(") or self.is_(end, "[") or self.is_(end, "{"):
                        end = self.match[end]
                    end += 1
                self.insert(self.code[i].start, "{ ::cudacpu::detail::note_exit(__FILE__, __LINE__); ")
                self.insert(self.code[end].end, " }")
                i = end
            i += 1
        self.insert(close_tok.start, " ::cudacpu::detail::note_exit(__FILE__, __LINE__); ")

    # --- launches ----------------------------------------------------------------------
    def callee_start(self, i: int) -> int:
        """Token index where the callee expression before `<<<` at i starts."""
        j = i - 1
        while True:
            if j < 0:
                raise RewriteError("a kernel launch '<<<' with no kernel before it", self.line(i))
            tok = self.code[j]
            if tok.is_(">") or tok.is_(">>"):
                depth = 0
                while j >= 0:
                    t = self.code[j]
                    if t.is_(">"):
                        depth += 1
                    elif t.is_(">>"):
                        depth += 2
                    elif t.is_("<"):
                        depth -= 1
                    elif t.is_(")") or t.is_("]"):
                        j = self.match[j]
                    if depth == 0:
                        break
                    j -= 1
                j -= 1
                continue
            if tok.is_(")"):
                j = self.match[j] - 1
                if j >= 0 and self.code[j].kind == "ident":
                    continue
                return j + 1
            if tok.kind == "ident":
                if j >= 1 and (self.code[j - 1].is_("::") or self.code[j - 1].is_(".") or self.code[j - 1].is_("->")):
                    j -= 2
                    continue
                if j >= 0 and self.is_(j - 1, "::"):
                    return j - 1
                return j
            raise RewriteError(f"cannot tell which kernel this launch calls ('{tok.text}' before '<<<')",
                               self.line(i))

    @staticmethod
    def base_name(tokens: list[Token]) -> str:
        """The function's own name in a callee like ns::kernel<T, 4> or (&kernel)."""
        depth = 0
        name = ""
        for t in tokens:
            if t.is_("<"):
                depth += 1
            elif t.is_(">"):
                depth -= 1
            elif t.is_(">>"):
                depth -= 2
            elif depth == 0 and t.kind == "ident":
                name = t.text
        return name

    def rewrite_launch(self, i: int, kernels: set[str], kernel_bodies: list[Kernel]) -> bool:
        """Rewrites the launch whose `<<<` is token i; False if it is inside a kernel."""
        for k in kernel_bodies:
            if k.body_open < i < k.body_close:
                return False
        start = self.callee_start(i)
        j = i + 1
        while j < len(self.code):
            t = self.code[j]
            if t.is_("(") or t.is_("[") or t.is_("{"):
                j = self.match[j]
            elif t.is_(">>>"):
                break
            elif t.is_(";"):
                raise RewriteError("a kernel launch '<<<' without its closing '>>>'", self.line(i))
            j += 1
        if j >= len(self.code) or not self.is_(j + 1, "("):
            raise RewriteError("a kernel launch needs its arguments in parentheses after '>>>'", self.line(i))
        callee = self.flat(start, i)
        config = self.text(i + 1, j)
        if not config.strip():
            raise RewriteError("a kernel launch needs at least <<<grid, block>>>", self.line(i))
        known = "true" if self.base_name(self.code[start:i]) in kernels else "false"
        label = callee.replace("\\", "\\\\").replace('"', '\\"')
        replacement = (f'::cudacpu::launch(::cudacpu::LaunchSite{{__FILE__, __LINE__, "{label}"}}, {known}, '
                       f'[&](auto&... cudacpu_args_) {{ {callee}(cudacpu_args_...); }}, {config})')
        self.edit(self.code[start].start, self.code[j].end, replacement)
        return True

    def member_kernels(self) -> list[int]:
        """The __global__ tokens declared in a class body, a friend declaration aside: nvcc refuses a member kernel,
        static or not; clang's CUDA front end takes a static one."""
        found = []
        for i, t in enumerate(self.code):
            if t.is_("__global__") and self._in_class_body(i) and not self._in_friend_declaration(i):
                found.append(i)
        return found

    def _in_class_body(self, i: int) -> bool:
        j = i - 1
        while j >= 0 and not self.is_(j, "{"):  # back to the innermost open brace, over closed groups
            j = self.match[j] - 1 if self.code[j].text in (")", "]", "}") and j in self.match else j - 1
        if j < 0 or self.is_(j - 1, ")") or self.is_(j - 1, "="):
            return False  # at namespace scope, in a function body or in an initializer
        k = j - 1
        while k >= 0 and not (self.is_(k, ";") or self.is_(k, "{") or self.is_(k, "}")):
            if self.code[k].text in ("class", "struct", "union"):
                return not self.is_(k - 1, "enum")
            k = self.match[k] - 1 if self.code[k].text in (")", "]") and k in self.match else k - 1
        return False

    def _in_friend_declaration(self, i: int) -> bool:
        k = i - 1
        while k >= 0 and not (self.is_(k, ";") or self.is_(k, "{") or self.is_(k, "}") or self.is_(k, ":")):
            if self.is_(k, "friend"):
                return True
            k -= 1
        return False

    # --- __shared__ --------------------------------------------------------------------
    def in_function(self, i: int) -> bool:
        """Whether token i is inside a function body (else at namespace or class scope)."""
        stack: list[bool] = []  # per open brace: is it code?
        for j in range(i):
            t = self.code[j]
            if t.is_("{"):
                inside = bool(stack) and stack[-1]
                prev = self.code[j - 1] if j else None
                body = prev is not None and (prev.is_(")") or prev.text in ("const", "noexcept", "override", "final",
                                                                            "mutable"))
                stack.append(inside or body)
            elif t.is_("}") and stack:
                stack.pop()
        return bool(stack) and stack[-1]

    def rewrite_shared(self, i: int) -> None:
        # The statement: back over specifiers, forward to its ';'.
        start = i
        while start > 0:
            prev = self.code[start - 1]
            if prev.text in _SHARED_SPECIFIERS or prev.text == "volatile":
                start -= 1
            elif prev.is_(")") and self.code[self.match[start - 1] - 1].text in _ATTRIBUTE_LIKE:
                start = self.match[start - 1] - 1
            else:
                break
        end = i
        while end < len(self.code) and not self.is_(end, ";"):
            if self.is_(end, "(") or self.is_(end, "[") or self.is_(end, "{"):
                end = self.match[end]
            end += 1
        if end >= len(self.code):
            raise RewriteError("a __shared__ declaration without its ';'", self.line(i))
        line = self.line(i)
        # Specifiers out, alignment noted, the rest is: type declarator, declarator, ...
        extern, volatile, align = False, False, "0"
        rest: list[int] = []
        j = start
        while j < end:
            t = self.code[j]
            if t.text in _ATTRIBUTE_LIKE and self.is_(j + 1, "("):
                inner = self.flat(j + 2, self.match[j + 1])
                if t.text in ("__align__", "alignas", "__builtin_align__"):
                    align = inner
                elif t.text == "__attribute__" and "aligned" in inner:
                    align = inner.split("aligned", 1)[1].strip().strip("()") or "16"
                j = self.match[j + 1] + 1
                continue
            if t.text == "extern":
                extern = True
            elif t.text == "volatile":
                volatile = True
            elif t.text not in _SHARED_SPECIFIERS:
                rest.append(j)
            j += 1
        declarators = self._split_declarators(rest)
        if not declarators:
            raise RewriteError("a __shared__ declaration with no variable", line)
        base_type, first = self._type_and_declarator(declarators[0], line)
        if not base_type:
            raise RewriteError("cannot find the type of this __shared__ declaration", line)
        type_text = ("volatile " if volatile else "") + base_type
        pieces = []
        at_namespace = not self.in_function(i)
        for n, decl in enumerate(declarators):
            ptr, name, dims, init = first if n == 0 else self._declarator(decl, line)
            if init:
                raise RewriteError(f"__shared__ variable '{name}' has an initializer; CUDA does not allow one "
                                   "(initialize it in the kernel, then __syncthreads())", line)
            t = f"{type_text}{ptr}"
            if extern:
                unknown_size = re.match(r"\[\s*\]\s*(.*)$", dims)
                if not unknown_size:
                    raise RewriteError(f"extern __shared__ '{name}' must be an array of unknown size: "
                                       f"extern __shared__ T {name}[];", line)
                inner = unknown_size.group(1).strip()
                element = f"{t}{' ' + inner if inner else ''}"
                access = f'::cudacpu::dynamic_shared<{element}>("{name}", __FILE__, __LINE__)'
                if at_namespace:
                    pieces.append(("define", name, access))
                else:
                    decl_text = f"{t} (*{name}){inner}" if inner else f"{t}* {name}"
                    pieces.append(("code", name, f"{decl_text} = {access};"))
            else:
                full = f"{t}{' ' + dims if dims else ''}"
                if at_namespace:
                    access = (f'::cudacpu::shared_var<{full}, {align}>('
                              f'::cudacpu::detail::namespace_shared_key(__FILE__, "{name}"), "{name}", __FILE__, __LINE__)')
                    pieces.append(("define", name, access))
                else:
                    key = f"cudacpu_shared_{name}_{line}_"
                    pieces.append(("code", name,
                                   f"static char {key}; {t} (&{name}){dims} = ::cudacpu::shared_var<{full}, {align}>("
                                   f'&{key}, "{name}", __FILE__, __LINE__);'))
        s, e = self.code[start].start, self.code[end].end
        if any(kind == "define" for kind, _, _ in pieces):
            if len(pieces) != 1:
                raise RewriteError("declare one __shared__ variable per line at namespace scope", line)
            line_start = self.src.rfind("\n", 0, s) + 1
            line_end = self.src.find("\n", e)
            line_end = len(self.src) if line_end < 0 else line_end
            after = self.src[e:line_end].strip()
            if self.src[line_start:s].strip() or (after and not after.startswith("//")):
                raise RewriteError("put this namespace-scope __shared__ declaration on a line of its own", line)
            _, name, access = pieces[0]
            self.edit(s, e, f"#define {name} ({access})")
        else:
            self.edit(s, e, " ".join(text for _, _, text in pieces))

    def _split_declarators(self, idx: list[int]) -> list[list[int]]:
        parts: list[list[int]] = [[]]
        depth = 0
        k = 0
        while k < len(idx):
            j = idx[k]
            t = self.code[j]
            if t.is_("(") or t.is_("[") or t.is_("{"):
                close = self.match[j]
                while k < len(idx) and idx[k] <= close:
                    parts[-1].append(idx[k])
                    k += 1
                continue
            if t.is_("<"):
                depth += 1
            elif t.is_(">"):
                depth -= 1
            elif t.is_(">>"):
                depth -= 2
            if t.is_(",") and depth == 0:
                parts.append([])
            else:
                parts[-1].append(j)
            k += 1
        return [p for p in parts if p]

    def _declarator(self, idx: list[int], line: int) -> tuple[str, str, str, str]:
        """(pointer ops, name, dims, initializer) of a declarator without its type."""
        k = 0
        ptr = ""
        while k < len(idx) and self.code[idx[k]].text in ("*", "&", "const"):
            ptr += self.code[idx[k]].text + ("" if self.code[idx[k]].text != "const" else " ")
            k += 1
        if k >= len(idx) or self.code[idx[k]].kind != "ident":
            raise RewriteError("cannot read this __shared__ declaration", line)
        name = self.code[idx[k]].text
        dims, init = self._dims_and_init(idx[k + 1:])
        return ptr, name, dims, init

    def _dims_and_init(self, idx: list[int]) -> tuple[str, str]:
        dims, init = [], []
        in_init = False
        for j in idx:
            t = self.code[j]
            if t.is_("=") or (t.is_("{") and not in_init and not dims):
                in_init = True
            (init if in_init else dims).append(t.text)
        # Joined with spaces: "[a - -b]" must not become "[a--b]".
        return " ".join(dims), " ".join(init)

    def _type_and_declarator(self, idx: list[int], line: int) -> tuple[str, tuple[str, str, str, str]]:
        # The name is the last identifier before the first top-level '[', '=' or '{'.
        stop = len(idx)
        for k, j in enumerate(idx):
            t = self.code[j]
            if t.is_("[") or t.is_("=") or t.is_("{"):
                stop = k
                break
        name_k = None
        for k in range(stop - 1, -1, -1):
            if self.code[idx[k]].kind == "ident":
                name_k = k
                break
        if name_k is None or name_k == 0:
            raise RewriteError("cannot find the name and type of this __shared__ declaration", line)
        type_tokens = idx[:name_k]
        # Pointer operators belong to the declarator: float *p, q -> p is a pointer, q is not.
        ptr_k = len(type_tokens)
        while ptr_k > 0 and self.code[type_tokens[ptr_k - 1]].text in ("*", "&"):
            ptr_k -= 1
        base = " ".join(self.code[j].text for j in type_tokens[:ptr_k])
        ptr = "".join(self.code[j].text for j in type_tokens[ptr_k:])
        dims, init = self._dims_and_init(idx[name_k + 1:])
        return base, (ptr, self.code[idx[name_k]].text, dims, init)

    # --- the rest ----------------------------------------------------------------------
    def rewrite_markers(self, kernels: set[str]) -> None:
        """Marks kernels this file defines where CUDA calls take them by pointer."""
        for i, t in enumerate(self.code):
            if t.kind != "ident" or t.text not in _FUNCTION_MARKERS or not self.is_(i + 1, "("):
                continue
            close = self.match[i + 1]
            args: list[list[int]] = [[]]
            j = i + 2
            while j < close:
                if self.is_(j, "(") or self.is_(j, "[") or self.is_(j, "{"):
                    args[-1].extend(range(j, self.match[j] + 1))
                    j = self.match[j] + 1
                    continue
                if self.is_(j, ","):
                    args.append([])
                else:
                    args[-1].append(j)
                j += 1
            which = _FUNCTION_MARKERS[t.text]
            if which < len(args) and args[which]:
                tokens = [self.code[j] for j in args[which] if not self.code[j].is_("&")]
                if self.base_name(tokens) in kernels:
                    self.insert(self.code[args[which][0]].start, "::cudacpu::prologued, ")

    def drop_unroll_pragmas(self) -> None:
        """`#pragma unroll [N]` is CUDA's hint to nvcc's loop unroller, which nvcc takes without a word; g++ knows no
        such pragma and warns at each one, about correct code. On the CPU it means nothing: dropped, its lines
        kept. (Any other pragma is left to the compiler, as nvcc leaves it to its host compiler.)"""
        for t in self.tokens:
            if t.kind == "directive" and _UNROLL.match(t.text):
                self.edit(t.start, t.end, "")

    def rewrite_noinline(self) -> None:
        for i, t in enumerate(self.code):
            if t.is_("__noinline__") and not (self.is_(i - 1, "(") and self.is_(i - 2, "(")):
                self.edit(t.start, t.end, "__attribute__((noinline))")

    def apply(self) -> str:
        out, pos = [], 0
        for e in sorted(self.edits, key=lambda e: (e.start, e.end)):
            if e.start < pos:
                raise RewriteError("overlapping rewrites (a launch inside a __shared__ declaration?)",
                                   self.lines.line(e.start))
            out.append(self.src[pos:e.start])
            out.append(e.text)
            pos = e.end
        out.append(self.src[pos:])
        return "".join(out)


def member_kernels(src: str) -> list[tuple[int, int]]:
    """(line, column) of each __global__ function a class declares as its member: nvcc refuses them. Nothing when
    the file does not tokenize or balance (the compile says what is wrong better)."""
    try:
        r = _Rewriter(src)
    except RewriteError:
        return []
    return [(r.line(i), r.code[i].start - src.rfind("\n", 0, r.code[i].start)) for i in r.member_kernels()]


def rewrite(src: str) -> Result:
    """Rewrites one .cu file's text; raises RewriteError for what it cannot handle."""
    r = _Rewriter(src)
    kernels = r.find_kernels()
    names = {k.name for k in kernels}
    result = Result(text="", kernels=sorted(names))
    for i, t in enumerate(r.code):
        if t.is_("<<<"):
            if r.rewrite_launch(i, names, kernels):
                result.launches += 1
            else:
                result.device_launches.append(r.line(i))
        elif t.is_("__shared__"):
            r.rewrite_shared(i)
            result.shared += 1
    for k in kernels:
        r.rewrite_kernel(k)
    r.rewrite_markers(names)
    r.rewrite_noinline()
    r.drop_unroll_pragmas()
    result.text = r.apply()
    return result
