"""The op table: every op axle knows, described once.

Each entry gives the op's name, its traits (what passes ask about), how many operands,
results and regions it has (-1 = variadic), and the pretty syntax it prints and parses
with (`format`, plus `keywords`: pretty keyword -> (attribute name, attribute kind)).
The parser, printer, verifier (axle/ir/verifier.py), shape inference and the
interpreter's dispatch all read this table.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

# traits (what passes, tools and backends ask instead of lists of op names; `has_trait`)
ELEMENTWISE = "elementwise"        # element i of the result reads element i of each operand (convert too)
COMMUTATIVE = "commutative"        # operands may be swapped
SIDE_EFFECT = "side_effect"        # has an effect beyond its results (I/O, collectives, checks, tokens)
OPAQUE_EFFECTS = "opaque_effects"  # may hide effects (calls, loops, conditionals, composites, rng state):
                                   # never treated as pure, though it has no effect of its own
TERMINATOR = "terminator"          # ends a block
COLLECTIVE = "collective"          # communicates between processes
SAME_TYPE = "same_operands_and_result_type"
CONSTANT_LIKE = "constant_like"    # result fixed by its attributes (constant, iota)
SHAPE_OPERAND = "takes_shape_operand"  # an operand gives a result shape (dynamic shapes)
MOVEMENT = "movement"              # only moves, copies or drops elements (reshape, transpose, broadcast,
                                   # slice, concatenate, pad, reverse, gather, ...): no arithmetic
NO_FOLD = "no_fold"                # never constant-folded: its value depends on the process running it
                                   # (replica id, rng, infeed, probes) or folding defeats it (a barrier)
HOST_IO = "host_io"                # exchanges data with the host or a peer through tokens (infeed,
                                   # outfeed, send, recv)
SYMBOL = "symbol"                  # defines a module-level symbol (func.func, sdy.mesh)
ISOLATED = "isolated_from_above"   # its regions see no value defined outside them


@dataclass(frozen=True)
class OpDef:
    name: str
    operands: int = -1
    results: int = 1
    regions: int = 0
    traits: frozenset = frozenset()
    format: str = "generic"
    keywords: tuple = ()  # ((pretty keyword, attr name, kind), ...)
    doc: str = ""
    shape_operands: tuple = ()  # operand positions that hold shapes, sizes or paddings, not data

    def has(self, trait: str) -> bool:
        return trait in self.traits

    def keyword(self, word: str) -> Optional[tuple]:
        for k, a, kind in self.keywords:
            if k == word:
                return a, kind
        return None


OPS: dict[str, OpDef] = {}


def _def(name, operands=-1, results=1, regions=0, traits=(), format="generic", keywords=(), doc=""):
    OPS[name] = OpDef(name, operands, results, regions, frozenset(traits), format, tuple(keywords), doc)


def _add_trait(trait: str, names) -> None:
    for n in names:
        d = OPS[n]
        OPS[n] = replace(d, traits=d.traits | {trait})


def _shape_operands(name: str, positions: tuple) -> None:
    OPS[name] = replace(OPS[name], shape_operands=positions)


_SH = "stablehlo."
# -- elementwise unary (pretty: `op %x : T` or `op %x : (T) -> R`)
for _n in ["abs", "cbrt", "ceil", "cosine", "count_leading_zeros", "exponential",
           "exponential_minus_one", "floor", "imag", "is_finite", "log", "log_plus_one",
           "logistic", "negate", "not", "popcnt", "real", "round_nearest_afz",
           "round_nearest_even", "rsqrt", "sign", "sine", "sqrt", "tan", "tanh", "convert",
           "bitcast_convert_elementwise_placeholder"]:
    if _n.startswith("bitcast"):
        continue
    _def(_SH + _n, 1, 1, traits=(ELEMENTWISE,), format="same_or_functional")
_def(_SH + "reduce_precision", 1, 1, traits=(ELEMENTWISE, SAME_TYPE), format="same_or_functional",
     keywords=[("format", "exponent_bits|mantissa_bits", "float_format")])
# -- elementwise binary
for _n, _comm in [("add", 1), ("and", 1), ("atan2", 0), ("complex", 0), ("divide", 0), ("maximum", 1),
                  ("minimum", 1), ("multiply", 1), ("or", 1), ("power", 0), ("remainder", 0),
                  ("shift_left", 0), ("shift_right_arithmetic", 0), ("shift_right_logical", 0),
                  ("subtract", 0), ("xor", 1)]:
    _def(_SH + _n, 2, 1, traits=(ELEMENTWISE,) + ((COMMUTATIVE,) if _comm else ()), format="same_or_functional")
_def(_SH + "compare", 2, 1, traits=(ELEMENTWISE,), format="compare")
_def(_SH + "select", 3, 1, traits=(ELEMENTWISE,), format="select")
_def(_SH + "clamp", 3, 1, traits=(ELEMENTWISE,), format="same_or_functional")
_def(_SH + "bitcast_convert", 1, 1, format="functional")
_def(_SH + "uniform_quantize", 1, 1, traits=(ELEMENTWISE,), format="functional")
_def(_SH + "uniform_dequantize", 1, 1, traits=(ELEMENTWISE,), format="functional")
# -- constants and shapes
_def(_SH + "constant", 0, 1, traits=(CONSTANT_LIKE,), format="constant")
_def(_SH + "iota", 0, 1, traits=(CONSTANT_LIKE,), format="result_only",
     keywords=[("dim", "iota_dimension", "i64")])
_def(_SH + "dynamic_iota", 1, 1, traits=(SHAPE_OPERAND,), format="functional",
     keywords=[("dim", "iota_dimension", "i64")])
_def(_SH + "broadcast_in_dim", 1, 1, format="functional",
     keywords=[("dims", "broadcast_dimensions", "i64_array")])
_def(_SH + "dynamic_broadcast_in_dim", 2, 1, traits=(SHAPE_OPERAND,), format="functional",
     keywords=[("dims", "broadcast_dimensions", "i64_array"),
               ("known_expanding_dimensions", "known_expanding_dimensions", "i64_array"),
               ("known_nonexpanding_dimensions", "known_nonexpanding_dimensions", "i64_array")])
_def(_SH + "broadcast", 1, 1, format="functional", keywords=[("sizes", "broadcast_sizes", "i64_array")])
_def(_SH + "reshape", 1, 1, format="functional")
_def(_SH + "dynamic_reshape", 2, 1, traits=(SHAPE_OPERAND,), format="functional")
_def(_SH + "transpose", 1, 1, format="functional", keywords=[("dims", "permutation", "i64_array")])
_def(_SH + "reverse", 1, 1, format="same_or_functional", keywords=[("dims", "dimensions", "i64_array")])
_def(_SH + "slice", 1, 1, format="slice")
_def(_SH + "dynamic_slice", -1, 1, format="functional", keywords=[("sizes", "slice_sizes", "i64_array")])
_def(_SH + "real_dynamic_slice", 4, 1, traits=(SHAPE_OPERAND,), format="functional")
_def(_SH + "dynamic_update_slice", -1, 1, format="functional")
_def(_SH + "concatenate", -1, 1, format="functional", keywords=[("dim", "dimension", "i64")])
_def(_SH + "pad", 2, 1, format="functional",
     keywords=[("low", "edge_padding_low", "i64_array"), ("high", "edge_padding_high", "i64_array"),
               ("interior", "interior_padding", "i64_array")])
_def(_SH + "dynamic_pad", 5, 1, traits=(SHAPE_OPERAND,), format="functional")
_def(_SH + "get_dimension_size", 1, 1, format="functional", keywords=[("dim", "dimension", "i64")])
_def(_SH + "set_dimension_size", 2, 1, format="functional", keywords=[("dim", "dimension", "i64")])
_def(_SH + "gather", 2, 1, format="generic")
_def(_SH + "dynamic_gather", 3, 1, format="generic")
_def(_SH + "scatter", -1, -1, regions=1, format="generic")
_def(_SH + "sort", -1, -1, regions=1, format="generic")
_def(_SH + "get_tuple_element", 1, 1, format="get_tuple_element")
_def(_SH + "tuple", -1, 1, format="result_only")
_def(_SH + "optimization_barrier", -1, -1, format="same_list")
# -- reductions, contractions, linear algebra
_def(_SH + "reduce", -1, -1, regions=1, format="reduce")
_def(_SH + "reduce_window", -1, -1, regions=1, format="generic")
_def(_SH + "select_and_scatter", 3, 1, regions=2, format="generic")
_def(_SH + "map", -1, 1, regions=1, format="generic")
_def(_SH + "dot", 2, 1, format="functional", keywords=[("precision", "precision_config", "precision")])
_def(_SH + "dot_general", 2, 1, format="functional",
     keywords=[("batching_dims", "dot_dimension_numbers", "dot_dims"),
               ("contracting_dims", "dot_dimension_numbers", "dot_dims"),
               ("precision", "precision_config", "precision"),
               ("algorithm", "algorithm", "attr")])
_def(_SH + "convolution", 2, 1, format="convolution")
_def(_SH + "dynamic_conv", 3, 1, format="generic")
_def(_SH + "fft", 1, 1, format="functional",
     keywords=[("type", "fft_type", "enum:fft_type"), ("length", "fft_length", "i64_array")])
_def(_SH + "cholesky", 1, 1, format="same_or_functional", keywords=[("lower", "lower", "bool")])
_def(_SH + "triangular_solve", 2, 1, format="generic")
_def(_SH + "batch_norm_inference", 5, 1, format="generic")
_def(_SH + "batch_norm_training", 3, 3, format="generic")
_def(_SH + "batch_norm_grad", 5, 3, format="generic")
_def(_SH + "einsum", 2, 1, format="generic")
_def(_SH + "unary_einsum", 1, 1, format="generic")
_def(_SH + "torch_index_select", 2, 1, format="generic")
_def(_SH + "rng", 3, 1, format="functional",
     keywords=[("distribution", "rng_distribution", "enum:rng_distribution")])
_def(_SH + "rng_bit_generator", 1, 2, format="functional",
     keywords=[("algorithm", "rng_algorithm", "enum:rng_algorithm")])
# -- control flow and calls
_def(_SH + "while", -1, -1, regions=2, format="while")
_def(_SH + "if", 1, -1, regions=2, format="generic")
_def(_SH + "case", 1, -1, regions=-1, format="generic")
_def(_SH + "return", -1, 0, traits=(TERMINATOR,), format="return")
_def(_SH + "custom_call", -1, -1, traits=(SIDE_EFFECT,), format="custom_call")
_def(_SH + "composite", -1, -1, format="composite")
_def(_SH + "after_all", -1, 1, traits=(SIDE_EFFECT,), format="result_only")
_def(_SH + "create_token", 0, 1, traits=(SIDE_EFFECT,), format="result_only")
# -- communication and collectives
for _n, _nres in [("all_gather", -1), ("all_reduce", -1), ("all_to_all", -1), ("collective_broadcast", -1),
                  ("collective_permute", 1), ("reduce_scatter", 1), ("collective_reduce", -1)]:
    _def(_SH + _n, -1, _nres, regions=1 if _n in ("all_reduce", "reduce_scatter", "collective_reduce") else 0,
         traits=(COLLECTIVE, SIDE_EFFECT), format="generic")
_def(_SH + "replica_id", 0, 1, format="result_only")
_def(_SH + "partition_id", 0, 1, format="result_only")
for _n, _nres in [("infeed", -1), ("outfeed", 1), ("send", 1), ("recv", -1)]:
    _def(_SH + _n, -1, _nres, traits=(SIDE_EFFECT,), format="generic")
_def(_SH + "async_start", -1, 1, regions=0, format="generic")
_def(_SH + "async_done", 1, -1, format="generic")
# -- func
_def("func.func", 0, 0, regions=1, format="func")
_def("func.return", -1, 0, traits=(TERMINATOR,), format="return")
_def("func.call", -1, -1, format="call")
# -- CHLO
for _n in ["acos", "acosh", "asin", "asinh", "atan", "atanh", "bessel_i1e", "conj", "cosh", "sinh", "tan",
           "digamma", "erf", "erfc", "erf_inv", "lgamma", "is_inf", "is_neg_inf", "is_pos_inf", "square",
           "sign"]:
    _def("chlo." + _n, 1, 1, traits=(ELEMENTWISE,), format="chlo")
for _n in ["next_after", "polygamma", "zeta", "mulhi"]:
    _def("chlo." + _n, 2, 1, traits=(ELEMENTWISE,), format="chlo")
for _n in ["add", "and", "atan2", "complex", "divide", "maximum", "minimum", "multiply", "next_after", "or",
           "polygamma", "power", "remainder", "shift_left", "shift_right_arithmetic", "shift_right_logical",
           "subtract", "xor", "zeta", "compare", "select"]:
    _def(f"chlo.broadcast_{_n}", -1, 1, format="chlo")
_def("chlo.constant_like", 1, 1, format="chlo")
_def("chlo.constant", 0, 1, format="constant")
_def("chlo.top_k", 1, 2, format="top_k")
_def("chlo.ragged_dot", 3, 1, format="generic")
_def("chlo.scan", -1, -1, regions=1, format="scan")
# -- the check dialect used by the conformance suites, and the interpreter's helpers
for _n, _nops in [("expect_eq", 2), ("expect_almost_eq", 2), ("expect_close", 2), ("expect_eq_const", 1),
                  ("expect_almost_eq_const", 1), ("expect_serialized_eq", 1)]:
    _def("check." + _n, _nops, 0, traits=(SIDE_EFFECT,), format="check",
         keywords=[("tolerance", "tolerance", "f64"), ("max_ulp_difference", "max_ulp_difference", "i64"),
                   ("min_ulp_difference", "min_ulp_difference", "i64"), ("probe_id", "probe_id", "string"),
                   ("iter", "iter", "i64")])
_def("check.eq", 2, 1, format="functional")
_def("interpreter.run_parallel", -1, -1, traits=(SIDE_EFFECT,), format="generic")
_def("interpreter.probe", 1, 1, traits=(SIDE_EFFECT,), format="same_or_functional",
     keywords=[("probe_id", "probe_id", "string")])
_def("interpreter.print", 1, 0, traits=(SIDE_EFFECT,), format="check")

# -- Shardy (sdy): meshes and shardings; one device until a partitioner reads them (axle/ir/sdy.py)
_def("sdy.mesh", 0, 0, format="sdy_mesh", doc="a named device mesh, at module level")
_def("sdy.sharding_constraint", 1, 1, traits=(SAME_TYPE,), format="sdy_constraint")
_def("sdy.reshard", 1, 1, traits=(SAME_TYPE,), format="sdy_constraint")
_def("sdy.manual_computation", -1, -1, regions=1, format="sdy_manual")
_def("sdy.return", -1, 0, traits=(TERMINATOR,), format="return")

# -- traits given by family
_add_trait(MOVEMENT, [_SH + n for n in [
    "broadcast_in_dim", "broadcast", "dynamic_broadcast_in_dim", "reshape", "dynamic_reshape", "transpose",
    "reverse", "slice", "dynamic_slice", "real_dynamic_slice", "dynamic_update_slice", "concatenate", "pad",
    "dynamic_pad", "gather", "dynamic_gather", "torch_index_select"]])
_add_trait(OPAQUE_EFFECTS, ["func.call", "interpreter.run_parallel"] + [_SH + n for n in [
    "while", "if", "case", "composite", "rng", "rng_bit_generator"]])
_add_trait(NO_FOLD, ["interpreter.probe", "check.eq"] + [_SH + n for n in [
    "constant", "rng", "rng_bit_generator", "custom_call", "infeed", "optimization_barrier", "replica_id",
    "partition_id"]])
_add_trait(HOST_IO, [_SH + n for n in ["infeed", "outfeed", "send", "recv"]])
_add_trait(SYMBOL, ["func.func", "sdy.mesh"])
_add_trait(ISOLATED, ["func.func", "sdy.manual_computation"])
for _n, _pos in [("dynamic_iota", (0,)), ("dynamic_broadcast_in_dim", (1,)), ("dynamic_reshape", (1,)),
                 ("real_dynamic_slice", (1, 2, 3)), ("dynamic_pad", (2, 3, 4)), ("dynamic_gather", (2,)),
                 ("dynamic_conv", (2,)), ("set_dimension_size", (1,))]:
    _shape_operands(_SH + _n, _pos)
_add_trait(CONSTANT_LIKE, ["chlo.constant"])

ALIASES = {"return": "func.return", "call": "func.call", "func": "func.func"}


def lookup(name: str) -> Optional[OpDef]:
    """The OpDef of an op name (accepts `return`/`call` and `mhlo.` spellings of ops)."""
    name = ALIASES.get(name, name)
    return OPS.get(name)


def is_known(name: str) -> bool:
    return lookup(name) is not None


def has_trait(op_or_name, trait: str) -> bool:
    """Whether an op (an Operation or an op name) has `trait` in the op table; False for
    names the table does not know."""
    d = OPS.get(op_or_name if isinstance(op_or_name, str) else op_or_name.name)
    return d is not None and trait in d.traits


def names_with(trait: str) -> frozenset:
    """Every op name in the table with `trait`."""
    return frozenset(n for n, d in OPS.items() if trait in d.traits)


# torch-mlir and other exporters write tensor constants with arith: same form and meaning
ALIASES["arith.constant"] = "stablehlo.constant"
