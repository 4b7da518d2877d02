"""Run ATen ops through axle and eager PyTorch: one graph per (group, dtype) traced with
make_fx (ATen ops as called, no decomposition), lowered by the bridge's table, compiled by
axle; each output is compared with eager on its own."""
import numpy as np
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import axle
from axle.torch.dtypes import from_numpy, to_numpy
from axle.torch.lowering import lower_graph

# per dtype: (rtol, atol). f16/bf16: both sides compute in f32 and round once, so results
# agree to about one rounding step of the type (bf16 2^-8 relative, f16 2^-11).
TOL = {torch.float32: (2e-5, 2e-5), torch.float64: (1e-10, 1e-10), torch.float16: (2e-3, 2e-3),
       torch.bfloat16: (1.6e-2, 1.6e-2), torch.complex64: (2e-5, 2e-5), torch.complex128: (1e-10, 1e-10)}


def run_both(fns: dict, inputs: list):
    """{name: (axle result, eager result)} for named functions of the same inputs."""
    names = list(fns)

    def all_ops(*xs):
        return tuple(fns[n](*xs) for n in names)

    gm = make_fx(all_ops)(*inputs)
    lowered = lower_graph(gm, inputs)
    exe = axle.compile(lowered.text, backend="cpu")
    outs = exe.execute([to_numpy(t) for t in inputs])
    got = [from_numpy(outs[i]) if kind == "tensor" else i for kind, i, *_ in lowered.outputs]
    expect = all_ops(*inputs)
    flat_expect = _flatten(expect)
    results, k = {}, 0
    for n, item in zip(names, expect):
        count = len(_flatten(item))
        results[n] = (got[k:k + count], flat_expect[k:k + count])
        k += count
    return results


def _flatten(x):
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in _flatten(item)]
    return [x]


def check(results, dtype=None):
    failures = []
    for name, (got, expect) in results.items():
        for g, e in zip(got, expect):
            if e is None:
                continue
            rtol, atol = TOL.get(e.dtype, (0, 0))
            try:
                torch.testing.assert_close(g, e, rtol=rtol, atol=atol, equal_nan=True, check_stride=False)
            except AssertionError as err:
                failures.append(f"{name} [{dtype}]: {str(err)[:400]}")
    assert not failures, "\n".join(failures)


def rand(shape, dtype, lo=-3.0, hi=3.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if not dtype.is_floating_point:
        return torch.randint(int(lo), int(hi) + 1, shape, generator=g, dtype=dtype)
    return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


__all__ = ["run_both", "check", "rand", "np"]
