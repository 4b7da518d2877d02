"""jax.export artifacts and StableHLO portable artifacts (bytecode of two versions) run by axle."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jaxlib.mlir.dialects import stablehlo  # noqa: E402

import axle  # noqa: E402
from axle.interpreter.evaluator import run_function  # noqa: E402
from axle.ir import parse_bytecode  # noqa: E402
from axle.ir.text.bytecode import BytecodeError, artifact_version  # noqa: E402
from axle.tools import bench_workloads as bw  # noqa: E402


def test_jax_export_round_trip(tmp_path):
    fn, (p, x) = bw.transformer_block(batch=1, seq=8, d_model=32, heads=2)

    def f(p, x, *, scale):
        return {"y": fn(p, x) * scale, "mean": jnp.mean(x)}

    args = (p, x)
    exported = jax.export.export(jax.jit(f))(*args, scale=np.float32(0.5))
    path = tmp_path / "block.jax_exported"
    path.write_bytes(exported.serialize())
    loaded = axle.load_exported(path)
    got = loaded(*args, scale=np.float32(0.5))
    ref = jax.jit(f)(*args, scale=np.float32(0.5))
    assert set(got) == {"y", "mean"}
    np.testing.assert_allclose(got["y"], ref["y"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["mean"], ref["mean"], rtol=1e-6)
    with pytest.raises(TypeError, match="structure"):
        loaded(p, x)
    with pytest.raises(ValueError, match="not a jax.export artifact"):
        axle.load_exported(b"nonsense")


def test_export_with_unused_argument():
    exported = jax.export.export(jax.jit(lambda a, unused, b: a * b))(
        np.ones(3, np.float32), np.ones(2, np.int32), np.full(3, 2.0, np.float32))
    loaded = axle.load_exported(exported.serialize())
    np.testing.assert_array_equal(loaded(np.ones(3, np.float32), np.ones(2, np.int32), np.full(3, 3.0, np.float32)),
                                  np.full(3, 3.0, np.float32))


def test_multi_platform_export_runs_its_cpu_variant():
    f = jax.jit(lambda x: jnp.sin(x) * 2)
    x = np.linspace(0, 1, 5, dtype=np.float32)
    exported = jax.export.export(f, platforms=("cuda", "cpu"))(x)
    loaded = axle.load_exported(exported.serialize())
    np.testing.assert_allclose(loaded(x), f(x), rtol=1e-6)
    tpu_only = jax.export.export(f, platforms=("tpu",))(x)
    with pytest.raises(NotImplementedError, match="include 'cpu'"):
        axle.load_exported(tpu_only.serialize())


@pytest.mark.parametrize("version", [stablehlo.get_minimum_version(), stablehlo.get_current_version()])
def test_portable_artifacts_of_two_versions(version):
    fn, (params, x, y) = bw.mlp_training(batch=8, sizes=(16, 32, 4))
    text = jax.jit(fn).lower(params, x, y).as_text()
    art = stablehlo.serialize_portable_artifact_str(text, version)
    assert artifact_version(art) == tuple(int(v) for v in version.split("."))
    m = parse_bytecode(art, f"mlp_training@{version}")
    flat = [np.asarray(a) for a in jax.tree_util.tree_leaves((params, x, y))]
    ref = [np.asarray(r) for r in jax.tree_util.tree_leaves(jax.jit(fn)(params, x, y))]
    for got in (run_function(m, flat), axle.compile(m).execute(flat)):
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_version_skew_and_garbage_are_clear_errors():
    text = jax.jit(lambda x: x * 2).lower(np.ones(3, np.float32)).as_text()
    art = stablehlo.serialize_portable_artifact_str(text, stablehlo.get_current_version())
    cur = stablehlo.get_current_version().encode()
    newer = art.replace(b"StableHLO_v" + cur, b"StableHLO_v9" + cur[1:])  # same length, from the future
    with pytest.raises(BytecodeError, match="version 9.*upgrade jaxlib"):
        parse_bytecode(newer)
    with pytest.raises(BytecodeError, match="not MLIR bytecode"):
        parse_bytecode(b"module {}")
    with pytest.raises(BytecodeError, match="could not read"):
        parse_bytecode(art[:len(art) // 2])


def test_plain_mlir_bytecode():
    from jax._src.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir
    import io
    text = jax.jit(lambda x: jnp.cumsum(x)).lower(np.ones(5, np.float32)).as_text()
    with jax_mlir.make_ir_context():
        buf = io.BytesIO()
        ir.Module.parse(text).operation.write_bytecode(buf)
    m = parse_bytecode(buf.getvalue())
    np.testing.assert_allclose(axle.compile(m)(np.arange(5, dtype=np.float32)), np.cumsum(np.arange(5)))
