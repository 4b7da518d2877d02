"""HLO opcode rules for contractions, gathers/scatters and ops with called computations."""
from __future__ import annotations

import re

from axle.ir.text.hlo_emit import array_attr, leaves
from axle.ir.text.hlo_ops import _dims, _rebuild, _result, ints, padding_config, rule


def _elem_type(t: str) -> str:
    body = t[len("tensor<"):-1]
    parts = body.split("x")
    k = 0
    while k < len(parts) and parts[k].isdigit():
        k += 1
    return "tensor<" + "x".join(parts[k:]) + ">"


@rule("dot")
def _dot(e, ins, ops):
    def dims(name):
        raw = e.attr(name)
        return [] if raw is None else ints(e, raw, name)
    dn = (f"#stablehlo.dot<lhs_batching_dimensions = [{', '.join(map(str, dims('lhs_batch_dims')))}], "
          f"rhs_batching_dimensions = [{', '.join(map(str, dims('rhs_batch_dims')))}], "
          f"lhs_contracting_dimensions = [{', '.join(map(str, dims('lhs_contracting_dims')))}], "
          f"rhs_contracting_dimensions = [{', '.join(map(str, dims('rhs_contracting_dims')))}]>")
    return e.one("stablehlo.dot_general", ops, _result(ins), {"dot_dimension_numbers": dn})


def _window(e, raw: str) -> dict:
    out = {}
    body = raw.strip().strip("{}")
    for item in body.split():
        key, _, value = item.partition("=")
        if key == "pad":
            low, high, _ = padding_config(e, value, "window")
            out["pad"] = list(zip(low, high))
        elif key == "rhs_reversal":
            out[key] = [int(v) for v in value.split("x")]
        else:
            try:
                out[key] = [int(v) for v in value.split("x")]
            except ValueError:
                raise e.error(f"window={raw}: cannot read '{item}'", attr="window") from None
    return out


def _padding(pairs, rank: int) -> str:
    pairs = pairs or [(0, 0)] * rank
    flat = ", ".join(f"[{lo}, {hi}]" for lo, hi in pairs)
    return f"dense<[{flat}]> : tensor<{len(pairs)}x2xi64>" if pairs else "dense<> : tensor<0x2xi64>"


@rule("convolution")
def _convolution(e, ins, ops):
    labels = e.attr("dim_labels", required=True)
    m = re.fullmatch(r"(\w+)_(\w+)->(\w+)", labels)
    if not m:
        raise e.error(f"dim_labels={labels}: expected like b01f_01io->b01f", attr="dim_labels")
    rank = len(m.group(1)) - 2
    w = _window(e, e.attr("window", "{}"))
    size = w.get("size", [1] * rank)
    rank = len(size) if size else rank

    def layout(s, kind):
        return "[" + ", ".join(c if not c.isdigit() else c for c in s) + "]"
    dn = f"#stablehlo.conv<{layout(m.group(1), 'lhs')}x{layout(m.group(2), 'rhs')}->{layout(m.group(3), 'out')}>"
    attrs = {"window_strides": array_attr(w.get("stride", [1] * rank)),
             "padding": _padding(w.get("pad"), rank),
             "lhs_dilation": array_attr(w.get("lhs_dilate", [1] * rank)),
             "rhs_dilation": array_attr(w.get("rhs_dilate", [1] * rank)),
             "window_reversal": array_attr(w.get("rhs_reversal", [0] * rank), "i1"),
             "dimension_numbers": dn,
             "feature_group_count": f"{int(e.attr('feature_group_count', '1'))} : i64",
             "batch_group_count": f"{int(e.attr('batch_group_count', '1'))} : i64"}
    return e.one("stablehlo.convolution", ops, _result(ins), attrs)


def _results(ins) -> list:
    return [s.mlir() for s in ins.shape.leaves()]


@rule("reduce")
def _reduce(e, ins, ops):
    n = len(ops) // 2
    scalars = [_elem_type(t) for _, t in ops[:n]]
    region = e.region(e.attr("to_apply", required=True), scalars * 2)
    outs = e.op("stablehlo.reduce", ops, _results(ins), {"dimensions": array_attr(_dims(e, ins))}, [region])
    return outs if ins.shape.is_tuple else outs[0]


@rule("reduce-window")
def _reduce_window(e, ins, ops):
    n = len(ops) // 2
    rank = len(ins.shape.leaves()[0].dims)
    w = _window(e, e.attr("window", required=True))
    region = e.region(e.attr("to_apply", required=True), [_elem_type(t) for _, t in ops[:n]] * 2)
    attrs = {"window_dimensions": array_attr(w.get("size", [1] * rank)),
             "window_strides": array_attr(w.get("stride", [1] * rank)),
             "base_dilations": array_attr(w.get("lhs_dilate", [1] * rank)),
             "window_dilations": array_attr(w.get("rhs_dilate", [1] * rank)),
             "padding": _padding(w.get("pad"), rank)}
    outs = e.op("stablehlo.reduce_window", ops, _results(ins), attrs, [region])
    return outs if ins.shape.is_tuple else outs[0]


@rule("select-and-scatter")
def _select_and_scatter(e, ins, ops):
    rank = len(ins.shape.dims)
    w = _window(e, e.attr("window", required=True))
    scalar = _elem_type(ops[0][1])
    select = e.region(e.attr("select", required=True), [scalar, scalar], "select")
    scatter = e.region(e.attr("scatter", required=True), [scalar, scalar], "scatter")
    attrs = {"window_dimensions": array_attr(w.get("size", [1] * rank)),
             "window_strides": array_attr(w.get("stride", [1] * rank)),
             "padding": _padding(w.get("pad"), rank)}
    return e.op("stablehlo.select_and_scatter", ops, [_result(ins)], attrs, [select, scatter])[0]


@rule("map")
def _map(e, ins, ops):
    region = e.region(e.attr("to_apply", required=True), [_elem_type(t) for _, t in ops])
    dims = _dims(e, ins, required=False) or list(range(len(ins.shape.dims)))
    return e.op("stablehlo.map", ops, [_result(ins)], {"dimensions": array_attr(dims)}, [region])[0]


@rule("sort")
def _sort(e, ins, ops):
    scalars = [_elem_type(t) for _, t in ops]
    region = e.region(e.attr("to_apply", required=True), [s for s in scalars for _ in (0, 1)])
    attrs = {"dimension": f"{_dims(e, ins)[0]} : i64",
             "is_stable": "true" if e.attr("is_stable", "false") == "true" else "false"}
    outs = e.op("stablehlo.sort", ops, _results(ins), attrs, [region])
    return outs if ins.shape.is_tuple else outs[0]


@rule("while")
def _while(e, ins, ops):
    init = ops[0]
    vals = leaves(init)
    types = [t for _, t in vals]
    cond = e.region(e.attr("condition", required=True), None, "condition")
    body = e.region(e.attr("body", required=True), None, "body")
    outs = e.op("stablehlo.while", vals, types, None, [cond, body])
    return _rebuild(init, iter(outs))


@rule("conditional")
def _conditional(e, ins, ops):
    selector, args = ops[0], ops[1:]
    names = e.attr("branch_computations")
    if names is not None:
        comps = [n.strip() for n in names.strip("{}").split(",")]
        attr = "branch_computations"
    else:
        comps = [e.attr("true_computation", required=True), e.attr("false_computation", required=True)]
        attr = "true_computation"
    if len(comps) != len(args):
        raise e.error(f"conditional: {len(comps)} branches but {len(args)} branch operands")
    results = _results(ins)

    def branch(name, arg):
        comp = e.computation(name, attr)

        def emit():
            e.put("{")
            root = e.inline(comp, [arg])
            vals = leaves(root)
            e.instr = comp.root
            e.put(f'"stablehlo.return"({", ".join(s for s, _ in vals)}) : ({", ".join(t for _, t in vals)}) -> () '
                  f"{e.location()}")
            e.indent -= 2
            e.put("}")
            e.indent += 2
        return emit
    regions = [branch(c, a) for c, a in zip(comps, args)]
    if selector[1] == "tensor<i1>":   # pred: true branch first, as stablehlo.if
        outs = e.op("stablehlo.if", [selector], results, None, regions)
    else:
        outs = e.op("stablehlo.case", [selector], results, None, regions)
    return _rebuild([None] * len(results), iter(outs)) if ins.shape.is_tuple else outs[0]


@rule("gather")
def _gather(e, ins, ops):
    def d(name):
        raw = e.attr(name)
        return [] if raw is None else ints(e, raw, name)
    dn = (f"#stablehlo.gather<offset_dims = [{', '.join(map(str, d('offset_dims')))}], "
          f"collapsed_slice_dims = [{', '.join(map(str, d('collapsed_slice_dims')))}], "
          f"operand_batching_dims = [{', '.join(map(str, d('operand_batching_dims')))}], "
          f"start_indices_batching_dims = [{', '.join(map(str, d('start_indices_batching_dims')))}], "
          f"start_index_map = [{', '.join(map(str, d('start_index_map')))}], "
          f"index_vector_dim = {int(e.attr('index_vector_dim', required=True))}>")
    attrs = {"dimension_numbers": dn, "slice_sizes": array_attr(d("slice_sizes")),
             "indices_are_sorted": e.attr("indices_are_sorted", "false")}
    return e.one("stablehlo.gather", ops, _result(ins), attrs)


@rule("scatter")
def _scatter(e, ins, ops):
    def d(name):
        raw = e.attr(name)
        return [] if raw is None else ints(e, raw, name)
    n = (len(ops) - 1) // 2
    region = e.region(e.attr("to_apply", required=True), [_elem_type(t) for _, t in ops[:n]] * 2)
    dn = (f"#stablehlo.scatter<update_window_dims = [{', '.join(map(str, d('update_window_dims')))}], "
          f"inserted_window_dims = [{', '.join(map(str, d('inserted_window_dims')))}], "
          f"input_batching_dims = [{', '.join(map(str, d('input_batching_dims')))}], "
          f"scatter_indices_batching_dims = [{', '.join(map(str, d('scatter_indices_batching_dims')))}], "
          f"scatter_dims_to_operand_dims = [{', '.join(map(str, d('scatter_dims_to_operand_dims')))}], "
          f"index_vector_dim = {int(e.attr('index_vector_dim', required=True))}>")
    attrs = {"scatter_dimension_numbers": dn, "indices_are_sorted": e.attr("indices_are_sorted", "false"),
             "unique_indices": e.attr("unique_indices", "false")}
    outs = e.op("stablehlo.scatter", ops, _results(ins), attrs, [region])
    return outs if ins.shape.is_tuple else outs[0]


@rule("custom-call")
def _custom_call(e, ins, ops):
    target = e.attr("custom_call_target", required=True).strip('"')
    vals = [v for op in ops for v in leaves(op)]
    attrs = {"call_target_name": f'"{target}"'}
    config = e.attr("backend_config")
    if e.attr("api_version") == "API_VERSION_TYPED_FFI":
        attrs["api_version"] = "4 : i32"  # its backend_config is an MLIR dictionary
        if config is not None and config.startswith("{"):
            attrs["backend_config"] = config
    elif config is not None:
        attrs["backend_config"] = config if config.startswith('"') else '"' + config.replace('"', '\\"') + '"'
    outs = e.op("stablehlo.custom_call", vals, _results(ins), attrs)
    return outs if ins.shape.is_tuple else outs[0]


# -- normalization, linear algebra, FFT, RNG, tokens --------------------------------------------
def _bn_attrs(e) -> dict:
    return {"epsilon": f"{float(e.attr('epsilon', required=True))!r} : f32",
            "feature_index": f"{int(e.attr('feature_index', required=True))} : i64"}


@rule("batch-norm-inference")
def _bn_inference(e, ins, ops):
    return e.one("stablehlo.batch_norm_inference", ops, _result(ins), _bn_attrs(e))


@rule("batch-norm-training", "batch-norm-grad")
def _bn_training(e, ins, ops):
    name = "stablehlo.batch_norm_training" if ins.opcode == "batch-norm-training" else "stablehlo.batch_norm_grad"
    return e.op(name, ops, _results(ins), _bn_attrs(e))


@rule("cholesky")
def _cholesky(e, ins, ops):
    lower = e.attr("lower", "false") == "true"
    return e.one("stablehlo.cholesky", ops, _result(ins), {"lower": "true" if lower else "false"})


@rule("triangular-solve")
def _triangular_solve(e, ins, ops):
    flag = {"true": "true", "false": "false"}
    transpose = e.attr("transpose_a", "NO_TRANSPOSE")
    if transpose not in ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"):
        raise e.error(f"triangular-solve: transpose_a={transpose}", attr="transpose_a")
    return e.one("stablehlo.triangular_solve", ops, _result(ins),
                 {"left_side": flag.get(e.attr("left_side", "false"), "false"),
                  "lower": flag.get(e.attr("lower", "false"), "false"),
                  "unit_diagonal": flag.get(e.attr("unit_diagonal", "false"), "false"),
                  "transpose_a": f"#stablehlo<transpose {transpose}>"})


@rule("fft")
def _fft(e, ins, ops):
    kind = e.attr("fft_type", required=True)
    if kind not in ("FFT", "IFFT", "RFFT", "IRFFT"):
        raise e.error(f"fft: fft_type={kind}", attr="fft_type")
    return e.one("stablehlo.fft", ops, _result(ins), {"fft_type": f"#stablehlo<fft_type {kind}>",
                                                     "fft_length": array_attr(ints(e, e.attr("fft_length", required=True), "fft_length"))})


@rule("rng-bit-generator")
def _rng_bit_generator(e, ins, ops):
    algorithm = {"rng_default": "DEFAULT", "rng_three_fry": "THREE_FRY", "rng_philox": "PHILOX"}.get(
        e.attr("algorithm", "rng_default"))
    if algorithm is None:
        raise e.error(f"rng-bit-generator: algorithm={e.attr('algorithm')}", attr="algorithm")
    return e.op("stablehlo.rng_bit_generator", ops, _results(ins),
                {"rng_algorithm": f"#stablehlo<rng_algorithm {algorithm}>"})


@rule("after-all")
def _after_all(e, ins, ops):
    return e.one("stablehlo.after_all", ops, "!stablehlo.token")


@rule("add-dependency", "domain")
def _pass_through(e, ins, ops):
    return ops[0]
