"""Loop kernels cut into boxes where fused concatenates and pads change what they read
(index_boxes.py): rolls, padded stencils and shifts compute the same values as jax.jit and
the interpreter, box by box, and the boxes are what makes such loops vectorize."""
import numpy as np
import pytest

import axle
from axle.backends.cpu import disk_cache, index_boxes
from axle.backends.cpu import executable as cpu_exe

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402


def _fresh(text):
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        return axle.compile(text, backend="cpu")


def _life(g):
    n = sum(jnp.roll(g, (dy, dx), (0, 1)) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dy or dx)
    return ((n == 3) | ((g == 1) & (n == 2))).astype(jnp.uint8)


def _life_numpy(g, steps):
    for _ in range(steps):
        n = sum(np.roll(g, (dy, dx), (0, 1)) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dy or dx)
        g = ((n == 3) | ((g == 1) & (n == 2))).astype(np.uint8)
    return g


@pytest.mark.parametrize("shape", [(64, 96), (37, 53), (2, 200), (130, 3)])
def test_rolls_on_a_torus_match_numpy(shape):
    g = (np.random.default_rng(1).uniform(size=shape) < 0.35).astype(np.uint8)
    fn = lambda g: lax.fori_loop(0, 5, lambda _, g: _life(g), g)  # noqa: E731
    exe = _fresh(jax.jit(fn).lower(g).as_text())
    np.testing.assert_array_equal(exe(g), _life_numpy(g, 5))


def test_boxes_make_the_roll_stencil_vectorize(monkeypatch):
    """The 8-neighbour sum of rolls: with the boxes the uint8 loop is vector code; without
    cuts every element branches among the concatenates' operands and it is not."""
    g = (np.random.default_rng(2).uniform(size=(256, 256)) < 0.3).astype(np.uint8)
    text = jax.jit(_life).lower(g).as_text()
    exe = _fresh(text)
    ir = exe._static.optimized_ir
    monkeypatch.setattr(index_boxes, "cuts", lambda ctx, op, chooses=None: None)
    plain = _fresh(text)
    assert "x i8>" in ir and "x i8>" not in plain._static.optimized_ir
    np.testing.assert_array_equal(exe(g), plain(g))
    np.testing.assert_array_equal(exe(g), _life_numpy(g, 1))


def test_shifts_by_several_amounts_in_both_dimensions():
    def fn(x):
        return (jnp.roll(x, 3, 1) * 2.0 + jnp.roll(x, -2, 0) - jnp.roll(x, (5, -7), (0, 1))
                + jnp.roll(x, 1, 1).T.T)
    x = np.random.default_rng(3).standard_normal((48, 40)).astype(np.float32)
    exe = _fresh(jax.jit(fn).lower(x).as_text())
    np.testing.assert_allclose(exe(x), np.asarray(jax.jit(fn)(x)), rtol=1e-6, atol=1e-6)


def test_padded_five_point_stencil():
    def fn(u):
        p = jnp.pad(u, ((1, 1), (2, 1)), constant_values=0.5)
        return (p[:-2, 2:-1] + p[2:, 2:-1] + p[1:-1, 1:-2] + p[1:-1, 3:] - 4 * p[1:-1, 2:-1]
                + p[1:-1, :-3])
    u = np.random.default_rng(4).standard_normal((33, 70)).astype(np.float32)
    text = jax.jit(fn).lower(u).as_text()
    exe = _fresh(text)
    np.testing.assert_allclose(exe(u), np.asarray(jax.jit(fn)(u)), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(exe(u), axle.interpret(text, u), rtol=1e-6, atol=1e-6)


# negative low padding (a crop), interior padding, broadcasts and a reshape around a pad and
# a concatenate read through slices: the cuts follow the crop, and a dimension with interior
# padding is not cut (its elements still choose one by one)
MIXED = """
func.func @main(%x: tensor<6x203xf32>, %y: tensor<12x42xf32>) -> tensor<2x6x248xf32> {
  %z = stablehlo.constant dense<-1.0> : tensor<f32>
  %p = stablehlo.pad %x, %z, low = [0, -3], high = [1, 5], interior = [1, 0] : (tensor<6x203xf32>, tensor<f32>) -> tensor<12x205xf32>
  %c = stablehlo.concatenate %y, %p, %y, dim = 1 : (tensor<12x42xf32>, tensor<12x205xf32>, tensor<12x42xf32>) -> tensor<12x289xf32>
  %s = stablehlo.slice %c [3:9, 2:250] : (tensor<12x289xf32>) -> tensor<6x248xf32>
  %r = stablehlo.reshape %s : (tensor<6x248xf32>) -> tensor<1x6x248xf32>
  %b = stablehlo.broadcast_in_dim %r, dims = [0, 1, 2] : (tensor<1x6x248xf32>) -> tensor<2x6x248xf32>
  %i = stablehlo.iota dim = 0 : tensor<2x6x248xf32>
  %o = stablehlo.add %b, %i : tensor<2x6x248xf32>
  return %o : tensor<2x6x248xf32>
}
"""


def test_crops_interior_padding_and_unit_reshapes(monkeypatch):
    from axle.backends.cpu import elementwise
    used = []

    def spy(ctx, op, body, work):
        used.append(index_boxes.emit_boxes(ctx, op, body, work))
        return used[-1]
    monkeypatch.setattr(elementwise, "emit_boxes", spy)
    r = np.random.default_rng(5)
    x, y = r.standard_normal((6, 203)).astype(np.float32), r.standard_normal((12, 42)).astype(np.float32)
    exe = _fresh(MIXED)
    assert used == [True]
    np.testing.assert_array_equal(exe(x, y), axle.interpret(MIXED, x, y))


def _bilateral(img, r=3):
    """A bilateral filter over a reflect pad: 7 x 7 shifted slices, 49 boxes of a large body."""
    h, w = img.shape[1:3]
    p = jnp.pad(img, ((0, 0), (r, r), (r, r), (0, 0)), mode="reflect")
    num = jnp.zeros_like(img)
    den = jnp.zeros_like(img)
    for dy in range(-r, r + 1):
        for dx in range(-r, r + 1):
            nb = p[:, r + dy:r + dy + h, r + dx:r + dx + w]
            wt = np.float32(np.exp(-(dy * dy + dx * dx) / 8.0)) * jnp.exp(-((nb - img) ** 2) / 0.02)
            num, den = num + wt * nb, den + wt
    return num / den


def test_many_boxes_of_a_large_body_keep_only_the_interior(monkeypatch):
    """Where the boxes' copies of the body would exceed CODE_BUDGET operations, the box of
    the longest segments keeps its copy (vector code, no choices) and the slabs around it
    share one with run-time bounds: the same values as every box (and as jax.jit), from a
    fraction of the code."""
    img = np.random.default_rng(6).uniform(size=(2, 40, 36, 3)).astype(np.float32)
    fn = lambda x: _bilateral(x, 1)  # noqa: E731  (9 boxes; the budget lowered to make them too many)
    text = jax.jit(fn).lower(img).as_text()
    every = _fresh(text)
    monkeypatch.setattr(index_boxes, "CODE_BUDGET", 100)
    small = _fresh(text)
    assert len(small._static.optimized_ir) * 2 < len(every._static.optimized_ir)
    assert "<8 x float>" in small._static.optimized_ir or "<16 x float>" in small._static.optimized_ir
    got = small(img)
    np.testing.assert_array_equal(got, every(img))
    np.testing.assert_allclose(got, np.asarray(jax.jit(fn)(img)), rtol=2e-6, atol=1e-6)


WINDOWS = [  # shape, window, strides, padding, base dilation, window dilation, reducer, init
    ((2, 96, 80), (1, 3, 3), (1, 1, 1), "SAME", None, None, lax.max, -np.inf),
    ((4, 33, 17, 5), (1, 3, 3, 1), (1, 2, 2, 1), "SAME", None, None, lax.max, -np.inf),
    ((4, 33, 17, 5), (1, 3, 3, 1), (1, 2, 2, 1), ((0, 0), (2, 1), (0, 3), (0, 0)), None, None, lax.add, 0.0),
    ((3, 40, 40), (1, 3, 5), (1, 1, 1), "SAME", None, (1, 2, 1), lax.min, np.inf),
    ((3, 10, 12), (1, 4, 2), (1, 3, 1), ((0, 0), (1, 2), (1, 1)), None, None, lax.max, -np.inf),
    ((64, 70), (2, 3), (1, 1), ((1, 1), (-1, 2)), None, None, lax.add, 0.0),
    ((3, 20, 21), (1, 3, 3), (1, 1, 1), ((0, 0), (1, 1), (1, 1)), (1, 2, 1), None, lax.max, -np.inf),
    ((5, 9), (5, 9), (1, 1), "SAME", None, None, lax.add, 0.0),
]


@pytest.mark.parametrize("case", range(len(WINDOWS)))
def test_padded_small_windows_box_by_box(case, monkeypatch):
    """reduce_window with padding and a small window (3 x 3 SAME max pooling, a grey
    dilation) runs the interior box, whose windows lie in the input, without a test per
    window position: the values of jax.jit (NaN propagated through max), and the same
    bits as the per-element tests everywhere."""
    from axle.backends.cpu import kernels_window
    shape, win, st, pad, based, wdil, fn, init = WINDOWS[case]
    x = np.random.default_rng(case).standard_normal(shape).astype(np.float32)
    x.flat[::97] = np.nan if fn is lax.max else 0.0
    f = jax.jit(lambda x: lax.reduce_window(x, np.float32(init), fn, win, st, pad, base_dilation=based,
                                            window_dilation=wdil))
    text = f.lower(x).as_text()
    got = _fresh(text).execute([x])[0]
    np.testing.assert_allclose(got, np.asarray(f(x)), rtol=1e-6, atol=1e-6)
    monkeypatch.setattr(kernels_window, "_interior_boxes", lambda *a: False)
    np.testing.assert_array_equal(got, _fresh(text).execute([x])[0])


def test_grey_dilation_vectorizes_in_the_interior():
    """The 3 x 3 max of a morphological reconstruction step: its interior loop holds
    vector max operations (per element with a test per position it held none)."""
    x = np.zeros((2, 192, 192), np.float32)
    f = jax.jit(lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3), (1, 1, 1), "SAME"))
    ir = _fresh(f.lower(x).as_text())._native(((2, 192, 192),)).optimized_ir
    assert "<16 x float>" in ir or "<8 x float>" in ir


@pytest.mark.parametrize("form", ["roll_24", "jacobi_64"])
def test_short_rows_of_cheap_stencils_are_cut(form, monkeypatch):
    """Rows cut where scalar segments and tails are a quarter of a row or less (a loop
    without transcendental functions), or wherever a concatenate chooses along the row
    (rolls): per element, a 24-wide roll branched between two loads and a 64-wide
    Jacobi sweep's pad test merged with the loop's exit test, and neither vectorized
    (2-8x slower than the cut rows)."""
    if form == "roll_24":
        x = np.random.default_rng(1).standard_normal((300, 24)).astype(np.float32)
        f = jax.jit(lambda x: jnp.roll(x, 1, 1) + jnp.roll(x, -1, 1) - 2 * x)
    else:
        x = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)

        def f(u):
            p = jnp.pad(u, 1)
            return 0.25 * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:])
        f = jax.jit(f)
    rows = []
    emit = index_boxes.emit_ranged
    monkeypatch.setattr(index_boxes, "emit_ranged",
                        lambda ctx, shape, bx, *a: rows.extend(b[-1] for b in bx) or emit(ctx, shape, bx, *a))
    exe = _fresh(f.lower(x).as_text())
    assert rows and (0, x.shape[1]) not in rows  # every row cut
    assert "x float>" in exe._native((x.shape,)).optimized_ir
    np.testing.assert_allclose(exe.execute([x])[0], np.asarray(f(x)), rtol=1e-6, atol=1e-6)
