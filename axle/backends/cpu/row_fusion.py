"""Row fusion: reductions computed inside the loop of the kernel that reads them.

Softmax, layernorm and attention read a row reduction (max, sum, mean, variance) back
along the same row:

    m = reduce_max(x, dims=[1]);  e = exp(x - m[:, None]);  s = reduce_sum(e, dims=[1])
    y = e / s[:, None]

Emitted one kernel per reduction, m and s are stored in memory and x is read from memory
three times. Row fusion instead gives the consumer (the elementwise kernel writing y) an
outer loop over rows; at each row it first computes m and then s (each a short loop over
the row, which stays in the L1 cache) into stack slots, then writes the row of y reading
them as scalars. No temporary buffer, one pass over memory: the fused softmax of XLA's GPU
backend and of hand-written CPU kernels, found here by analysis of the index maps.

A reduce R (one result, static shapes, at the top level of the program) is row-fused into
the elementwise kernel H when
  * every kernel reading R's result is H or a reduction row-fused into H, and
  * every read of R's result, followed from H's root through the ops fused into H (and
    through the reductions fused into H), lands at an index that is a fixed function of
    H's outer loop indices: each dimension of R's result is read at one outer dimension
    of H, or at 0. Elementwise ops, broadcast_in_dim, transpose and reshapes that only add
    or drop unit dimensions keep that function known; any other op on the path stops the
    analysis (no fusion);
  * R's index covers all of H's outer dimensions, so R is computed once per row.
The reductions of a host run in program order at each row, so one may read another (the
sum of exp(x - max) reads the max).
"""
from __future__ import annotations


from axle.codegen.emitter import _ty
from axle.backends.cpu.registry import KERNELS, is_elementwise
from axle.codegen.plans.fusion import RowFusion
from axle.ir.core import Block, Operation, Value

UNKNOWN = None  # an index not expressible in the host's outer indices


def _shape(v: Value) -> list:
    return list(_ty(v).shape)


def _collect(v: Value, m: list, targets: set, want: set, block: Block, out: dict, seen: set,
             root: bool = False) -> None:
    """v is read at index m (per dimension of v: a host dimension, -1 for index 0, or
    UNKNOWN); record in out[t] the index maps at which each target value t is read."""
    key = (v, tuple(m))
    if key in seen:
        return
    seen.add(key)
    if v in targets:
        out.setdefault(v, set()).add(tuple(m))
        return
    o = getattr(v, "owner", None)
    if (v in want and not root) or not isinstance(o, Operation) or o.parent is not block \
            or o.name == "stablehlo.constant":
        return
    vs = _shape(v)
    if is_elementwise(o):
        for x in o.operands:
            xs = _shape(x)
            _collect(x, m if xs == vs else [UNKNOWN] * len(xs) if xs else [], targets, want, block, out, seen)
        return
    if o.name == "stablehlo.broadcast_in_dim":
        x = o.operands[0]
        xs = _shape(x)
        xm = [-1 if xs[i] == 1 and vs[d] != 1 else m[d] for i, d in enumerate(o.attr("broadcast_dimensions"))]
        _collect(x, xm, targets, want, block, out, seen)
        return
    if o.name == "stablehlo.transpose":
        x = o.operands[0]
        xm = [UNKNOWN] * len(vs)
        for i, p in enumerate(o.attr("permutation")):
            xm[p] = m[i]
        _collect(x, xm, targets, want, block, out, seen)
        return
    if o.name == "stablehlo.reshape":
        x = o.operands[0]
        xs = _shape(x)
        if [n for n in xs if n != 1] == [n for n in vs if n != 1]:
            src = iter([e for e, n in zip(m, vs) if n != 1])
            _collect(x, [-1 if n == 1 else next(src) for n in xs], targets, want, block, out, seen)
        else:
            _collect(x, [UNKNOWN] * len(xs), targets, want, block, out, seen)
        return
    for x in o.operands:  # any other op: its operands are read at indices we do not follow
        if hasattr(x, "type"):
            _collect(x, [UNKNOWN] * len(_shape(x)), targets, want, block, out, seen)
    for r in o.regions:
        for inner in (r.blocks[0].operations if r.blocks else []):
            for w in inner.walk():
                for x in w.operands:
                    if x in targets:
                        out.setdefault(x, set()).add(None)


def _reads_of(root_inputs: list, targets: set, want: set, block: Block, root: bool = False) -> dict:
    out: dict = {}
    seen: set = set()
    for v, m in root_inputs:
        _collect(v, m, targets, want, block, out, seen, root)
    return out


def _candidate(op: Operation) -> bool:
    if op.name != "stablehlo.reduce" or len(op.results) != 1:
        return False
    # the reduction must run along the input's innermost dimension (a row in memory): one
    # that keeps it (a sum over the batch of a bias gradient) would walk memory with a
    # stride once per result element; its own kernel reads it in memory order instead
    if _ty(op.operands[0]).rank - 1 not in op.attr("dimensions"):
        return False
    # f32/f64: the value in the stack slot is exactly what a buffer would hold (narrower
    # floats are kept wider in registers and rounded only when stored)
    return _ty(op.results[0]).element_type.name in ("f32", "f64") and \
        all(_ty(v).is_static for v in list(op.operands) + list(op.results))


def plan(ops: list, want: set, targets: dict, returned: set, block: Block, deps) -> dict:
    """Decide the row fusions of a block: {host op: RowFusion(outer rank K, [reduce ops in
    program order], index maps, kept)}. Row-fused results are removed from `want` (they get
    no buffer; the host reads them from stack slots). `deps(op)` gives the materialized
    values op reads."""
    emitted = [o for o in ops if any(r in want for r in o.results)]
    readers: dict = {}
    for o in emitted:
        for d in deps(o):
            readers.setdefault(d, []).append(o)
    host_of: dict = {}  # reduce -> host op
    map_of: dict = {}  # reduce result -> its index in host dimensions
    outer: dict = {}  # host -> K
    for red in reversed(emitted):
        if not _candidate(red):
            continue
        r = red.results[0]
        if r in targets or r in returned:
            continue
        rs = readers.get(r, [])
        if not rs:
            continue
        hosts = {host_of.get(e, e) for e in rs}
        if len(hosts) != 1:
            continue
        host = host_of.get(rs[0], rs[0])
        if KERNELS.get(host.name) is not None or len(host.results) != 1 or not _ty(host.results[0]).is_static:
            continue
        hshape = _shape(host.results[0])
        maps = set()
        for e in rs:
            if e is host:
                found = _reads_of([(host.results[0], list(range(len(hshape))))], {r}, want, block, root=True)
                maps |= found.get(r, {None})
            else:  # a reduction fused into the same host: compose with its own index map
                n = len(e.results)
                in_shape = _shape(e.operands[0])
                dims = set(e.attr("dimensions"))
                kept = [d for d in range(len(in_shape)) if d not in dims]
                em_map = map_of[e.results[0]]
                found = _reads_of([(x, list(range(len(in_shape)))) for x in e.operands[:n]], {r}, want, block)
                for m in found.get(r, {None}):
                    if m is None or any(d is UNKNOWN or (d >= 0 and d not in kept) for d in m):
                        maps.add(None)
                    else:
                        maps.add(tuple(-1 if d < 0 else em_map[kept.index(d)] for d in m))
        if len(maps) != 1:
            continue
        m = next(iter(maps))
        if m is None or any(d is UNKNOWN for d in m):
            continue
        used = {d for d in m if d >= 0}
        k = max(used) + 1 if used else 0
        if k == 0 or used != set(range(k)) or outer.get(host, k) != k:
            continue
        if any(_shape(r)[j] != hshape[d] for j, d in enumerate(m) if d >= 0):
            continue
        host_of[red] = host
        map_of[r] = m
        outer[host] = k
    plans: dict = {}
    order = {o: i for i, o in enumerate(ops)}
    for red, host in host_of.items():
        plans.setdefault(host, (outer[host], []))[1].append(red)
    for host, (kk, reds) in plans.items():
        reds.sort(key=lambda o: order[o])
        for red in reds:
            want.discard(red.results[0])
    out = {}
    for host, (kk, reds) in plans.items():
        maps = {red.results[0]: map_of[red.results[0]] for red in reds}
        out[host] = RowFusion(kk, reds, maps, _row_kept(host, kk, reds, maps, want, block))
    return out


def _row_kept(host: Operation, k: int, reds: list, maps: dict, want: set, block: Block):
    """A fused reduction whose input the host reads again at its own index, as
    softmax reads e = exp(x - max) for the sum and then for e / sum: its values, computed
    in the reduction's loop over the row, can be kept in the host's output row and read
    back instead of computed twice (None when no reduction qualifies). The input must be a
    fused value (no buffer) with the host result's element type and, unit dimensions
    aside, its shape, so that each element has the same row-major position in both; the
    host must read it only at its own index, and the reduction must run over exactly the
    host's inner (row) dimensions."""
    hshape = _shape(host.results[0])
    ident = list(range(len(hshape)))
    # the last first: a later reduction's input usually builds on an earlier one's (the
    # masked softmax's exp(select(...) - max) on select(...)), so keeping it saves the most
    for red in reversed(reds):
        v = red.operands[0]
        if not computed_here(v, block):
            continue  # an argument, a constant or a kernel's result: read from memory anyway
        vs = _shape(v)
        if len(red.operands) != 2 or v in want or [n for n in vs if n != 1] != [n for n in hshape if n != 1] \
                or _ty(v).element_type != _ty(host.results[0]).element_type:
            continue
        # the host's own reads (the fused reductions are computed before the row, apart)
        stops = want | {x.results[0] for x in reds}
        found = _reads_of([(host.results[0], ident)], {v}, stops, block, root=True).get(v, set())
        if len(found) != 1:
            continue
        m = next(iter(found))
        if m is None or not _same_position(m, vs, hshape):
            continue
        reduced = set(red.attr("dimensions"))
        if all((d in reduced) == (m[d] >= k) for d, n in enumerate(vs) if n != 1):
            return red
    return None


def _same_position(m: tuple, vs: list, hshape: list) -> bool:
    """Whether reading v at host index i through map m (per v dimension: a host dimension,
    -1 for 0) reads the element at i's row-major position: v's dimensions longer than 1 map
    in order onto the host's dimensions longer than 1."""
    big_h = [d for d, n in enumerate(hshape) if n != 1]
    big_v = [d for d, n in enumerate(vs) if n != 1]
    return all(x is not UNKNOWN for x in m) and [m[d] for d in big_v] == big_h


def computed_here(v: Value, block: Block) -> bool:
    """v is the result of an elementwise-fusible op of `block` (no kernel of its own)."""
    o = getattr(v, "owner", None)
    return isinstance(o, Operation) and o.parent is block and KERNELS.get(o.name) is None \
        and o.name != "stablehlo.constant"
