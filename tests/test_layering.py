"""axle's import graph keeps its layers (axle/tools/layering.py): no import points up a
layer or into another backend, no import cycle (imports inside functions count), and no
source file is over 800 lines."""
import os
import textwrap

from axle.tools import layering

MAX_LINES = 800


def _fmt(bad, comps, edges):
    lines = [f"{e.source}:{e.line} -> {e.target} ({why}{', inside a function' if e.in_function else ''})"
             for e, why in bad]
    lines += [f"cycle of {len(c)} modules: {' -> '.join(layering.cycle_path(c, edges))}" for c in comps]
    return "\n".join(lines)


def test_axle_has_no_layer_violations_and_no_import_cycles():
    edges, bad, comps = layering.report()
    assert len(edges) > 1000  # the whole package was read (imports inside functions too)
    assert any(e.in_function for e in edges)
    assert not bad and not comps, "\n" + _fmt(bad, comps, edges)


def test_no_source_file_is_over_800_lines():
    root = layering.package_root()
    long = []
    for name, path in layering.modules(root).items():
        with open(path, encoding="utf-8") as fh:
            n = sum(1 for _ in fh)
        if n > MAX_LINES:
            long.append(f"{os.path.relpath(path, os.path.dirname(root))}: {n} lines")
    assert not long, f"files over {MAX_LINES} lines:\n" + "\n".join(sorted(long))


def _package(tmp_path, files: dict) -> str:
    root = tmp_path / "axle"
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return str(root)


def test_the_tool_finds_an_upward_import_a_cycle_and_imports_inside_functions(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "errors.py": "",
        "ir/__init__.py": "",
        "ir/core.py": """\
            from axle.errors import *

            def printed(op):
                from axle.passes import cse  # an upward import, inside a function
                return cse
            """,
        "passes/__init__.py": "from axle.passes import cse\n",
        "passes/cse.py": """\
            import axle.errors

            def run():
                from . import simplify  # relative, inside a function
            """,
        "passes/simplify.py": "import axle.passes.cse\n",  # closes the cycle cse -> simplify -> cse
        "backends/__init__.py": "",
        "backends/cpu/__init__.py": "",
        "backends/cpu/k.py": "from axle.backends.gpu import g\n",
        "backends/gpu/__init__.py": "",
        "backends/gpu/g.py": "",
    })
    edges, bad, comps = layering.report(root)
    got = {(e.source, e.target, e.in_function) for e in edges}
    assert ("axle.ir.core", "axle.errors", False) in got
    assert ("axle.passes.cse", "axle.errors", False) in got
    assert ("axle.ir.core", "axle.passes.cse", True) in got
    assert ("axle.passes.cse", "axle.passes.simplify", True) in got
    # importing a submodule does not count as importing its package
    assert not any(e.target == "axle.passes" for e in edges if e.source == "axle.passes.simplify")
    reasons = {(e.source, e.target): why for e, why in bad}
    assert reasons == {("axle.ir.core", "axle.passes.cse"): "ir imports passes",
                       ("axle.backends.cpu.k", "axle.backends.gpu.g"): "backend cpu imports backend gpu"}
    assert comps == [["axle.passes.cse", "axle.passes.simplify"]]
    path = layering.cycle_path(comps[0], edges)
    assert path[0] == path[-1] and set(path) == set(comps[0])


def test_the_tool_sees_no_cycle_where_imports_only_point_down(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "ir/__init__.py": "from axle.ir import core\n",
        "ir/core.py": "",
        "passes/__init__.py": "",
        "passes/cse.py": "def f():\n    from axle.ir.core import x\n",
    })
    edges, bad, comps = layering.report(root)
    assert {(e.source, e.target) for e in edges} == {("axle.ir", "axle.ir.core"), ("axle.passes.cse", "axle.ir.core")}
    assert bad == [] and comps == []
    assert layering.layer_of("axle.profiler")[1] == "profiler"
    assert layering.layer_of("axle.backends.cpu.compiler") > layering.layer_of("axle.passes.cse")
