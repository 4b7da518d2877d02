"""Any operand of any op may be a constant: kernels that read memory (BLAS, the direct
convolution, FFT, sort, Cholesky, triangular solve, host calls, loops, ...) read constants
from their globals. Each program is compiled with and without the default passes (without
them nothing folds the constant away) and compared with the interpreter; the JAX programs
(closed-over parameters, `a @ jnp.eye(16)`, `jax.image.resize`) are compared with jax.jit."""
import numpy as np
import pytest

import axle

RNG = np.random.default_rng(13)


def _dense(a: np.ndarray) -> str:
    """A non-splat dense<...> literal for array a (floats printed exactly)."""
    def rec(x):
        if x.ndim == 0:
            return repr(float(x)) if x.dtype.kind == "f" else str(int(x))
        return "[" + ", ".join(rec(y) for y in x) + "]"
    return f"dense<{rec(a)}>"


def _ty(a: np.ndarray) -> str:
    et = {"float32": "f32", "float64": "f64", "int32": "i32"}[str(a.dtype)]
    return "tensor<" + "".join(f"{d}x" for d in a.shape) + et + ">"


def _check(text: str, *args, rtol=1e-5, atol=1e-5):
    want = axle.interpret(text, *args)
    for passes in (False, True):
        got = axle.compile(text, passes=passes)(*args)
        if not isinstance(want, tuple):
            got, want_ = (got,), (want,)
        else:
            want_ = want
        for g, w in zip(got, want_):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol,
                                       err_msg=f"passes={passes}")


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


C97 = _f32(9, 7)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_dot_constant_lhs_issue_case(dtype):
    # the issue's smallest case: the GEMM's lhs is a splat constant
    text = f"""func.func @main(%a: tensor<7x18x{dtype}>) -> tensor<9x18x{dtype}> {{
      %c = stablehlo.constant dense<0.5> : tensor<9x7x{dtype}>
      %0 = stablehlo.dot_general %c, %a, contracting_dims = [1] x [0] : (tensor<9x7x{dtype}>, tensor<7x18x{dtype}>) -> tensor<9x18x{dtype}>
      return %0 : tensor<9x18x{dtype}>
    }}"""
    a = _f32(7, 18).astype(np.float32 if dtype == "f32" else np.float64)
    _check(text, a)
    np.testing.assert_allclose(axle.compile(text)(a), np.full((9, 7), 0.5, a.dtype) @ a, rtol=1e-5)


def test_dot_constant_lhs_rhs_and_both():
    b = _f32(7, 5)
    lhs = f"""func.func @main(%a: tensor<7x5xf32>) -> tensor<9x5xf32> {{
      %c = stablehlo.constant {_dense(C97)} : tensor<9x7xf32>
      %0 = stablehlo.dot_general %c, %a, contracting_dims = [1] x [0] : (tensor<9x7xf32>, tensor<7x5xf32>) -> tensor<9x5xf32>
      return %0 : tensor<9x5xf32>
    }}"""
    _check(lhs, b)
    rhs = f"""func.func @main(%a: tensor<4x9xf32>) -> tensor<4x7xf32> {{
      %c = stablehlo.constant {_dense(C97)} : tensor<9x7xf32>
      %0 = stablehlo.dot_general %a, %c, contracting_dims = [1] x [0] : (tensor<4x9xf32>, tensor<9x7xf32>) -> tensor<4x7xf32>
      return %0 : tensor<4x7xf32>
    }}"""
    _check(rhs, _f32(4, 9))
    both = f"""func.func @main(%a: tensor<9x5xf32>) -> tensor<9x5xf32> {{
      %c = stablehlo.constant {_dense(C97)} : tensor<9x7xf32>
      %d = stablehlo.constant {_dense(b)} : tensor<7x5xf32>
      %0 = stablehlo.dot_general %c, %d, contracting_dims = [1] x [0] : (tensor<9x7xf32>, tensor<7x5xf32>) -> tensor<9x5xf32>
      %1 = stablehlo.add %0, %a : tensor<9x5xf32>
      return %1 : tensor<9x5xf32>
    }}"""
    x = _f32(9, 5)
    _check(both, x)
    np.testing.assert_allclose(axle.compile(both, passes=False)(x), C97 @ b + x, rtol=1e-5, atol=1e-5)


def test_batched_dot_with_constant_and_transposed_constant():
    c = _f32(3, 4, 6)
    text = f"""func.func @main(%a: tensor<3x5x4xf32>) -> tensor<3x6x5xf32> {{
      %c = stablehlo.constant {_dense(c)} : tensor<3x4x6xf32>
      %0 = stablehlo.dot_general %c, %a, batching_dims = [0] x [0], contracting_dims = [1] x [2] : (tensor<3x4x6xf32>, tensor<3x5x4xf32>) -> tensor<3x6x5xf32>
      return %0 : tensor<3x6x5xf32>
    }}"""
    _check(text, _f32(3, 5, 4))


def test_constant_returned_and_read_by_gemm():
    text = f"""func.func @main(%a: tensor<7x2xf32>) -> (tensor<9x2xf32>, tensor<9x7xf32>) {{
      %c = stablehlo.constant {_dense(C97)} : tensor<9x7xf32>
      %0 = stablehlo.dot_general %c, %a, contracting_dims = [1] x [0] : (tensor<9x7xf32>, tensor<7x2xf32>) -> tensor<9x2xf32>
      return %0, %c : tensor<9x2xf32>, tensor<9x7xf32>
    }}"""
    _check(text, _f32(7, 2))


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_convolution_with_constant_filter(dtype):
    # f32 NHWC runs the direct kernel, f64 the im2col + BLAS path
    np_dt = np.float32 if dtype == "f32" else np.float64
    w = _f32(3, 3, 2, 4).astype(np_dt)
    text = f"""func.func @main(%x: tensor<1x6x6x2x{dtype}>) -> tensor<1x4x4x4x{dtype}> {{
      %w = stablehlo.constant {_dense(w)} : tensor<3x3x2x4x{dtype}>
      %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {{stride = [1, 1], pad = [[0, 0], [0, 0]]}} {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}} : (tensor<1x6x6x2x{dtype}>, tensor<3x3x2x4x{dtype}>) -> tensor<1x4x4x4x{dtype}>
      return %0 : tensor<1x4x4x4x{dtype}>
    }}"""
    _check(text, _f32(1, 6, 6, 2).astype(np_dt), rtol=1e-4, atol=1e-4)


def test_convolution_with_constant_input():
    x = _f32(1, 5, 5, 2)
    text = f"""func.func @main(%w: tensor<3x3x2x3xf32>) -> tensor<1x3x3x3xf32> {{
      %x = stablehlo.constant {_dense(x)} : tensor<1x5x5x2xf32>
      %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {{stride = [1, 1], pad = [[0, 0], [0, 0]]}} {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}} : (tensor<1x5x5x2xf32>, tensor<3x3x2x3xf32>) -> tensor<1x3x3x3xf32>
      return %0 : tensor<1x3x3x3xf32>
    }}"""
    _check(text, _f32(3, 3, 2, 3), rtol=1e-4, atol=1e-4)


def test_fft_of_a_constant():
    c = _f32(4, 8)
    text = f"""func.func @main(%a: tensor<4x5xcomplex<f32>>) -> tensor<4x5xcomplex<f32>> {{
      %c = stablehlo.constant {_dense(c)} : tensor<4x8xf32>
      %0 = stablehlo.fft %c, type = RFFT, length = [8] : (tensor<4x8xf32>) -> tensor<4x5xcomplex<f32>>
      %1 = stablehlo.add %0, %a : tensor<4x5xcomplex<f32>>
      return %1 : tensor<4x5xcomplex<f32>>
    }}"""
    a = (_f32(4, 5) + 1j * _f32(4, 5)).astype(np.complex64)
    _check(text, a, rtol=1e-4, atol=1e-4)


def test_sort_with_a_constant_operand():
    keys = _f32(10)
    text = f"""func.func @main(%v: tensor<10xi32>) -> (tensor<10xf32>, tensor<10xi32>) {{
      %k = stablehlo.constant {_dense(keys)} : tensor<10xf32>
      %0:2 = "stablehlo.sort"(%k, %v) ({{
      ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>):
        %1 = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
        stablehlo.return %1 : tensor<i1>
      }}) {{dimension = 0 : i64, is_stable = true}} : (tensor<10xf32>, tensor<10xi32>) -> (tensor<10xf32>, tensor<10xi32>)
      return %0#0, %0#1 : tensor<10xf32>, tensor<10xi32>
    }}"""
    _check(text, np.arange(10, dtype=np.int32))


def test_while_reads_constants_in_its_body_and_init():
    w = _f32(4, 4)
    text = f"""func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {{
      %w = stablehlo.constant {_dense(w)} : tensor<4x4xf32>
      %i0 = stablehlo.constant dense<0> : tensor<i32>
      %n = stablehlo.constant dense<3> : tensor<i32>
      %one = stablehlo.constant dense<1> : tensor<i32>
      %0:2 = stablehlo.while(%it = %i0, %acc = %w) : tensor<i32>, tensor<4x4xf32>
       cond {{
        %c = stablehlo.compare LT, %it, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %c : tensor<i1>
      }} do {{
        %d = stablehlo.dot_general %acc, %w, contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
        %e = stablehlo.add %d, %x : tensor<4x4xf32>
        %t = stablehlo.tanh %e : tensor<4x4xf32>
        %j = stablehlo.add %it, %one : tensor<i32>
        stablehlo.return %j, %t : tensor<i32>, tensor<4x4xf32>
      }}
      return %0#1 : tensor<4x4xf32>
    }}"""
    _check(text, _f32(4, 4))


def test_case_branch_reads_a_constant_through_gemm():
    w = _f32(3, 3)
    text = f"""func.func @main(%i: tensor<i32>, %x: tensor<2x3xf32>) -> tensor<2x3xf32> {{
      %w = stablehlo.constant {_dense(w)} : tensor<3x3xf32>
      %0 = "stablehlo.case"(%i) ({{
        %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
        stablehlo.return %d : tensor<2x3xf32>
      }}, {{
        stablehlo.return %x : tensor<2x3xf32>
      }}) : (tensor<i32>) -> tensor<2x3xf32>
      return %0 : tensor<2x3xf32>
    }}"""
    x = _f32(2, 3)
    for i in (0, 1):
        _check(text, np.int32(i), x)


def test_cholesky_and_triangular_solve_of_constants():
    m = _f32(4, 4).astype(np.float64)
    spd = m @ m.T + 4 * np.eye(4)
    text = f"""func.func @main(%b: tensor<4x2xf64>) -> (tensor<4x4xf64>, tensor<4x2xf64>) {{
      %a = stablehlo.constant {_dense(spd)} : tensor<4x4xf64>
      %l = stablehlo.cholesky %a, lower = true : tensor<4x4xf64>
      %t = stablehlo.constant {_dense(np.tril(spd))} : tensor<4x4xf64>
      %x = "stablehlo.triangular_solve"(%t, %b) {{left_side = true, lower = true, unit_diagonal = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>}} : (tensor<4x4xf64>, tensor<4x2xf64>) -> tensor<4x2xf64>
      return %l, %x : tensor<4x4xf64>, tensor<4x2xf64>
    }}"""
    _check(text, _f32(4, 2).astype(np.float64), rtol=1e-9, atol=1e-9)


def test_host_calls_read_constants():
    axle.register_custom_call("test.constants_twice", lambda call: call.operands[0] * 2)
    c = _f32(3, 2)
    text = f"""func.func @main(%a: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {{
      %c = stablehlo.constant {_dense(c)} : tensor<3x2xf32>
      %0 = stablehlo.custom_call @test.constants_twice(%c) : (tensor<3x2xf32>) -> tensor<3x2xf32>
      %1 = "stablehlo.all_reduce"(%c) ({{
      ^bb0(%x: tensor<f32>, %y: tensor<f32>):
        %s = stablehlo.add %x, %y : tensor<f32>
        stablehlo.return %s : tensor<f32>
      }}) {{replica_groups = dense<[[0]]> : tensor<1x1xi64>}} : (tensor<3x2xf32>) -> tensor<3x2xf32>
      %2 = stablehlo.add %1, %a : tensor<3x2xf32>
      return %0, %2 : tensor<3x2xf32>, tensor<3x2xf32>
    }}"""
    a = _f32(3, 2)
    _check(text, a)
    got = axle.compile(text, passes=False)(a)
    np.testing.assert_allclose(got[0], 2 * c, rtol=1e-6)
    np.testing.assert_allclose(got[1], c + a, rtol=1e-6)


def test_scatter_and_dynamic_update_slice_with_constant_updates():
    upd = _f32(2, 3)
    text = f"""func.func @main(%x: tensor<5x3xf32>, %i: tensor<i32>) -> (tensor<5x3xf32>, tensor<5x3xf32>) {{
      %u = stablehlo.constant {_dense(upd)} : tensor<2x3xf32>
      %z = stablehlo.constant dense<0> : tensor<i32>
      %0 = stablehlo.dynamic_update_slice %x, %u, %i, %z : (tensor<5x3xf32>, tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<5x3xf32>
      %idx = stablehlo.constant dense<[[1], [3]]> : tensor<2x1xi32>
      %1 = "stablehlo.scatter"(%x, %idx, %u) ({{
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %s = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %s : tensor<f32>
      }}) {{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}} : (tensor<5x3xf32>, tensor<2x1xi32>, tensor<2x3xf32>) -> tensor<5x3xf32>
      return %0, %1 : tensor<5x3xf32>, tensor<5x3xf32>
    }}"""
    _check(text, _f32(5, 3), np.int32(2))


# ---------------------------------------------------------------- programs from JAX

jax = pytest.importorskip("jax")
jnp = jax.numpy


def _against_jax(f, *args, rtol=1e-5, atol=1e-5):
    text = jax.jit(f).lower(*args).as_text()
    want = jax.jit(f)(*args)
    got = axle.compile(text)(*[np.asarray(a) for a in args])
    if isinstance(want, (tuple, list)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)
    else:
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)
    return text


def test_jax_matmul_with_eye():
    a = _f32(8, 16)
    _against_jax(lambda x: x @ jnp.eye(16), a)
    _against_jax(lambda x: jnp.eye(8) @ x, a)


def test_jax_closed_over_parameters():
    w1, b1, w2 = _f32(16, 32), _f32(32), _f32(32, 4)

    def mlp(x):
        return jnp.tanh(x @ w1 + b1) @ w2
    text = _against_jax(mlp, _f32(5, 16), rtol=1e-4, atol=1e-4)
    assert "stablehlo.constant dense<" in text  # the weights really are constants


def test_jax_closed_over_filter():
    w = _f32(3, 3, 3, 8)

    def conv(x):
        return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    _against_jax(conv, _f32(2, 9, 9, 3), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("method", ["linear", "cubic", "lanczos3", "nearest"])
def test_jax_image_resize(method):
    x = _f32(1, 6, 5, 3)
    _against_jax(lambda a: jax.image.resize(a, (1, 11, 9, 3), method), x, rtol=1e-4, atol=1e-4)


def test_jax_fft_and_sort_of_closed_over_constants():
    c = _f32(4, 16)

    def f(x):
        spec = jnp.fft.rfft(c, axis=-1)
        return jnp.sort(c, axis=-1) + x, jnp.abs(spec)
    _against_jax(f, _f32(4, 16), rtol=1e-4, atol=1e-4)


def test_windows_reductions_and_rng_read_constants():
    c = _f32(6, 6)
    text = f"""func.func @main(%s: tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<6x6xf32>, tensor<6xf32>, tensor<2xui64>, tensor<4xui32>) {{
      %c = stablehlo.constant {_dense(c)} : tensor<6x6xf32>
      %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
      %zero = stablehlo.constant dense<0.0> : tensor<f32>
      %0 = "stablehlo.reduce_window"(%c, %ninf) ({{
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %m = stablehlo.maximum %a, %b : tensor<f32>
        stablehlo.return %m : tensor<f32>
      }}) {{window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>}} : (tensor<6x6xf32>, tensor<f32>) -> tensor<3x3xf32>
      %1 = "stablehlo.select_and_scatter"(%c, %s, %zero) ({{
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %g = stablehlo.compare GE, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
        stablehlo.return %g : tensor<i1>
      }}, {{
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %t = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %t : tensor<f32>
      }}) {{window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>}} : (tensor<6x6xf32>, tensor<3x3xf32>, tensor<f32>) -> tensor<6x6xf32>
      %2 = stablehlo.reduce(%c init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<6x6xf32>, tensor<f32>) -> tensor<6xf32>
      %state = stablehlo.constant dense<[7, 11]> : tensor<2xui64>
      %3:2 = stablehlo.rng_bit_generator %state, algorithm = DEFAULT : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui32>)
      return %0, %1, %2, %3#0, %3#1 : tensor<3x3xf32>, tensor<6x6xf32>, tensor<6xf32>, tensor<2xui64>, tensor<4xui32>
    }}"""
    _check(text, _f32(3, 3))


def test_gather_from_a_constant_table():
    table = _f32(10, 4)
    text = f"""func.func @main(%i: tensor<3x1xi32>) -> tensor<3x4xf32> {{
      %t = stablehlo.constant {_dense(table)} : tensor<10x4xf32>
      %0 = "stablehlo.gather"(%t, %i) {{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 4>}} : (tensor<10x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>
      return %0 : tensor<3x4xf32>
    }}"""
    i = np.array([[3], [0], [9]], np.int32)
    _check(text, i)
    np.testing.assert_array_equal(axle.compile(text, passes=False)(i), table[[3, 0, 9]])
