"""Special functions, bit shifts, order statistics, searchsorted over batches, masked_scatter,
embedding_renorm and more _foreach ops against eager PyTorch (op_harness: one compiled
graph per dtype, each result compared on its own)."""
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


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int32, torch.int64], ids=str)
def test_median_and_kthvalue(dtype):
    """Values and indices of median / nanmedian (lower median; eager breaks ties by index,
    as the stable sort does; a NaN row's median its first NaN) and kthvalue (NaN largest)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 4, (7, 9), generator=g).to(dtype)  # many ties
    if dtype.is_floating_point:
        x[1, ::3] = nan
        x[4, 5] = nan
        x[6] = nan
    ops = {"median": lambda x: aten.median.dim(x, 1), "median_keep": lambda x: aten.median.dim(x, 0, True),
           "nanmedian": lambda x: aten.nanmedian.dim(x, 1), "nanmedian_0": lambda x: aten.nanmedian.dim(x, 0),
           "median_all": aten.median.default,
           "kth_values": lambda x: aten.kthvalue.default(x, 3, 1)[0],
           "kth_values_keep": lambda x: aten.kthvalue.default(x, 7, 0, True)[0]}
    if dtype.is_floating_point:
        ops["nanmedian_all"] = aten.nanmedian.default
    results = run_both(ops, [x])
    if dtype.is_floating_point:  # an all-NaN row: NaN; its index is wherever eager's nth_element left it
        got, want = results["nanmedian"]
        assert got[1][6] == 0
        got[1][6] = want[1][6]
    check(results, dtype)
    # kthvalue's index on ties is any equal element's in eager (quickselect): distinct values here
    y = torch.randperm(63, generator=g).reshape(7, 9).to(dtype)
    check(run_both({"kth": lambda y: aten.kthvalue.default(y, 4, 1),
                    "kth_first": lambda y: aten.kthvalue.default(y, 1, 0)}, [y]), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=str)
@pytest.mark.parametrize("length", [5, 100])
def test_searchsorted_batched(dtype, length):
    """Rows of sorted sequences (counted up to 64 entries, bisected beyond), right / side,
    out_int32, a sorter, a scalar, and 1-D boundaries; NaN values land at the end."""
    g = torch.Generator().manual_seed(length)
    seq = torch.sort(torch.randint(0, 50, (3, 4, length), generator=g).to(dtype), -1).values
    vals = torch.randint(-2, 53, (3, 4, 11), generator=g).to(dtype)
    if dtype.is_floating_point:
        vals[0, 0, :3] = torch.tensor([nan, inf, -inf], dtype=dtype)
    order = torch.arange(length - 1, -1, -1).expand(3, 4, length).contiguous()
    ops = {"left": lambda s, v, o: aten.searchsorted.Tensor(s, v),
           "right": lambda s, v, o: aten.searchsorted.Tensor(s, v, right=True),
           "int32_side": lambda s, v, o: aten.searchsorted.Tensor(s, v, out_int32=True, side="right"),
           "one_row": lambda s, v, o: aten.searchsorted.Tensor(aten.select.int(aten.select.int(s, 0, 1), 0, 2), v),
           "bucketize": lambda s, v, o: aten.bucketize.Tensor(v, aten.select.int(aten.select.int(s, 0, 0), 0, 0), right=True),
           "scalar": lambda s, v, o: aten.searchsorted.Scalar(aten.select.int(aten.select.int(s, 0, 2), 0, 1), 7),
           "sorter": lambda s, v, o: aten.searchsorted.Tensor(aten.flip.default(s, [-1]), v, sorter=o)}
    if length > 64:  # (bisected: slower to compile, the forms alike)
        ops = {k: ops[k] for k in ("left", "int32_side", "one_row")}
    check(run_both(ops, [seq, vals, order]), dtype)


def test_searchsorted_bisects_as_eager_with_nan_boundaries():
    """Past 64 entries the search is eager's bisection step for step: the same answers even
    for sequences ending in NaNs (which a count would place differently)."""
    g = torch.Generator().manual_seed(1)
    seq = torch.sort(torch.rand(3, 100, generator=g), -1).values
    seq[:, -30:] = nan
    v = torch.rand(3, 50, generator=g)
    check(run_both({"left": aten.searchsorted.Tensor,
                    "right": lambda s, v: aten.searchsorted.Tensor(s, v, right=True)}, [seq, v]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64], ids=str)
def test_masked_scatter_and_backward(dtype):
    """The mask's true positions in row-major order take source's elements in order (a
    broadcast mask too); the backward hands them back in order, zeros past the count."""
    a, mask, src = rand((4, 6), dtype, seed=1), rand((4, 6), torch.bool, seed=2), rand((30,), dtype, seed=3)
    row_mask, src2 = rand((6,), torch.bool, seed=4), rand((5, 6), dtype, seed=5)
    ops = {"scatter": lambda a, m, s, rm, s2: aten.masked_scatter.default(a, m, s),
           "broadcast_mask": lambda a, m, s, rm, s2: aten.masked_scatter.default(a, rm, s2),
           "backward": lambda a, m, s, rm, s2: aten.masked_scatter_backward.default(a, m, [30]),
           "backward_broadcast": lambda a, m, s, rm, s2: aten.masked_scatter_backward.default(a, rm, [5, 6])}
    check(run_both(ops, [a, mask, src, row_mask, src2]), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16], ids=str)
def test_embedding_renorm(dtype):
    """The rows named (repeats once) scaled to max_norm where their p-norm exceeds it."""
    w, idx = rand((10, 5), dtype, seed=1), torch.tensor([[0, 2, 2], [9, 4, 0]])
    ops = {"l2": lambda w, i: aten.embedding_renorm.default(w, i, 1.0, 2.0),
           "l1": lambda w, i: aten.embedding_renorm.default(w, i, 2.5, 1.0),
           "max": lambda w, i: aten.embedding_renorm.default(w, i, 1.5, inf)}
    check(run_both(ops, [w, idx]), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_foreach_copy_pow_and_amp_unscale(dtype):
    """_foreach_copy (into other types and broadcast), a scalar to the power of a list
    (Adam's bias corrections), and GradScaler's unscale: grads times inv_scale, found_inf
    set when any gradient holds an inf or NaN."""
    a, b = rand((3, 4), dtype, seed=1), rand((5,), dtype, seed=2)
    steps = [torch.tensor(3.0), torch.tensor(10.0)]
    bad = b.clone()
    bad[2] = inf
    ops = {"copy": lambda a, b, s0, s1, bad: aten._foreach_copy.default([a, b], [aten.mul.Tensor(a, 2), s0]),
           "pow": lambda a, b, s0, s1, bad: aten._foreach_pow.ScalarAndTensor(0.9, [s0, s1]),
           "unscale": lambda a, b, s0, s1, bad: aten._amp_foreach_non_finite_check_and_unscale.default(
               [a, b], aten.mul.Tensor(s0, 0), aten.reciprocal.default(s1)),
           "unscale_inf": lambda a, b, s0, s1, bad: aten._amp_foreach_non_finite_check_and_unscale.default(
               [a, bad], aten.mul.Tensor(s0, 0), aten.reciprocal.default(s1))}
    check(run_both(ops, [a, b, *steps, bad]), dtype)
