"""Special functions and bit shifts against eager PyTorch (op_harness: one compiled graph per
dtype, each result compared on its own)."""
import math

import pytest
import torch

from op_harness import check, rand, run_both

aten = torch.ops.aten
inf, nan = math.inf, math.nan


def _away_from_poles(dtype, n=600, seed=0):
    """Points in [-3.5, 30] at least 0.1 from the non-positive integers (where eager's
    reflection formulas lose the digits axle keeps), and big and tiny ones."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, generator=g, dtype=torch.float64) * 33.5 - 3.5
    frac = x - x.floor()
    x = torch.where((x < 0.5) & ((frac < 0.1) | (frac > 0.9)), x.floor() + 0.5, x)
    extra = torch.tensor([1e-3, 0.5, 1.0, 2.0, 1.4616321, 3.3, 50.0, 200.0, 1e4], dtype=torch.float64)
    return torch.cat([x, extra]).to(dtype)


GAMMA = {
    "lgamma": aten.lgamma.default, "digamma": aten.digamma.default,
    "polygamma0": lambda x: aten.polygamma.default(0, x), "trigamma": lambda x: aten.polygamma.default(1, x),
    "polygamma2": lambda x: aten.polygamma.default(2, x), "polygamma3": lambda x: aten.polygamma.default(3, x),
}
ERF_BESSEL = {
    "erfc": aten.erfc.default, "i0e": aten.special_i0e.default, "i1e": aten.special_i1e.default,
}
WIDE_ONLY = {  # (eager has no f16 / bf16 kernels for these)
    "erfcx": aten.special_erfcx.default,
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=str)
def test_gamma_functions_erfc_and_bessel(dtype):
    x = _away_from_poles(dtype)
    results = run_both(GAMMA, [x])
    if dtype == torch.float64:  # eager's f64 trigamma is off by up to 5e-10; axle's by ~1e-16
        import scipy.special
        got, want = results.pop("trigamma")
        torch.testing.assert_close(got[0], want[0], rtol=1e-9, atol=0)
        exact = torch.from_numpy(scipy.special.polygamma(1, x.numpy()))
        torch.testing.assert_close(got[0], exact, rtol=1e-14, atol=0)
    check(results, dtype)
    signed = torch.cat([x, -x, torch.tensor([0.0, 9.3, -9.3, 12.0, 20.0, 90.0], dtype=dtype)])
    ops = dict(ERF_BESSEL, **(WIDE_ONLY if dtype in (torch.float32, torch.float64) else {}))
    check(run_both(ops, [signed]), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_ndtri(dtype):
    """Both tails to the type's smallest numbers, the center, 0, 1 and outside [0, 1]."""
    tiny = torch.logspace(-44 if dtype == torch.float32 else -300, -1, 400, dtype=torch.float64)
    p = torch.cat([tiny, 1 - tiny, torch.linspace(0, 1, 1001, dtype=torch.float64),
                   torch.tensor([0.5, 0.5 + 1e-9, 0.25, 0.75, 1e-45, -0.1, 1.1, inf, -inf, nan])]).to(dtype)
    check(run_both({"ndtri": aten.special_ndtri.default}, [p]), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_special_values_as_eager(dtype):
    """Poles, zeros, infinities and NaN exactly as eager (inf / NaN where eager has them)."""
    x = torch.tensor([0.0, -0.0, -1.0, -2.0, -2.5, 1.0, 2.0, inf, -inf, nan, 1e-30, -1e-30, 1e30, -1e30,
                      30.0, -30.0, 1e20, -1e20, 10.0, -10.0], dtype=dtype)
    ops = {"lgamma": aten.lgamma.default, "digamma": aten.digamma.default, "erfc": aten.erfc.default,
           "erfcx": aten.special_erfcx.default, "i0e": aten.special_i0e.default, "i1e": aten.special_i1e.default,
           # polygamma n >= 2 at the poles and -inf; (+inf: eager's NaN, axle's limit 0)
           "polygamma2": lambda x: aten.polygamma.default(2, aten.clamp.default(x, None, 1e30)),
           "polygamma3": lambda x: aten.polygamma.default(3, aten.clamp.default(x, None, 1e30))}
    check(run_both(ops, [x]), dtype)
    # trigamma: eager's reflection makes the poles large finite numbers; axle's are inf
    got = run_both({"trigamma": lambda x: aten.polygamma.default(1, x)}, [x])["trigamma"][0][0]
    assert torch.equal(got[:4], torch.full((4,), inf, dtype=dtype)) and got[8].isnan()


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64], ids=str)
def test_bit_shifts(dtype):
    """<< and >> by scalars and tensors, amounts past the width and negative ones as eager
    (0 to the left; the sign's fill to the right, arithmetic for signed types)."""
    info = torch.iinfo(dtype)
    g = torch.Generator().manual_seed(0)
    a = torch.randint(info.min, info.max, (8, 9), generator=g, dtype=dtype)
    b = torch.randint(0 if dtype == torch.uint8 else -3, 70, (8, 9), generator=g, dtype=torch.int64).to(dtype)
    ops = {"rshift_4": lambda a, b: aten.__rshift__.Scalar(a, 4), "lshift_3": lambda a, b: aten.__lshift__.Scalar(a, 3),
           "rshift": aten.__rshift__.Tensor, "lshift": aten.__lshift__.Tensor,
           "right_shift": aten.bitwise_right_shift.Tensor, "left_shift": aten.bitwise_left_shift.Tensor,
           "right_shift_2": lambda a, b: aten.bitwise_right_shift.Tensor_Scalar(a, 2),
           "one_left_shift": lambda a, b: aten.bitwise_left_shift.Scalar_Tensor(1, b),
           "rshift_9": lambda a, b: aten.__rshift__.Scalar(a, 9)}
    check(run_both(ops, [a, b]), dtype)


def test_int4_dequantization():
    """Two int4 values per uint8 (low and high nibble), dequantized as GPTQ-style kernels do."""
    packed = torch.randint(0, 256, (16, 8), generator=torch.Generator().manual_seed(1), dtype=torch.uint8)
    scale = rand((16, 1), torch.float32, 0.01, 0.1, seed=2)

    def dequant(p, s):
        lo = aten.bitwise_and.Scalar(p, 15)
        hi = aten.__rshift__.Scalar(p, 4)
        q = aten.cat.default([lo, hi], 1)
        return aten.mul.Tensor(aten.sub.Tensor(aten._to_copy.default(q, dtype=torch.float32), 8), s)
    check(run_both({"dequant": dequant}, [packed, scale]))
