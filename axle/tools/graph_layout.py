"""A layered graph layout in pure Python (the Sugiyama method, as Graphviz's `dot` does it),
so that `axle viz` draws pictures without any system dependency.

    layout(nodes, edges) -> Layout

`nodes` maps a key to a Node (its width and height; `pin="first"` keeps it in the top
layer, `pin="last"` in the bottom one); `edges` is a list of Edge(src, dst, label=(w, h)).
Graphs are drawn top to bottom:

1. cycles are broken by reversing the edges a depth-first search finds going back;
2. layers: the longest path from the sources (an edge with a label spans two layers, its
   label sitting in the layer between), then each source is pushed down to just above its
   highest reader, so that constants and the like sit beside their use;
3. edges spanning several layers get one dummy vertex per layer crossed (the label's
   dummy is as wide as the label);
4. order within layers: barycenter sweeps, down then up, keeping the order with the fewest
   crossings;
5. x coordinates: each vertex is pulled towards the mean of its neighbours', layer by layer
   down and up, placed exactly by isotonic regression (pool adjacent violators) under the
   order and minimum-spacing constraints; dummies weigh more, so long edges run straight.

Results: each Node gets x, y (its center) and layer; each Edge gets `points`, a polyline
from the bottom of its source to the top of its destination, and `label_at`, the left
end of the label's middle line.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Optional


@dataclass
class Node:
    w: float
    h: float
    pin: Optional[str] = None  # "first" | "last"
    x: float = 0.0  # center (results)
    y: float = 0.0
    layer: int = 0

    @property
    def left(self) -> float:
        return self.x - self.w / 2

    @property
    def top(self) -> float:
        return self.y - self.h / 2

    @property
    def bottom(self) -> float:
        return self.y + self.h / 2


@dataclass
class Edge:
    src: Hashable
    dst: Hashable
    label: Optional[tuple] = None  # (width, height) of the label box
    data: object = None  # the caller's
    src_port: Optional[tuple] = None  # (dx, dy) from the source's center; default its bottom middle
    dst_port: Optional[tuple] = None  # (dx, dy) from the destination's center; default its top middle
    points: list = field(default_factory=list)  # results
    label_at: Optional[tuple] = None


@dataclass
class Layout:
    nodes: dict
    edges: list
    width: float
    height: float


@dataclass
class _V:  # a vertex of the layered graph: a node or a dummy
    w: float
    h: float
    layer: int
    key: Hashable = None  # the node's key; None for dummies
    label: bool = False  # a dummy carrying an edge label
    preds: list = field(default_factory=list)  # (vertex, x offset of the edge there, x offset here)
    succs: list = field(default_factory=list)
    x: float = 0.0
    y: float = 0.0
    pos: int = 0

    @property
    def dummy(self) -> bool:
        return self.key is None

    @property
    def offset(self) -> float:
        """From the center to where edges pass (dummies): the left side for a label's dummy."""
        return -(self.w / 2 - 2) if self.label else 0.0


LABEL_PAD = 6.0


def layout(nodes: dict, edges: list, hgap: float = 20.0, vgap: float = 18.0, margin: float = 10.0,
           first_gap: Optional[float] = None, sweeps: int = 10, first_order: Optional[dict] = None) -> Layout:
    """Lay out the graph (see the module's doc). `first_order` (key -> rank) fixes the left
    to right order of the nodes pinned to the first layer."""
    keys = list(nodes)
    index = {k: i for i, k in enumerate(keys)}
    es = [e for e in edges if e.src in index and e.dst in index and e.src != e.dst]
    # 1. break cycles: orient every edge forward in a DFS order
    succ: list[list] = [[] for _ in keys]
    for j, e in enumerate(es):
        succ[index[e.src]].append((index[e.dst], j))
    reversed_ = _back_edges(len(keys), succ)
    dag = []  # (u, v, edge index) oriented forward
    for j, e in enumerate(es):
        u, v = index[e.src], index[e.dst]
        dag.append((v, u, j) if j in reversed_ else (u, v, j))
    # 2. layers
    span = [2 if e.label else 1 for e in es]
    layer = _layers(keys, nodes, dag, span)
    # 3. vertices and dummies
    vs = [_V(nodes[k].w, nodes[k].h, layer[i], key=k) for i, k in enumerate(keys)]
    chains = {}
    for u, v, j in dag:
        e = es[j]
        fwd = j not in reversed_
        off_u = e.src_port[0] if fwd and e.src_port else 0.0
        off_v = e.dst_port[0] if fwd and e.dst_port else 0.0
        chain = [u]
        for d in range(layer[u] + 1, layer[v]):
            lab = es[j].label if d == layer[u] + 1 else None
            if lab:
                vs.append(_V(lab[0] + LABEL_PAD + 2, lab[1], d, label=True))
            else:
                vs.append(_V(2.0, 0.0, d))
            chain.append(len(vs) - 1)
        chain.append(v)
        for k, (a, b) in enumerate(zip(chain, chain[1:])):
            oa = off_u if k == 0 else vs[a].offset
            ob = off_v if k == len(chain) - 2 else vs[b].offset
            vs[a].succs.append((b, ob, oa))
            vs[b].preds.append((a, oa, ob))
        chains[j] = chain
    n_layers = max((v.layer for v in vs), default=-1) + 1
    layers: list[list[int]] = [[] for _ in range(n_layers)]
    for i, v in enumerate(vs):
        layers[v.layer].append(i)
    # 4. order
    fixed = None
    if first_order and layers and all(vs[i].key in first_order for i in layers[0]):
        fixed = {i: first_order[vs[i].key] for i in layers[0]}
    _order(vs, layers, sweeps, fixed)
    # 5. coordinates
    y = margin
    band = []  # (top, bottom) of each layer
    for li, row in enumerate(layers):
        h = max((vs[i].h for i in row), default=0.0)
        for i in row:
            vs[i].y = y + h / 2
        band.append((y, y + h))
        y += h + (first_gap if li == 0 and first_gap is not None else vgap)
    height = (band[-1][1] if band else 0.0) + margin
    _place_x(vs, layers, hgap)
    lo = min((vs[i].x - vs[i].w / 2 for row in layers for i in row), default=0.0)
    for v in vs:
        v.x += margin - lo
    width = max((v.x + v.w / 2 for v in vs), default=0.0) + margin
    for i, k in enumerate(keys):
        n = nodes[k]
        n.x, n.y, n.layer = vs[i].x, vs[i].y, vs[i].layer
    for j, e in enumerate(es):
        chain = chains[j]
        fwd = j not in reversed_
        first, last = vs[chain[0]], vs[chain[-1]]
        sdx, sdy = e.src_port if fwd and e.src_port else (0.0, first.h / 2)
        tdx, tdy = e.dst_port if fwd and e.dst_port else (0.0, -last.h / 2)
        # straight down inside each layer's band; curves only between the layers
        pts = [(first.x + sdx, first.y + sdy)]
        if band[first.layer][1] > pts[0][1] + 0.5:
            pts.append((first.x + sdx, band[first.layer][1]))
        e.label_at = None
        for d in chain[1:-1]:
            v = vs[d]
            px = v.x + v.offset
            pts.append((px, band[v.layer][0]))
            pts.append((px, band[v.layer][1]))
            if v.label:
                e.label_at = (px + LABEL_PAD, v.y)
        end = (last.x + tdx, last.y + tdy)
        if band[last.layer][0] < end[1] - 0.5:
            pts.append((end[0], band[last.layer][0]))
        pts.append(end)
        if j in reversed_:
            pts.reverse()
        e.points = pts
        if e.label and e.label_at is None:  # a label without a layer of its own (reversed edge)
            (x0, y0), (x1, y1) = pts[0], pts[-1]
            e.label_at = ((x0 + x1) / 2 + LABEL_PAD, (y0 + y1) / 2)
    return Layout(nodes, es, width, height)


def _back_edges(n: int, succ: list) -> set:
    """Indices of edges that close a cycle in an iterative depth-first search."""
    state = [0] * n  # 0 new, 1 on the stack, 2 done
    back = set()
    for root in range(n):
        if state[root]:
            continue
        stack = [(root, iter(succ[root]))]
        state[root] = 1
        while stack:
            u, it = stack[-1]
            for v, j in it:
                if state[v] == 1:
                    back.add(j)
                elif state[v] == 0:
                    state[v] = 1
                    stack.append((v, iter(succ[v])))
                    break
            else:
                state[u] = 2
                stack.pop()
    return back


def _layers(keys: list, nodes: dict, dag: list, span: list) -> list:
    n = len(keys)
    ins: list[list] = [[] for _ in range(n)]
    outs: list[list] = [[] for _ in range(n)]
    for u, v, j in dag:
        ins[v].append((u, span[j]))
        outs[u].append((v, span[j]))
    order = _topo(n, outs, ins)
    pinned_first = [nodes[k].pin == "first" for k in keys]
    base = 1 if any(pinned_first) else 0  # the first layer holds only the pinned nodes
    layer = [0] * n
    for v in order:
        if pinned_first[v] and not ins[v]:
            layer[v] = 0
        else:
            layer[v] = max([layer[u] + s for u, s in ins[v]] + [base])
    for v in reversed(order):  # sources down to just above their first reader
        if not ins[v] and outs[v] and not pinned_first[v] and nodes[keys[v]].pin != "last":
            layer[v] = max(base, min(layer[w] - s for w, s in outs[v]))
    last = [v for v in range(n) if nodes[keys[v]].pin == "last" and not outs[v]]
    if last:
        bottom = max(layer)
        for v in last:
            layer[v] = bottom
    return layer


def _topo(n: int, outs: list, ins: list) -> list:
    indeg = [len(x) for x in ins]
    ready = [v for v in range(n) if indeg[v] == 0]
    ready.reverse()
    order = []
    while ready:
        u = ready.pop()
        order.append(u)
        for v, _ in reversed(outs[u]):
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    return order


def _order(vs: list, layers: list, sweeps: int, fixed: Optional[dict] = None) -> None:
    # first: a depth-first order from the top, so that connected vertices start together
    seen = set()
    rank = {}

    def visit(i):
        stack = [i]
        while stack:
            u = stack.pop()
            if u in seen:
                continue
            seen.add(u)
            rank[u] = len(rank)
            stack.extend(j for j, _, _ in reversed(vs[u].succs))
    for row in layers:
        for i in row:
            visit(i)
    for row in layers:
        row.sort(key=lambda i: rank[i])
        for p, i in enumerate(row):
            vs[i].pos = p
    if fixed is not None:  # the first layer keeps the order it is given
        layers[0].sort(key=lambda i: (fixed[i], vs[i].pos))
        for p, i in enumerate(layers[0]):
            vs[i].pos = p
        _sweep(vs, layers, range(1, len(layers)), True)
    best = [list(r) for r in layers]
    best_c = _crossings(vs, layers)
    for it in range(sweeps):
        if best_c == 0:
            break
        down = it % 2 == 0
        rng = range(1, len(layers)) if down else range(len(layers) - 2, -1 if fixed is None else 0, -1)
        _sweep(vs, layers, rng, down)
        c = _crossings(vs, layers)
        if c < best_c:
            best_c, best = c, [list(r) for r in layers]
    for li, row in enumerate(best):
        layers[li][:] = row
        for p, i in enumerate(row):
            vs[i].pos = p


def _sweep(vs: list, layers: list, rng, down: bool) -> None:
    """Sort each layer of `rng` by the mean position of its vertices' neighbours above
    (`down`) or below."""
    for li in rng:
        row = layers[li]
        bary = {}
        for i in row:
            nb = vs[i].preds if down else vs[i].succs
            bary[i] = sum(vs[j].pos for j, _, _ in nb) / len(nb) if nb else vs[i].pos
        row.sort(key=lambda i: (bary[i], vs[i].pos))
        for p, i in enumerate(row):
            vs[i].pos = p


def _crossings(vs: list, layers: list) -> int:
    total = 0
    for row in layers[:-1]:
        pairs = sorted((vs[i].pos, vs[j].pos) for i in row for j, _, _ in vs[i].succs)
        total += _inversions([b for _, b in pairs])
    return total


def _inversions(a: list) -> int:
    if len(a) < 2:
        return 0
    tree = [0] * (max(a) + 2)
    inv = 0
    for k, x in enumerate(a):  # count earlier elements greater than x (a Fenwick tree)
        s, i = 0, x + 1
        while i > 0:
            s += tree[i]
            i -= i & -i
        inv += k - s
        i = x + 1
        while i < len(tree):
            tree[i] += 1
            i += i & -i
    return inv


def _gap(a: _V, b: _V, hgap: float) -> float:
    if a.dummy and b.dummy:
        return 6.0
    if a.dummy or b.dummy:
        return hgap / 2
    return hgap


def _place_x(vs: list, layers: list, hgap: float, rounds: int = 6) -> None:
    for row in layers:  # packed from the left
        x = 0.0
        prev = None
        for i in row:
            v = vs[i]
            x = v.w / 2 if prev is None else x + prev.w / 2 + _gap(prev, v, hgap) + v.w / 2
            v.x = x
            prev = v
    for r in range(rounds * 2 + 1):
        if r == rounds * 2:
            order, mode = range(len(layers)), "both"
        elif r % 2 == 0:
            order, mode = range(1, len(layers)), "preds"
        else:
            order, mode = range(len(layers) - 2, -1, -1), "succs"
        for li in order:
            row = layers[li]
            targets, weights = [], []
            for i in row:
                v = vs[i]
                nb = v.preds if mode == "preds" else v.succs if mode == "succs" else v.preds + v.succs
                if nb:
                    t = sum(vs[j].x + oj - oi for j, oj, oi in nb) / len(nb)
                    w = 4.0 if v.dummy else 1.0
                else:
                    t, w = v.x, 0.05
                targets.append(t)
                weights.append(w)
            seps = [vs[a].w / 2 + _gap(vs[a], vs[b], hgap) + vs[b].w / 2 for a, b in zip(row, row[1:])]
            for i, x in zip(row, _isotonic_place(targets, weights, seps)):
                vs[i].x = x


def _isotonic_place(targets: list, weights: list, seps: list) -> list:
    """x minimizing sum w_i (x_i - t_i)^2 with x_{i+1} - x_i >= seps[i] (pool adjacent violators)."""
    c = [0.0]
    for s in seps:
        c.append(c[-1] + s)
    blocks = []  # [weighted sum, weight, count]
    for t, w, ci in zip(targets, weights, c):
        blocks.append([w * (t - ci), w, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, ww, n = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += ww
            blocks[-1][2] += n
    out = []
    k = 0
    for s, w, n in blocks:
        for _ in range(n):
            out.append(s / w + c[k])
            k += 1
    return out
