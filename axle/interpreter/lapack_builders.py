"""One plan builder per jaxlib LAPACK target family (lapack_plans.py says what a plan is).

Each builder mirrors the matching kernel of jaxlib/cpu/lapack_kernels.cc: the routine's
arguments in order, the leading dimensions jaxlib passes, and the workspace sizes it uses
(a formula where jaxlib uses one, a query otherwise). `make_plan` checks the custom call
against the signature jaxlib registers (operand and result counts, element types, layouts)
and raises LapackError naming what differs.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from axle.interpreter.lapack_plans import (
    I32, PREFIX, REAL, Array, LapackError, Plan, finish, split_target,
)

_BUILDERS: dict[str, Callable] = {}


def _builder(name):
    def deco(fn):
        _BUILDERS[name] = fn
        return fn
    return deco


class Call:
    """What a builder sees: shapes and dtypes of operands and results, the attributes."""

    def __init__(self, target, operands, results, config):
        self.target = target
        self.operands = operands  # [(shape, numpy dtype)]
        self.results = results
        self.config = config  # mhlo.backend_config as a dict
        self.p, self.family = split_target(target)
        self.dtype = np.dtype({"s": np.float32, "d": np.float64, "c": np.complex64, "z": np.complex128}[self.p])
        self.real = np.dtype(REAL[self.dtype.name])
        self.complex = self.dtype.kind == "c"

    def char(self, key, default=None) -> int:
        v = self.config.get(key, default)
        if v is None:
            raise LapackError(f"{self.target}: attribute '{key}' is missing from mhlo.backend_config")
        return int(v)

    def routine(self, name=None) -> str:
        from axle.interpreter.lapack_plans import _COMPLEX_NAME
        fam = name or self.family
        if self.complex:
            fam = _COMPLEX_NAME.get(fam, fam)
        return self.p + fam

    def matrix(self, k=0, results=False):
        shape = (self.results if results else self.operands)[k][0]
        if len(shape) < 2:
            raise LapackError(f"{self.target}: {'result' if results else 'operand'} {k} must have "
                              f"at least 2 dimensions, has shape {list(shape)}")
        return tuple(shape[:-2]), shape[-2], shape[-1]

    def expect(self, n_operands, n_results):
        if len(self.operands) != n_operands or len(self.results) != n_results:
            raise LapackError(f"{self.target} takes {n_operands} operand(s) and returns {n_results} "
                              f"result(s) (as jaxlib registers it), got {len(self.operands)} and "
                              f"{len(self.results)}")


def _plan(c: Call, routine, batch_shape, arrays, args, info="info", library="lapack", skip=False, **kw) -> Plan:
    batch = int(np.prod(batch_shape, dtype=np.int64))
    for a in args:
        if a[0] == "int" and not -2 ** 31 <= a[1] < 2 ** 31:
            raise LapackError(f"{c.target}: a dimension of {a[1]} does not fit LAPACK's 32-bit integers")
    return Plan(c.target, routine, library, batch, arrays, args, info, skip=skip or batch == 0, **kw)


def _work(c, dtype=None, size=1):
    return Array("work", (size,), np.dtype(dtype or c.dtype), per_batch=False)


def _arr(name, shape, dtype, source=None, result=None):
    return Array(name, tuple(shape), np.dtype(dtype), source, result)


def _A(name):
    return ("array", name, 0)


@_builder("trsm")
def _trsm(c: Call) -> Plan:
    c.expect(2, 1)
    bs, k, k2 = c.matrix(0)
    _, m, n = c.matrix(1)
    side = c.char("side")
    left = side == ord("L")
    if k != k2 or k != (m if left else n):
        raise LapackError(f"{c.target}: the triangular operand must be square of order "
                          f"{m if left else n}, has shape {list(c.operands[0][0])}")
    arrays = [_arr("a", (k, k), c.dtype, source=0), _arr("b", (m, n), c.dtype, source=1, result=0)]
    args = [("char", side), ("char", c.char("uplo")), ("char", c.char("trans_x")), ("char", c.char("diag")),
            ("int", m), ("int", n), ("one", c.dtype), _A("a"), ("int", max(k, 1)), _A("b"), ("int", max(m, 1))]
    return _plan(c, c.routine(), bs, arrays, args, info=None, library="blas", skip=m * n == 0)


@_builder("getrf")
def _getrf(c: Call) -> Plan:
    c.expect(1, 3)
    bs, m, n = c.matrix(0)
    arrays = [_arr("a", (m, n), c.dtype, 0, 0), _arr("ipiv", (min(m, n),), I32, result=1),
              _arr("info", (), I32, result=2)]
    args = [("int", m), ("int", n), _A("a"), ("int", m), _A("ipiv"), _A("info")]
    return _plan(c, c.routine(), bs, arrays, args, skip=m * n == 0)


@_builder("geqrf")
def _geqrf(c: Call) -> Plan:
    c.expect(1, 2)
    bs, m, n = c.matrix(0)
    arrays = [_arr("a", (m, n), c.dtype, 0, 0), _arr("tau", (min(m, n),), c.dtype, result=1),
              _arr("info", (), I32), _work(c)]
    args = [("int", m), ("int", n), _A("a"), ("int", m), _A("tau"), _A("work"), ("lwork", "work"), _A("info")]
    return finish(_plan(c, c.routine(), bs, arrays, args, skip=m * n == 0))


@_builder("geqp3")
def _geqp3(c: Call) -> Plan:
    c.expect(2, 3)
    bs, m, n = c.matrix(0)
    arrays = [_arr("a", (m, n), c.dtype, 0, 0), _arr("jpvt", (n,), I32, 1, 1),
              _arr("tau", (min(m, n),), c.dtype, result=2), _arr("info", (), I32), _work(c)]
    args = [("int", m), ("int", n), _A("a"), ("int", m), _A("jpvt"), _A("tau"), _A("work"), ("lwork", "work")]
    if c.complex:
        arrays.append(Array("rwork", (max(2 * n, 1),), c.real, per_batch=False))
        args.append(_A("rwork"))
    args.append(_A("info"))
    return finish(_plan(c, c.routine(), bs, arrays, args, skip=m * n == 0))


@_builder("orgqr")
def _orgqr(c: Call) -> Plan:
    c.expect(2, 1)
    bs, m, n = c.matrix(0)
    k = c.operands[1][0][-1]
    arrays = [_arr("a", (m, n), c.dtype, 0, 0), _arr("tau", (k,), c.dtype, source=1), _arr("info", (), I32),
              _work(c)]
    args = [("int", m), ("int", n), ("int", k), _A("a"), ("int", m), _A("tau"), _A("work"), ("lwork", "work"),
            _A("info")]
    return finish(_plan(c, c.routine(), bs, arrays, args, skip=m * n == 0))


@_builder("ormqr")
def _ormqr(c: Call) -> Plan:
    c.expect(3, 1)
    _, ar, ac = c.matrix(0)
    bs, m, n = c.matrix(2)
    k = c.operands[1][0][-1]
    left = bool(c.config.get("left", True))
    trans = bool(c.config.get("transpose", False))
    arrays = [_arr("a", (ar, ac), c.dtype, source=0), _arr("tau", (k,), c.dtype, source=1),
              _arr("c", (m, n), c.dtype, 2, 0), _arr("info", (), I32), _work(c)]
    args = [("char", ord("L" if left else "R")), ("char", ord(("C" if c.complex else "T") if trans else "N")),
            ("int", m), ("int", n), ("int", k), _A("a"), ("int", ar if left else n), _A("tau"), _A("c"),
            ("int", m), _A("work"), ("lwork", "work"), _A("info")]
    return finish(_plan(c, c.routine(), bs, arrays, args, skip=m * n == 0))


@_builder("potrf")
def _potrf(c: Call) -> Plan:
    c.expect(1, 2)
    bs, n, _ = c.matrix(0)
    arrays = [_arr("a", (n, n), c.dtype, 0, 0), _arr("info", (), I32, result=1)]
    args = [("char", c.char("uplo")), ("int", n), _A("a"), ("int", n), _A("info")]
    return _plan(c, c.routine(), bs, arrays, args, skip=n == 0)


def _svd(c: Call, qr: bool) -> Plan:
    c.expect(1, 5)
    bs, m, n = c.matrix(0)
    mode = c.char("mode")
    if mode == ord("O"):
        raise LapackError(f"{c.target}: mode 'O' is not supported (nor by jaxlib)")
    (ur, uc), (vr, vc) = c.results[2][0][-2:], c.results[3][0][-2:]
    k = min(m, n)
    arrays = [_arr("a", (m, n), c.dtype, 0, 0), _arr("s", (k,), c.real, result=1),
              _arr("u", (ur, uc), c.dtype, result=2), _arr("vt", (vr, vc), c.dtype, result=3),
              _arr("info", (), I32, result=4), _work(c)]
    ldvt = max(vr, 1)
    head = [("char", mode)] * (2 if qr else 1)
    args = head + [("int", m), ("int", n), _A("a"), ("int", m), _A("s"), _A("u"), ("int", m), _A("vt"),
                   ("int", ldvt), _A("work"), ("lwork", "work")]
    if c.complex:
        if qr:
            rsize = 5 * k
        elif mode == ord("N"):
            rsize = 7 * k
        else:
            rsize = max(5 * k * k + 5 * k, 2 * max(m, n) * k + 2 * k * k + k)
        arrays.append(Array("rwork", (max(rsize, 1),), c.real, per_batch=False))
        args.append(_A("rwork"))
    if not qr:
        arrays.append(Array("iwork", (max(8 * k, 1),), I32, per_batch=False))
        args.append(_A("iwork"))
    args.append(_A("info"))
    plan = _plan(c, c.routine("gesvd" if qr else "gesdd"), bs, arrays, args, skip=m * n == 0)
    if plan.skip:
        return finish(plan)
    # jaxlib queries with ldvt = n for mode 'A', min(m, n) otherwise
    at = len(head) + 8
    plan.args[at] = ("int", max(n if mode == ord("A") else k, 1))
    plan = finish(plan)
    plan.args[at] = ("int", ldvt)
    return plan


@_builder("gesdd")
def _gesdd(c: Call) -> Plan:
    return _svd(c, qr=False)


@_builder("gesvd")
def _gesvd(c: Call) -> Plan:
    return _svd(c, qr=True)


@_builder("syevd")
def _syevd(c: Call) -> Plan:
    c.expect(1, 3)
    bs, n, _ = c.matrix(0)
    vectors = c.char("mode") == ord("V")
    arrays = [_arr("a", (n, n), c.dtype, 0, 0), _arr("w", (n,), c.real, result=1),
              _arr("info", (), I32, result=2)]
    args = [("char", c.char("mode")), ("char", c.char("uplo")), ("int", n), _A("a"), ("int", n), _A("w")]
    liwork = 3 + 5 * n if vectors else 1
    if c.complex:
        lwork = 2 * n + n * n if vectors else n + 1
        lrwork = 1 + 5 * n + 2 * n * n if vectors else max(n, 1)
        arrays += [_work(c, size=lwork), Array("rwork", (lrwork,), c.real, per_batch=False)]
        args += [_A("work"), ("int", lwork), _A("rwork"), ("int", lrwork)]
    else:
        lwork = 1 + 6 * n + 2 * n * n if vectors else 2 * n + 1
        arrays.append(_work(c, size=lwork))
        args += [_A("work"), ("int", lwork)]
    arrays.append(Array("iwork", (liwork,), I32, per_batch=False))
    args += [_A("iwork"), ("int", liwork), _A("info")]
    return _plan(c, c.routine(), bs, arrays, args, skip=n == 0)


@_builder("geev")
def _geev(c: Call) -> Plan:
    bs, n, _ = c.matrix(0)
    jl, jr = c.char("compute_left"), c.char("compute_right")
    if c.complex:
        c.expect(1, 4)
        arrays = [_arr("a", (n, n), c.dtype, source=0), _arr("w", (n,), c.dtype, result=0),
                  _arr("vl", (n, n), c.dtype, result=1), _arr("vr", (n, n), c.dtype, result=2),
                  _arr("info", (), I32, result=3), _work(c),
                  Array("rwork", (max(2 * n, 1),), c.real, per_batch=False)]
        args = [("char", jl), ("char", jr), ("int", n), _A("a"), ("int", n), _A("w"), _A("vl"), ("int", n),
                _A("vr"), ("int", n), _A("work"), ("lwork", "work"), _A("rwork"), _A("info")]
        return finish(_plan(c, c.routine(), bs, arrays, args, finite_check="a", skip=n == 0))
    c.expect(1, 5)
    arrays = [_arr("a", (n, n), c.dtype, source=0), _arr("wr", (n,), c.dtype, result=0),
              _arr("wi", (n,), c.dtype, result=1), _arr("vlw", (n, n), c.dtype), _arr("vrw", (n, n), c.dtype),
              _arr("info", (), I32, result=4), _work(c)]
    args = [("char", jl), ("char", jr), ("int", n), _A("a"), ("int", n), _A("wr"), _A("wi"), _A("vlw"),
            ("int", n), _A("vrw"), ("int", n), _A("work"), ("lwork", "work"), _A("info")]
    return finish(_plan(c, c.routine(), bs, arrays, args, finite_check="a", skip=n == 0,
                        unpack=[("vlw", "wi", 2), ("vrw", "wi", 3)]))


@_builder("gees")
def _gees(c: Call) -> Plan:
    bs, n, _ = c.matrix(0)
    if c.char("sort") != ord("N"):
        raise LapackError(f"{c.target}: sorting eigenvalues is not implemented (nor by jaxlib)")
    c.expect(1, 5 if c.complex else 6)
    arrays = [_arr("a", (n, n), c.dtype, 0, 0), _arr("vs", (n, n), c.dtype, result=1)]
    args = [("char", c.char("mode")), ("char", ord("N")), ("null",), ("int", n), _A("a"), ("int", n), _A("sdim")]
    if c.complex:
        arrays += [_arr("w", (n,), c.dtype, result=2), _arr("sdim", (), I32, result=3),
                   _arr("info", (), I32, result=4), _work(c),
                   Array("rwork", (max(n, 1),), c.real, per_batch=False)]
        args += [_A("w"), _A("vs"), ("int", n), _A("work"), ("lwork", "work"), _A("rwork"), ("null",), _A("info")]
    else:
        arrays += [_arr("wr", (n,), c.dtype, result=2), _arr("wi", (n,), c.dtype, result=3),
                   _arr("sdim", (), I32, result=4), _arr("info", (), I32, result=5), _work(c)]
        args += [_A("wr"), _A("wi"), _A("vs"), ("int", n), _A("work"), ("lwork", "work"), ("null",), _A("info")]
    return finish(_plan(c, c.routine(), bs, arrays, args, skip=n == 0))


@_builder("gehrd")
def _gehrd(c: Call) -> Plan:
    c.expect(1, 3)
    bs, m, n = c.matrix(0)
    arrays = [_arr("a", (m, n), c.dtype, 0, 0), _arr("tau", (max(n - 1, 0),), c.dtype, result=1),
              _arr("info", (), I32, result=2), _work(c)]
    args = [("int", n), ("int", int(c.config.get("low", 1))), ("int", int(c.config.get("high", n))), _A("a"),
            ("int", m), _A("tau"), _A("work"), ("lwork", "work"), _A("info")]
    return finish(_plan(c, c.routine(), bs, arrays, args, skip=n == 0))


@_builder("sytrd")
def _sytrd(c: Call) -> Plan:
    c.expect(1, 5)
    bs, m, n = c.matrix(0)
    k = c.results[3][0][-1]
    arrays = [_arr("a", (m, n), c.dtype, 0, 0), _arr("d", (n,), c.real, result=1),
              _arr("e", (max(n - 1, 0),), c.real, result=2), _arr("tau", (k,), c.dtype, result=3),
              _arr("info", (), I32, result=4), _work(c)]
    args = [("char", c.char("uplo")), ("int", n), _A("a"), ("int", m), _A("d"), _A("e"), _A("tau"), _A("work"),
            ("lwork", "work"), _A("info")]
    plan = _plan(c, c.routine(), bs, arrays, args, skip=n == 0)
    # jaxlib queries the workspace for uplo 'L'
    uplo = plan.args[0]
    plan.args[0] = ("char", ord("L"))
    plan = finish(plan)
    plan.args[0] = uplo
    return plan


@_builder("gtsv")
def _gtsv(c: Call) -> Plan:
    c.expect(4, 5)
    bs, n, nrhs = c.matrix(3)
    arrays = [_arr("dl", (n,), c.dtype, 0, 0), _arr("d", (n,), c.dtype, 1, 1), _arr("du", (n,), c.dtype, 2, 2),
              _arr("b", (n, nrhs), c.dtype, 3, 3), _arr("info", (), I32, result=4)]
    args = [("int", n), ("int", nrhs), ("array", "dl", 1), _A("d"), _A("du"), _A("b"), ("int", max(n, 1)),
            _A("info")]
    return _plan(c, c.routine(), bs, arrays, args, skip=n == 0)


def expected_layout(rank: int, matrix: bool) -> list:
    """jaxlib's layout (minor to major): matrices column-major, batch dimensions major."""
    if matrix:
        return [rank - 2, rank - 1] + list(range(rank - 3, -1, -1))
    return list(range(rank - 1, -1, -1))


def make_plan(target: str, operands: list, results: list, attrs: dict) -> Plan:
    """The plan of one custom call: operands / results are [(shape, numpy dtype)], attrs the
    op's attributes as Python values (mhlo.backend_config, operand_layouts, ...)."""
    parts = split_target(target)
    if parts is None:
        raise LapackError(f"'{target}' is not a jaxlib LAPACK target")
    config = attrs.get("mhlo.backend_config") or {}
    if not isinstance(config, dict):
        raise LapackError(f"{target}: mhlo.backend_config must be a dictionary of attributes, got {config!r}")
    c = Call(target, operands, results, config)
    for k, (shape, dt) in enumerate(operands):
        if any(d is None for d in shape):
            raise LapackError(f"{target}: operand {k} has a dynamic shape {shape}")
    plan = _BUILDERS[c.family](c)
    _check_types(c, plan, attrs)
    return plan


def _check_types(c: Call, plan: Plan, attrs: dict) -> None:
    for a in plan.arrays:
        for kind, idx, group in (("operand", a.source, c.operands), ("result", a.result, c.results)):
            if idx is None:
                continue
            shape, dt = group[idx]
            layouts = attrs.get(f"{kind}_layouts")
            if layouts is not None and idx < len(layouts):
                got = [int(i) for i in np.asarray(layouts[idx]).ravel()]
                want = expected_layout(len(shape), len(a.shape) == 2)
                if got != want and not (len(a.shape) == 2 and 1 in a.shape):
                    raise LapackError(f"{c.target}: {kind} {idx} has layout {got}; axle runs jaxlib's "
                                      f"layouts only (column-major matrices, batch dimensions major: {want})")
            batch_rank = len(shape) - len(a.shape)
            if np.dtype(dt) != a.dtype or tuple(shape[batch_rank:]) != tuple(a.shape) or \
                    int(np.prod(shape[:batch_rank], dtype=np.int64)) != plan.batch:
                raise LapackError(f"{c.target}: {kind} {idx} should be {a.dtype} of shape "
                                  f"[batch..., {', '.join(map(str, a.shape))}] with {plan.batch} batch "
                                  f"element(s), got {np.dtype(dt)} {list(shape)}")
