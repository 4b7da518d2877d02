"""Hypothesis strategies that build random StableHLO programs (as MLIR text) for
differential tests: elementwise ops, broadcasts, transposes, reshapes, reductions,
dot_generals, constants, selects and the identities the simplifier targets."""
from hypothesis import strategies as st

SHAPE = (3, 4)


def _t(shape, et="f32"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + et + ">"


class _Prog:
    def __init__(self):
        self.lines = []
        self.n = 0
        self.values = []  # (name, shape)

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
            kinds += ["gather", "scatter", "while"]
        kind = draw(st.sampled_from(kinds))
        full = [v for v in p.values if v[1] == SHAPE]
        x = draw(st.sampled_from(full))[0]
        y = draw(st.sampled_from(full))[0]
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
                p.emit(f'"stablehlo.scatter"({x}, {idx}, {y}) ({{\n    ^bb0(%p{n}: tensor<f32>, %q{n}: tensor<f32>):\n'
                       f'      %r{n} = stablehlo.add %p{n}, %q{n} : tensor<f32>\n'
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
        elif kind == "select":
            c = p.emit(f"stablehlo.compare GT, {x}, {y}, FLOAT : ({T}, {T}) -> {_t(SHAPE, 'i1')}", SHAPE)
            p.values[-1] = (c, "pred")
            p.emit(f"stablehlo.select {c}, {x}, {y} : {_t(SHAPE, 'i1')}, {T}", SHAPE)
    result = [v for v in p.values if v[1] == SHAPE][-1][0]
    body = "\n".join(p.lines)
    return (f"func.func @main(%a: {_t(SHAPE)}, %b: {_t(SHAPE)}, %c: {_t((SHAPE[1],))}) -> {_t(SHAPE)} {{\n"
            f"{body}\n    return {result} : {_t(SHAPE)}\n}}\n")


