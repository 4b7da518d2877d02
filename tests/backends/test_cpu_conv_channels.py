"""Convolutions with the feature dimension innermost and few features per group:
depthwise NHWC / NWC / NDHWC by the channels kernel (kernels_conv_rows.emit_channels_conv:
strides, padding, rhs dilation, 1-D and 3-D, f64, channel counts that are not a multiple
of a vector), and filters with fewer than 8 features (an RGB blur, a Sobel pair) moved to a
spatial-innermost layout for the rows kernel (pass cpu-conv-rows-layout). Against jax.jit
and the interpreter; each test checks that the kernel it names ran."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
from jax import lax  # noqa: E402

import axle  # noqa: E402

R = np.random.default_rng(7)


def f32(*s, scale=1.0):
    return (R.standard_normal(s) * scale).astype(np.float32)


def _check(fn, *args, rtol=2e-5):
    text = jax.jit(fn).lower(*args).as_text()
    exe = axle.compile(text, backend="cpu")
    got = exe.execute(list(args))[0]
    np.testing.assert_allclose(got, np.asarray(jax.jit(fn)(*args)), rtol=rtol, atol=rtol)
    want = axle.interpret(text, *args)
    want = want[0] if isinstance(want, (list, tuple)) else want
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
    return exe


def _depthwise(x, w, stride, padding, dn, rdil=None):
    return lax.conv_general_dilated(x, w, stride, padding, rhs_dilation=rdil, dimension_numbers=dn,
                                    feature_group_count=x.shape[-1])


@pytest.mark.parametrize("stride,padding,rdil", [((1, 1), "SAME", None), ((2, 2), "SAME", None),
                                                 ((1, 2), "VALID", (2, 1)), ((1, 1), [(3, 0), (2, 4)], None)])
@pytest.mark.parametrize("channels", [8, 13, 64])
def test_depthwise_nhwc(stride, padding, rdil, channels, calls_of):
    calls = calls_of("axle.backends.cpu.kernels_conv_rows", "emit_channels_conv")
    x, w = f32(2, 11, 9, channels), f32(3, 3, 1, channels, scale=0.3)
    _check(lambda x, w: _depthwise(x, w, stride, padding, ("NHWC", "HWIO", "NHWC"), rdil), x, w)
    assert calls


def test_depthwise_nwc_long_window_and_ndhwc(calls_of):
    calls = calls_of("axle.backends.cpu.kernels_conv_rows", "emit_channels_conv")
    _check(lambda x, w: _depthwise(x, w, (1,), "SAME", ("NWC", "WIO", "NWC")), f32(3, 70, 16), f32(15, 1, 16, scale=0.2))
    _check(lambda x, w: _depthwise(x, w, (1, 2, 1), "SAME", ("NDHWC", "DHWIO", "NDHWC")),
           f32(1, 5, 6, 7, 8), f32(3, 3, 2, 1, 8, scale=0.2))
    assert len(calls) >= 2


def test_depthwise_nhwc_f64_and_its_gradients(calls_of):
    calls = calls_of("axle.backends.cpu.kernels_conv_rows", "emit_channels_conv")
    with jax.enable_x64(True):
        x = R.standard_normal((2, 9, 8, 12))
        w = R.standard_normal((3, 3, 1, 12)) * 0.3
        _check(lambda x, w: _depthwise(x, w, (1, 1), "SAME", ("NHWC", "HWIO", "NHWC")), x, w, rtol=1e-12)
    assert calls

    def loss(x, w):
        return (_depthwise(x, w, (1, 1), "SAME", ("NHWC", "HWIO", "NHWC")) ** 2).sum()
    _check(lambda x, w: jax.grad(loss, argnums=(0, 1))(x, w)[0], f32(2, 9, 8, 16), f32(3, 3, 1, 16, scale=0.3),
           rtol=1e-4)


def test_few_features_innermost_run_as_rows(calls_of):
    """An 11 x 11 per-channel blur of RGB images and a Sobel pair (one input feature, two
    outputs) in NHWC: transposed to a spatial-innermost layout and run by the rows kernel."""
    calls = calls_of("axle.backends.cpu.kernels_conv_rows", "emit_rows_conv")
    blur = lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "VALID",  # noqa: E731
                                                 dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=3)
    _check(blur, np.abs(f32(2, 40, 36, 3)), np.abs(f32(11, 11, 1, 3, scale=0.1)))
    sobel = lambda x, w: lax.conv_general_dilated(x, w, (2, 1), "SAME",  # noqa: E731
                                                  dimension_numbers=("NHWC", "HWIO", "NHWC"))
    _check(sobel, f32(3, 33, 40, 1), f32(3, 3, 1, 2))
    assert len(calls) >= 2


@pytest.mark.parametrize("padding", ["SAME", "VALID", [(2, 0), (1, 3)]])
@pytest.mark.parametrize("kernel", [(3, 3), (5, 2)])
def test_filter_gradient_nchw_as_window_dots(padding, kernel, calls_of):
    """The filter gradient of an NCHW convolution: a convolution whose window is the image
    and whose output is the kernel's size, run as dot products along image rows."""
    calls = calls_of("axle.backends.cpu.kernels_conv_rows", "emit_window_dot_conv")

    def loss(w, x):
        y = lax.conv_general_dilated(x, w, (1, 1), padding, dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return (y * y).sum()
    x, w = f32(3, 5, 21, 19), f32(6, 5, *kernel, scale=0.2)
    _check(lambda w, x: jax.grad(loss)(w, x), w, x, rtol=1e-4)
    assert calls


def test_window_dots_1d_and_f64(calls_of):
    calls = calls_of("axle.backends.cpu.kernels_conv_rows", "emit_window_dot_conv")

    def loss(w, x):
        y = lax.conv_general_dilated(x, w, (1,), "SAME", dimension_numbers=("NCH", "OIH", "NCH"))
        return (y * y).sum()
    _check(lambda w, x: jax.grad(loss)(w, x), f32(4, 3, 7, scale=0.3), f32(2, 3, 300), rtol=1e-4)

    def strided(w, x):  # a strided convolution's filter gradient: the window dilated by the stride
        y = lax.conv_general_dilated(x, w, (4,), [(5, 2)], dimension_numbers=("NCH", "OIH", "NCH"))
        return (y * y).sum()
    _check(lambda w, x: jax.grad(strided)(w, x), f32(6, 1, 20, scale=0.3), f32(3, 1, 400), rtol=1e-4)
    with jax.enable_x64(True):
        x, w = R.standard_normal((2, 3, 17, 40)), R.standard_normal((4, 3, 3, 3)) * 0.3
        _check(lambda w, x: jax.grad(lambda w, x: (lax.conv_general_dilated(
            x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW")) ** 2).sum())(w, x), w, x, rtol=1e-11)
    assert len(calls) >= 2


@pytest.mark.parametrize("stride,padding", [((1, 1), "SAME"), ((2, 2), [(1, 0), (2, 1)]), ((1, 2), "VALID")])
def test_nchw_convolution_runs_on_the_direct_kernel(stride, padding, calls_of):
    """NCHW x OIHW (PyTorch's layout) with few input channels: transposed to NHWC x HWIO
    for the direct kernel (pass cpu-conv-rows-layout), the result transposed back."""
    calls = calls_of("axle.backends.cpu.kernels_conv", "_conv_direct")
    fn = lambda x, w: lax.conv_general_dilated(x, w, stride, padding,  # noqa: E731
                                               dimension_numbers=("NCHW", "OIHW", "NCHW"))
    _check(fn, f32(2, 8, 23, 20), f32(16, 8, 3, 3, scale=0.2), rtol=1e-4)
    assert calls


@pytest.mark.parametrize("stride,padding", [((1, 1), "SAME"), ((2, 2), [(1, 0), (2, 1)])])
def test_nchw_convolution_with_many_channels_runs_in_nhwc(stride, padding, calls_of):
    """NCHW x OIHW with more input features than the direct kernel's window takes (64 x 3 x
    3 products): moved to NHWC x HWIO all the same, for im2col + GEMM there; its
    gradients give the same results."""
    moved = calls_of("axle.backends.cpu.conv_rows_layout", "_rewrite_direct")
    fn = lambda x, w: lax.conv_general_dilated(x, w, stride, padding,  # noqa: E731
                                               dimension_numbers=("NCHW", "OIHW", "NCHW"))
    x, w = f32(2, 64, 13, 11), f32(20, 64, 3, 3, scale=0.05)
    _check(fn, x, w, rtol=1e-4)
    assert True in moved
    grads = jax.grad(lambda x, w: (fn(x, w) ** 2).sum(), argnums=(0, 1))
    _check(lambda x, w: grads(x, w)[0], x, w, rtol=2e-3)
    _check(lambda x, w: grads(x, w)[1], x, w, rtol=2e-3)


@pytest.mark.parametrize("cin,cout,kernel,stride", [(3, 64, 5, 1), (16, 16, 3, 1), (8, 24, 3, 2)])
def test_nchw_filter_gradient_with_many_pairs_runs_in_nhwc(cin, cout, kernel, stride, calls_of):
    """The filter gradient of an NCHW convolution with more than 64 (input, output) channel
    pairs moves to the NHWC filter-gradient form (pass cpu-conv-rows-layout) and gives the
    values of jax.jit and of the interpreter; fewer pairs stay window dots (above)."""
    moved = calls_of("axle.backends.cpu.conv_rows_layout", "_rewrite_filter_gradient")

    def loss(w, x):
        y = lax.conv_general_dilated(x, w, (stride, stride), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return (y * y).sum()
    x, w = f32(2, cin, 19, 22), f32(cout, cin, kernel, kernel, scale=0.1)
    _check(lambda w, x: jax.grad(loss)(w, x), w, x, rtol=1e-4)
    assert True in moved


@pytest.mark.parametrize("stride,size,kernel", [(1, 14, 7), (2, 15, 3), (1, 9, 5)])
def test_nchw_depthwise_with_short_rows_and_its_filter_gradient_run_on_channels(stride, size, kernel, calls_of):
    """NCHW depthwise convolutions whose rows are too short for the rows kernel (ConvNeXt's
    7 x 7 on 14 x 14) move to NHWC for the channels kernel, and JAX's depthwise filter
    gradient (batch_group_count = channels) becomes a depthwise convolution over the
    (image, channel) pairs summed over the images: both against jax.jit and the interpreter."""
    moved = calls_of("axle.backends.cpu.conv_rows_layout", "_rewrite_depthwise")
    grads = calls_of("axle.backends.cpu.conv_rows_layout", "_rewrite_depthwise_filter_gradient")
    channels = calls_of("axle.backends.cpu.kernels_conv_rows", "emit_channels_conv")

    def loss(x, w):
        y = lax.conv_general_dilated(x, w, (stride, stride), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"),
                                     feature_group_count=x.shape[1])
        return (y * y).sum()
    x, w = f32(3, 24, size, size), f32(24, 1, kernel, kernel, scale=0.2)
    _check(lambda x, w: jax.grad(loss, argnums=1)(x, w), x, w, rtol=1e-4)
    _check(lambda x, w: jax.grad(loss, argnums=0)(x, w), x, w, rtol=1e-4)
    assert True in moved and True in grads and len(channels) >= 2


@pytest.mark.parametrize("dn,xs,ws", [(("NCHW", "OIHW", "NCHW"), (2, 24, 13, 14), (24, 1, 3, 3)),
                                      (("NHWC", "HWIO", "NHWC"), (2, 13, 14, 24), (3, 3, 1, 24)),
                                      (("NCHW", "OIHW", "NCHW"), (1, 16, 9, 9), (16, 1, 5, 5))])
def test_input_gradient_of_a_strided_depthwise_convolution(dn, xs, ws):
    """Its lhs dilation becomes a pad op (zeros between and around the gradient), so that the
    depthwise kernels take it: no convolution with lhs dilation is left."""
    c = xs[1] if dn[0] == "NCHW" else xs[-1]

    def conv(x, w):
        return lax.conv_general_dilated(x, w, (2, 2), [(1, 1), (2, 1)], dimension_numbers=dn, feature_group_count=c)
    x, w = f32(*xs), f32(*ws, scale=0.3)
    dy = f32(*jax.eval_shape(conv, x, w).shape)
    exe = _check(lambda w, dy: jax.vjp(lambda x: conv(x, w), x)[1](dy)[0], w, dy, rtol=5e-5)
    convs = [op for op in exe.module.walk() if op.name == "stablehlo.convolution"]
    assert convs and all(all(d == 1 for d in (op.attr("lhs_dilation") or [1])) for op in convs)


@pytest.mark.parametrize("dn,shape,kshape,dtype", [
    (("NCHW", "OIHW", "NCHW"), (3, 16, 14, 14), (40, 16, 1, 1), np.float32),
    (("NCHW", "HWIO", "NCHW"), (2, 24, 7, 9), (1, 1, 24, 8), np.float32),
    (("NCH", "OIH", "NCH"), (4, 12, 50), (20, 12, 1), np.float32),
    (("NCDHW", "OIDHW", "NCDHW"), (2, 8, 4, 5, 6), (16, 8, 1, 1, 1), np.float32),
])
def test_pointwise_channels_first_is_a_batched_gemm(dn, shape, kshape, dtype):
    """A 1 x 1 convolution in NCHW (an EfficientNet expansion, any number of spatial
    dimensions, any kernel layout) is the batched GEMM [B, O, I] x [B, I, H W]: no
    convolution and no transpose left."""
    x, w = f32(*shape).astype(dtype), f32(*kshape, scale=0.3).astype(dtype)
    exe = _check(lambda x, w: lax.conv_general_dilated(x, w, (1,) * (len(shape) - 2), "VALID",
                                                       dimension_numbers=dn), x, w, rtol=1e-5)
    names = [op.name for op in exe.module.walk()]
    assert "stablehlo.dot_general" in names and "stablehlo.convolution" not in names
    assert all(op.results[0].type.num_elements <= w.size for op in exe.module.walk()
               if op.name == "stablehlo.transpose")  # (the weights' order at most)


@pytest.mark.parametrize("stride,padding", [((2, 2), "VALID"), ((1, 1), [(1, 0), (0, 1)])])
def test_pointwise_with_stride_or_padding_stays_a_convolution(stride, padding):
    x, w = f32(2, 16, 9, 9), f32(24, 16, 1, 1, scale=0.3)
    exe = _check(lambda x, w: lax.conv_general_dilated(x, w, stride, padding, dimension_numbers=("NCHW", "OIHW", "NCHW")),
                 x, w)
    assert "stablehlo.convolution" in [op.name for op in exe.module.walk()]


@pytest.mark.parametrize("dn,kshape", [(("NCHW", "OIHW", "NCHW"), (96, 64, 1, 1)), (("NCHW", "HWIO", "NCHW"), (1, 1, 64, 96))])
def test_pointwise_on_small_maps_is_one_gemm_without_broadcast_weights(dn, kshape):
    """More input features than pixels (a late stage's 1 x 1 convolution on 2 x 3 maps): one
    GEMM over the batch and a transposed result, not the weights broadcast over the batch;
    also its gradients (the backward's input-gradient convolution reads the weights
    reversed and transposed), against XLA."""
    x, w = f32(4, 64, 2, 3), f32(*kshape, scale=0.3)

    def conv(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=dn)
    exe = _check(conv, x, w, rtol=1e-5)
    ops = list(exe.module.walk())
    assert "stablehlo.convolution" not in [op.name for op in ops]
    assert not [op for op in ops if op.name == "stablehlo.broadcast_in_dim" and op.results[0].type.num_elements >= w.size]
    dy = f32(4, 96, 2, 3)
    exe = _check(lambda w, dy: jax.vjp(lambda x: conv(x, w), x)[1](dy)[0], w, dy, rtol=1e-5)
    assert not [op for op in exe.module.walk()
                if op.name == "stablehlo.broadcast_in_dim" and op.results[0].type.num_elements >= w.size]
    _check(lambda x, dy: jax.vjp(lambda w: conv(x, w), w)[1](dy)[0], x, dy, rtol=1e-5)


@pytest.mark.parametrize("dn,xs,ws,stride,pad,rdil", [
    (("NCHW", "OIHW", "NCHW"), (2, 256, 4, 4), (128, 256, 3, 3), (1, 1), [(1, 1), (1, 1)], (1, 1)),
    (("NHWC", "HWIO", "NHWC"), (2, 4, 4, 256), (3, 3, 256, 128), (1, 1), [(1, 1), (1, 1)], (1, 1)),
    (("NCHW", "OIHW", "NCHW"), (2, 256, 7, 6), (128, 256, 3, 3), (2, 2), [(1, 0), (0, 1)], (1, 1)),
    (("NCHW", "OIHW", "NCHW"), (1, 256, 6, 5), (192, 256, 3, 2), (1, 1), [(2, 1), (0, 1)], (2, 1)),
])
def test_small_maps_with_many_channels_are_one_gemm_over_the_weights(dn, xs, ws, stride, pad, rdil):
    """A convolution whose weights outweigh its output pixels (ResNet's last stages on small
    images) is im2col of the input and one GEMM reading the weights in their own layout
    (OIHW or HWIO): no convolution left, strides, padding and dilation as XLA has them;
    its gradients against XLA too."""
    x, w = f32(*xs), f32(*ws, scale=0.05)

    def conv(x, w):
        return lax.conv_general_dilated(x, w, stride, pad, rhs_dilation=rdil, dimension_numbers=dn)
    exe = _check(conv, x, w, rtol=2e-5)
    names = [op.name for op in exe.module.walk()]
    assert "stablehlo.convolution" not in names and "stablehlo.dot_general" in names
    dy = f32(*jax.eval_shape(conv, x, w).shape)
    _check(lambda w, dy: jax.vjp(lambda x: conv(x, w), x)[1](dy)[0], w, dy, rtol=2e-5)
    _check(lambda x, dy: jax.vjp(lambda w: conv(x, w), w)[1](dy)[0], x, dy, rtol=2e-5)
