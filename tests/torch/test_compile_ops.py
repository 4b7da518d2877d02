"""Ops through torch.compile(backend="axle") as models meet them: forward and backward graphs
lowered whole (a fallback warning fails the test), results and gradients as eager's."""
import warnings

import pytest
import torch

from axle.torch.backend import STATS, AxleFallbackWarning


def _compiled(f, *args, dynamic=False):
    """f's compiled result on clones of args (fallback warnings are errors)."""
    torch._dynamo.reset()
    before = STATS["axle_calls"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", AxleFallbackWarning)
        out = torch.compile(f, backend="axle", dynamic=dynamic)(*args)
    assert STATS["axle_calls"] > before
    return out


def _leaves(*ts):
    return [t.detach().clone().requires_grad_(t.requires_grad) for t in ts]


def _train_step_matches(f, args, rtol, atol):
    """f(*args).sum().backward() compiled and eager: the same outputs and input gradients."""
    mine, ref = _leaves(*args), _leaves(*args)
    want = f(*ref)
    want.sum().backward()
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error", AxleFallbackWarning)
        got = torch.compile(f, backend="axle")(*mine)
        got.sum().backward()
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol)
    for g, w in zip(mine, ref):
        if w.grad is not None:
            torch.testing.assert_close(g.grad, w.grad, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_special_functions_train(dtype):
    """Forward and backward of torch.special's functions: the backward graphs hold
    digamma (lgamma's), polygamma n + 1, i0e / i1e (each other's), erfcx, exponentials."""
    sp = torch.special

    def f(x, y):
        pos = x.abs() + 0.3
        return (torch.lgamma(pos) + torch.digamma(pos) + torch.polygamma(2, pos) + torch.erfc(y)
                + sp.erfcx(y) + sp.i0e(y) + sp.i1e(y) + sp.ndtri(torch.sigmoid(y)) + sp.log_ndtr(y)
                + sp.log_ndtr(y * 8) + sp.i1e(y * 30))
    g = torch.Generator().manual_seed(0)
    x = (torch.rand(6, 7, generator=g, dtype=dtype) * 8 - 2).requires_grad_()
    y = (torch.rand(6, 7, generator=g, dtype=dtype) * 6 - 3).requires_grad_()
    tol = 2e-5 if dtype == torch.float32 else 2e-9  # (f64: eager's trigamma, digamma's gradient, is off by 5e-10)
    _train_step_matches(f, [x, y], tol, tol)


def test_order_statistics_and_masked_scatter_train():
    """median / nanmedian / kthvalue forward (indices saved) and their scatter backward;
    masked_scatter and masked_scatter_backward; a batched searchsorted and uint8 nibbles."""
    def f(x, src):
        v = x.median(1).values + x.nanmedian(0).values.sum() + x.kthvalue(2, 1).values
        y = x.masked_scatter(x > 0.2, src * 3)
        pos = torch.searchsorted(x.detach().sort(1).values, x.detach()[:, :3], right=True)
        nib = ((x.detach().abs() * 100).clamp(max=255).to(torch.uint8) >> 4).float()
        return y.sum(1) * v + pos.sum(1) + nib.sum(1)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(5, 9, generator=g).requires_grad_()
    src = torch.randn(50, generator=g).requires_grad_()
    _train_step_matches(f, [x, src], 1e-5, 1e-5)


def test_embedding_max_norm_renormalizes_in_place():
    """nn.Embedding(max_norm=...): the looked-up rows of the weight renormalized in place (as
    eager's embedding_renorm_), the lookup and the weight's gradient as eager's."""
    torch.manual_seed(0)
    ref = torch.nn.Embedding(12, 6, max_norm=1.0)
    with torch.no_grad():
        ref.weight.mul_(2)
    mine = torch.nn.Embedding(12, 6, max_norm=1.0)
    mine.load_state_dict(ref.state_dict())
    idx = torch.tensor([[1, 3, 3], [11, 0, 1]])
    want = ref(idx)
    want.pow(2).sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error", AxleFallbackWarning)
        torch._dynamo.reset()
        got = torch.compile(mine, backend="axle")(idx)
        got.pow(2).sum().backward()
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(mine.weight, ref.weight)
    torch.testing.assert_close(mine.weight.grad, ref.weight.grad)
    assert not torch.equal(mine.weight[1], 2 * torch.nn.Embedding(12, 6).weight[1])


def test_grad_scaler_unscale_and_adam_step():
    """GradScaler's unscale (_amp_foreach_non_finite_check_and_unscale_), clipping, a
    foreach Adam step (_foreach_pow.ScalarAndTensor for the bias corrections) and a
    _foreach_copy_ of the parameters in one compiled function: no graph left to eager, the
    same parameters, and found_inf set by an inf gradient."""
    def make():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 3))
        params = list(model.parameters())
        for p in params:
            p.grad = torch.randn_like(p) * 100
        return params, torch.optim.Adam(params, lr=1e-2, foreach=True), [torch.zeros_like(p) for p in params]

    def step(params, opt, copies, found, inv):
        found.zero_()
        torch._amp_foreach_non_finite_check_and_unscale_([p.grad for p in params], found, inv)
        torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True)
        opt.step()
        with torch.no_grad():
            torch._foreach_copy_(copies, params)

    (pw, ow, cw), (pg, og, cg) = make(), make()
    fw, fg, inv = torch.zeros(1), torch.zeros(1), torch.tensor(1 / 64.0)
    compiled = torch.compile(step, backend="axle")
    before = STATS["axle_calls"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", AxleFallbackWarning)
        for _ in range(3):
            step(pw, ow, cw, fw, inv)
            compiled(pg, og, cg, fg, inv)
    assert STATS["axle_calls"] > before
    for a, b, c in zip(pg, pw, cg):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
        assert torch.equal(c, a)
    assert fg.item() == 0.0
    grads = [torch.ones(3), torch.tensor([1.0, float("inf")])]
    found = torch.zeros(1)
    unscale = torch.compile(lambda gs, f, s: torch._amp_foreach_non_finite_check_and_unscale_(gs, f, s), backend="axle")
    with warnings.catch_warnings():
        warnings.simplefilter("error", AxleFallbackWarning)
        unscale(grads, found, torch.tensor(0.5))
    assert found.item() == 1.0 and grads[0].tolist() == [0.5] * 3 and grads[1].tolist() == [0.5, float("inf")]


def test_zero_tensor_gradients_reach_the_compiled_graph():
    """torch.func.hessian inside a compiled forward (a physics-informed loss): autograd hands
    the backward graph ZeroTensors (and _efficientzerotensor in the graph); they go in as
    zeros, the loss and the parameters' gradients as eager's."""
    from torch.func import hessian, vmap
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))

    def f(xi):
        return vmap(lambda x: torch.diagonal(hessian(lambda y: net(y[None])[0, 0])(x)).sum())(xi)
    x = torch.rand(8, 2)
    want = f(x)
    want.pow(2).sum().backward()
    ref = [None if p.grad is None else p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error", AxleFallbackWarning)
        got = torch.compile(f, backend="axle")(x)
        got.pow(2).sum().backward()
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    assert sum(r is not None for r in ref) == 3  # (the last bias has no second derivative)
    for p, r in zip(net.parameters(), ref):
        assert (p.grad is None) == (r is None)
        if r is not None:
            torch.testing.assert_close(p.grad, r, rtol=1e-4, atol=1e-6)


def test_zero_tensor_arguments_go_in_as_zeros():
    """A ZeroTensor argument (autograd's gradient of an output nothing used, handed to a
    compiled backward graph) is no memory to share: it goes in as zeros."""
    z = torch._efficientzerotensor((3,), dtype=torch.float32)
    assert z._is_zerotensor()
    got = _compiled(lambda x, y: (x * 2 + y).sin(), z, torch.ones(3))
    torch.testing.assert_close(got, torch.ones(3).sin())


def test_view_of_an_input_with_symbolic_sizes():
    """A graph output that views an input to sizes computed from symbols (dynamic shapes:
    x.view(s0, s1 * s2)) is made by torch from the input with this call's sizes."""
    def f(x, w):
        return x.view(x.shape[0], x.shape[1] * x.shape[2]), (x * w).sum()
    torch._dynamo.reset()
    compiled = torch.compile(f, backend="axle", dynamic=True)
    before = STATS["axle_calls"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", AxleFallbackWarning)
        for shape in ((4, 3, 5), (2, 6, 5), (4, 3, 5)):
            x, w = torch.randn(shape), torch.randn(shape[-1])
            view, total = compiled(x, w)
            assert view.shape == (shape[0], shape[1] * shape[2]) and view.data_ptr() == x.data_ptr()
            torch.testing.assert_close(view, x.reshape(view.shape))
            torch.testing.assert_close(total, (x * w).sum())
    assert STATS["axle_calls"] - before == 3


def test_view_chain_with_symbolic_sizes_is_replayed_from_the_call():
    """lower_graph hands back a view of an input with symbolic sizes as (op, concrete
    arguments) steps, resolved for the sizes it was lowered for."""
    from torch._dynamo.backends.common import aot_autograd
    from axle.torch.lowering import lower_graph, replay_view
    plans = []

    def fw(gm, example):
        args = [a if isinstance(a, torch.Tensor) else int(a) for a in example]
        plans.append(lower_graph(gm, args, input_views=True).outputs)
        return gm.forward

    def f(x):
        return x.view(x.shape[0], -1).t(), x.sum()
    torch._dynamo.reset()
    x = torch.randn(6, 2, 5)
    torch.compile(f, backend=aot_autograd(fw_compiler=fw), dynamic=True)(x)
    views = [e for e in plans[0] if e[0] == "view"]
    assert views, plans[0]
    _, index, steps = views[0]
    assert all(isinstance(s, int) for _, args, _ in steps for a in args for s in (a if isinstance(a, list) else [a]))
    torch.testing.assert_close(replay_view(x, steps), f(x)[0])
