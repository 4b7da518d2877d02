"""A sharded MLP forward pass and training step and a GPT-2 style block (as JAX lowers them
with NamedSharding):
data parallel, tensor parallel (Megatron: columns then rows) and both on a 2x2 mesh, on 4
devices of this process. Each equals the unsharded program run by the interpreter and XLA's
result of the same sharded jit; the bytes communicated equal the analytical minimum."""
import numpy as np
import pytest

from axle.interpreter import interpret
from axle.ir import parse_module
from axle.sharding import partition, run_partitioned
from jax_programs import B, D, H

PROGRAMS = [f"{kind}_{layout}" for kind in ("fwd", "step", "gpt") for layout in ("dp", "tp", "dp_tp")]
F32 = 4


def _close(got, want):
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)


def _unsharded(module, args):
    out = interpret(module, *args)
    return list(out) if isinstance(out, tuple) else [out]


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
@pytest.mark.parametrize("name", PROGRAMS)
def test_sharded_equals_unsharded_and_xla(jax_programs, name, backend):
    p = jax_programs[name]
    module = parse_module(p["mlir"])
    prog = partition(module)
    assert prog.num_devices == 4
    got = run_partitioned(prog, p["args"], backend)
    _close(got, _unsharded(module, p["args"]))
    _close(got, p["outs"])


def _minimum_bytes(name):
    """Bytes all 4 devices send per step, ring model, by hand from the math of each layout."""
    def all_reduce(nbytes, g):  # per device 2(g-1)/g S, on all 4 devices
        return 4 * 2 * (g - 1) * nbytes // g
    params = (D * H + H * D) * F32
    return {
        "fwd_dp": 0,  # every device has all weights and its own rows
        "fwd_tp": all_reduce(B * D * F32, 4),  # the row-parallel matmul's partial output
        "fwd_dp_tp": all_reduce(B // 2 * D * F32, 2),
        # gradients of the replicated weights, plus the scalar loss
        "step_dp": all_reduce(params, 4) + all_reduce(F32, 4),
        # forward partial sum only: no weight gradient needs a sum (each device owns its slice)
        "step_tp": all_reduce(B * D * F32, 4),
        # forward partial over model (its rows), weight slices' gradients over data, the loss
        "step_dp_tp": all_reduce(B // 2 * D * F32, 2) + all_reduce(params // 2, 2) + all_reduce(F32, 2),
        # GPT-2 block [4, 8, 16]: Megatron's two all_reduces (attention out, MLP out)
        "gpt_dp": 0,
        "gpt_tp": 2 * all_reduce(4 * 8 * 16 * F32, 4),
        "gpt_dp_tp": 2 * all_reduce(2 * 8 * 16 * F32, 2),
    }[name]


@pytest.mark.parametrize("name", PROGRAMS)
def test_bytes_per_step_are_the_minimum(jax_programs, name):
    prog = partition(parse_module(jax_programs[name]["mlir"]))
    assert prog.bytes_per_step() == _minimum_bytes(name), prog.report()
    assert all(c.kind == "all_reduce" for c in prog.collectives)


def test_data_parallel_step_all_reduces_the_gradients(jax_programs):
    prog = partition(parse_module(jax_programs["step_dp"]["mlir"]))
    shapes = sorted(c.value for c in prog.collectives)
    assert shapes == ["tensor<16x32xf32>", "tensor<32x16xf32>", "tensor<f32>"]
    assert all(c.axes == ("data",) and c.group_size == 4 for c in prog.collectives)


def test_gspmd_strings_partition_the_same(jax_programs, jax_gspmd_programs):
    """The same programs lowered with mhlo.sharding strings: same collectives, same results."""
    for name in ("fwd_dp_tp", "step_dp_tp", "step_tp"):
        shardy = partition(parse_module(jax_programs[name]["mlir"]))
        p = jax_gspmd_programs[name]
        module = parse_module(p["mlir"])
        assert "sdy.mesh" not in p["mlir"] and "mhlo.sharding" in p["mlir"]
        gspmd = partition(module)
        # the default mesh of 4 devices is ("_0"=2, "_1"=2): a 4-way axis becomes both
        assert [(c.kind, c.value, c.group_size, c.bytes_per_device) for c in shardy.collectives] == \
               [(c.kind, c.value, c.group_size, c.bytes_per_device) for c in gspmd.collectives]
        _close(run_partitioned(gspmd, p["args"], "interpreter"), p["outs"])


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_shard_map_manual_computation(jax_programs, backend):
    """A fully manual sdy.manual_computation: its body (with JAX's own all_reduce) is the
    per-device code; operands arrive in its in_shardings."""
    p = jax_programs["shmap_dp_tp"]
    prog = partition(parse_module(p["mlir"]))
    x, w = p["args"]
    (got,) = run_partitioned(prog, p["args"], backend)
    np.testing.assert_allclose(got, x @ w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, p["outs"][0], rtol=1e-5, atol=1e-5)
    assert "manual computation (shard_map)" in prog.report()
    # the arguments come unannotated (replicated) and are sliced locally: no collective of ours
    assert prog.collectives == []
    assert str(prog.module).count("stablehlo.all_reduce") == 1


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_shard_map_mixed_with_automatic_ops(jax_programs, backend):
    """Automatic partitioning around a manual region: x @ w1 column-split by the
    propagation, its result handed to the shard_map in the region's in_shardings, the
    region's psum its own, the loss after it automatic again; equal to XLA and numpy."""
    p = jax_programs["shmap_mixed"]
    prog = partition(parse_module(p["mlir"]))
    got = run_partitioned(prog, p["args"], backend)
    x, w1, w2 = p["args"]
    y = np.tanh(x @ w1) @ w2
    np.testing.assert_allclose(got[1], y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[0], np.mean((y - x) ** 2), rtol=1e-5, atol=1e-5)
    for g, w in zip(got, p["outs"]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    report = prog.report()
    assert "manual computation (shard_map)" in report and "free dims keep" in report


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_partially_manual_shard_map(jax_programs, backend):
    """shard_map manual over "model" only: the body's own psum over "model", "data" automatic
    around it (and whole inside it); equal to XLA and numpy."""
    p = jax_programs["shmap_partial"]
    prog = partition(parse_module(p["mlir"]))
    (got,) = run_partitioned(prog, p["args"], backend)
    x, w = p["args"]
    np.testing.assert_allclose(got, np.tanh(x @ w), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, p["outs"][0], rtol=1e-5, atol=1e-5)
    assert "whole along the automatic axes ['data'] inside it" in prog.report()
    assert "sdy.sharding_constraint" not in str(prog.module)
