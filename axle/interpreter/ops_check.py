"""The `check` dialect of the StableHLO test suites, and `interpreter.probe`.

Semantics follow StableHLO's check dialect (stablehlo/tests/CheckOps.td):

* `check.expect_eq %lhs, %rhs` / `check.expect_eq_const %lhs, dense<...>`: every element
  equal. Floats compare by value (0.0 equals -0.0); here a NaN also equals a NaN.
* `check.expect_almost_eq` / `check.expect_almost_eq_const` (`tolerance`, default 1e-4):
  for floats, equal values pass, NaN matches NaN, a non-finite value matches only an equal
  one, and finite values pass when `|actual - expected| <= tolerance` (in float64). Complex
  numbers compare their real and imaginary parts so. Integer and bool tensors must be equal.
* `check.expect_close %actual, %expected, max_ulp_difference = N, min_ulp_difference = M`
  (defaults 1 and 0): the ULP distance of every element pair lies in [M, N]. The distance
  of finite values is the number of representable values between them (counting across
  zero); bitwise-equal values are 0 apart, two NaNs are 0 apart, and a non-finite value is
  infinitely far from anything not bitwise equal to it. Complex numbers take the larger
  distance of their two parts.
* `check.expect_serialized_eq %expected, probe_id = "id", iter = N` (attribute `iteration`
  or `iter`, default 0): the value recorded by the N-th execution of
  `interpreter.probe %x, probe_id = "id"` equals %expected (type included).
* `check.eq` (custom_call form only) returns a `tensor<i1>` true, and fails like
  expect_eq (integers, bools) or expect_almost_eq with tolerance 1e-4 (floats).

A failed check raises `CheckFailure`, an InterpreterError whose message says how many
elements differ and gives the first mismatching index with both values and the limit used.

Custom calls: the JAX-generated suites write checks as
`stablehlo.custom_call @check.expect_close(%actual, %expected)`, with no attributes and no
results. `CHECK_TARGETS` maps such call targets to implementations (with the defaults the
StableHLO interpreter uses for them: expect_close within 0..3 ULPs, expect_almost_eq with
tolerance 1e-3). The evaluator dispatches `stablehlo.custom_call` to
`CHECK_TARGETS[call_target_name](call)`; they return the op's results as a list.

`interpreter.print %x` prints the tensor to stdout (whole, under a lock).

Probes: `interpreter.probe` records its operand in `ctx.probes` (the ProbeStore of the run's
ProcessGrid, collectives.py) and returns it unchanged. A call without a context uses the
module-level `DEFAULT_PROBES`, which `reset_default_probes()` clears.
"""
from __future__ import annotations

import sys

import numpy as np

from axle import forks
from axle.ir.types import element_type_of
from axle.interpreter.collectives import ProbeStore
from axle.interpreter.numerics import raw_bits
from axle.interpreter.registry import InterpreterError, OpCall, register

__all__ = ["CheckFailure", "CHECK_TARGETS", "DEFAULT_PROBES", "reset_default_probes",
           "expect_eq", "expect_almost_eq", "expect_close", "ulp_difference"]

DEFAULT_TOLERANCE = 1e-4
MAX_ULP = np.iinfo(np.uint64).max


class CheckFailure(InterpreterError):
    """A check op found a mismatch."""


DEFAULT_PROBES = ProbeStore()


def reset_default_probes() -> None:
    global DEFAULT_PROBES
    DEFAULT_PROBES = ProbeStore()


# ---------------------------------------------------------------- comparisons


def _kind(value: np.ndarray) -> str:
    if value.dtype == np.bool_:
        return "bool"
    if np.issubdtype(value.dtype, np.integer):
        return "int"
    if np.issubdtype(value.dtype, np.complexfloating):
        return "complex"
    return "float"  # numpy floats and the ml_dtypes float types


def _widen(value: np.ndarray) -> np.ndarray:
    kind = _kind(value)
    if kind == "complex":
        return value.astype(np.complex128)
    if kind == "float":
        return value.astype(np.float64)
    return value


def _same_shape(what: str, actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    if expected.shape != actual.shape:
        if expected.size == 1:
            return np.broadcast_to(expected.reshape(()), actual.shape)
        raise CheckFailure(f"{what}: shapes differ: {actual.shape} (actual) vs "
                           f"{expected.shape} (expected)")
    return expected


def _report(what: str, bad: np.ndarray, actual, expected, limit: str = "") -> None:
    """Raises CheckFailure if any element of `bad` is set."""
    if not bad.any():
        return
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    message = (f"{what}: {int(bad.sum())} of {bad.size} elements differ{limit}; first at index "
               f"{index}: {_show(actual[index])} (actual) vs {_show(expected[index])} "
               f"(expected)")
    raise CheckFailure(message)


def _show(x) -> str:
    x = np.asarray(x)
    kind = _kind(x)
    if kind == "float":
        return repr(float(x))
    if kind == "complex":
        return repr(complex(x))
    return repr(x.item())


def _equal(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Elementwise value equality; NaN equals NaN."""
    a, e = _widen(actual), _widen(expected)
    same = a == e
    if _kind(a) == "float":
        same |= np.isnan(a) & np.isnan(e)
    elif _kind(a) == "complex":
        same |= ((a.real == e.real) | (np.isnan(a.real) & np.isnan(e.real))) & \
                ((a.imag == e.imag) | (np.isnan(a.imag) & np.isnan(e.imag)))
    return same


def _almost_equal_floats(a: np.ndarray, e: np.ndarray, tolerance: float) -> np.ndarray:
    with np.errstate(all="ignore"):
        finite = np.isfinite(a) & np.isfinite(e)
        close = finite & (np.abs(a - e) <= tolerance)
    return (a == e) | (np.isnan(a) & np.isnan(e)) | close


def expect_eq(what: str, actual, expected) -> None:
    actual = np.asarray(actual)
    expected = _same_shape(what, actual, np.asarray(expected))
    _report(what, ~_equal(actual, expected), actual, expected)


def expect_almost_eq(what: str, actual, expected, tolerance: float = DEFAULT_TOLERANCE) -> None:
    actual = np.asarray(actual)
    expected = _same_shape(what, actual, np.asarray(expected))
    if _kind(actual) in ("int", "bool"):
        _report(what, ~_equal(actual, expected), actual, expected)
        return
    a, e = _widen(actual), _widen(expected)
    if _kind(actual) == "complex":
        ok = _almost_equal_floats(a.real, e.real, tolerance) & \
             _almost_equal_floats(a.imag, e.imag, tolerance)
    else:
        ok = _almost_equal_floats(a, e, tolerance)
    _report(what, ~ok, actual, expected, limit=f" by more than tolerance {tolerance:g}")


# ---------------------------------------------------------------- ULP distance


def ulp_difference(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """The ULP distance (uint64) of each element pair of two same-typed float arrays; for
    complex arrays the larger of the distances of the real and imaginary parts."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if _kind(actual) == "complex":
        return np.maximum(ulp_difference(actual.real, expected.real),
                          ulp_difference(actual.imag, expected.imag))
    et = element_type_of(actual.dtype)
    if expected.dtype != actual.dtype:
        expected = expected.astype(actual.dtype)
    bits_a, bits_e = raw_bits(actual, et), raw_bits(expected, et)
    wide_a, wide_e = actual.astype(np.float64), expected.astype(np.float64)
    with np.errstate(all="ignore"):
        # the distance of |x| from zero in representable steps is the bit pattern of |x|
        mag_a, mag_e = raw_bits(np.abs(actual), et), raw_bits(np.abs(expected), et)
    finite = np.isfinite(wide_a) & np.isfinite(wide_e)
    both_nan = np.isnan(wide_a) & np.isnan(wide_e)
    apart = np.where(mag_a > mag_e, mag_a - mag_e, mag_e - mag_a)
    distance = np.where(np.signbit(wide_a) != np.signbit(wide_e), mag_a + mag_e, apart)
    distance = np.where(finite, distance, np.uint64(MAX_ULP))
    distance = np.where(both_nan | (bits_a == bits_e), np.uint64(0), distance)
    return distance.astype(np.uint64)


def expect_close(what: str, actual, expected, max_ulp: int = 1, min_ulp: int = 0) -> None:
    actual = np.asarray(actual)
    expected = _same_shape(what, actual, np.asarray(expected))
    if _kind(actual) not in ("float", "complex"):
        raise CheckFailure(f"{what}: expects float or complex tensors, got {actual.dtype}")
    distance = ulp_difference(actual, expected)
    bad = (distance > np.uint64(max_ulp)) | (distance < np.uint64(min_ulp))
    if not bad.any():
        return
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    counts = [int((distance == np.uint64(i)).sum()) for i in range(4)]
    counts.append(int((distance >= np.uint64(4)).sum()))
    stats = ", ".join(f"{'>=' if i == 4 else '=='}{i}: {c}" for i, c in enumerate(counts))
    shown = "inf" if distance[index] == MAX_ULP else str(int(distance[index]))
    raise CheckFailure(
        f"{what}: {int(bad.sum())} of {bad.size} elements are not within [{min_ulp}, "
        f"{max_ulp}] ULPs; first at index {index}: {_show(actual[index])} (actual) vs "
        f"{_show(expected[index])} (expected), {shown} ULPs apart (ULP difference counts "
        f"{stats})")


# ---------------------------------------------------------------- check ops


def _attr(call: OpCall, *names, default=None):
    for name in names:
        if name in call.attrs:
            return call.attrs[name]
    return default


def _const_value(call: OpCall) -> np.ndarray:
    value = call.attrs.get("value")
    if value is None:
        raise call.error("missing `value` attribute")
    return np.asarray(value)


@register("check.expect_eq")
def check_expect_eq(call: OpCall):
    expect_eq(call.name, call.operands[0], call.operands[1])
    return []


@register("check.expect_eq_const")
def check_expect_eq_const(call: OpCall):
    expect_eq(call.name, call.operands[0], _const_value(call))
    return []


@register("check.expect_almost_eq")
def check_expect_almost_eq(call: OpCall):
    tolerance = float(_attr(call, "tolerance", default=DEFAULT_TOLERANCE))
    expect_almost_eq(call.name, call.operands[0], call.operands[1], tolerance)
    return []


@register("check.expect_almost_eq_const")
def check_expect_almost_eq_const(call: OpCall):
    tolerance = float(_attr(call, "tolerance", default=DEFAULT_TOLERANCE))
    expect_almost_eq(call.name, call.operands[0], _const_value(call), tolerance)
    return []


@register("check.expect_close")
def check_expect_close(call: OpCall):
    max_ulp = int(_attr(call, "max_ulp_difference", default=1))
    min_ulp = int(_attr(call, "min_ulp_difference", default=0))
    expect_close(call.name, call.operands[0], call.operands[1], max_ulp, min_ulp)
    return []


@register("check.expect_serialized_eq")
def check_expect_serialized_eq(call: OpCall):
    probe_id = str(_attr(call, "probe_id"))
    iteration = int(_attr(call, "iteration", "iter", default=0))
    store = call.ctx.probes if call.ctx is not None else DEFAULT_PROBES
    recorded = store.get(probe_id, iteration)
    if recorded is None:
        raise CheckFailure(f"{call.name}: probe {probe_id!r} has no value for iteration "
                           f"{iteration} ({store.count(probe_id)} recorded)")
    probe_type, value = recorded
    expected_type = call.operand_types[0] if call.operand_types else None
    if probe_type is not None and expected_type is not None and probe_type != expected_type:
        raise CheckFailure(f"{call.name}: probe {probe_id!r} has type {probe_type}, "
                           f"expected {expected_type}")
    expect_eq(f"{call.name} (probe {probe_id!r}, iteration {iteration})", value,
              call.operands[0])
    return []


_PRINT_LOCK = forks.lock()


@register("interpreter.print")
def print_op(call: OpCall):
    """Prints `type {\n  values\n}` to stdout, one whole tensor at a time even when
    processes of run_parallel print at once."""
    value = np.asarray(call.operands[0])
    shown = np.array2string(value, separator=", ", threshold=sys.maxsize,
                            max_line_width=sys.maxsize)
    with _PRINT_LOCK:
        print(f"{call.operand_types[0]} {{\n  {shown}\n}}", flush=True)
    return []


@register("interpreter.probe")
def probe(call: OpCall):
    operand = call.operands[0]
    store = call.ctx.probes if call.ctx is not None else DEFAULT_PROBES
    store.record(str(_attr(call, "probe_id")), call.operand_types[0] if call.operand_types
                 else None, operand)
    return operand


# ---------------------------------------------------------------- custom_call @check.*


def _custom_eq(call: OpCall):
    """custom_call @check.eq(%actual, %expected) -> tensor<i1>."""
    actual, expected = call.operands[:2]
    what = "custom_call @check.eq"
    if _kind(np.asarray(expected)) in ("int", "bool"):
        expect_eq(what, actual, expected)
    else:
        expect_almost_eq(what, actual, expected, DEFAULT_TOLERANCE)
    return [np.array(True)]


def _custom_expect_eq(call: OpCall):
    expect_eq("custom_call @check.expect_eq", call.operands[0], call.operands[1])
    return []


def _custom_expect_almost_eq(call: OpCall):
    expect_almost_eq("custom_call @check.expect_almost_eq", call.operands[0],
                     call.operands[1], 1e-3)
    return []


def _custom_expect_close(call: OpCall):
    expect_close("custom_call @check.expect_close", call.operands[0], call.operands[1],
                 max_ulp=3, min_ulp=0)
    return []


CHECK_TARGETS = {
    "check.eq": _custom_eq,
    "check.expect_eq": _custom_expect_eq,
    "check.expect_almost_eq": _custom_expect_almost_eq,
    "check.expect_close": _custom_expect_close,
}
