"""One rule per HLO opcode: (emitter, instruction, operand values) -> result value(s).

The attribute syntax follows XLA's HloInstruction::ToString (`dimensions={1,0}`,
`window={size=3x3 stride=2x2 pad=1_1x1_1}`, `slice={[0:8:2]}`, `dim_labels=b01f_01io->b01f`,
`padding=0_0x1_1_0`, `direction=LT`), and each rule emits the StableHLO op XLA's own
HLO->MHLO importer would.
"""
from __future__ import annotations

import re

import numpy as np

from axle.ir.text.hlo_emit import RULES, Emitter, array_attr, leaves, rule


UNARY = {"abs": "abs", "negate": "negate", "exponential": "exponential",
         "exponential-minus-one": "exponential_minus_one", "log": "log", "log-plus-one": "log_plus_one",
         "sqrt": "sqrt", "rsqrt": "rsqrt", "cbrt": "cbrt", "tanh": "tanh", "logistic": "logistic",
         "sine": "sine", "cosine": "cosine", "tan": "tan", "floor": "floor", "ceil": "ceil",
         "round-nearest-afz": "round_nearest_afz", "round-nearest-even": "round_nearest_even",
         "sign": "sign", "not": "not", "is-finite": "is_finite", "popcnt": "popcnt",
         "count-leading-zeros": "count_leading_zeros", "real": "real", "imag": "imag",
         "convert": "convert", "bitcast-convert": "bitcast_convert", "reshape": "reshape",
         "bitcast": "reshape"}
BINARY = {"add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "divide",
          "remainder": "remainder", "maximum": "maximum", "minimum": "minimum", "power": "power",
          "and": "and", "or": "or", "xor": "xor", "shift-left": "shift_left",
          "shift-right-arithmetic": "shift_right_arithmetic", "shift-right-logical": "shift_right_logical",
          "atan2": "atan2", "complex": "complex"}


def _result(ins):
    return ins.shape.mlir()


def ints(e: Emitter, raw: str, attr: str) -> list:
    body = raw.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    try:
        return [int(x) for x in body.replace(" ", "").split(",") if x]
    except ValueError:
        raise e.error(f"attribute '{attr}': expected a list of integers like {{0,1}}, found {raw!r}", attr=attr) from None


def _dims(e: Emitter, ins, attr: str = "dimensions", required: bool = True) -> list:
    raw = e.attr(attr, required=required)
    return [] if raw is None else ints(e, raw, attr)


for _hlo, _sh in UNARY.items():
    RULES[_hlo] = (lambda name: lambda e, ins, ops: e.one("stablehlo." + name, ops, _result(ins)))(_sh)
for _hlo, _sh in BINARY.items():
    RULES[_hlo] = (lambda name: lambda e, ins, ops: e.one("stablehlo." + name, ops, _result(ins)))(_sh)


@rule("erf")
def _erf(e, ins, ops):
    return e.one("chlo.erf", ops, _result(ins))


@rule("copy", "copy-start", "copy-done")
def _copy(e, ins, ops):
    return ops[0]


@rule("select", "clamp")
def _ternary(e, ins, ops):
    return e.one("stablehlo." + ins.opcode, ops, _result(ins))


@rule("compare")
def _compare(e, ins, ops):
    direction = e.attr("direction", required=True)
    if direction not in ("EQ", "NE", "LT", "LE", "GT", "GE"):
        raise e.error(f"compare: direction={direction}; expected EQ, NE, LT, LE, GT or GE", attr="direction")
    attrs = {"comparison_direction": f"#stablehlo<comparison_direction {direction}>"}
    kind = e.attr("type")
    if kind is not None:
        attrs["compare_type"] = f"#stablehlo<comparison_type {kind}>"
    return e.one("stablehlo.compare", ops, _result(ins), attrs)


# -- tuples, calls, constants ---------------------------------------------------------------
@rule("tuple")
def _tuple(e, ins, ops):
    return list(ops)


@rule("get-tuple-element")
def _gte(e, ins, ops):
    k = int(e.attr("index", required=True))
    if not isinstance(ops[0], list) or not 0 <= k < len(ops[0]):
        raise e.error(f"get-tuple-element index={k} of a value that is not a tuple of more than {k} elements")
    return ops[0][k]


@rule("call")
def _call(e, ins, ops):
    comp = e.computation(e.attr("to_apply", required=True), "to_apply")
    return e.inline(comp, ops)


@rule("optimization-barrier")
def _barrier(e, ins, ops):
    vals = leaves(ops[0])
    outs = e.op("stablehlo.optimization_barrier", vals, [t for _, t in vals])
    return _rebuild(ops[0], iter(outs))


def _rebuild(shape_like, it):
    if isinstance(shape_like, list):
        return [_rebuild(x, it) for x in shape_like]
    return next(it)


_LITERAL = re.compile(r"-?inf|nan|-nan|true|false|[-+]?(?:0x[0-9a-fA-F]+|[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)")


@rule("constant")
def _constant(e, ins, ops):
    from axle.ir.text.hlo_types import numpy_dtype
    shape = ins.shape
    if shape.is_tuple:
        raise e.error("tuple-shaped constants are not supported")
    text = ins.literal
    if "..." in text:
        raise e.error("this constant's value was elided ('...') when the HLO was printed; dump with "
                      "--xla_dump_hlo_as_text and without large-constant elision")
    dtype = numpy_dtype(shape.element)
    if shape.element.startswith("complex"):
        raise e.error("complex constants are not supported by axle's HLO reader")
    tokens = _LITERAL.findall(text)
    count = int(np.prod(shape.dims)) if shape.dims else 1
    if len(tokens) != count:
        raise e.error(f"constant of shape {shape.mlir()} has {count} elements, the literal gives {len(tokens)}")
    values = [1.0 if t == "true" else 0.0 if t == "false" else float(t) if "x" not in t else int(t, 16)
              for t in tokens]
    if np.dtype(dtype).kind in "iub":
        arr = np.array([int(v) for v in values], dtype=np.int64).astype(dtype)
    else:
        arr = np.array(values, dtype=np.float64).astype(dtype)
    return e.one("stablehlo.constant", [], _result(ins), {"value": f'dense<"0x{arr.tobytes().hex().upper()}"> : {_result(ins)}'})


@rule("iota")
def _iota(e, ins, ops):
    return e.one("stablehlo.iota", [], _result(ins), {"iota_dimension": f"{int(e.attr('iota_dimension', required=True))} : i64"})


# -- shape ops ------------------------------------------------------------------------------
@rule("broadcast")
def _broadcast(e, ins, ops):
    return e.one("stablehlo.broadcast_in_dim", ops, _result(ins), {"broadcast_dimensions": array_attr(_dims(e, ins))})


@rule("transpose")
def _transpose(e, ins, ops):
    return e.one("stablehlo.transpose", ops, _result(ins), {"permutation": array_attr(_dims(e, ins))})


@rule("reverse")
def _reverse(e, ins, ops):
    return e.one("stablehlo.reverse", ops, _result(ins), {"dimensions": array_attr(_dims(e, ins))})


@rule("concatenate")
def _concatenate(e, ins, ops):
    d = _dims(e, ins)
    return e.one("stablehlo.concatenate", ops, _result(ins), {"dimension": f"{d[0]} : i64"})


@rule("slice")
def _slice(e, ins, ops):
    raw = e.attr("slice", required=True)
    parts = re.findall(r"\[\s*(-?\d+)\s*:\s*(-?\d+)\s*(?::\s*(\d+)\s*)?\]", raw)
    if not parts:
        raise e.error(f"slice={raw}: expected {{[start:limit:stride], ...}}", attr="slice")
    starts, limits, strides = ([int(p[k] or 1) for p in parts] for k in range(3))
    return e.one("stablehlo.slice", ops, _result(ins), {"start_indices": array_attr(starts),
                                                       "limit_indices": array_attr(limits),
                                                       "strides": array_attr(strides)})


@rule("dynamic-slice")
def _dynamic_slice(e, ins, ops):
    sizes = ints(e, e.attr("dynamic_slice_sizes", required=True), "dynamic_slice_sizes")
    return e.one("stablehlo.dynamic_slice", ops, _result(ins), {"slice_sizes": array_attr(sizes)})


@rule("dynamic-update-slice")
def _dynamic_update_slice(e, ins, ops):
    return e.one("stablehlo.dynamic_update_slice", ops, _result(ins))


def padding_config(e, raw: str, attr: str):
    low, high, interior = [], [], []
    for dim in raw.split("x"):
        nums = dim.split("_")
        try:
            vals = [int(n) for n in nums]
        except ValueError:
            raise e.error(f"{attr}={raw}: expected low_high[_interior] per dimension, joined by 'x'", attr=attr) from None
        low.append(vals[0])
        high.append(vals[1] if len(vals) > 1 else 0)
        interior.append(vals[2] if len(vals) > 2 else 0)
    return low, high, interior


@rule("pad")
def _pad(e, ins, ops):
    low, high, interior = padding_config(e, e.attr("padding", required=True), "padding")
    return e.one("stablehlo.pad", ops, _result(ins), {"edge_padding_low": array_attr(low),
                                                     "edge_padding_high": array_attr(high),
                                                     "interior_padding": array_attr(interior)})


@rule("reduce-precision")
def _reduce_precision(e, ins, ops):
    return e.one("stablehlo.reduce_precision", ops, _result(ins),
                 {"exponent_bits": f"{int(e.attr('exponent_bits', required=True))} : i32",
                  "mantissa_bits": f"{int(e.attr('mantissa_bits', required=True))} : i32"})
