"""Convolutions over three or more spatial dimensions folded into 2-D ones (conv_fold.py):
forward convolutions in NCDHW and NDHWC, strides, padding (negative too), lhs and rhs
dilation, window reversal, feature and batch groups, the input and filter gradients that
jax.vjp makes of them, 4-D spatial convolutions (folded twice) and bf16; against jax.jit
and the interpreter, and with the fold's copies counted in the compiled program."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import axle  # noqa: E402
from axle.backends.cpu import conv_fold  # noqa: E402
from axle.backends.cpu import disk_cache  # noqa: E402
from axle.backends.cpu import executable as cpu_exe  # noqa: E402
from axle.ir import parse_module, print_module  # noqa: E402
from axle.ir.verifier import verify  # noqa: E402

R = np.random.default_rng(33)
NCDHW = ("NCDHW", "OIDHW", "NCDHW")
NDHWC = ("NDHWC", "DHWIO", "NDHWC")


def f32(*s, scale=1.0):
    return (R.standard_normal(s) * scale).astype(np.float32)


def _spatial_convs(exe) -> list:
    """The ranks of spatial dimensions of the convolutions in exe's optimized module."""
    return [len(op.attr("dimension_numbers")["input_spatial_dimensions"])
            for op in exe.module.walk() if op.name == "stablehlo.convolution"]


def _check(fn, args, tol=2e-5, interpret=True, folded=True):
    text = jax.jit(fn).lower(*args).as_text()
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        exe = axle.compile(text, backend="cpu")
    cpu_exe.clear_memory_cache()
    ranks = _spatial_convs(exe)
    if folded:  # (None: either way)
        assert ranks and all(n <= 2 for n in ranks), f"convolutions left with {ranks} spatial dimensions"
    elif folded is not None:
        assert any(n >= 3 for n in ranks), "folded"
    got = exe.execute(list(args))
    want = jax.tree_util.tree_leaves(jax.jit(fn)(*args))
    for g, w in zip(got, want):
        w = np.asarray(w, np.float32)
        np.testing.assert_allclose(np.asarray(g, np.float32), w, rtol=tol, atol=tol * max(1.0, float(np.abs(w).max())))
    if interpret:
        ref = axle.interpret(text, *args)
        for g, w in zip(got, ref if isinstance(ref, (list, tuple)) else [ref]):
            w = np.asarray(w, np.float32)
            np.testing.assert_allclose(np.asarray(g, np.float32), w, rtol=tol,
                                       atol=tol * max(1.0, float(np.abs(w).max())))


def _conv(dn, stride=(1, 1, 1), pad="SAME", **kw):
    return lambda x, w: lax.conv_general_dilated(x, w, stride, pad, dimension_numbers=dn, **kw)


FORWARD = [  # (name, input, kernel, dimension numbers, keyword arguments)
    ("ncdhw_rgb", (2, 3, 8, 16, 16), (16, 3, 3, 3, 3), NCDHW, {}),
    ("ncdhw_channels", (2, 16, 4, 8, 8), (32, 16, 3, 3, 3), NCDHW, {}),
    ("ndhwc", (2, 6, 10, 10, 8), (3, 3, 3, 8, 16), NDHWC, {}),
    ("strided", (2, 9, 11, 13, 4), (3, 3, 3, 4, 8), NDHWC, {"stride": (2, 2, 1)}),
    ("padding_uneven", (1, 4, 7, 9, 9), (8, 4, 2, 3, 3), NCDHW, {"pad": [(2, 0), (1, 1), (0, 2)]}),
    ("padding_negative", (1, 4, 9, 8, 8), (8, 4, 3, 3, 3), NCDHW, {"pad": [(-1, 1), (1, 1), (1, 1)]}),
    ("valid_temporal_only", (2, 3, 12, 6, 6), (8, 3, 5, 1, 1), NCDHW, {"pad": "VALID"}),
    ("rhs_dilated", (1, 9, 8, 8, 4), (3, 3, 3, 4, 8), NDHWC, {"rhs_dilation": (2, 1, 2)}),
    ("lhs_dilated", (1, 4, 5, 5, 4), (3, 3, 3, 4, 6), NDHWC, {"lhs_dilation": (2, 2, 1), "pad": [(1, 1)] * 3}),
    ("feature_groups", (2, 8, 5, 6, 6), (8, 2, 3, 3, 3), NCDHW, {"feature_group_count": 4}),
    ("depthwise", (2, 6, 6, 6, 16), (3, 3, 3, 1, 16), NDHWC, {"feature_group_count": 16}),
    ("unusual_layout", (5, 5, 2, 6, 3), (3, 3, 3, 4, 3), ("DWNHC", "OHIWD", "HNCWD"), {}),
]


@pytest.mark.parametrize("name,xs,ws,dn,kw", FORWARD, ids=[c[0] for c in FORWARD])
def test_forward(name, xs, ws, dn, kw):
    # (depthwise ones stay 3-D: the channels kernel takes them, test_depthwise_3d_...)
    _check(_conv(dn, **kw), (f32(*xs), f32(*ws, scale=0.2)), folded=name != "depthwise")


@pytest.mark.parametrize("name,xs,ws,dn,kw", [c for c in FORWARD if c[0] != "unusual_layout"],
                         ids=[c[0] for c in FORWARD if c[0] != "unusual_layout"])
def test_gradients(name, xs, ws, dn, kw):
    """The input and filter gradients (jax.vjp's convolutions: lhs dilation and window
    reversal for the input gradient, batch groups and windows as large as the image for
    the filter gradient) are folded too."""
    conv = _conv(dn, **kw)
    x, w = f32(*xs), f32(*ws, scale=0.2)
    dy = f32(*jax.eval_shape(conv, x, w).shape)
    _check(lambda x, w, dy: jax.vjp(conv, x, w)[1](dy), (x, w, dy), tol=5e-5,
           folded=None if name == "depthwise" else True)


def test_reversed_window():
    """window_reversal on the folded dimension (JAX's text always says false: edited)."""
    x, w = f32(1, 7, 6, 6, 2), f32(3, 3, 3, 2, 4)
    text = jax.jit(_conv(NDHWC)).lower(x, w).as_text()
    assert "reverse = [false, false, false]" in text
    text = text.replace("reverse = [false, false, false]", "reverse = [true, false, true]", 1)
    with disk_cache.disabled():
        exe = axle.compile(text, backend="cpu")
    want = axle.interpret(text, x, w)
    want = want[0] if isinstance(want, (list, tuple)) else want
    ref = np.asarray(jax.jit(_conv(NDHWC))(x, np.ascontiguousarray(w[::-1, :, ::-1])))
    np.testing.assert_allclose(np.asarray(want), ref, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(exe.execute([x, w])[0], ref, rtol=2e-5, atol=2e-5)
    assert all(n <= 2 for n in _spatial_convs(exe))


def test_four_spatial_dimensions():
    """A 4-D convolution loses two spatial dimensions, one fold at a time."""
    dn = ("NCXYZW", "OIXYZW", "NCXYZW")
    fn = lambda x, w: lax.conv_general_dilated(x, w, (1, 2, 1, 1), "SAME", dimension_numbers=dn)  # noqa: E731
    _check(fn, (f32(2, 3, 4, 5, 6, 6), f32(4, 3, 2, 3, 3, 3, scale=0.2)))


def test_bf16():
    x = jnp.asarray(f32(2, 4, 6, 8, 8), jnp.bfloat16)
    w = jnp.asarray(f32(8, 4, 3, 3, 3, scale=0.2), jnp.bfloat16)
    fn = lambda x, w: lax.conv_general_dilated(x, w, (1, 1, 1), "SAME", dimension_numbers=NCDHW,  # noqa: E731
                                               preferred_element_type=jnp.float32)
    _check(fn, (x, w), tol=2e-2, interpret=False)


def test_too_many_copies_stays_3d():
    """A window deeper than MAX_COPIES is left to the n-D path."""
    taps = conv_fold.MAX_COPIES + 1
    _check(_conv(NDHWC, pad="VALID"), (f32(1, taps + 3, 4, 4, 2), f32(taps, 1, 1, 2, 3)), folded=False)
    exe_ranks = None
    text = jax.jit(_conv(NDHWC, pad="VALID")).lower(f32(1, taps + 3, 4, 4, 2), f32(taps, 1, 1, 2, 3)).as_text()
    with disk_cache.disabled():
        exe_ranks = _spatial_convs(axle.compile(text, backend="cpu"))
    assert exe_ranks == [3]


def test_fold_keeps_module_valid():
    """The folded module still verifies and prints (the rewrite's types are consistent)."""
    text = jax.jit(_conv(NCDHW, stride=(2, 1, 1))).lower(f32(2, 3, 8, 8, 8), f32(4, 3, 3, 3, 3)).as_text()
    with disk_cache.disabled():
        exe = axle.compile(text, backend="cpu")
    verify(exe.module)
    printed = print_module(exe.module)
    assert "stablehlo.convolution" in printed
    verify(parse_module(printed))


@pytest.mark.parametrize("dn", [NCDHW, NDHWC], ids=["ncdhw", "ndhwc"])
def test_depthwise_3d_runs_on_the_channels_kernel(calls_of, dn):
    """3-D depthwise convolutions are not folded (that would make them grouped ones with
    three features a group): in NCDHW they move to NDHWC, and the n-D channels kernel
    takes them in either layout."""
    calls = calls_of("axle.backends.cpu.kernels_conv_rows", "emit_channels_conv")
    c = 16
    xs = (2, c, 4, 6, 6) if dn == NCDHW else (2, 4, 6, 6, c)
    ws = (c, 1, 3, 3, 3) if dn == NCDHW else (3, 3, 3, 1, c)
    _check(_conv(dn, feature_group_count=c), (f32(*xs), f32(*ws, scale=0.2)), folded=False)
    assert calls


def test_ncdhw_filter_gradient_with_few_outputs_reads_the_input_once_transposed():
    """PyTorch's Conv3d(16, 8, 3) filter gradient in NCDHW: the folded gradient (8 output
    features) runs as strided-view GEMMs, and the NCDHW input reaches the fold's stack
    (unit-dimension reshapes, a concatenate along the features) through one tiled transpose
    with a buffer, not a strided read per element in each of the stream's copies (a
    3D U-Net's layer: 57 -> 15 ms)."""
    x, dy = f32(1, 16, 6, 12, 24), f32(1, 8, 6, 12, 24)

    def fg(x, dy):
        fwd = lambda w: _conv(NCDHW)(x, w)  # noqa: E731
        return jax.vjp(fwd, jnp.zeros((8, 16, 3, 3, 3), jnp.float32))[1](dy)[0]
    _check(fg, (x, dy), tol=5e-5)
    text = jax.jit(fg).lower(x, dy).as_text()
    with disk_cache.disabled():
        exe = axle.compile(text, backend="cpu")
    cpu_exe.clear_memory_cache()
    kernels = exe.program.kernels
    assert any(k.library == "lowp.f32.strided" for k in kernels if getattr(k, "library", None)) \
        or "f32" not in __import__("axle.backends.cpu.lowp_runtime", fromlist=["x"]).supported_kinds()
    for k in kernels:
        names = {o.name for o in [k.op, *k.fused]}
        assert not ({"stablehlo.transpose", "stablehlo.pad", "stablehlo.concatenate"} <= names), \
            f"a kernel reads the transposed input through the stack: {sorted(names)}"
