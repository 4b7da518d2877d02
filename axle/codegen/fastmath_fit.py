"""Regenerates the coefficient tables of fastmath.py (a development tool, never imported by
the compiler): `python -m axle.codegen.fastmath_fit` prints each table with its
error bound; `--check` compares them with fastmath.py's.

Method: minimax on a dense grid (Chebyshev nodes plus a uniform grid) by linear
programming (scipy's HiGHS), min t subject to |w(x) (p(x) - g(x))| <= t, in 80-bit
precision with the residual re-solved (the LP's tolerances are absolute, so each round
solves for the scaled residual of the last). f32 tables are then rounded one coefficient
at a time, lowest degree first, refitting the others each time (the low-degree terms
matter most). The errors printed are those of the rounded tables.
"""
from __future__ import annotations

import sys

import numpy as np

L = np.longdouble


def _lp(A, rhs):
    from scipy.optimize import linprog
    n = A.shape[1]
    ones = np.ones((A.shape[0], 1))
    cost = np.zeros(n + 1)
    cost[-1] = 1
    res = linprog(cost, A_ub=np.block([[A, -ones], [-A, -ones]]), b_ub=np.concatenate([rhs, -rhs]),
                  bounds=[(None, None)] * n + [(0, None)], method="highs")
    if res.status != 0:
        raise RuntimeError(res.message)
    return res.x[:n]


def fit(xs, g, w, powers, fixed=None):
    """Coefficients {power: c} minimizing max |w (sum c_p x^p - g)| with `fixed` ones given."""
    fixed = dict(fixed or {})
    free = [p for p in powers if p not in fixed]
    s = float(np.max(np.abs(xs)))
    A = np.stack([w * (xs / s) ** p for p in free], axis=1)
    rhs = w * (g - sum((L(c) * xs ** p for p, c in fixed.items()), L(0) * xs))
    d = np.zeros(len(free), dtype=L)
    for _ in range(4):
        r = rhs - A @ d
        scale = np.max(np.abs(r))
        if scale == 0:
            break
        d = d + _lp(A.astype(np.float64), (r / scale).astype(np.float64)).astype(L) * scale
    out = dict(fixed)
    out.update({p: d[i] / L(s) ** p for i, p in enumerate(free)})
    return out


def error(xs, g, w, coeffs) -> float:
    v = sum((L(c) * xs ** p for p, c in coeffs.items()), L(0) * xs)
    return float(np.max(np.abs(w * (v - g))))


def fit_f32(xs, g, w, powers, fixed=None):
    """fit, then round to f32 lowest degree first, refitting the rest each time."""
    fixed = dict(fixed or {})
    c = fit(xs, g, w, powers, fixed)
    for p in [q for q in powers if q not in fixed]:
        fixed[p] = float(np.float32(c[p]))
        c = fit(xs, g, w, powers, fixed) if len(fixed) < len(powers) else dict(fixed)
    return c


def grid(a, b, n=4000):
    k = np.arange(n, dtype=L)
    a, b = L(a), L(b)
    cheb = (a + b) / 2 + (b - a) / 2 * np.cos(np.pi * (k + L(0.5)) / n)
    return np.sort(np.concatenate([cheb, np.linspace(a, b, n, dtype=L)]))


def tables() -> dict:
    """name -> (coefficients in fastmath's order, error bound)."""
    from scipy.special import erf, erfc
    ln2 = np.log(L(2))
    out = {}

    def put(name, c, xs, g, w, skip=()):
        out[name] = ([float(c[p]) for p in sorted(c) if p not in skip], error(xs, g, w, c))

    h = ln2 / 2 * L(1.0001)  # |r| <= ln2/2, plus the rounding of k
    xs = grid(-h, h)
    g = np.exp(xs)
    put("_EXP", fit_f32(xs, g, 1 / g, range(7), {0: 1.0, 1: 1.0}), xs, g, 1 / g, skip=(0, 1))
    xs = xs[xs != 0]
    g = np.expm1(xs)
    put("_EXPM1", fit_f32(xs, g, 1 / np.abs(g), range(1, 8), {1: 1.0}), xs, g, 1 / np.abs(g), skip=(1,))
    lo, hi = np.sqrt(L(0.5)) - 1, np.sqrt(L(2)) - 1
    xs = grid(lo * L(1.0001), hi * L(1.0001))
    xs = xs[xs != 0]
    g = np.log1p(xs)
    put("_LOG1P", fit_f32(xs, g, 1 / np.abs(g), range(1, 11), {1: 1.0}), xs, g, 1 / np.abs(g), skip=(1,))
    # erf, |x| <= 7/8: erf(x)/x in s = x^2, the constant 2/sqrt(pi) kept exact (split hi + lo)
    xs = grid(0, 0.875 * 1.0001)
    xs = xs[xs > 0]
    g = (erf(xs.astype(np.float64)) / xs.astype(np.float64)).astype(L)
    c0 = L(2) / np.sqrt(np.pi, dtype=L)
    put("_ERF_SMALL", fit_f32(xs * xs, g, 1 / g, range(6), {0: c0}), xs * xs, g, 1 / g, skip=(0,))
    # erf, 7/8 <= t <= 4: log2(erfc(t)); an error d moves erf by d ln2 erfc(t)
    ts = grid(0.875 * 0.9999, 4.0)
    t64 = ts.astype(np.float64)
    g = (np.log(erfc(t64)) / np.log(2)).astype(L)
    w = (np.log(2) * erfc(t64) / erf(t64)).astype(L)
    put("_ERF_LOG2", fit_f32(ts, g, w, range(7)), ts, g, w)
    fs = grid(-0.5 * 1.0001, 0.5 * 1.0001)
    g = np.exp2(fs)
    put("_EXP2", fit_f32(fs, g, 1 / g, range(7), {0: 1.0}), fs, g, 1 / g, skip=(0,))
    # pow, in f64 (no rounding to f32)
    xs = grid(lo * L(1.0001), hi * L(1.0001), 6000)
    xs = xs[xs != 0]
    g = np.log1p(xs) / ln2
    put("_LOG2_D", fit(xs, g, 1 / np.abs(g), range(1, 14)), xs, g, 1 / np.abs(g))
    g = np.exp2(fs)
    put("_EXP2_D", fit(fs, g, 1 / g, range(8), {0: 1.0}), fs, g, 1 / g, skip=(0,))
    # erf_inv, in f64: erfinv(x) / x as a function of w = -ln(1 - x^2), in t = w / 2.5 - 1
    # for w <= 5, and in t = (sqrt(w) - (sqrt(5) + 4) / 2) / ((4 - sqrt(5)) / 2) for
    # 5 <= w <= 16 (x = 1 - 2^-24, the largest f32 below 1, has w = 15.94)
    from scipy.special import erfinv

    def over_x(w):
        x = np.sqrt(-np.expm1(-w.astype(np.float64)))
        return (erfinv(x) / x).astype(L)
    ts = grid(-1, 1)
    g = over_x((ts + 1) * L(2.5) + L(1e-30))
    put("_ERFINV_W_D", fit(ts, g, 1 / g, range(13)), ts, g, 1 / g)
    r5 = np.sqrt(L(5))
    g = over_x(((ts * (4 - r5) + 4 + r5) / 2) ** 2)
    put("_ERFINV_S_D", fit(ts, g, 1 / g, range(13)), ts, g, 1 / g)
    # sin and cos in f64 on 0 < r <= pi/4 (x 1.002; both even in the fitted variable r^2):
    # (sin r - r) / r^3 and (cos r - 1 + r^2/2) / r^4 as polynomials in r^2, relative to
    # sin r and cos r
    h = np.pi / 4 * 1.002
    xs = grid(-h, h)
    xs = xs[xs > 0]
    s2 = xs * xs
    g, w = (np.sin(xs) - xs) / xs ** 3, xs ** 3 / np.sin(xs)
    put("_SIN_D", fit(s2, g, w, range(4)), s2, g, w)
    g, w = (np.cos(xs) - 1 + s2 / 2) / (s2 * s2), s2 * s2 / np.cos(xs)
    put("_COS_D", fit(s2, g, w, range(4)), s2, g, w)
    # atan2, in f64: (atan t - t) / t^3 as a polynomial in t^2 for 0 < t <= tan(pi/8)
    # (x 1.002), relative to atan t
    xs = grid(0, np.tan(np.pi / 8) * 1.002)
    xs = xs[xs > 0]
    s2 = xs * xs
    g, w = (np.arctan(xs) - xs) / xs ** 3, xs ** 3 / np.arctan(xs)
    put("_ATAN_D", fit(s2, g, w, range(6)), s2, g, w)
    # erfc, 0 <= x <= 10.2, in f64: erfc(x) exp(x^2) as a polynomial in t = 2 / (2 + x)
    # (in [0.164, 1]: the scaled function is smooth there, and 1 / x-like towards the end)
    xs = grid(0, 10.2, 1500)
    g = _erfcx(xs)
    ts = 2 / (2 + xs)
    put("_ERFC_D", fit(ts, g, 1 / g, range(12)), ts, g, 1 / g)
    return out


def _erfcx(xs):
    """erfc(x) exp(x^2) for long-double xs, through mpmath (scipy's erfcx is float64 only)."""
    import mpmath
    with mpmath.workdps(30):
        return np.array([L(str(mpmath.erfc(mpmath.mpf(repr(float(x)))) * mpmath.exp(mpmath.mpf(repr(float(x))) ** 2)))
                         for x in xs], dtype=L)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from axle.codegen import fastmath
    bad = 0
    for name, (coeffs, err) in tables().items():
        print(f"{name}: error {err:.2e} (2^{np.log2(err):.1f})")
        print("   " + ", ".join(f'"{c.hex()}"' for c in coeffs))
        if "--check" in argv:
            have = getattr(fastmath, name)
            tol = 0 if not name.endswith("_D") else 1e-12
            if len(have) != len(coeffs) or any(abs(a - b) > tol * abs(b) for a, b in zip(have, coeffs)):
                print(f"   differs from fastmath.{name}")
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
