"""The CPU backend's fusion decisions for one block, made before any code is emitted.

An op's value is *materialized* (given a buffer) when it is returned, has several users
and costs more than DUPLICATE_COST ops per element to compute again in each, is produced
by a kernel (an op with a kernel of its own), is read by a kernel that wants memory
operands (dot, sort, ...), or ends a fused chain MAX_FUSION_DEPTH long. Every other
fusible op is computed inside the loop of whoever reads it (the elemental emitter). At
the top level, two more fusions remove buffers: a convolution read only by a pooling is
computed a few rows at a time inside the pooling's kernel (pooled convolution), and
row reductions read along their rows are computed inside their reader's row loop (row
fusion, row_fusion.py). The result is a FusionPlan (codegen/plans/fusion.py).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from axle.backends.cpu import row_fusion
from axle.backends.cpu.costs import MOVES, TRANSCENDENTAL
from axle.codegen.emitter import _ty
from axle.backends.cpu.registry import KERNELS, ROW_PRODUCERS, is_elementwise
from axle.backends.cpu.row_fusion import computed_here
from axle.codegen.plans.fusion import FusedKernel, FusionPlan, RowFusion
from axle.codegen.plans.graph import free_values, fusion_of, op_deps
from axle.ir.core import Block, Operation

# ...and index arithmetic (values computed from iotas and constants alone, no transcendental
# functions: a reflection pad's backward gathers at clamped positions) up to this many ops:
# given a buffer, the [2, 32, 64, 64, 4] int64 positions that three such backwards shared
# (CSE) were 8.4 MB written once and streamed by each (AdaIN's backward: 10 + 4.4 + 3.6 ms)
INDEX_DUPLICATE_COST = 32
DUPLICATE_COST = 3  # a value read by several ops is recomputed by each when this cheap
# A fused chain longer than this gets a buffer: the elemental emitter and the planners walk
# fused producers recursively (a 5000-op elementwise chain was a RecursionError)
MAX_FUSION_DEPTH = 128
POOL_SCRATCH_BYTES = 64 * 1024  # most stack per thread for the convolution rows of one pooled row

# A value whose fused computation holds a transcendental function (or more than
# REUSE_COST ops per element) gets a buffer when a broadcast reads it REUSE_FACTOR or more
# times per element: computed once per element, not once per element of the broadcast
# (rotary embeddings: cos and sin of [positions, d/2] read across batch and heads)
REUSE_FACTOR = 4
REUSE_COST = 8
# ...and so does one computed with a gather (index loads and clamps per element): a sparse
# attention's normalized weights (a gather of row sums, divided) were recomputed for each
# of the 64 features they scale, inside a serial scatter (9 -> 30 ms). (Not divisions:
# a layernorm's mean, a sum over n, is read per row by row fusion, which needs it fused.)
REUSE_COSTLY = TRANSCENDENTAL | {"stablehlo.gather"}

LIBRARY = ("stablehlo.dot_general", "stablehlo.dot", "stablehlo.convolution", "stablehlo.fft",
           "stablehlo.cholesky", "stablehlo.triangular_solve")
CONTROL = ("stablehlo.while", "stablehlo.if", "stablehlo.case", "func.call")
REDUCTIONS = ("stablehlo.reduce", "stablehlo.reduce_window")
_FUSED_FREE = ("stablehlo.constant", "stablehlo.broadcast_in_dim", "stablehlo.iota")


def materialized(ops: list, block: Block, targets: dict, to_return: set, uses: dict) -> set:
    """The values of `ops` that get a buffer (see the module docstring). `targets`: values
    written straight into a given buffer; `to_return`: values returned by a block whose
    results have no buffers given (they must have their own)."""
    want: set = set()
    users = _users(ops)
    shared: list = []  # values given a buffer for their several readers alone
    cost: dict = {}  # value -> ops recomputed per element when it is read fused
    depth: dict = {}  # value -> length of the fused chain computing it
    costly: set = set()  # fused values computing a transcendental function or a gather
    pure: set = set()  # values computed from iotas and constants alone
    for op in ops:
        kd = KERNELS.get(op.name)
        if op.name == "stablehlo.broadcast_in_dim" and op.operands and op.operands[0] not in want:
            v = op.operands[0]
            if (v in costly or cost.get(v, 0) > REUSE_COST) and _reuse(op) >= REUSE_FACTOR:
                want.add(v)
        if op.name == "stablehlo.transpose" and op.operands and op.operands[0] not in want and _moves_last(op) \
                and (cost.get(op.operands[0], 0) >= TRANSPOSE_OPERAND_COST
                     or cost.get(op.operands[0], 0) >= 1 and _register_transposed(op, users, targets, to_return, uses)):
            want.add(op.operands[0])
        chain = 1 + max((depth.get(v, 0) for v in op.operands if v not in want), default=0)
        cheap = op.name == "stablehlo.constant"  # read in place (splat or global data)
        if kd is None:
            parts = [cost.get(v, 0) for v in op.operands if v not in want]
            # (an element of a concatenate computes one of its operands, not all)
            c = (0 if op.name in MOVES else 1) + (max(parts, default=0) if op.name == "stablehlo.concatenate"
                                                  else sum(parts))
            if op.name in REUSE_COSTLY or any(v in costly for v in op.operands if v not in want):
                costly.update(op.results)
            elif not op.regions and all(v in pure for v in op.operands):
                pure.update(op.results)
        for r in op.results:
            if kd is not None or r in targets or r in to_return:
                want.add(r)
            elif uses.get(r, 0) > 1 and not cheap:
                # several readers: recompute it in each (as XLA duplicates cheap producers
                # into consumers) when that costs at most DUPLICATE_COST ops per element,
                # else give it a buffer (unless _shared_in_one_loop takes it back)
                if c > (INDEX_DUPLICATE_COST if r in pure else DUPLICATE_COST):
                    want.add(r)
                    shared.append(r)
                else:
                    cost[r] = c
            else:
                cost[r] = c if kd is None else 0
            if chain > MAX_FUSION_DEPTH:  # the emitter recurses once per fused op
                want.add(r)
            depth[r] = 0 if r in want else chain
        if op.name == "stablehlo.reduce_window" and _window_reuse(op) >= 2:
            # a window reads each input element several times: an input computed with a
            # transcendental function or more than REUSE_COST ops per element gets a buffer
            # (computed once, by a vectorized loop) rather than being recomputed per tap (an
            # LRN's backward: x ** -0.25 and divides under a window of 5 channels, 22.9 ms;
            # as a loop and the window sum, under 1 ms)
            n = len(op.results)
            for v in op.operands[:n]:
                if v not in want and (v in costly or cost.get(v, 0) > REUSE_COST):
                    want.add(v)
        if op.name == "stablehlo.pad" and any(int(x) for x in op.attr("interior_padding")) \
                and op.operands[0] not in want \
                and (op.operands[0] in costly or cost.get(op.operands[0], 0) > REUSE_COST):
            # an interior pad's loop runs over the padded result and computes its operand at
            # one position in several, element by element: a costly operand gets a buffer,
            # computed by a vectorized loop of its own (an avg-pool backward's interior pad of
            # an LPPool's power chain: 1.37 ms -> 0.5 with its own loop)
            want.add(op.operands[0])
        if op.name == "stablehlo.scatter" and len(op.operands) >= 3:
            # updates computed with a gather or a transcendental function get a
            # buffer: the scatter's loop runs on one thread and computes its fused updates
            # element by element, where a loop kernel of their own is split and vectorized
            # (a BCOO product's gathered rows times their values: 28 -> 10 ms)
            k = (len(op.operands) - 1) // 2
            for v in op.operands[k + 1:]:
                if v in costly and v not in want:
                    want.add(v)
        if kd is not None and kd.memory_operands and not (kd.fused_operands is not None and kd.fused_operands(op)):
            for v in op.operands:
                o = getattr(v, "owner", None)
                if isinstance(o, Operation) and o.parent is block and o.name != "stablehlo.constant":
                    want.add(v)
        if op.name in CONTROL and op.regions:
            # what a loop body (or a branch) reads from here is computed once, here: a value
            # hoisted out of a loop (while-licm) would otherwise be recomputed where it is
            # read, on every trip, and a GEMM in the body needs its operand in memory.
            # Constants and broadcasts stay fused (read in place, or cheaper recomputed)
            for v in free_values(op):
                o = getattr(v, "owner", None)
                if isinstance(o, Operation) and o.parent is block and o.name not in _FUSED_FREE:
                    want.add(v)
                else:
                    # ...but what a broadcast there reads is computed here once, unless it
                    # is a constant or an iota: tiled index arrays (jnp.repeat / tile of a
                    # mesh's element table, a reshape per read) were rebuilt in every trip
                    # of a CG loop, inside its gather and its scatter (9 -> 18 ms)
                    while isinstance(o, Operation) and o.parent is block and o.name == "stablehlo.broadcast_in_dim":
                        v = o.operands[0]
                        o = getattr(v, "owner", None)
                    if isinstance(o, Operation) and o.parent is block and o.name not in _FUSED_FREE:
                        want.add(v)
    if shared:
        _shared_in_one_loop(ops, want, shared)
    want.update(_strided_transposes(ops, want, block))
    want.update(_updates_reading_their_target(ops, want, block))
    return want


def _window_reuse(op: Operation) -> float:
    """About how many windows of reduce_window op read each input element: the window's
    elements over its stride (each dimension; dilations spread the taps, not the count)."""
    dims = [int(d) for d in op.attr("window_dimensions")]
    strides = op.attr("window_strides", None)
    strides = [int(s) for s in strides] if strides is not None else [1] * len(dims)
    reuse = 1.0
    for d, st in zip(dims, strides):
        reuse *= max(1.0, d / max(st, 1))
    return reuse


def _updates_reading_their_target(ops: list, want: set, block: Block) -> set:
    """The updates of scatters and dynamic_update_slices that are computed (fused) from the
    very operand they update (a loop writing row i + 1 from row i of its carry): in a
    buffer of their own, so that the update can be written into the operand in place
    rather than into a copy of it (a [41, 16384] carry copied on each of 40 trips: 5.3 ms;
    XLA 0.2 ms)."""
    out: set = set()
    for op in ops:
        if op.name == "stablehlo.dynamic_update_slice":
            target, updates = op.operands[0], op.operands[1:2]
        elif op.name == "stablehlo.scatter" and len(op.operands) == 3:
            target, updates = op.operands[0], op.operands[2:]
        else:
            continue
        for u in updates:
            if u in want:
                continue
            stack, seen, hit = [u], set(), False
            while stack and not hit:
                x = stack.pop()
                o = getattr(x, "owner", None)
                if x in want or not isinstance(o, Operation) or o.parent is not block or o in seen:
                    continue
                seen.add(o)
                for y in o.operands:
                    if y is target:
                        hit = True
                    stack.append(y)
                if o.regions:  # values a fused op's regions read from outside
                    stack.extend(free_values(o))
            if hit:
                out.add(u)
    return out


# A transpose that moves the innermost dimension runs element by element over tiles: an
# operand computed with this many ops per element or more gets a buffer, computed in its
# own layout by a vectorized loop, and the transpose only moves it (a batch norm's
# backward, 16 ops, transposed NCHW -> NHWC for a filter gradient: 4.2 ms; as a loop and
# a move ~0.5 ms)
TRANSPOSE_OPERAND_COST = 6


def _moves_last(op: Operation) -> bool:
    """Whether transpose op moves the innermost dimension (of a large enough value)."""
    perm = [int(p) for p in op.attr("permutation")]
    t = _ty(op.results[0])
    return bool(perm) and perm[-1] != len(perm) - 1 and t.is_static and int(np.prod(t.shape)) >= TRANSPOSE_SIZE_MIN


def _register_transposed(op: Operation, users: dict, targets: dict, to_return: set, uses: dict) -> bool:
    """Whether transpose op will be a kernel of its own that moves whole tiles through
    vector registers (elementwise._register_transpose: 4-byte elements, both tiled
    dimensions 32 or longer) once its operand is in memory: its result is returned, read
    by a library kernel or by several kernels. The operand's ops then run in their own
    layout, vectorized, and the move is 3x faster than a tile computed element by element
    (exp(x).T of 2048 x 1024: 2.7 -> 0.7 ms on one thread)."""
    t = _ty(op.results[0])
    perm = [int(p) for p in op.attr("permutation")]
    src = _ty(op.operands[0]).shape
    long_src = [d for d in range(t.rank) if src[d] != 1]  # (unit dimensions take no part)
    long_out = [d for d in range(t.rank) if t.shape[d] != 1]
    if t.element_type.bitwidth != 32 or not long_out or t.shape[long_out[-1]] < 32 \
            or t.shape[perm.index(long_src[-1])] < 32:
        return False
    r = op.results[0]
    if r in targets or r in to_return or uses.get(r, 0) > 1:
        return True
    return any((kd := KERNELS.get(u.name)) is not None and kd.memory_operands for u in users.get(r, ()))


TRANSPOSE_STRIDE_MIN = 16  # elements between the reads of a transposed value's last dimension...
TRANSPOSE_SIZE_MIN = 1 << 14  # ...and elements of it, from which it gets a buffer (below)


def _strided_transposes(ops: list, want: set, block: Block) -> set:
    """Transposed values to materialize: the innermost loop of a kernel runs along the last
    dimension of what it reads (a loop kernel: its result's; a reduction: its input's, in
    either loop order), so a fused transpose whose last dimension is strided in its operand
    is read a cache line per element. A loop kernel that computes the transpose at its
    own index walks it in tiles (elementwise._tiled_transpose); through a reshape or a
    broadcast, or under a reduction, nothing does: such a transpose gets a buffer, one
    tiled pass. (An MX quantizer of w.T: a block max over 32 of K, the scaled copy as
    [N, K]: 9.7 + 11.6 ms strided, XLA 8.3 ms for both.)"""
    out: set = set()
    for host in ops:  # the kernels: reductions (their inputs read) and loops (their own index)
        if not host.results or host.results[0] not in want:
            continue
        if host.name == "stablehlo.reduce":
            stack = [(v, True) for v in host.operands[:len(host.results)]]
        elif KERNELS.get(host.name) is None and host.name not in CONTROL + LIBRARY + ("stablehlo.transpose",):
            stack = [(host, False)]
        else:
            continue
        seen: set = set()
        while stack:
            v, moved = stack.pop()
            o = v if isinstance(v, Operation) else getattr(v, "owner", None)
            if not isinstance(o, Operation) or o.parent is not block or (o is not host and o.results[0] in want) \
                    or (o, moved) in seen or len(o.results) != 1:
                continue
            seen.add((o, moved))
            rt = _ty(o.results[0])
            if not rt.is_static or rt.rank == 0 or rt.shape[-1] < 2 and o.name != "stablehlo.reshape":
                continue  # (a reshape to a unit last dimension still walks its operand's: the fold's taps)
            if o.name == "stablehlo.transpose":
                perm = [int(p) for p in o.attr("permutation")]
                st = _ty(o.operands[0]).shape
                if moved and perm[-1] != rt.rank - 1 and int(np.prod(st[perm[-1] + 1:])) >= TRANSPOSE_STRIDE_MIN \
                        and int(np.prod(rt.shape)) >= TRANSPOSE_SIZE_MIN:
                    out.add(o.results[0])
            elif o.name == "stablehlo.reshape":
                if _ty(o.operands[0]).rank and _ty(o.operands[0]).shape[-1] > 1:
                    stack.append((o.operands[0], True))
            elif o.name == "stablehlo.broadcast_in_dim":
                dims = [int(d) for d in o.attr("broadcast_dimensions")]
                if dims and dims[-1] == rt.rank - 1 and _ty(o.operands[0]).shape[-1] == rt.shape[-1]:
                    stack.append((o.operands[0], True))
            elif o.name in ("stablehlo.slice", "stablehlo.pad", "stablehlo.concatenate"):
                # read at shifted positions (a conv_fold stack of a transposed input, also a
                # concatenate along the last dimension: the folded taps side by side in the
                # features): the host's loop cannot tile a transpose through them. (A pad or
                # slice that changes the last dimension's extent stops the walk: Transformer-
                # XL's shift reads its scores through one, the shifted copy is the buffer.)
                last = rt.rank - 1
                if o.name == "stablehlo.slice" and int(o.attr("strides")[last]) != 1 \
                        or o.name == "stablehlo.pad" and (int(o.attr("interior_padding")[last]) != 0
                                                           or _ty(o.operands[0]).shape[last] != rt.shape[last]):
                    continue
                data = o.operands[:1] if o.name == "stablehlo.pad" else o.operands
                stack.extend((x, True) for x in data if _ty(x).is_static)
            elif is_elementwise(o):
                stack.extend((x, moved) for x in o.operands if _ty(x).is_static and list(_ty(x).shape[-1:]) ==
                             [rt.shape[-1]])
    return out


def _reuse(op: Operation) -> int:
    """How many times a broadcast reads each element of its operand (0 when not static, or
    the operand is a scalar: its loop-invariant value is computed once anyway)."""
    it, ot = _ty(op.operands[0]), _ty(op.results[0])
    if not (it.is_static and ot.is_static) or it.rank == 0:
        return 0
    n_in, n_out = 1, 1
    for d in it.shape:
        n_in *= d
    for d in ot.shape:
        n_out *= d
    return n_out // max(n_in, 1) if n_in > 1 else 0


def _same_index(u: Operation, v) -> bool:
    """u reads v at the index of its own element (the emitter passes the index on as it is)."""
    if len(u.results) != 1 or _ty(u.results[0]).shape != _ty(v).shape:
        return False
    if u.name == "stablehlo.bitcast_convert":  # between types of one width (others reshape)
        return _ty(u.results[0]).element_type.bitwidth == _ty(v).element_type.bitwidth
    return is_elementwise(u)


def _users(ops: list) -> dict:
    """value -> the ops of `ops` reading it (in order)."""
    users: dict = {}
    for op in ops:
        for v in op.operands:
            users.setdefault(v, []).append(op)
    return users


def _shared_in_one_loop(ops: list, want: set, shared: list) -> None:
    """Take back the buffers of `shared` values whose readers all compute, element for
    element (same-shaped elementwise ops, through more of them), the same materialized
    value: the elemental emitter then computes such a value once per element of that loop
    (Emitter.op_at's memo) however many readers it has. A DAG of elementwise ops (the
    rounds of threefry, x + f(x)) becomes one loop instead of a buffer per shared node.
    Fused chains are kept at most MAX_FUSION_DEPTH long as before."""
    users = _users(ops)
    root: dict = {}

    def root_of(v):
        # the one materialized value that every reader of v computes elementwise, or None
        if v in want:
            return v
        if v in root:
            return root[v]
        found = None
        for u in users.get(v, ()):
            if not _same_index(u, v):
                found = None
                break
            r = root_of(u.results[0])
            if r is None or (found is not None and r is not found):
                found = None
                break
            found = r
        root[v] = found
        return found
    order = {op: i for i, op in enumerate(ops)}
    for v in sorted(shared, key=lambda x: -order.get(x.owner, 0)):  # readers before producers
        readers = users.get(v, ())
        if not readers:
            continue
        want.discard(v)
        got = root_of(v)
        root.pop(v, None)
        if got is None:
            want.add(v)
    depth: dict = {}
    for op in ops:  # chains no longer than MAX_FUSION_DEPTH, as in materialized()
        chain = 1 + max((depth.get(v, 0) for v in op.operands if v not in want), default=0)
        for r in op.results:
            if chain > MAX_FUSION_DEPTH:
                want.add(r)
            depth[r] = 0 if r in want else chain


def kernels_of(ops: list, want: set) -> list:
    """The ops of `ops` emitted as kernels: those with a materialized result, and the ones
    without results that run for their effect."""
    return [op for op in ops if any(r in want for r in op.results) or (not op.results and op.name in KERNELS)]


def plan_pooled_convolutions(ops: list, want: set, targets: dict, returned: set, block: Block,
                             uses: dict) -> dict:
    """A convolution read only by a pooling (reduce_window over rows, through an
    elementwise epilogue such as batch norm and ReLU) gets no buffer: the pooling's
    kernel computes the few convolution rows each output row needs into scratch
    (kernels_window.py), so the full-size feature map never exists. Returns
    {pooling: convolution} and removes the convolutions from `want`."""
    out: dict = {}
    for op in ops:
        if op.name != "stablehlo.reduce_window" or len(op.results) != 1:
            continue
        conv = pooled_convolution(op, want, uses, block)
        if conv is None or conv.results[0] in targets or conv.results[0] in returned:
            continue
        want.discard(conv.results[0])
        out[op] = conv
    return out


def pooled_convolution(op: Operation, want: set, uses: dict, block: Block) -> Optional[Operation]:
    """The convolution whose rows reduce_window `op` can compute itself, or None. op pools
    NHWC rows without padding or dilation, windows one row-stride tall (each convolution
    row is read by one output row); its input is the convolution's result through
    elementwise ops of the same shape, each read once (nothing else reaches the
    convolution); the convolution runs as the direct kernel (ROW_PRODUCERS)."""
    t = _ty(op.operands[0])
    if t.rank != 4 or not t.is_static:
        return None
    wd = list(op.attr("window_dimensions"))
    st = list(op.attr("window_strides") or [1] * 4)
    if wd[0] != 1 or wd[3] != 1 or st[0] != 1 or st[3] != 1 or st[1] != wd[1]:
        return None
    for name in ("base_dilations", "window_dilations"):
        if any(x != 1 for x in (op.attr(name) or [])):
            return None
    pad = op.attr("padding")
    if pad is not None and any(int(x) != 0 for p in pad for x in p):
        return None

    def same_shape(v) -> bool:
        return hasattr(v, "type") and list(_ty(v).shape) == list(t.shape)
    found = []
    stack = [op.operands[0]]
    while stack:
        v = stack.pop()
        o = getattr(v, "owner", None)
        if not isinstance(o, Operation) or o.parent is not block or uses.get(v, 0) != 1 or not same_shape(v):
            continue
        if o.name == "stablehlo.convolution":
            found.append(o)
        elif v not in want and is_elementwise(o):
            stack.extend(x for x in o.operands if same_shape(x))
    rows = ROW_PRODUCERS.get("stablehlo.convolution")
    if len(found) != 1 or rows is None or rows(found[0]) is None:
        return None
    conv = found[0]
    if wd[1] * _ty(conv.results[0]).shape[2] * t.shape[3] * 4 > POOL_SCRATCH_BYTES:
        return None
    return conv


def plan_row_fusion(ops: list, want: set, targets: dict, returned: set, block: Block,
                    uses: dict) -> tuple[set, dict]:
    """Row fusions of the top-level block (row_fusion.plan): ({host: RowFusion}, the
    materialized values that remain). A value given a buffer only because two ops
    read it and it is too costly to compute twice (exp(x - max) under a masked
    softmax), whose two readers are a reduction row-fused into a kernel and that
    kernel at its own index, is left unmaterialized when planning again without it
    keeps it in that kernel's result row (row_fusion._row_kept): computed once, and
    neither a kernel nor a buffer of its own."""
    def plan(w):
        memo: dict = {}
        return row_fusion.plan(ops, w, targets, returned, block, lambda o: op_deps(o, w, block, memo))
    chosen = set(want)  # plan() drops the row-fused reductions from the set it is given
    plans = plan(chosen)
    removed: set = set()
    tried: set = set()
    while True:
        candidates = [red.operands[0] for rf in plans.values() for red in rf.reductions]
        candidates = [v for v in candidates if v in chosen and v not in tried
                      and computed_here(v, block) and uses.get(v, 0) == 2
                      and v not in targets and v not in returned]
        if not candidates:
            break
        v = candidates[0]
        tried.add(v)
        trial = set(want) - removed - {v}
        again = plan(trial)
        if any(rf.kept is not None and rf.kept.operands[0] is v for rf in again.values()):
            removed.add(v)
            chosen, plans = trial, again
    strided = _strided_rows(ops, plans, chosen, block)
    if strided:
        trial = (set(want) - removed) | strided
        chosen, plans = trial, plan(trial)
    return chosen, plans


# what a transposed value goes through before it is computed on (their index arithmetic
# rides along in the row fusion's every pass until the value has a buffer)
_ROW_MOVES = ("stablehlo.transpose", "stablehlo.reshape", "stablehlo.slice", "stablehlo.pad",
              "stablehlo.reverse")


STRIDED_ROW_MIN = 32  # shorter rows (a sum over 2 channels) are cheap to read again


def _strided_rows(ops: list, plans: dict, want: set, block: Block) -> set:
    """Values to materialize under row fusions: a row-fused kernel reads its rows once per
    reduction and once more for its result, so a transpose fused into it that reads along
    the row at a stride (the row's dimension not innermost in the transposed value) does
    its strided gathers, and the index arithmetic of the moves after it (Transformer-XL's
    pad / reshape / slice relative shift), in every pass. Each such transpose, through the
    moves after it, gets a buffer: one strided pass writes the rows contiguous."""
    users = _users(ops)
    out: set = set()
    for host, rf in plans.items():
        if not rf.reductions or int(np.prod(_ty(host.results[0]).shape[rf.rows:])) < STRIDED_ROW_MIN:
            continue
        fused, _ = fusion_of(host, want, block)
        inside = set(fused)
        for op in fused:
            if op.name != "stablehlo.transpose" or op in rf.reductions:
                continue
            perm = [int(p) for p in op.attr("permutation")]
            shape = list(_ty(op.operands[0]).shape)
            if not perm or perm[-1] == len(perm) - 1 or int(np.prod(shape[perm[-1] + 1:])) == 1:
                continue
            v = op.results[0]
            while len(users.get(v, ())) == 1 and users[v][0] in inside and users[v][0].name in _ROW_MOVES:
                v = users[v][0].results[0]
            out.add(v)
    return out


def kind_of(op: Operation, plan: FusionPlan, fused: list) -> str:
    """The fusion kind of kernel `op` (codegen/plans/fusion.py)."""
    if op in plan.row_fusions:
        return "row"
    if op in plan.conv_rows:
        return "pooled-convolution"
    if op.name in CONTROL:
        return "control"
    if op.name in LIBRARY:
        return "library"
    if op.name in REDUCTIONS:
        return "input"
    if KERNELS.get(op.name) is None:
        return "loop"
    return "kernel"


def fusion_plan(block: Block, depth: int, want: set, kernels: list, row_fusions: dict,
                conv_rows: dict) -> FusionPlan:
    """The FusionPlan of `block`: one FusedKernel per kernel op (in the order given)."""
    plan = FusionPlan(block, depth, want, [], row_fusions, conv_rows)
    for op in kernels:
        fused, inputs = fusion_of(op, want, block)
        plan.kernels.append(FusedKernel(kind_of(op, plan, fused), op, fused, inputs, depth,
                                        rows=row_fusions.get(op), pooled=conv_rows.get(op)))
    return plan


__all__ = ["RowFusion", "materialized", "kernels_of", "computed_here", "plan_pooled_convolutions",
           "plan_row_fusion", "fusion_plan", "is_elementwise"]
