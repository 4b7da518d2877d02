"""axle.ir.parse_hlo: XLA HLO text -> StableHLO, checked against jaxlib's HLO->StableHLO
converter (equal results through the interpreter) and against jax.jit (compiled by axle)."""
import os
import subprocess
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import axle  # noqa: E402
from axle.interpreter.evaluator import run_function  # noqa: E402
from axle.ir import ParseError, parse_hlo, parse_module  # noqa: E402
from axle.ir.text.bytecode import bytecode_to_text  # noqa: E402
from axle.ir.verifier import verify  # noqa: E402
from axle.tools import bench_workloads as bw  # noqa: E402


def jaxlib_reference(hlo_text: str):
    """jaxlib's own converter (XLA's HLO parser + HLO->StableHLO importer)."""
    from jax._src.lib import _jax, hlo
    proto = hlo.hlo_module_from_text(hlo_text).as_serialized_hlo_module_proto()
    return parse_module(bytecode_to_text(_jax.mlir.hlo_to_stablehlo(proto)).replace("mhlo.erf", "chlo.erf"))


def _misc(x, i):
    return (jnp.sort(x, axis=1), jnp.argmax(x, axis=1), jnp.cumsum(x, axis=0), x[jnp.array([2, 0, 1])],
            x.at[jnp.array([1, 3])].add(1.0), jax.lax.dynamic_slice(x, (i, 1), (2, 3)),
            jax.lax.cond(i > 1, lambda v: v * 2, lambda v: v - 1, x),
            jax.lax.switch(i, [lambda v: v + 1, lambda v: v * v, lambda v: -v], x),
            jnp.clip(x, -0.5, 0.5).astype(jnp.int32), jnp.pad(x, ((1, 0), (0, 2))), jnp.flip(x, 0),
            jax.lax.erf(x), jnp.concatenate([x, x], 1), jnp.where(x > 0, x, 0.1 * x))


def _cnn_train(p, x):
    def loss(p):
        y = jax.lax.conv_general_dilated(x, p, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jnp.sum(jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") ** 2)
    return jax.grad(loss)(p)


def _while(x):
    return jax.lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 1.1), (0, x))


def _scan(xs):
    return jax.lax.scan(lambda c, x: (c + x, c * x), jnp.zeros(3), xs)


_R = np.random.default_rng(3)
PROGRAMS = {
    "mlp_training_step": lambda: bw.mlp_training(batch=8, sizes=(16, 32, 4)),
    "cnn": lambda: bw.cnn_inference(batch=2, size=8),
    "transformer_block": lambda: bw.transformer_block(batch=1, seq=8, d_model=32, heads=2),
    "while_loop": lambda: (_while, (np.ones(3, np.float32),)),
    "scan": lambda: (_scan, (_R.standard_normal((5, 3)).astype(np.float32),)),
    "cnn_training_grad": lambda: (_cnn_train, (_R.standard_normal((3, 3, 2, 4)).astype(np.float32),
                                               _R.standard_normal((1, 8, 8, 2)).astype(np.float32))),
    "gather_scatter_sort_cond": lambda: (_misc, (_R.standard_normal((4, 6)).astype(np.float32), np.int32(2))),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_hlo_text_matches_jaxlib_converter_and_jax(name):
    fn, args = PROGRAMS[name]()
    hlo_text = jax.jit(fn).lower(*args).compiler_ir("hlo").as_hlo_text()
    m = parse_hlo(hlo_text, f"{name}.hlo")
    verify(m)
    flat = [np.asarray(a) for a in jax.tree_util.tree_leaves(args)]
    ours = run_function(m, flat)
    theirs = run_function(jaxlib_reference(hlo_text), flat)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    ref = [np.asarray(r) for r in jax.tree_util.tree_leaves(jax.jit(fn)(*args))]
    for a, b in zip(axle.compile(m).execute(flat), ref):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert parse_module(str(m)) == m  # prints and reads back


DUMP_SCRIPT = """
import numpy as np, jax, sys
from axle.tools import bench_workloads as bw
out_dir = sys.argv[1]
def wl(x):
    return jax.lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 1.1), (0, x))
programs = {"step": bw.mlp_training(batch=8, sizes=(16, 32, 4)), "fn": bw.cnn_inference(batch=2, size=8),
            "block": bw.transformer_block(batch=1, seq=8, d_model=32, heads=2),
            "wl": (wl, (np.ones(3, np.float32),))}
for name, (fn, args) in programs.items():
    out = jax.jit(fn)(*args)
    np.savez(f"{out_dir}/{name}.args.npz", *[np.asarray(a) for a in jax.tree_util.tree_leaves(args)])
    np.savez(f"{out_dir}/{name}.out.npz", *[np.asarray(a) for a in jax.tree_util.tree_leaves(out)])
"""


def test_real_xla_dumps(tmp_path):
    """Real --xla_dump_to dumps (file tables, %names, parameter lists, metadata) of a training
    step, a CNN, a transformer block and a while loop: read, verified, run; equal to XLA's own
    results and, through the interpreter, to jaxlib's converter."""
    env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={tmp_path / 'dump'}", JAX_PLATFORMS="cpu")
    subprocess.run([sys.executable, "-c", DUMP_SCRIPT, str(tmp_path)], check=True, env=env,
                   capture_output=True, timeout=300)
    for name in ("step", "fn", "block", "wl"):
        [path] = [p for p in (tmp_path / "dump").iterdir() if p.name.endswith(f".jit_{name}.before_optimizations.txt")]
        text = path.read_text(encoding="utf-8")
        assert "FileNames" in text and "metadata=" in text
        m = parse_hlo(text, str(path))
        verify(m)
        assert f'loc("jit({name})/' in str(m)  # op_name metadata kept as locations
        args = list(np.load(tmp_path / f"{name}.args.npz").values())
        ref = list(np.load(tmp_path / f"{name}.out.npz").values())
        got = axle.compile(m).execute(args)
        assert len(got) == len(ref)
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
        for a, b in zip(run_function(m, args), run_function(jaxlib_reference(text), args)):
            np.testing.assert_array_equal(a, b)


HLO = """HloModule m, entry_computation_layout={(f32[3]{0})->f32[]}

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[3]{0} parameter(0)
  zero = f32[] constant(0)
  ROOT r = f32[] reduce(x, zero), dimensions={0}, to_apply=add
}
"""


def test_hand_written_hlo_runs():
    m = parse_hlo(HLO)
    assert float(axle.compile(m)(np.array([1, 2, 3], np.float32))) == 6.0
    # instructions out of order (allowed in hand-written text): sorted by their operands
    shuffled = HLO.replace("  x = f32[3]{0} parameter(0)\n  zero = f32[] constant(0)\n", "")
    shuffled = shuffled.replace("to_apply=add\n", "to_apply=add\n  zero = f32[] constant(0)\n  x = f32[3]{0} parameter(0)\n")
    assert shuffled != HLO
    assert float(axle.compile(parse_hlo(shuffled))(np.array([1, 2, 3], np.float32))) == 6.0
    cyclic = HLO.replace("ROOT s = f32[] add(a, b)", "ROOT s = f32[] add(a, s)")
    with pytest.raises(ParseError, match="depends on itself"):
        parse_hlo(cyclic)


@pytest.mark.parametrize("bad, line, col, message", [
    (HLO.replace("add(a, b)", "add(a, c)"), 6, 25, "undefined value '%c'"),
    (HLO.replace("add(a, b)", "frobnicate(a, b)"), 6, 3, "opcode 'frobnicate' is not supported"),
    (HLO.replace("f32[3]{0} parameter", "q32[3]{0} parameter"), 10, 7, "unknown element type 'q32'"),
    (HLO.replace("to_apply=add", "to_apply=mul"), 12, 51, "computation 'mul', which is not defined"),
    (HLO.replace("dimensions={0}", "dimensions={x}"), 12, 35, "list of integers"),
    (HLO.replace("HloModule m", "Module m"), 1, 1, "expected 'HloModule'"),
    (HLO.replace("ROOT r = f32[]", "ROOT r = f32[5]"), 12, 3, "reduce"),
])
def test_errors_name_the_hlo_line_and_column(bad, line, col, message):
    with pytest.raises(ParseError) as info:
        parse_hlo(bad, "bad.hlo")
    err = info.value
    assert (err.filename, err.line, err.col) == ("bad.hlo", line, col), str(err)
    assert message in str(err)


LINALG = """HloModule linalg
ENTRY main {
  a = f32[3,3] parameter(0)
  b = f32[3,2] parameter(1)
  x = f32[2,3,4,4] parameter(2)
  s = f32[3] parameter(3)
  l = f32[3,3] cholesky(a), lower=true
  t = f32[3,2] triangular-solve(l, b), left_side=true, lower=true, transpose_a=NO_TRANSPOSE
  bn = f32[2,3,4,4] batch-norm-inference(x, s, s, s, s), epsilon=0.001, feature_index=1
  tr = (f32[2,3,4,4], f32[3], f32[3]) batch-norm-training(x, s, s), epsilon=0.001, feature_index=1
  m = f32[3] get-tuple-element(tr), index=1
  ROOT r = (f32[3,3], f32[3,2], f32[2,3,4,4], f32[3]) tuple(l, t, bn, m)
}
"""


def test_linear_algebra_and_batch_norm_opcodes():
    r = np.random.default_rng(5)
    g = r.standard_normal((3, 3)).astype(np.float32)
    a = g @ g.T + 3 * np.eye(3, dtype=np.float32)
    b = r.standard_normal((3, 2)).astype(np.float32)
    x = r.standard_normal((2, 3, 4, 4)).astype(np.float32)
    s = np.array([0.5, 1.0, 2.0], np.float32)
    m = parse_hlo(LINALG, "linalg.hlo")
    l, t, bn, mean = run_function(m, [a, b, x, s])
    np.testing.assert_allclose(l, np.linalg.cholesky(a), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(t, np.linalg.solve(np.linalg.cholesky(a), b), rtol=1e-4, atol=1e-5)
    sb = s[None, :, None, None]
    np.testing.assert_allclose(bn, (x - sb) / np.sqrt(sb + 1e-3) * sb + sb, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mean, x.mean(axis=(0, 2, 3)), rtol=1e-5, atol=1e-6)
    for ours, theirs in zip(run_function(m, [a, b, x, s]), run_function(jaxlib_reference(LINALG), [a, b, x, s])):
        np.testing.assert_array_equal(ours, theirs)


TORCH_XLA = """HloModule IrToHlo.14, entry_computation_layout={(f32[2,2]{1,0}, f32[2,2]{1,0})->(f32[2,2]{1,0})}

%AddComputation.5 (x.6: f32[], y.7: f32[]) -> f32[] {
  %x.6 = f32[] parameter(0)
  %y.7 = f32[] parameter(1)
  ROOT %add.8 = f32[] add(f32[] %x.6, f32[] %y.7)
}

ENTRY %IrToHlo.14 (p0.1: f32[2,2], p1.2: f32[2,2]) -> (f32[2,2]) {
  %p1.2 = f32[2,2]{1,0} parameter(1), sharding={replicated}
  %p0.1 = f32[2,2]{1,0} parameter(0), frontend_attributes={neff_input_names="input0"}
  %dot.3 = f32[2,2]{1,0} dot(f32[2,2]{1,0} %p0.1, f32[2,2]{1,0} %p1.2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %constant.4 = f32[] constant(0)
  %reduce.9 = f32[2]{0} reduce(f32[2,2]{1,0} %dot.3, f32[] %constant.4), dimensions={1}, to_apply=%AddComputation.5
  %broadcast.10 = f32[2,2]{1,0} broadcast(f32[2]{0} %reduce.9), dimensions={0}
  %constant.11 = f32[2,2]{1,0} constant({ { 1, 2 }, { 3, 4 } })
  %add.12 = f32[2,2]{1,0} add(f32[2,2]{1,0} %broadcast.10, f32[2,2]{1,0} %constant.11)
  ROOT %tuple.13 = (f32[2,2]{1,0}) tuple(f32[2,2]{1,0} %add.12)
}
"""


def test_torch_xla_style_text_with_typed_operands():
    a, b = np.arange(4, dtype=np.float32).reshape(2, 2), np.full((2, 2), 0.5, np.float32)
    m = parse_hlo(TORCH_XLA, "torch_xla.hlo")
    want = (a @ b).sum(1, keepdims=True) + np.array([[1, 2], [3, 4]], np.float32)
    np.testing.assert_allclose(axle.compile(m)(a, b), want)
    for ours, theirs in zip(run_function(m, [a, b]), run_function(jaxlib_reference(TORCH_XLA), [a, b])):
        np.testing.assert_array_equal(ours, theirs)
