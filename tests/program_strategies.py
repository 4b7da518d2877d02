"""Hypothesis strategies that build random StableHLO programs (as MLIR text) for
differential tests: elementwise ops, broadcasts, transposes, reshapes, reductions,
dot_generals, constants, selects and the identities the simplifier targets; with
`control`, also gathers, scatters, while loops, dot_generals with random dimension
numbers, convolutions, sorts and reduce_windows.

The two operands of a binary op are distinct values whenever the program has two (a
backend that swaps max and min, or add and subtract, must show), and the program returns,
besides its last value, every value whose shape is not the inputs' (dot_general,
convolution and reduce_window results) and a random choice of the others, so that a wrong
op anywhere shows in some result.
"""
from hypothesis import strategies as st

SHAPE = (3, 4)


def _t(shape, et="f32"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + et + ">"


class _Prog:
    def __init__(self):
        self.lines = []
        self.n = 0
        self.values = []  # (name, shape)
        self.outputs = []  # (name, shape): extra results of the program

    def emit(self, text, shape):
        name = f"%v{self.n}"
        self.n += 1
        self.lines.append(f"    {name} = {text}")
        self.values.append((name, shape))
        return name


@st.composite
def programs(draw, control: bool = False):
    """A random program; `control` also draws gather, scatter and while loops."""
    p = _Prog()
    p.values = [("%a", SHAPE), ("%b", SHAPE), ("%c", (SHAPE[1],))]
    steps = draw(st.integers(3, 10))
    for _ in range(steps):
        kinds = ["binary", "unary", "identity", "bcast", "transpose2", "reshape2",
                 "reduce", "dot", "const", "select", "slice_concat", "pad_slice"]
        if control:
            kinds += ["gather", "scatter", "while", "dot_dims", "conv", "sort", "reduce_window"]
        kind = draw(st.sampled_from(kinds))
        full = [v[0] for v in p.values if v[1] == SHAPE]
        i = draw(st.integers(0, len(full) - 1))
        j = draw(st.integers(0, len(full) - 2)) if len(full) > 1 else 0
        x = full[i]
        y = full[j + (j >= i)] if len(full) > 1 else full[0]  # a value other than x
        n_before = len(p.values)
        T = _t(SHAPE)
        if kind == "binary":
            op = draw(st.sampled_from(["add", "multiply", "subtract", "maximum", "minimum"]))
            p.emit(f"stablehlo.{op} {x}, {y} : {T}", SHAPE)
        elif kind == "unary":
            op = draw(st.sampled_from(["negate", "exponential", "tanh", "abs", "logistic", "sine"]))
            p.emit(f"stablehlo.{op} {x} : {T}", SHAPE)
        elif kind == "identity":
            which = draw(st.sampled_from(["mul1", "addm0", "negneg", "div1"]))
            if which == "mul1":
                one = p.emit(f"stablehlo.constant dense<1.0> : {T}", SHAPE)
                p.emit(f"stablehlo.multiply {x}, {one} : {T}", SHAPE)
            elif which == "addm0":
                z = p.emit(f"stablehlo.constant dense<-0.0> : {T}", SHAPE)
                p.emit(f"stablehlo.add {z}, {x} : {T}", SHAPE)
            elif which == "div1":
                one = p.emit(f"stablehlo.constant dense<1.0> : {T}", SHAPE)
                p.emit(f"stablehlo.divide {x}, {one} : {T}", SHAPE)
            else:
                n1 = p.emit(f"stablehlo.negate {x} : {T}", SHAPE)
                p.emit(f"stablehlo.negate {n1} : {T}", SHAPE)
        elif kind == "bcast":
            b1 = p.emit(f"stablehlo.broadcast_in_dim %c, dims = [1] : ({_t((SHAPE[1],))}) -> {T}", SHAPE)
            p.emit(f"stablehlo.add {x}, {b1} : {T}", SHAPE)
        elif kind == "transpose2":
            TT = _t(SHAPE[::-1])
            t1 = p.emit(f"stablehlo.transpose {x}, dims = [1, 0] : ({T}) -> {TT}", SHAPE[::-1])
            p.emit(f"stablehlo.transpose {t1}, dims = [1, 0] : ({TT}) -> {T}", SHAPE)
        elif kind == "reshape2":
            R = _t((SHAPE[0] * SHAPE[1],))
            r1 = p.emit(f"stablehlo.reshape {x} : ({T}) -> {R}", (SHAPE[0] * SHAPE[1],))
            p.emit(f"stablehlo.reshape {r1} : ({R}) -> {T}", SHAPE)
        elif kind == "reduce":
            z = p.emit("stablehlo.constant dense<0.0> : tensor<f32>", ())
            r = p.emit(f"stablehlo.reduce({x} init: {z}) applies stablehlo.add across dimensions = [0] : "
                       f"({T}, tensor<f32>) -> {_t((SHAPE[1],))}", (SHAPE[1],))
            b = p.emit(f"stablehlo.broadcast_in_dim {r}, dims = [1] : ({_t((SHAPE[1],))}) -> {T}", SHAPE)
            p.emit(f"stablehlo.multiply {b}, {y} : {T}", SHAPE)
        elif kind == "dot":
            TT = _t(SHAPE[::-1])
            t1 = p.emit(f"stablehlo.transpose {y}, dims = [1, 0] : ({T}) -> {TT}", SHAPE[::-1])
            d = p.emit(f"stablehlo.dot_general {x}, {t1}, contracting_dims = [1] x [0] : ({T}, {TT}) -> "
                       f"{_t((SHAPE[0], SHAPE[0]))}", (SHAPE[0], SHAPE[0]))
            d2 = p.emit(f"stablehlo.dot_general {d}, {x}, contracting_dims = [0] x [0] : "
                        f"({_t((SHAPE[0], SHAPE[0]))}, {T}) -> {_t((SHAPE[0], SHAPE[1]))}", SHAPE)
        elif kind == "const":
            vals = draw(st.lists(st.sampled_from([0.5, -1.0, 2.0, 0.0, 3.25]), min_size=SHAPE[0] * SHAPE[1],
                                 max_size=SHAPE[0] * SHAPE[1]))
            rows = ", ".join("[" + ", ".join(repr(v) for v in vals[i * SHAPE[1]:(i + 1) * SHAPE[1]]) + "]"
                             for i in range(SHAPE[0]))
            k = p.emit(f"stablehlo.constant dense<[{rows}]> : {T}", SHAPE)
            p.emit(f"stablehlo.add {x}, {k} : {T}", SHAPE)
        elif kind == "slice_concat":  # split along a dimension, swap the halves, join them back
            d = draw(st.integers(0, 1))
            k = draw(st.integers(1, SHAPE[d] - 1))
            lo_shape = tuple(k if i == d else n for i, n in enumerate(SHAPE))
            hi_shape = tuple(SHAPE[d] - k if i == d else n for i, n in enumerate(SHAPE))
            lims_lo = ", ".join(f"0:{k}" if i == d else f"0:{n}" for i, n in enumerate(SHAPE))
            lims_hi = ", ".join(f"{k}:{n}" if i == d else f"0:{n}" for i, n in enumerate(SHAPE))
            a1 = p.emit(f"stablehlo.slice {x} [{lims_lo}] : ({T}) -> {_t(lo_shape)}", lo_shape)
            a2 = p.emit(f"stablehlo.slice {x} [{lims_hi}] : ({T}) -> {_t(hi_shape)}", hi_shape)
            p.emit(f"stablehlo.concatenate {a2}, {a1}, dim = {d} : ({_t(hi_shape)}, {_t(lo_shape)}) -> {T}", SHAPE)
        elif kind == "pad_slice":  # pad with a constant, then slice a window of the original size
            lo, hi = draw(st.integers(0, 2)), draw(st.integers(0, 2))
            padded = (SHAPE[0] + lo + hi, SHAPE[1] + 1)
            pv = p.emit("stablehlo.constant dense<0.5> : tensor<f32>", ())
            pd = p.emit(f"stablehlo.pad {x}, {pv}, low = [{lo}, 1], high = [{hi}, 0], interior = [0, 0] : "
                        f"({T}, tensor<f32>) -> {_t(padded)}", padded)
            p.emit(f"stablehlo.slice {pd} [0:{SHAPE[0]}, 0:{SHAPE[1]}] : ({_t(padded)}) -> {T}", SHAPE)
        elif kind in ("gather", "scatter"):  # rows picked / accumulated at random (repeating) rows
            rows = draw(st.lists(st.integers(0, SHAPE[0] - 1), min_size=SHAPE[0], max_size=SHAPE[0]))
            IT = _t((SHAPE[0], 1), "i32")
            idx = p.emit(f"stablehlo.constant dense<[{', '.join(f'[{r}]' for r in rows)}]> : {IT}", (SHAPE[0], 1))
            p.values[-1] = (idx, "index")
            if kind == "gather":
                p.emit(f'"stablehlo.gather"({x}, {idx}) {{dimension_numbers = #stablehlo.gather<offset_dims = [1], '
                       f'collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, '
                       f'slice_sizes = array<i64: 1, {SHAPE[1]}>, indices_are_sorted = false}} : ({T}, {IT}) -> {T}',
                       SHAPE)
            else:
                n = p.n
                combine = draw(st.sampled_from(["add", "maximum", "minimum", "subtract"]))
                p.emit(f'"stablehlo.scatter"({x}, {idx}, {y}) ({{\n    ^bb0(%p{n}: tensor<f32>, %q{n}: tensor<f32>):\n'
                       f'      %r{n} = stablehlo.{combine} %p{n}, %q{n} : tensor<f32>\n'
                       f'      stablehlo.return %r{n} : tensor<f32>\n    }}) {{scatter_dimension_numbers = '
                       f'#stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], '
                       f'scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, '
                       f'unique_indices = false}} : ({T}, {IT}, {T}) -> {T}', SHAPE)
        elif kind == "while":  # v <- v * 0.5 + y, k times
            k = draw(st.integers(0, 3))
            n = p.n
            z = p.emit("stablehlo.constant dense<0> : tensor<i32>", ())
            p.values[-1] = (z, "counter")
            I = "tensor<i32>"
            w = (f'"stablehlo.while"({z}, {x}) ({{\n    ^bb0(%i{n}: {I}, %u{n}: {T}):\n'
                 f'      %l{n} = stablehlo.constant dense<{k}> : {I}\n'
                 f'      %c{n} = stablehlo.compare LT, %i{n}, %l{n}, SIGNED : ({I}, {I}) -> tensor<i1>\n'
                 f'      stablehlo.return %c{n} : tensor<i1>\n    }}, {{\n'
                 f'    ^bb0(%j{n}: {I}, %w{n}: {T}):\n'
                 f'      %o{n} = stablehlo.constant dense<1> : {I}\n'
                 f'      %k{n} = stablehlo.add %j{n}, %o{n} : {I}\n'
                 f'      %h{n} = stablehlo.constant dense<0.5> : {T}\n'
                 f'      %m{n} = stablehlo.multiply %w{n}, %h{n} : {T}\n'
                 f'      %s{n} = stablehlo.add %m{n}, {y} : {T}\n'
                 f'      stablehlo.return %k{n}, %s{n} : {I}, {T}\n    }}) : ({I}, {T}) -> ({I}, {T})')
            name = f"%v{p.n}"
            p.n += 1
            p.lines.append(f"    {name}:2 = {w}")
            p.values.append((f"{name}#1", SHAPE))
        elif kind == "dot_dims":
            _dot_dims(draw, p, x, y)
        elif kind == "conv":
            _conv(draw, p, x, y)
        elif kind == "sort":
            _sort(draw, p, x, y)
        elif kind == "reduce_window":
            _reduce_window(draw, p, x)
        elif kind == "select":
            c = p.emit(f"stablehlo.compare GT, {x}, {y}, FLOAT : ({T}, {T}) -> {_t(SHAPE, 'i1')}", SHAPE)
            p.values[-1] = (c, "pred")
            p.emit(f"stablehlo.select {c}, {x}, {y} : {_t(SHAPE, 'i1')}, {T}", SHAPE)
        # a random choice of this step's full-shape values become results too
        for name, shape in p.values[n_before:]:
            if shape == SHAPE and draw(st.integers(0, 3)) == 0:
                p.outputs.append((name, shape))
    result = [v for v in p.values if v[1] == SHAPE][-1][0]
    outs = [(result, SHAPE)] + [o for o in p.outputs if o[0] != result]
    body = "\n".join(p.lines)
    types = ", ".join(_t(shape) for _, shape in outs)
    return (f"func.func @main(%a: {_t(SHAPE)}, %b: {_t(SHAPE)}, %c: {_t((SHAPE[1],))}) -> ({types}) {{\n"
            f"{body}\n    return {', '.join(n for n, _ in outs)} : {types}\n}}\n")


def _dot_dims(draw, p, x, y):
    """dot_general of x and y (both SHAPE, each maybe transposed first) with random batching
    and contracting dimensions (pairs of equal sizes); the result is a program result."""
    shapes = {}
    for name, v in (("l", x), ("r", y)):
        if draw(st.booleans()):
            tt = _t(SHAPE[::-1])
            v = p.emit(f"stablehlo.transpose {v}, dims = [1, 0] : ({_t(SHAPE)}) -> {tt}", SHAPE[::-1])
            shapes[name] = (v, SHAPE[::-1])
        else:
            shapes[name] = (v, SHAPE)
    (lv, ls), (rv, rs) = shapes["l"], shapes["r"]
    pairs = [(i, j) for i in range(2) for j in range(2) if ls[i] == rs[j]]
    chosen = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=2, unique=True))
    chosen = [c for k, c in enumerate(chosen)  # disjoint pairs
              if all(c[0] != d[0] and c[1] != d[1] for d in chosen[:k])]
    kinds = [draw(st.sampled_from(["batch", "contract"])) for _ in chosen]
    batch = [c for c, k in zip(chosen, kinds) if k == "batch"]
    contract = [c for c, k in zip(chosen, kinds) if k == "contract"]
    used_l = {c[0] for c in chosen}
    used_r = {c[1] for c in chosen}
    out = tuple([ls[i] for i, _ in batch] + [ls[i] for i in range(2) if i not in used_l]
                + [rs[j] for j in range(2) if j not in used_r])
    dims = []
    if batch:
        dims.append(f"batching_dims = [{', '.join(str(i) for i, _ in batch)}] x "
                    f"[{', '.join(str(j) for _, j in batch)}]")
    if contract:
        dims.append(f"contracting_dims = [{', '.join(str(i) for i, _ in contract)}] x "
                    f"[{', '.join(str(j) for _, j in contract)}]")
    d = p.emit(f"stablehlo.dot_general {lv}, {rv}, {', '.join(dims)} : ({_t(ls)}, {_t(rs)}) -> {_t(out)}", out)
    p.outputs.append((d, out))


def _conv(draw, p, x, y):
    """A 2-D convolution of x (as one 3x4 image with one feature) with a 2x2 kernel of two
    output features cut from y, with random strides, padding and dilations."""
    img = p.emit(f"stablehlo.reshape {x} : ({_t(SHAPE)}) -> {_t((1,) + SHAPE + (1,))}", (1,) + SHAPE + (1,))
    ks = p.emit(f"stablehlo.slice {y} [0:2, 0:4] : ({_t(SHAPE)}) -> {_t((2, 4))}", (2, 4))
    kern = p.emit(f"stablehlo.reshape {ks} : ({_t((2, 4))}) -> {_t((2, 2, 1, 2))}", (2, 2, 1, 2))
    stride = [draw(st.integers(1, 2)) for _ in range(2)]
    pad = [(draw(st.integers(0, 1)), draw(st.integers(0, 1))) for _ in range(2)]
    lhs_dil = [draw(st.integers(1, 2)) for _ in range(2)]
    rhs_dil = [draw(st.integers(1, 2)) for _ in range(2)]
    out = []
    for k in range(2):
        padded = (SHAPE[k] - 1) * lhs_dil[k] + 1 + pad[k][0] + pad[k][1]
        window = (2 - 1) * rhs_dil[k] + 1
        out.append(max(0, (padded - window) // stride[k] + 1) if padded >= window else 0)
    ot = (1, out[0], out[1], 2)
    c = p.emit(f"stablehlo.convolution({img}, {kern}) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], "
               f"window = {{stride = [{stride[0]}, {stride[1]}], pad = [[{pad[0][0]}, {pad[0][1]}], "
               f"[{pad[1][0]}, {pad[1][1]}]], lhs_dilate = [{lhs_dil[0]}, {lhs_dil[1]}], "
               f"rhs_dilate = [{rhs_dil[0]}, {rhs_dil[1]}]}} {{batch_group_count = 1 : i64, "
               f"feature_group_count = 1 : i64}} : ({_t((1,) + SHAPE + (1,))}, {_t((2, 2, 1, 2))}) -> {_t(ot)}", ot)
    p.outputs.append((c, ot))


def _sort(draw, p, x, y):
    """Sort x along a random dimension, ascending or descending, carrying y along (stable)."""
    d = draw(st.integers(0, 1))
    direction = draw(st.sampled_from(["LT", "GT"]))
    n = p.n
    S = "tensor<f32>"
    T = _t(SHAPE)
    name = f"%v{p.n}"
    p.n += 1
    p.lines.append(
        f'    {name}:2 = "stablehlo.sort"({x}, {y}) ({{\n    ^bb0(%s{n}: {S}, %t{n}: {S}, %u{n}: {S}, %w{n}: {S}):\n'
        f'      %o{n} = stablehlo.compare {direction}, %s{n}, %t{n}, FLOAT : ({S}, {S}) -> tensor<i1>\n'
        f'      stablehlo.return %o{n} : tensor<i1>\n    }}) {{dimension = {d} : i64, is_stable = true}} : '
        f'({T}, {T}) -> ({T}, {T})')
    p.values.append((f"{name}#0", SHAPE))
    p.values.append((f"{name}#1", SHAPE))


def _reduce_window(draw, p, x):
    """reduce_window of x with add, max or min, a random window, strides and padding."""
    op, init = draw(st.sampled_from([("add", "0.0"), ("maximum", "0xFF800000"), ("minimum", "0x7F800000")]))
    win = [draw(st.integers(1, 2)), draw(st.integers(1, 3))]
    strides = [draw(st.integers(1, 2)), draw(st.integers(1, 2))]
    pad = [(draw(st.integers(0, 1)), draw(st.integers(0, 1))) for _ in range(2)]
    out = tuple((SHAPE[k] + pad[k][0] + pad[k][1] - win[k]) // strides[k] + 1 for k in range(2))
    z = p.emit(f"stablehlo.constant dense<{init}> : tensor<f32>", ())
    n = p.n
    S = "tensor<f32>"
    r = p.emit(f'"stablehlo.reduce_window"({x}, {z}) ({{\n    ^bb0(%p{n}: {S}, %q{n}: {S}):\n'
               f'      %r{n} = stablehlo.{op} %p{n}, %q{n} : {S}\n      stablehlo.return %r{n} : {S}\n    }}) '
               f'{{window_dimensions = array<i64: {win[0]}, {win[1]}>, window_strides = array<i64: {strides[0]}, '
               f'{strides[1]}>, padding = dense<[[{pad[0][0]}, {pad[0][1]}], [{pad[1][0]}, {pad[1][1]}]]> : '
               f'tensor<2x2xi64>}} : ({_t(SHAPE)}, {S}) -> {_t(out)}', out)
    p.outputs.append((r, out))


