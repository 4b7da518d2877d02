"""The import graph of axle, checked against its layers.

Layers, lowest first (a module may import its own layer and the ones below, never above):

    0 base       axle.errors, axle.flags, axle.counters, axle.forks, axle.gcpause,
                 axle.limits, axle.lru, axle.version
    1 ir         axle.ir (types, ops, the IR, text formats, verifier, shape inference)
    2 profiler   axle.profiler (the traces every higher layer reports into; it installs
                 the IR's parse hook, so it sits just above the IR)
    3 interpreter axle.interpreter (the oracle; constant folding runs it)
    4 passes     axle.passes, axle.reproducer (the pipeline and its crash reports)
    5 codegen    axle.codegen (target-independent code generation)
    6 backends   axle.backends (one folder per backend, none imports another's; the files
                 directly in axle/backends are what backends share: the FFI registry)
    7 runtime    axle.runtime, axle.sharding
    8 top        axle (the package's API), axle.__main__, axle.jax, axle.torch, axle.tf,
                 axle.tools, axle.examples

Every import counts, the ones inside functions too (a lazy import is still a dependency,
and a cycle through one is still a cycle). Importing a package's submodule does not count
as importing the package's parents. `python -m axle.tools.layering` prints the layer
violations, the imports between backends and the import cycles.
"""
from __future__ import annotations

import ast
import os
import sys
from dataclasses import dataclass
from typing import Optional

LAYERS = [
    ("base", ("axle.errors", "axle.flags", "axle.counters", "axle.forks", "axle.gcpause", "axle.limits",
              "axle.lru", "axle.version")),
    ("ir", ("axle.ir",)),
    ("profiler", ("axle.profiler",)),
    ("interpreter", ("axle.interpreter",)),
    ("passes", ("axle.passes", "axle.reproducer")),
    ("codegen", ("axle.codegen",)),
    ("backends", ("axle.backends",)),
    ("runtime", ("axle.runtime", "axle.sharding")),
    ("top", ("axle.__main__", "axle.jax", "axle.torch", "axle.tf", "axle.tools", "axle.examples", "axle")),
]


def layer_of(module: str) -> tuple[int, str]:
    """(rank, name) of the layer a module belongs to (the longest matching prefix)."""
    best = None
    for rank, (name, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if module == p or module.startswith(p + "."):
                if best is None or len(p) > best[2]:
                    best = (rank, name, len(p))
    if best is None:
        raise ValueError(f"{module}: in no layer of axle.tools.layering.LAYERS")
    return best[0], best[1]


def backend_of(module: str, known: dict) -> Optional[str]:
    """The backend (a package under axle/backends) a module belongs to, or None."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[:2] == ["axle", "backends"]:
        pkg = ".".join(parts[:3])
        if known.get(pkg, "").endswith("__init__.py"):
            return parts[2]
    return None


@dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported module
    line: int
    in_function: bool


def modules(root: str) -> dict:
    """{dotted module name: path} for every .py file of the package at `root`."""
    out = {}
    base = os.path.dirname(root)
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, f), base)[:-3].replace(os.sep, ".")
                if rel.endswith(".__init__"):
                    rel = rel[: -len(".__init__")]
                out[rel] = os.path.join(dirpath, f)
    return out


def _resolve(name: str, known: dict) -> Optional[str]:
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports(known: dict) -> list:
    """Every import of an axle module by an axle module (top level and inside functions)."""
    out = []
    for mod, path in known.items():
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        is_pkg = os.path.basename(path) == "__init__.py"
        funcs = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    if inner is not node:
                        funcs.add(id(inner))
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    pkg = mod if is_pkg else mod.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        pkg = pkg.rpartition(".")[0]
                    base = f"{pkg}.{node.module}" if node.module else pkg
                else:
                    base = node.module or ""
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            for t in targets:
                if not (t == "axle" or t.startswith("axle.")):
                    continue
                r = _resolve(t, known)
                if r is not None and r != mod:
                    out.append(Import(mod, r, node.lineno, id(node) in funcs))
    return out


def violations(edges: list, known: dict) -> list:
    """Imports that point up a layer, or from one backend into another."""
    bad = []
    for e in edges:
        (rs, ls), (rt, lt) = layer_of(e.source), layer_of(e.target)
        if rt > rs:
            bad.append((e, f"{ls} imports {lt}"))
            continue
        bs, bt = backend_of(e.source, known), backend_of(e.target, known)
        if bs and bt and bs != bt:
            bad.append((e, f"backend {bs} imports backend {bt}"))
    return bad


def cycles(edges: list) -> list:
    """The strongly connected components of more than one module (Tarjan), largest first."""
    graph: dict = {}
    for e in edges:
        graph.setdefault(e.source, set()).add(e.target)
        graph.setdefault(e.target, set())
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out, key=len, reverse=True)


def cycle_path(comp: list, edges: list) -> list:
    """One cycle inside a strongly connected component, as a list of modules."""
    inside = set(comp)
    graph: dict = {}
    for e in edges:
        if e.source in inside and e.target in inside:
            graph.setdefault(e.source, []).append(e.target)
    start = comp[0]
    prev = {start: None}
    frontier = [start]
    while frontier:  # breadth first back to start
        nxt = []
        for v in frontier:
            for w in graph.get(v, []):
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return list(reversed(path)) + [start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return comp


def package_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def report(root: Optional[str] = None) -> tuple[list, list, list]:
    known = modules(root or package_root())
    edges = imports(known)
    return edges, violations(edges, known), cycles(edges)


def main(argv: Optional[list] = None) -> int:
    edges, bad, comps = report()
    lazy = sum(1 for e in edges if e.in_function)
    print(f"{len(edges)} imports between axle modules ({lazy} inside functions)")
    print(f"{len(bad)} layer violations")
    for e, why in bad:
        print(f"  {e.source}:{e.line} -> {e.target}  ({why}{', inside a function' if e.in_function else ''})")
    print(f"{len(comps)} import cycles")
    for comp in comps:
        print(f"  {len(comp)} modules, e.g. {' -> '.join(cycle_path(comp, edges))}")
    return 1 if bad or comps else 0


if __name__ == "__main__":
    sys.exit(main())
