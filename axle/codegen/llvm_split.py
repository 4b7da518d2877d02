"""Splitting a program's LLVM IR into modules that LLVM can compile at the same time.

LLVM spends most of a cold compile in optimization and machine code generation, one function
after another on one thread. A program's kernels are separate functions (`noinline` kernel
functions called by `axle_entry`, their `.par` bodies passed to the thread pool by address),
so they can be compiled in separate LLVM contexts on separate threads (backends/cpu/llvm_env.py) and the
objects linked into one JIT. `split_module(text, parts)` groups the functions so that:

* a function stays with every function it calls directly unless the callee is `noinline`
  (what the inliner would have merged stays in one module: the code is the same);
* a global is copied into each group that reads it when it is a small constant, and
  otherwise pins every function that names it into one group (one definition, no cross-module
  data references);
* a function called or named from another group loses its `internal`/`private` linkage and
  is declared where it is used.

The groups are packed into at most `parts` modules of about equal size (largest first).
Text it does not recognize (anything but the module header, globals, `declare`/`define`,
attribute groups and metadata at the top level) makes it return None: such modules are
compiled whole, as before. This module is plain text processing and imports nothing of axle.
"""
from __future__ import annotations

import re
from typing import Optional

SMALL_CONSTANT = 4096  # characters: a constant global this short is copied into every part using it
_NAME = re.compile(r'@("(?:[^"\\]|\\.)*"|[-a-zA-Z$._][-a-zA-Z$._0-9]*)')
_CALL = re.compile(r'\bcall\b[^@\n]*@("(?:[^"\\]|\\.)*"|[-a-zA-Z$._][-a-zA-Z$._0-9]*)\(')
_LOCAL_LINKAGE = re.compile(r'^(define|@\S+ = )\s*(internal|private)\s+')


class _Entity:
    __slots__ = ("kind", "name", "text", "refs", "calls", "noinline", "small_constant")

    def __init__(self, kind: str, name: str, text: str):
        self.kind, self.name, self.text = kind, name, text
        body = text.split("\n", 1)[1] if kind == "define" else text.split("=", 1)[1]
        self.refs = set(_NAME.findall(body)) - {name}
        self.calls = set(_CALL.findall(body)) - {name} if kind == "define" else set()
        header = text.split("\n", 1)[0]
        self.noinline = kind == "define" and " noinline" in header.split(")")[-1]
        self.small_constant = kind == "global" and " constant " in header and len(text) <= SMALL_CONSTANT


def _entities(text: str) -> Optional[tuple[list[str], list[str], list[_Entity]]]:
    """(header lines, lines every part keeps: declare/attributes/metadata, globals and functions)."""
    header: list[str] = []
    shared: list[str] = []
    items: list[_Entity] = []
    lines = text.split("\n")
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip() or line.startswith(";"):
            i += 1
        elif line.startswith(("target ", "source_filename")):
            header.append(line)
            i += 1
        elif line.startswith(("declare ", "attributes ", "!")):
            shared.append(line)
            i += 1
        elif line.startswith("@"):
            m = _NAME.match(line)
            if m is None or " = " not in line:
                return None
            items.append(_Entity("global", m.group(1), line))
            i += 1
        elif line.startswith("define "):
            m = _NAME.search(line.split("(", 1)[0])
            if m is None:
                return None
            j = i + 1
            while j < n and lines[j] != "}":
                j += 1
            if j == n:
                return None
            items.append(_Entity("define", m.group(1), "\n".join(lines[i:j + 1])))
            i = j + 1
        else:
            return None  # something this splitter does not know: compile the module whole
    return header, shared, items


def _declaration(fn: _Entity) -> str:
    """`declare` for a function defined in another part (its signature, no attributes)."""
    head = fn.text.split("\n", 1)[0]
    head = _LOCAL_LINKAGE.sub(r"\1 ", head)
    sig = head[len("define "):]
    depth, end = 0, None
    for k, ch in enumerate(sig):  # the closing parenthesis of the parameter list
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                end = k
                break
    return "declare " + sig[:end + 1]


def split_module(text: str, parts: int) -> Optional[list[str]]:
    """The module as up to `parts` modules that link into the same program, or None when it
    does not split (one group, or text the splitter does not recognize)."""
    if parts < 2:
        return None
    parsed = _entities(text)
    if parsed is None:
        return None
    header, shared, items = parsed
    by_name = {e.name: e for e in items}
    if len(by_name) != len(items):
        return None
    funcs = [e for e in items if e.kind == "define"]
    parent = {e.name: e.name for e in funcs}

    def find(a: str) -> str:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    def union(a: str, b: str) -> None:
        parent[find(a)] = find(b)

    users: dict[str, list[str]] = {}
    for f in funcs:
        for c in f.calls:
            callee = by_name.get(c)
            if callee is not None and callee.kind == "define" and not callee.noinline:
                union(f.name, c)
        for r in f.refs:
            if r in by_name and by_name[r].kind == "global":
                users.setdefault(r, []).append(f.name)
    for g, fs in users.items():
        if not by_name[g].small_constant:
            for f in fs[1:]:
                union(fs[0], f)
    groups: dict[str, list[_Entity]] = {}
    for f in funcs:
        groups.setdefault(find(f.name), []).append(f)
    if len(groups) < 2:
        return None
    # largest group first into the lightest part
    sizes = [0] * min(parts, len(groups))
    where: dict[str, int] = {}
    for root, fs in sorted(groups.items(), key=lambda kv: -sum(len(f.text) for f in kv[1])):
        k = sizes.index(min(sizes))
        sizes[k] += sum(len(f.text) for f in fs)
        for f in fs:
            where[f.name] = k
    # functions named from another part: external there, declared where they are used
    exported = {r for f in funcs for r in f.refs
                if r in where and where[r] != where[f.name]}
    out = []
    for k in range(len(sizes)):
        mine = [f for f in funcs if where[f.name] == k]
        needed = set().union(*(f.refs for f in mine))
        body = list(header) + list(shared)
        for e in items:
            if e.kind == "global" and e.name in needed:
                body.append(e.text)
        for name in sorted(needed):
            e = by_name.get(name)
            if e is not None and e.kind == "define" and where[name] != k:
                body.append(_declaration(e))
        for f in mine:
            body.append(_LOCAL_LINKAGE.sub(r"\1 ", f.text, count=1) if f.name in exported else f.text)
        out.append("\n".join(body) + "\n")
    return out
