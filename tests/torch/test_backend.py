"""The Dynamo backend's contract: registered by entry point, dynamic sizes compiled per shape,
graph breaks, the eager fallback with one warning naming the op, tensors shared not copied."""
import copy
import warnings
from contextlib import contextmanager

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from axle.torch.backend import STATS, AxleFallbackWarning
from axle.torch.dtypes import from_numpy, to_numpy
from models import MLP


def test_backend_is_registered_by_entry_point():
    assert "axle" in torch._dynamo.list_backends()


def test_dynamic_sizes_compile_per_shape():
    torch._dynamo.reset()
    model = MLP().eval()
    compiled = torch.compile(model, backend="axle", dynamic=True)
    before = STATS["compiles"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", AxleFallbackWarning)
        for n in (3, 5, 3, 9):
            x = torch.randn(n, 32)
            torch.testing.assert_close(compiled(x), model(x), atol=1e-5, rtol=1e-5)
    assert STATS["compiles"] - before == 3  # one axle program per distinct batch size


def test_graph_breaks():
    torch._dynamo.reset()

    def f(x):
        y = torch.tanh(x) * 2
        torch._dynamo.graph_break()
        return torch.softmax(y @ y.t(), dim=-1) + 1

    x = torch.randn(4, 5)
    before = STATS["axle_calls"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", AxleFallbackWarning)
        got = torch.compile(f, backend="axle")(x)
    assert STATS["axle_calls"] - before == 2  # the two graphs around the break
    torch.testing.assert_close(got, f(x), atol=1e-5, rtol=1e-5)


def test_unsupported_op_runs_eagerly_with_one_warning():
    torch._dynamo.reset()

    def f(x):
        return torch.linalg.eigvals(torch.sin(x)).abs() * 3  # (linalg_eig has no lowering)

    x = torch.randn(4, 4)
    compiled = torch.compile(f, backend="axle")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [compiled(x) for _ in range(3)]
    ours = [w for w in caught if issubclass(w.category, AxleFallbackWarning)]
    assert len(ours) == 1, [str(w.message) for w in ours]
    assert "aten::linalg_eig" in str(ours[0].message)
    for g in got:
        torch.testing.assert_close(g, f(x))


def test_training_graph_with_unsupported_op_falls_back():
    torch._dynamo.reset()
    w = torch.randn(6, 6, requires_grad=True)

    def f(x):
        return torch.linalg.eigvals(x @ w).abs().sum()

    x = torch.randn(6, 6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.compile(f, backend="axle")(x).backward()
    assert any("aten::linalg_eig" in str(c.message) for c in caught)
    g = w.grad.clone()
    w.grad = None
    f(x).backward()
    torch.testing.assert_close(g, w.grad)


def test_tensors_cross_without_copies():
    t = torch.randn(4, 5)
    a = to_numpy(t)
    assert a.ctypes.data == t.data_ptr()
    b = torch.randn(3, 2).to(torch.bfloat16)
    assert to_numpy(b).ctypes.data == b.data_ptr()
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert from_numpy(arr).data_ptr() == arr.ctypes.data
    assert from_numpy(np.array(2.0, np.float32)).shape == ()


def test_unsupported_dtype_is_a_clear_error():
    from axle.torch.dtypes import UnsupportedDtype
    with pytest.raises(UnsupportedDtype, match="float8_e4m3fn"):
        to_numpy(torch.zeros(2, dtype=torch.float8_e4m3fn))
    z = torch.tensor([1 + 2j, -3j], dtype=torch.complex64)  # complex tensors travel as they are
    np.testing.assert_array_equal(to_numpy(z), z.numpy())


def test_dynamic_sizes_in_training():
    torch._dynamo.reset()
    model = MLP()
    compiled = torch.compile(model, backend="axle", dynamic=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AxleFallbackWarning)
        for n in (3, 6):
            x = torch.randn(n, 32)
            model.zero_grad()
            compiled(x).square().sum().backward()
            got = [p.grad.clone() for p in model.parameters()]
            model.zero_grad()
            model(x).square().sum().backward()
            for g, p in zip(got, model.parameters()):
                torch.testing.assert_close(g, p.grad, atol=1e-4, rtol=1e-4)


@contextmanager
def _recorded_builds():
    """[(graph name, its Lowered)] for every graph the torch backend compiles in the block."""
    from axle.torch import backend
    built = []
    real = backend.CompiledGraph._build

    def spy(self, args):
        entry = real(self, args)
        built.append((self.name, entry[1]))
        return entry
    backend.CompiledGraph._build = spy
    try:
        yield built
    finally:
        backend.CompiledGraph._build = real


def test_transposed_weights_cross_as_views_in_training():
    """A Linear layer's training step: the forward graph saves the transposed weight for the
    backward. It is handed over as torch's view of the weight (not computed and copied by
    axle), and the backward takes it in its memory order (a transpose in the text, folded
    into its dot), so no 10000 x 256 copy is made on either side; gradients as eager's."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(96, 300), torch.nn.Tanh(), torch.nn.Linear(300, 40))
    x = torch.randn(16, 96)
    ref = copy.deepcopy(model)
    comp = torch.compile(model, backend="axle")
    with _recorded_builds() as built:
        torch._dynamo.reset()
        (comp(x) ** 2).mean().backward()
    (ref(x) ** 2).mean().backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
    fwd = [lw for name, lw in built if name == "forward graph"]
    bwd = [lw for name, lw in built if name == "backward graph"]
    assert fwd and any(kind == "view" for kind, *_ in fwd[0].outputs), fwd[0].outputs
    assert bwd and any(perm is not None for perm in bwd[0].arg_perms), bwd[0].arg_perms


def test_channels_last_outputs_are_views_of_memory_order_results():
    """A channels-last model's graph outputs (the forward's result and saved activations,
    the backward's input gradient) are computed in memory order (NHWC) and handed to torch as
    permuted views with eager's strides, instead of copied into them; values and gradients
    equal eager's."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.SiLU(),
                                torch.nn.Conv2d(16, 8, 3, padding=1)).to(memory_format=torch.channels_last)
    ref = copy.deepcopy(model)
    x = torch.randn(2, 8, 10, 12).to(memory_format=torch.channels_last).requires_grad_()
    xr = x.detach().clone().requires_grad_()
    comp = torch.compile(model, backend="axle")
    with _recorded_builds() as built:
        torch._dynamo.reset()
        y = comp(x)
        (y * y).sum().backward()
    yr = ref(xr)
    (yr * yr).sum().backward()
    assert y.stride() == yr.stride() and y.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(y, yr, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(x.grad, xr.grad, rtol=1e-4, atol=1e-4)
    assert x.grad.stride() == xr.grad.stride()
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-4)
    orders = [entry[3] for name, lw in built for entry in lw.outputs if entry[0] == "tensor"]
    assert any(o == [0, 2, 3, 1] for o in orders), orders


def test_saved_weights_are_handed_back_not_copied():
    """A convolution's training forward returns the weight itself for the backward: the
    graph output is the input tensor (a view entry with no view ops), not a copy made on
    every call; the gradients equal eager's."""
    torch.manual_seed(0)
    model = torch.nn.Conv2d(16, 32, 3, padding=1, bias=False)
    ref = copy.deepcopy(model)
    x = torch.randn(2, 16, 5, 5)
    with _recorded_builds() as built:
        torch._dynamo.reset()
        (torch.compile(model, backend="axle")(x) ** 2).sum().backward()
    (ref(x) ** 2).sum().backward()
    torch.testing.assert_close(model.weight.grad, ref.weight.grad, rtol=1e-4, atol=1e-4)
    fwd = [lw for name, lw in built if name == "forward graph"]
    assert fwd and any(e[0] == "view" and e[2] == () for e in fwd[0].outputs), fwd[0].outputs


def test_outputs_with_zero_strides_keep_eager_layout():
    """A training graph whose saved tensors are expands (F.normalize's norms broadcast for the
    backward; a squeezed broadcast in a backward's results) used to fail at call time:
    torch cannot copy into overlapping strides."""
    torch._dynamo.reset()

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(32, 16), torch.nn.Linear(32, 16)

        def forward(self, x, y):
            u = torch.nn.functional.normalize(self.a(x), dim=-1)
            v = torch.nn.functional.normalize(self.b(y), dim=-1)
            logits = 10 * u @ v.t()
            labels = torch.arange(logits.shape[0])
            return torch.nn.functional.cross_entropy(logits, labels)

    torch.manual_seed(0)
    model = M()
    ref = copy.deepcopy(model)
    x, y = torch.randn(24, 32), torch.randn(24, 32)
    compiled = torch.compile(model, backend="axle")
    with warnings.catch_warnings():
        warnings.simplefilter("error", AxleFallbackWarning)
        loss = compiled(x, y)
        loss.backward()
    want = ref(x, y)
    want.backward()
    torch.testing.assert_close(loss, want, atol=1e-5, rtol=1e-5)
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, atol=1e-5, rtol=1e-4)


def test_with_strides_expands():
    from axle.torch.backend import with_strides
    t = torch.arange(12.0).reshape(3, 4)
    t[:, 1:] = t[:, :1]  # every column the first one: an expand's values
    out = with_strides(t, (1, 0))
    assert out.stride() == (1, 0)
    torch.testing.assert_close(out, t)
    out = with_strides(torch.arange(6.0).reshape(2, 3), (1, 2))  # column-major
    assert out.stride() == (1, 2)
    torch.testing.assert_close(out, torch.arange(6.0).reshape(2, 3))


def test_group_norm_training_compiles():
    """GroupNorm's forward (native_group_norm, left whole by aten's decompositions) and its
    backward compile: no eager fallback, gradients as eager's."""
    torch._dynamo.reset()
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Conv2d(8, 32, 3, padding=1), torch.nn.GroupNorm(8, 32), torch.nn.SiLU(),
                                torch.nn.Conv2d(32, 8, 3, padding=1))
    ref = copy.deepcopy(model)
    x = torch.randn(2, 8, 12, 12)
    before = STATS["axle_calls"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", AxleFallbackWarning)
        out = torch.compile(model, backend="axle")(x)
        out.square().mean().backward()
    assert STATS["axle_calls"] - before == 2  # the forward and the backward graph
    want = ref(x)
    want.square().mean().backward()
    torch.testing.assert_close(out, want, atol=1e-5, rtol=1e-4)
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, atol=1e-5, rtol=1e-3)


def test_one_hot_and_cosine_embedding_loss_compile():
    """F.one_hot records a data-dependent range check (_assert_async.msg) and
    CosineEmbeddingLoss an empty_permuted: both lower, nothing runs eagerly."""
    torch._dynamo.reset()

    def f(x, i):
        return (F.one_hot(i, 10).float() * x).sum() + F.cosine_embedding_loss(x, x.flip(0), torch.ones(4))
    x, i = torch.randn(4, 10), torch.tensor([1, 2, 3, 9])
    before = STATS["axle_calls"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", AxleFallbackWarning)
        got = torch.compile(f, backend="axle")(x, i)
    assert STATS["axle_calls"] - before == 1
    torch.testing.assert_close(got, f(x, i), atol=1e-5, rtol=1e-5)


def test_channels_last_training_compiles():
    """A channels_last CNN (PyTorch's advice for CPU convolutions): AdaptiveAvgPool2d(1) and
    Flatten trace to as_strided / as_strided_scatter views of memory, which lower."""
    torch._dynamo.reset()
    torch.manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4))
    model = model.to(memory_format=torch.channels_last)
    ref = copy.deepcopy(model)
    x = torch.randn(2, 3, 10, 10).to(memory_format=torch.channels_last)
    before = STATS["axle_calls"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", AxleFallbackWarning)
        out = torch.compile(model, backend="axle")(x)
        out.sum().backward()
    assert STATS["axle_calls"] - before == 2
    want = ref(x)
    want.sum().backward()
    torch.testing.assert_close(out, want, atol=1e-5, rtol=1e-4)
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, atol=1e-5, rtol=1e-3)


def test_fft_convolution_and_complex_parameters_train():
    """An FFT long convolution (Hyena's) and an S4D-style complex kernel: forward and
    backward compile (complex tensors, rfft / irfft and their gradients' c2c transforms,
    view_as_complex, conj of a Python number), gradients as eager's."""
    torch._dynamo.reset()
    torch.manual_seed(3)
    h, n, length = 4, 6, 16

    def f(u, k, log_dt, c, a_re, a_im):
        m = u.shape[-1]
        y = torch.fft.irfft(torch.fft.rfft(u, n=2 * m) * torch.fft.rfft(k, n=2 * m), n=2 * m)[..., :m]
        a = -torch.exp(a_re) + 1j * a_im
        dta = a * torch.exp(log_dt)[:, None]
        kern = torch.einsum("hn,hnl->hl", torch.view_as_complex(c) * (torch.exp(dta) - 1.0) / a,
                            torch.exp(dta[..., None] * torch.arange(length))).real
        return (y * torch.arange(m)).sum() + (kern * y[0]).sum()
    args = [torch.randn(2, h, length), torch.randn(h, length), torch.randn(h), torch.randn(h, n, 2),
            torch.randn(h, n), torch.randn(h, n)]
    args = [a.requires_grad_() for a in args]
    want = torch.autograd.grad(f(*args), args)
    before = STATS["axle_calls"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", AxleFallbackWarning)
        got = torch.autograd.grad(torch.compile(f, backend="axle")(*args), args)
    assert STATS["axle_calls"] - before == 2
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, atol=2e-4, rtol=2e-4)


def test_gaussian_process_marginal_likelihood_trains():
    """A GP's negative log marginal likelihood (Cholesky, cholesky_solve, the log-determinant
    from the factor's diagonal) and its gradient compile: torch.linalg.cholesky's error check
    is an effect token, passed through."""
    torch._dynamo.reset()
    torch.manual_seed(4)
    x, y = torch.randn(24, 3), torch.randn(24, 1)
    log_ls = torch.zeros(3, requires_grad=True)
    log_noise = torch.tensor(-1.0, requires_grad=True)

    def nll(log_ls, log_noise):
        z = x / torch.exp(log_ls)
        k = torch.exp(-0.5 * ((z[:, None] - z[None]) ** 2).sum(-1)) + torch.exp(log_noise) * torch.eye(24)
        chol = torch.linalg.cholesky(k)
        alpha = torch.cholesky_solve(y, chol)
        return 0.5 * (y * alpha).sum() + torch.log(torch.diagonal(chol)).sum()
    want = torch.autograd.grad(nll(log_ls, log_noise), [log_ls, log_noise])
    before = STATS["axle_calls"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", AxleFallbackWarning)
        got = torch.autograd.grad(torch.compile(nll, backend="axle")(log_ls, log_noise), [log_ls, log_noise])
    assert STATS["axle_calls"] - before == 2
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, atol=1e-4, rtol=1e-4)


def test_grouped_query_attention_trains_and_bool_eye():
    """F.scaled_dot_product_attention with enable_gqa (8 query heads over 2 key / value
    heads) trains with both graphs on axle, gradients equal to eager's; a bool torch.eye of
    256 rows (its decomposition counts in uint16) lowers."""
    torch._dynamo.reset()
    torch.manual_seed(3)
    wq, wk, wv = (torch.randn(32, n, requires_grad=True) for n in (64, 16, 16))

    def f(x):
        b, s, _ = x.shape
        q = (x @ wq).view(b, s, 8, 8).transpose(1, 2)
        k = (x @ wk).view(b, s, 2, 8).transpose(1, 2)
        v = (x @ wv).view(b, s, 2, 8).transpose(1, 2)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        eye = torch.eye(256, dtype=torch.bool)[:s, :s]
        return (o.sum(1) * eye.any(1)[None, :, None]).square().sum()
    x = torch.randn(2, 12, 32)
    before = STATS["axle_calls"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", AxleFallbackWarning)
        loss = torch.compile(f, backend="axle")(x)
        got = torch.autograd.grad(loss, (wq, wk, wv))
    assert STATS["axle_calls"] - before == 2
    want_loss = f(x)
    want = torch.autograd.grad(want_loss, (wq, wk, wv))
    torch.testing.assert_close(loss, want_loss, atol=1e-4, rtol=1e-5)
    for g, w in zip(got, want):  # (gradients of about 5000: within 1e-5 of the largest)
        torch.testing.assert_close(g, w, atol=1e-5 * float(w.abs().max()), rtol=0)


def test_attention_backward_left_to_eager_recomputes_the_forward(monkeypatch):
    """A backward graph that runs eagerly (an op without a lowering) after the decomposed
    flash attention forward: the eager flash backward is given the recomputed output and
    logsumexp (the decomposition saves the attention weights in the logsumexp's place),
    and the gradients are eager's."""
    from axle.torch import backend as B
    torch._dynamo.reset()
    torch.manual_seed(5)
    real = B.unsupported_ops
    flash_bwd = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default

    def pretend(gm):  # the backward graph "misses" an op: it runs eagerly
        has = any(n.op == "call_function" and n.target is flash_bwd for n in gm.graph.nodes)
        return ["aten::pretended_missing"] if has else real(gm)
    monkeypatch.setattr(B, "unsupported_ops", pretend)
    q, k, v = (torch.randn(2, 4, 16, 8, requires_grad=True) for _ in range(3))

    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).square().sum()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AxleFallbackWarning)
        got = torch.autograd.grad(torch.compile(f, backend="axle")(q, k, v), (q, k, v))
    want = torch.autograd.grad(f(q, k, v), (q, k, v))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, atol=1e-5 * float(w.abs().max()), rtol=1e-5)


def test_foreach_updates_lower():
    """torch._foreach_* updates (an EMA teacher's _foreach_lerp_, an optimizer's addcmul /
    addcdiv / sqrt / mul over parameter lists, scalar lists, a pow) run on axle, equal to eager."""
    torch._dynamo.reset()
    torch.manual_seed(6)
    shapes = [(4, 3), (7,), (2, 2, 5)]

    def step(ema, params, grads, sq):
        torch._foreach_lerp_(ema, params, 0.1)
        torch._foreach_mul_(sq, 0.9)
        torch._foreach_addcmul_(sq, grads, grads, value=0.1)
        denom = torch._foreach_add(torch._foreach_sqrt(sq), 1e-8)
        torch._foreach_addcdiv_(params, grads, denom, value=-0.01)
        torch._foreach_sub_(params, torch._foreach_mul(params, [1e-3, 2e-3, 3e-3]))
        return [p.sum() + e.sum() for p, e in zip(params, torch._foreach_pow(ema, 2))]

    def fresh():
        g = torch.Generator().manual_seed(0)
        return [[torch.randn(s, generator=g) for s in shapes] for _ in range(3)] + \
            [[torch.rand(s, generator=g) for s in shapes]]
    want_state, got_state = fresh(), fresh()
    want = step(*want_state)
    before = STATS["axle_calls"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", AxleFallbackWarning)
        got = torch.compile(step, backend="axle")(*got_state)
    assert STATS["axle_calls"] > before
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)
    for gl, wl in zip(got_state, want_state):
        for g, w in zip(gl, wl):
            torch.testing.assert_close(g, w, atol=1e-6, rtol=1e-5)


def test_dropout_and_bernoulli_in_training_run_on_axle():
    """native_dropout (training) and bernoulli.p (timm's stochastic depth) lower with axle's
    random numbers seeded from torch's generator: no graph left to eager; the kept fraction
    and scale right; fresh numbers every call; torch.manual_seed reproduces them; the
    backward's gradient is the forward's mask times the scale."""
    torch._dynamo.reset()
    p = 0.25
    drop = torch.compile(lambda t: torch.nn.functional.dropout(t, p, True), backend="axle")
    x = torch.ones(200, 500, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AxleFallbackWarning)
        y = drop(x)
        y.sum().backward()
        again = drop(x)
        torch.manual_seed(7)
        first = drop(x)
        torch.manual_seed(7)
        second = drop(x)
        keep = torch.compile(lambda t: t.new_empty(t.shape).bernoulli_(0.3), backend="axle")(torch.ones(400, 500))
    kept = y != 0
    assert abs(kept.float().mean().item() - (1 - p)) < 0.01
    torch.testing.assert_close(y[kept], torch.full_like(y[kept], 1 / (1 - p)))
    torch.testing.assert_close(x.grad, kept.float() / (1 - p))
    assert not torch.equal(y, again)
    assert torch.equal(first, second)
    assert set(keep.unique().tolist()) == {0.0, 1.0} and abs(keep.mean().item() - 0.3) < 0.01
