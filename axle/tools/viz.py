"""`axle viz`: a picture of a program as the CPU backend compiles it.

The module goes through the CPU pipeline and code generation (not LLVM), then:

- each fusion kernel is a box around its ops: the op that owns the loop (bold; orange with
  the routine's name when it calls a library, e.g. blas.sgemm, and then the whole box is
  orange) and the ops fused into its loops, with the values it reads from memory as ports
  on its top edge;
- edges between ops are labelled with the shape of the value they carry (f32[32,64]);
- function arguments (green) and results (blue) are nodes of their own;
- the bodies of while/if/case kernels are panels of their own, to the right, titled with
  the kernel they belong to.

The layout is computed here (graph_layout.py, a layered layout as Graphviz's dot makes),
so nothing but Python is needed. `-o x.svg` writes the SVG; `-o x.html` a single
self-contained page with the SVG inside: mouse wheel zooms, dragging pans, clicking a
kernel (or a row of the kernel list) shows its ops as text, shapes, bytes moved, flops,
where it comes from in the source, and its LLVM IR function (k<N>.<op>).

MODULE is a .mlir file, '-' for stdin, or jax:NAME for a JAX workload of
axle/tools/workloads.py (needs jax).
"""
from __future__ import annotations

import argparse
import html
import json
import re
import sys
import textwrap
from dataclasses import dataclass, field
from typing import Optional

from axle.ir.ops import TERMINATOR, has_trait
from axle.tools.compile_cmd import Built, build, fusion_summary, location, read_module, report, short_type, si
from axle.tools.graph_layout import Edge, Node, layout

EPILOG = """examples:
  axle viz model.mlir -o graph.html        (zoom, pan, click a kernel for its ops and LLVM IR)
  axle viz model.mlir -o graph.svg
  axle viz jax:transformer_block -o block.html"""

FONT = 11.0
SMALL = 9.0
CHAR = 0.602  # advance of a monospace glyph, in ems
TITLE_H = 18.0
PANEL_TITLE = 24.0


def text_w(s: str, size: float = FONT) -> float:
    return len(s) * size * CHAR


def esc(s) -> str:
    return html.escape(str(s), quote=True)


# ----------------------------------------------------------------------------- the program


@dataclass
class Box:
    """One kernel drawn as a box: its inner layout and where its ports and root are."""
    kernel: object  # compiler.KernelInfo
    members: list  # ops, in block order (fused ops and the kernel's own op)
    inner: object  # graph_layout.Layout of ports + ops
    ports: dict  # value -> inner node key
    title: str
    labels: dict = field(default_factory=dict)  # inner node key -> text lines
    w: float = 0.0
    h: float = 0.0
    top_inner: float = 0.0  # y of the box's top edge, in inner coordinates
    dx_inner: float = 0.0  # x of inner coordinate 0 inside the box
    x: float = 0.0  # top-left, in panel coordinates (after the outer layout)
    y: float = 0.0


@dataclass
class Panel:
    """One block's graph: the entry function, or a body of a while/if/case kernel."""
    title: str
    block: object
    kernels: list
    boxes: dict = field(default_factory=dict)  # kernel index -> Box
    nodes: dict = field(default_factory=dict)  # outer layout nodes
    edges: list = field(default_factory=list)
    labels: dict = field(default_factory=dict)  # outer node key -> (text lines, css class)
    width: float = 0.0
    height: float = 0.0
    x: float = 0.0
    y: float = 0.0


class Picture:
    """A compiled program ready to draw: panels laid out, ops printed, kernels described."""

    def __init__(self, built: Built):
        self.built = built
        self.program = built.program
        self.function = built.function
        self.text, self.names = _print_function(self.function)
        self.kernels = list(self.program.kernels)
        self.by_op = {k.op: k for k in self.kernels}
        self.ir = kernel_functions(self.program.llvm_ir)
        groups: dict = {}
        for k in self.kernels:
            groups.setdefault(k.op.parent, (k.op.parent, []))[1].append(k)
        body = self.function.body
        self.panels = [self._panel(body, groups.get(body, (body, []))[1], f"@{built.entry}")]
        for bid, (block, ks) in groups.items():
            if bid != body:
                self.panels.append(self._panel(block, ks, self._region_title(block)))
        self._arrange()

    # -- naming
    def name(self, v) -> str:
        return self.names.get(v, "%?")

    def _region_title(self, block) -> str:
        region = block.parent
        op = region.parent if region is not None else None
        if op is None:
            return "region"
        ri = op.regions.index(region)
        roles = {"stablehlo.while": ["cond", "body"], "stablehlo.if": ["true branch", "false branch"]}.get(op.name)
        role = roles[ri] if roles and ri < len(roles) else f"branch {ri}" if op.name == "stablehlo.case" \
            else f"region {ri}"
        owner = self.by_op.get(op)
        who = f"k{owner.index} {op.opname}" if owner is not None else op.opname
        return f"{who}: {role}"

    def top_level_of(self, k):
        """The top-level kernel whose function holds kernel k's code."""
        op = k.op
        body = self.function.body
        while op.parent is not None and op.parent is not body:
            region = op.parent.parent
            if region is None or region.parent is None:
                break
            op = region.parent
        return self.by_op.get(op, k)

    # -- graphs
    def _box(self, k, port_order: Optional[dict] = None) -> Box:
        members = {o: o for o in [k.op] + list(k.fused)}
        block = k.op.parent
        order = {o: i for i, o in enumerate(block.operations)} if block is not None else {}
        ops = sorted(members.values(), key=lambda o: order.get(o, 0))
        nodes, edges, ports = {}, [], {}
        for v in _unique(k.inputs):
            key = ("port", v)
            ports[v] = key
            nodes[key] = Node(8.0, 8.0, pin="first")
        labels = {}
        for o in ops:
            lines = op_label(o, k)
            labels[("op", o)] = lines
            nodes[("op", o)] = Node(max(text_w(s) for s in lines) + 14, 8 + 13 * len(lines))
        seen = set()
        for o in ops:
            for v in _reads(o):
                owner = getattr(v, "owner", None)
                if owner in members and owner is not o:
                    src, lab = ("op", owner), short_type(v.type)
                elif v in ports:
                    src, lab = ports[v], None
                else:
                    continue
                if (src, o) in seen:
                    continue
                seen.add((src, o))
                edges.append(Edge(src, ("op", o), (text_w(lab, SMALL), 11.0) if lab else None, data=lab))
        inner = layout(nodes, edges, hgap=14, vgap=12, margin=8, first_gap=TITLE_H + 6,
                       first_order={ports[v]: x for v, x in (port_order or {}).items() if v in ports})
        title = f"k{k.index} {k.op.opname}" + (f" · {k.library}" if k.library else "")
        box = Box(k, ops, inner, ports, title, labels)
        box.w = max(inner.width, text_w(title) + 16)
        box.dx_inner = (box.w - inner.width) / 2
        if ports:
            box.top_inner = nodes[next(iter(ports.values()))].y
        else:
            box.top_inner = -TITLE_H
        box.h = inner.height - box.top_inner
        return box

    def _panel(self, block, kernels: list, title: str) -> Panel:
        p = self._panel_once(block, kernels, title)
        if p.boxes:  # again, with each box's ports in the left-to-right order of their producers
            order = {}
            for e in p.edges:
                if e.dst[0] == "k" and e.data[1] is not None:
                    order.setdefault(e.dst[1], {})[e.data[1]] = p.nodes[e.src].x
            p = self._panel_once(block, kernels, title, order)
        return p

    def _panel_once(self, block, kernels: list, title: str, port_order: Optional[dict] = None) -> Panel:
        p = Panel(title, block, kernels)
        in_kernel = set()
        for k in kernels:
            box = self._box(k, (port_order or {}).get(k.index))
            p.boxes[k.index] = box
            p.nodes[("k", k.index)] = Node(box.w, box.h)
            in_kernel.update(o for o in box.members)
        root_of = {r: k for k in kernels for r in k.op.results}
        is_func = block is self.function.body
        for i, a in enumerate(block.arguments):
            lines = [f"{'arg' if is_func else 'block arg'} {i}", self.name(a)]
            self._add(p, ("arg", i), lines, "arg")  # not pinned: weights sit beside their first use
        pending = []  # (value, destination key, port value)

        def producer(v):
            owner = getattr(v, "owner", None)
            if v in root_of:
                return ("k", root_of[v].index)
            if owner is block:
                return ("arg", v.index)
            if getattr(owner, "parent", None) is block:  # an op of this block outside every kernel
                key = ("op", owner)
                if key not in p.nodes:
                    self._add(p, key, op_label(owner, None), "op standalone")
                    pending.extend((x, key, None) for x in _reads(owner))
                return key
            key = ("outer", v)
            if key not in p.nodes:
                self._add(p, key, ["outer", self.name(v)], "outer")
            return key

        for o in block.operations[:-1]:  # ops that no kernel computes (effects, unused values)
            if o not in in_kernel and not _is_return(o):
                key = ("op", o)
                self._add(p, key, op_label(o, None), "op standalone")
                pending.extend((x, key, None) for x in _reads(o))
        for k in kernels:
            for v in _unique(k.inputs):
                pending.append((v, ("k", k.index), v))
        term = block.operations[-1] if block.operations else None
        if term is not None and _is_return(term):
            word = "result" if is_func else "yield"
            for i, v in enumerate(term.operands):
                key = ("sink", i)
                self._add(p, key, [f"{word} {i}"], "res", pin="last")
                pending.append((v, key, None))
        done = 0
        while done < len(pending):  # producer() may add more
            v, dst, port = pending[done]
            done += 1
            src = producer(v)
            lab = short_type(v.type)
            e = Edge(src, dst, (text_w(lab, SMALL), 11.0), data=(lab, port))
            if src[0] == "k":  # from the bottom of the kernel's own op
                box = p.boxes[src[1]]
                root = box.inner.nodes[("op", box.kernel.op)]
                e.src_port = (box.dx_inner + root.x - box.w / 2, root.bottom - box.top_inner - box.h / 2)
            if dst[0] == "k" and port is not None:  # to the port of the value on the box's top edge
                box = p.boxes[dst[1]]
                pn = box.inner.nodes[box.ports[port]]
                e.dst_port = (box.dx_inner + pn.x - box.w / 2, -box.h / 2)
            p.edges.append(e)
        lay = layout(p.nodes, p.edges, hgap=26, vgap=14, margin=12)
        p.width, p.height = lay.width, lay.height + PANEL_TITLE
        for idx, box in p.boxes.items():
            n = p.nodes[("k", idx)]
            box.x, box.y = n.x - box.w / 2, n.y - box.h / 2
        return p

    def _add(self, p: Panel, key, lines: list, css: str, pin: Optional[str] = None) -> None:
        if key in p.nodes:
            return
        w = max(text_w(s) for s in lines) + (26 if css in ("arg", "res", "outer") else 14)
        p.nodes[key] = Node(w, 8 + 13 * len(lines), pin=pin)
        p.labels[key] = (lines, css)

    def _arrange(self) -> None:
        main = self.panels[0]
        main.x, main.y = 10.0, 34.0
        x = main.x + main.width + 40
        y = main.y
        for p in self.panels[1:]:
            p.x, p.y = x, y
            y += p.height + 30
        self.width = max(p.x + p.width for p in self.panels) + 10
        self.height = max(p.y + p.height for p in self.panels) + 10
        self.width = max(self.width, text_w(self.header(), 12) * 1.1 + 30)

    def header(self) -> str:
        ks = self.kernels
        libs = sum(1 for k in ks if k.library)
        total = sum(a[1] for a in self.program.allocations)
        return (f"{self.built.name} @{self.built.entry}: {len(ks)} kernels, {libs} library calls, "
                f"{sum(len(k.fused) for k in ks)} fused ops; temporaries peak {si(self.program.arena_bytes)}B "
                f"of {si(total)}B")

    # -- details for the HTML page
    def details(self) -> dict:
        out = {}
        for k in self.kernels:
            members = sorted({o: o for o in [k.op] + list(k.fused)}.values(),
                             key=lambda o: _position(o))
            owner = self.top_level_of(k)
            out[f"k{k.index}"] = {
                "index": k.index, "op": k.op.name, "library": k.library, "depth": k.depth,
                "where": location(k), "enclosing": None if owner is k else f"k{owner.index}",
                "results": [short_type(r.type) for r in k.op.results],
                "inputs": [f"{self.name(v)}: {short_type(v.type)}" for v in _unique(k.inputs)],
                "bytes": int(k.bytes_moved()), "flops": int(k.flops()), "fused": len(k.fused),
                "ops": "\n".join(self.op_text(o) for o in members),
                "llvm": self._llvm_of(k) if owner is k else "",
                "llvm_of": f"k{owner.index}",
            }
        return out

    def _llvm_of(self, k) -> str:
        """The LLVM functions kernel k runs: its own, or those of the earlier kernel whose
        code it shares (the CPU backend compiles identical kernels once)."""
        shares = k.shares
        if shares is None:
            return self.ir.get(k.index, "")
        return f"; k{k.index} runs the same code as k{shares} (one function for both)\n" + self.ir.get(shares, "")

    def op_text(self, op, max_lines: int = 80) -> str:
        text = self.text.get(op, op.name)
        lines = text.splitlines()
        if len(lines) > max_lines:
            lines = lines[:max_lines] + [f"  ... ({len(lines) - max_lines} more lines)"]
        return "\n".join(lines)


def _position(op) -> tuple:
    path = []
    while op is not None and op.parent is not None:
        path.append(op.parent.operations.index(op) if op in op.parent.operations else 0)
        region = op.parent.parent
        op = region.parent if region is not None else None
    return tuple(reversed(path))


def _is_return(op) -> bool:
    return has_trait(op, TERMINATOR)


def _unique(values) -> list:
    seen, out = set(), []
    for v in values:
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out


def _reads(op) -> list:
    """op's operands and the values defined outside it that its regions read."""
    vals = list(op.operands)
    if op.regions:
        inside = set()
        for o in op.walk():
            for r in o.results:
                inside.add(r)
            for reg in o.regions:
                for b in reg.blocks:
                    inside.update(a for a in b.arguments)
        for o in op.walk():
            if o is not op:
                vals.extend(v for v in o.operands if v not in inside)
    return _unique(vals)


def op_label(op, kernel) -> list:
    """The text lines of an op's node."""
    name = op.opname
    if op.name == "stablehlo.constant":
        m = re.search(r"dense<([^<>]*)>", str(op))
        if m:
            v = m.group(1)
            try:
                v = f"{float(v):g}"
            except ValueError:
                pass
            if len(v) <= 14:
                name = f"constant {v}"
    elif op.regions and op.name in ("stablehlo.reduce", "stablehlo.reduce_window", "stablehlo.scatter",
                                    "stablehlo.select_and_scatter", "stablehlo.sort", "stablehlo.all_reduce"):
        body = [o.opname for o in op.regions[-1].blocks[0].operations if not _is_return(o)] \
            if op.regions[-1].blocks else []
        if len(body) == 1:
            name = f"{name}({body[0]})"
    lines = [name]
    if kernel is not None and op is kernel.op and kernel.library:
        lines.append(f"call {kernel.library}")
    return lines


def _print_function(fn) -> tuple:
    """(op -> its printed text, value -> its %name) for every op of a function."""
    from axle.ir.text.printer import Printer

    class Recorder(Printer):
        def __init__(self):
            super().__init__(locations=False)
            self.spans = {}

        def op(self, op, indent):
            start = len(self.lines)
            super().op(op, indent)
            self.spans.setdefault(op, (start, len(self.lines)))

    pr = Recorder()
    pr.op(fn, 0)
    text = {k: textwrap.dedent("\n".join(pr.lines[a:b])) for k, (a, b) in pr.spans.items()}
    return text, dict(pr.namer.names)


def kernel_functions(llvm_ir: str) -> dict:
    """kernel index -> the text of its LLVM functions: `define internal void @"k3.add"(...)`
    and its helpers (`k3.add.par`, the loop a parallel kernel runs on each core), in order."""
    out, cur, buf = {}, None, []
    for line in llvm_ir.splitlines():
        if line.startswith("define"):
            m = re.match(r'define [^@]*@"?k(\d+)\.', line)
            cur, buf = (int(m.group(1)) if m else None), [line]
        elif cur is not None:
            buf.append(line)
            if line.startswith("}"):
                out.setdefault(cur, []).append("\n".join(buf))
                cur = None
    return {k: "\n\n".join(v) for k, v in out.items()}


# ----------------------------------------------------------------------------- SVG

STYLE = """
text { font-family: 'DejaVu Sans Mono', Menlo, Consolas, monospace; font-size: 11px; fill: #1d2330; }
.header { font-size: 12px; font-weight: bold; }
.ptitle { font-size: 12px; font-weight: bold; fill: #4a5366; }
.panel { fill: none; stroke: #c3c8d2; stroke-dasharray: 5 4; }
.kernel > rect.box { fill: #f1f5fd; stroke: #5b7fc7; stroke-width: 1.2; }
.kernel.lib > rect.box { fill: #fff4e5; stroke: #e08a1e; stroke-width: 2.2; }
.kernel.selected > rect.box { stroke: #d6336c; stroke-width: 3; }
.kernel .ktitle { font-weight: bold; fill: #2c4a8a; }
.kernel.lib .ktitle { fill: #a2570a; }
.op > rect { fill: #ffffff; stroke: #9aabcc; }
.op.root > rect { fill: #dfe8fb; stroke: #274a8f; stroke-width: 1.6; }
.op.libcall > rect { fill: #ffd9a8; stroke: #c46a00; stroke-width: 1.6; }
.op.const > rect { fill: #f3f3f3; stroke: #b8b8b8; }
.op.standalone > rect { fill: #ffffff; stroke: #888; stroke-dasharray: 3 2; }
.arg > ellipse { fill: #e3f4e3; stroke: #4a9a4a; }
.res > ellipse { fill: #e9eaff; stroke: #5d5dc8; }
.outer > ellipse { fill: #f6f6f6; stroke: #999; stroke-dasharray: 3 2; }
.port { fill: #5b7fc7; }
.edge { fill: none; stroke: #5f6670; stroke-width: 1.2; }
.iedge { fill: none; stroke: #8d9bb8; stroke-width: 1; }
.elabel { font-size: 9px; fill: #39404d; }
.lbg { fill: #ffffff; fill-opacity: 0.85; }
.kernel { cursor: pointer; }
"""


def _path(points: list) -> str:
    (x0, y0) = points[0]
    d = [f"M{x0:.1f},{y0:.1f}"]
    for (xa, ya), (xb, yb) in zip(points, points[1:]):
        dy = (yb - ya) / 2
        if abs(xb - xa) < 0.5:
            d.append(f"L{xb:.1f},{yb:.1f}")
        else:
            d.append(f"C{xa:.1f},{ya + dy:.1f} {xb:.1f},{yb - dy:.1f} {xb:.1f},{yb:.1f}")
    return " ".join(d)


def _node_svg(out: list, n: Node, lines: list, css: str, x0: float, y0: float, tip: str = "") -> None:
    cx, cy = x0 + n.x, y0 + n.y
    out.append(f'<g class="{css}">')
    if tip:
        out.append(f"<title>{esc(tip)}</title>")
    if css.split()[0] in ("arg", "res", "outer"):
        out.append(f'<ellipse cx="{cx:.1f}" cy="{cy:.1f}" rx="{n.w / 2:.1f}" ry="{n.h / 2:.1f}"/>')
    else:
        out.append(f'<rect x="{cx - n.w / 2:.1f}" y="{cy - n.h / 2:.1f}" width="{n.w:.1f}" height="{n.h:.1f}" '
                   f'rx="4"/>')
    top = cy - 13 * len(lines) / 2 + 10
    for i, s in enumerate(lines):
        out.append(f'<text x="{cx:.1f}" y="{top + 13 * i:.1f}" text-anchor="middle">{esc(s)}</text>')
    out.append("</g>")


def render_svg(pic: Picture, for_html: bool = False, tooltips: bool = True) -> str:
    """The picture as SVG. `tooltips`: each op's printed text as its <title> (hover)."""
    W, H = pic.width, pic.height
    out = []
    if for_html:
        out.append(f'<svg xmlns="http://www.w3.org/2000/svg" id="graph" width="100%" height="100%" '
                   f'data-width="{W:.0f}" data-height="{H:.0f}">')
    else:
        out.append(f'<svg xmlns="http://www.w3.org/2000/svg" width="{W:.0f}" height="{H:.0f}" '
                   f'viewBox="0 0 {W:.0f} {H:.0f}">')
    out.append(f"<style>{STYLE}</style>")
    out.append('<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
               'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#5f6670"/></marker>'
               '<marker id="iarrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" '
               'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#8d9bb8"/></marker></defs>')
    out.append('<g id="viewport">')
    if not for_html:
        out.append(f'<rect x="0" y="0" width="{W:.0f}" height="{H:.0f}" fill="#ffffff"/>')
    out.append(f'<text class="header" x="10" y="20">{esc(pic.header())}</text>')
    for pi, p in enumerate(pic.panels):
        _panel_svg(out, pic, p, pi, tooltips)
    out.append("</g></svg>")
    return "\n".join(out) + "\n"


def _panel_svg(out: list, pic: Picture, p: Panel, pi: int, tooltips: bool = True) -> None:
    x0, y0 = p.x, p.y + PANEL_TITLE
    out.append(f'<g class="panelg" id="panel{pi}">')
    out.append(f'<rect class="panel" x="{p.x:.1f}" y="{p.y:.1f}" width="{p.width:.1f}" height="{p.height:.1f}" '
               f'rx="6"/>')
    out.append(f'<text class="ptitle" x="{p.x + 8:.1f}" y="{p.y + 16:.1f}">{esc(p.title)} '
               f'({len(p.kernels)} kernel{"s" * (len(p.kernels) != 1)})</text>')
    for idx, box in p.boxes.items():
        _box_svg(out, pic, box, x0, y0, tooltips)
    for key, (lines, css) in p.labels.items():
        tip = pic.text.get(key[1], "") if key[0] == "op" and tooltips else ""
        _node_svg(out, p.nodes[key], lines, css, x0, y0, tip)
    for e in p.edges:
        if not e.points:
            continue
        lab, port = e.data
        pts = [(x + x0, y + y0) for x, y in e.points]
        out.append(f'<path class="edge" d="{_path(pts)}" marker-end="url(#arrow)"/>')
        if e.label_at is not None:
            lx, ly = e.label_at
            _label(out, lx + x0, ly + y0, lab)
    out.append("</g>")


def _label(out: list, x: float, y: float, s: str, css: str = "elabel", size: float = SMALL) -> None:
    """Text whose middle line is at y, on a white background (edges may pass under it)."""
    w, h = text_w(s, size), size + 3
    out.append(f'<rect class="lbg" x="{x - 1:.1f}" y="{y - h / 2:.1f}" width="{w + 2:.1f}" height="{h:.1f}"/>')
    out.append(f'<text class="{css}" x="{x:.1f}" y="{y + size * 0.35:.1f}">{esc(s)}</text>')


def _box_svg(out: list, pic: Picture, box: Box, x0: float, y0: float, tooltips: bool = True) -> None:
    k = box.kernel
    lib = " lib" if k.library else ""
    bx, by = box.x + x0, box.y + y0
    out.append(f'<g class="kernel{lib}" id="k{k.index}" data-kernel="k{k.index}" data-x="{bx:.0f}" '
               f'data-y="{by:.0f}" data-w="{box.w:.0f}" data-h="{box.h:.0f}">')
    tip = (f"k{k.index} {k.op.name}" + (f" (calls {k.library})" if k.library else "")
           + f" at {location(k)}: {len(k.fused)} fused ops, {si(k.bytes_moved())}B moved, {si(k.flops())} flops")
    out.append(f"<title>{esc(tip)}</title>")
    out.append(f'<rect class="box" x="{bx:.1f}" y="{by:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" rx="7"/>')
    _label(out, bx + 7, by + 10, box.title, "ktitle", FONT)
    ox, oy = bx + box.dx_inner, by - box.top_inner
    for e in box.inner.edges:
        pts = [(x + ox, y + oy) for x, y in e.points]
        out.append(f'<path class="iedge" d="{_path(pts)}" marker-end="url(#iarrow)"/>')
        if e.label_at is not None and e.data:
            lx, ly = e.label_at
            _label(out, lx + ox, ly + oy, e.data)
    for o in box.members:
        n = box.inner.nodes[("op", o)]
        css = "op"
        if o is k.op:
            css += " libcall" if k.library else " root"
        elif o.name == "stablehlo.constant":
            css += " const"
        _node_svg(out, n, box.labels[("op", o)], css, ox, oy, pic.text.get(o, o.name) if tooltips else "")
    for key in box.ports.values():
        n = box.inner.nodes[key]
        out.append(f'<circle class="port" cx="{n.x + ox:.1f}" cy="{n.y + oy:.1f}" r="3.5"/>')
    out.append("</g>")


# ----------------------------------------------------------------------------- HTML

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>axle viz: __TITLE__</title>
<style>
html, body { margin: 0; height: 100%; font-family: system-ui, sans-serif; font-size: 13px; color: #1d2330; }
#top { height: 34px; display: flex; align-items: center; gap: 14px; padding: 0 12px; border-bottom: 1px solid #d5d9e0;
       background: #f7f8fa; }
#top button { font-size: 12px; }
#wrap { display: flex; height: calc(100% - 35px); }
#canvas { flex: 1; overflow: hidden; background: #ffffff; cursor: grab; }
#canvas.dragging { cursor: grabbing; }
#side { width: 38%; min-width: 320px; max-width: 720px; overflow: auto; border-left: 1px solid #d5d9e0;
        padding: 10px 14px; box-sizing: border-box; }
pre { background: #f5f6f8; padding: 8px; overflow: auto; font-size: 11.5px; line-height: 1.35; white-space: pre; }
pre.ir { max-height: 420px; }
table { border-collapse: collapse; font-size: 12px; }
td, th { padding: 2px 8px 2px 0; text-align: left; vertical-align: top; }
td.n { text-align: right; }
tr.row { cursor: pointer; } tr.row:hover { background: #eef3ff; } tr.lib td:first-child { color: #a2570a; }
h2 { font-size: 15px; margin: 6px 0 8px; } h3 { font-size: 13px; margin: 12px 0 4px; }
.hint { color: #667; }
</style></head>
<body>
<div id="top"><b>axle viz</b><span>__TITLE__</span>
<button id="fit">fit</button><button id="zin">+</button><button id="zout">&minus;</button>
<span class="hint">wheel: zoom &middot; drag: pan &middot; click a kernel: details</span></div>
<div id="wrap"><div id="canvas">
__SVG__
</div>
<div id="side"><div id="info"></div></div></div>
<script>
const KERNELS = __KERNELS__;
const SUMMARY = __SUMMARY__;
(function () {
  const canvas = document.getElementById('canvas');
  const svg = document.getElementById('graph');
  const vp = document.getElementById('viewport');
  const W = +svg.dataset.width, H = +svg.dataset.height;
  let s = 1, tx = 0, ty = 0;
  function apply() { vp.setAttribute('transform', 'translate(' + tx + ',' + ty + ') scale(' + s + ')'); }
  function fit() {
    const r = canvas.getBoundingClientRect();
    s = Math.min(r.width / W, r.height / H, 1.5) * 0.97;
    tx = (r.width - W * s) / 2; ty = 8; apply();
  }
  function zoomAt(mx, my, f) {
    const ns = Math.min(40, Math.max(0.02, s * f));
    tx = mx - (mx - tx) * ns / s; ty = my - (my - ty) * ns / s; s = ns; apply();
  }
  canvas.addEventListener('wheel', function (e) {
    e.preventDefault();
    const r = canvas.getBoundingClientRect();
    zoomAt(e.clientX - r.left, e.clientY - r.top, Math.exp(-e.deltaY * (e.deltaMode ? 0.05 : 0.0015)));
  }, { passive: false });
  let drag = null, moved = 0;
  canvas.addEventListener('mousedown', function (e) {
    drag = { x: e.clientX, y: e.clientY, tx: tx, ty: ty }; moved = 0; canvas.classList.add('dragging');
  });
  window.addEventListener('mousemove', function (e) {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    moved = Math.max(moved, Math.abs(dx) + Math.abs(dy));
    tx = drag.tx + dx; ty = drag.ty + dy; apply();
  });
  window.addEventListener('mouseup', function () { drag = null; canvas.classList.remove('dragging'); });
  canvas.addEventListener('click', function (e) {
    if (moved > 4) return;
    const g = e.target.closest ? e.target.closest('g.kernel') : null;
    if (g) show(g.dataset.kernel, false);
  });
  document.getElementById('fit').onclick = fit;
  document.getElementById('zin').onclick = function () { const r = canvas.getBoundingClientRect(); zoomAt(r.width / 2, r.height / 2, 1.4); };
  document.getElementById('zout').onclick = function () { const r = canvas.getBoundingClientRect(); zoomAt(r.width / 2, r.height / 2, 1 / 1.4); };
  function esc(t) { return String(t).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'); }
  function si(x) {
    const u = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'K']];
    for (const [d, p] of u) if (Math.abs(x) >= d) return (x / d).toPrecision(3) + p;
    return String(x);
  }
  function center(g) {
    const r = canvas.getBoundingClientRect();
    const x = +g.dataset.x + g.dataset.w / 2, y = +g.dataset.y + g.dataset.h / 2;
    s = Math.max(s, Math.min(1.2, r.height / (2 * g.dataset.h)));
    tx = r.width / 2 - x * s; ty = r.height / 2 - y * s; apply();
  }
  function show(id, move) {
    const k = KERNELS[id]; if (!k) return;
    document.querySelectorAll('g.kernel.selected').forEach(function (g) { g.classList.remove('selected'); });
    const g = document.getElementById(id);
    if (g) { g.classList.add('selected'); if (move) center(g); }
    let h = '<p><a href="#" id="back">&larr; all kernels</a></p>';
    h += '<h2>' + esc(id) + ' &middot; ' + esc(k.op) + (k.library ? ' &middot; calls ' + esc(k.library) : '') + '</h2>';
    h += '<table>';
    h += '<tr><th>location</th><td>' + esc(k.where) + '</td></tr>';
    h += '<tr><th>results</th><td>' + esc(k.results.join(', ')) + '</td></tr>';
    h += '<tr><th>reads</th><td>' + (k.inputs.length ? esc(k.inputs.join(', ')) : '-') + '</td></tr>';
    h += '<tr><th>fused ops</th><td>' + k.fused + '</td></tr>';
    h += '<tr><th>bytes moved</th><td>' + si(k.bytes) + ' (' + k.bytes + ')</td></tr>';
    h += '<tr><th>flops</th><td>' + si(k.flops) + ' (' + k.flops + ')</td></tr>';
    if (k.enclosing) h += '<tr><th>inside</th><td>' + esc(k.enclosing) + ' (nesting depth ' + k.depth + ')</td></tr>';
    h += '</table>';
    h += '<h3>ops (after the pipeline)</h3><pre>' + esc(k.ops) + '</pre>';
    const ir = k.llvm || (KERNELS[k.llvm_of] ? KERNELS[k.llvm_of].llvm : '');
    h += '<h3>LLVM IR' + (k.llvm ? '' : ' (its loops are inside ' + esc(k.llvm_of) + "'s function)") + '</h3>';
    h += '<pre class="ir">' + (ir ? esc(ir) : '(not found)') + '</pre>';
    document.getElementById('info').innerHTML = h;
    document.getElementById('back').onclick = function (e) { e.preventDefault(); overview(); };
  }
  function overview() {
    let h = '<h2>Fusion summary</h2><pre>' + esc(SUMMARY) + '</pre><h3>Kernels</h3><table>';
    h += '<tr><th>kernel</th><th>op</th><th>fused</th><th>library</th><th>bytes</th><th>flops</th></tr>';
    for (const id of Object.keys(KERNELS)) {
      const k = KERNELS[id];
      h += '<tr class="row' + (k.library ? ' lib' : '') + '" data-k="' + id + '"><td>' + '&nbsp;&nbsp;'.repeat(k.depth) + id +
           '</td><td>' + esc(k.op.replace('stablehlo.', '')) + '</td><td class="n">' + k.fused + '</td><td>' +
           esc(k.library || '') + '</td><td class="n">' + si(k.bytes) + '</td><td class="n">' + si(k.flops) + '</td></tr>';
    }
    h += '</table>';
    document.getElementById('info').innerHTML = h;
    document.querySelectorAll('tr.row').forEach(function (tr) { tr.onclick = function () { show(tr.dataset.k, true); }; });
  }
  fit(); overview();
  window.addEventListener('resize', fit);
})();
</script>
</body></html>
"""


def _script_json(obj) -> str:
    return json.dumps(obj).replace("</", "<\\/").replace("<!--", "<\\!--")


def render_html(pic: Picture) -> str:
    title = f"{pic.built.name} @{pic.built.entry}"
    summary = fusion_summary(pic.program, table=False)
    svg = render_svg(pic, for_html=True)
    return (PAGE.replace("__TITLE__", esc(title)).replace("__KERNELS__", _script_json(pic.details()))
            .replace("__SUMMARY__", _script_json(summary)).replace("__SVG__", svg))


def visualize(text: str, output: str, name: str = "module", function: Optional[str] = None,
              progress: bool = False, tooltips: bool = True) -> Picture:
    """Compile `text` for the CPU and write its picture to `output` (.svg or .html)."""
    pic = Picture(build(text, name, function, progress=progress))
    write(pic, output, tooltips)
    return pic


def write(pic: Picture, output: str, tooltips: bool = True) -> None:
    doc = render_html(pic) if output.lower().endswith((".html", ".htm")) else render_svg(pic, tooltips=tooltips)
    with open(output, "w", encoding="utf-8") as fh:
        fh.write(doc)


def build_parser(prog: str = "axle viz") -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__, epilog=EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("module", metavar="MODULE", help=".mlir file, '-' for stdin, or jax:NAME (a workload)")
    ap.add_argument("-o", "--output", default="graph.html",
                    help="graph.svg (a picture) or graph.html (interactive page); default graph.html")
    ap.add_argument("--function", help="function to compile (default: @main)")
    ap.add_argument("--no-tooltips", dest="tooltips", action="store_false",
                    help="SVG: leave out each op's text shown on hover (a smaller file)")
    return ap


def main(argv: Optional[list] = None) -> int:
    a = build_parser().parse_args(argv)
    try:
        name, text, _ = read_module(a.module)
        pic = visualize(text, a.output, name, a.function, progress=True, tooltips=a.tooltips)
    except Exception as e:
        code = report(e, "axle viz")
        if code is None:
            raise
        return code
    ks = pic.kernels
    print(f"wrote {a.output}: {len(ks)} kernels ({sum(1 for k in ks if k.library)} library calls) in "
          f"{len(pic.panels)} panel{'s' * (len(pic.panels) != 1)}"
          + ("; open it in a browser" if a.output.lower().endswith((".html", ".htm")) else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
