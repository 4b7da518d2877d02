"""One JAX program through axle and through XLA, compared.

The program is lowered with `jax.jit(fn, keep_unused=True).lower(*inputs).as_text()` (the
StableHLO text a user would hand to axle), compiled with `axle.compile(text, backend="cpu")`
and run on the inputs; XLA runs the same lowering, compiled with
`xla_allow_excess_precision=False` so that bf16 / f16 programs round after every op as
StableHLO does (on f32 the option changes nothing).
"""
from __future__ import annotations

import numpy as np

# relative tolerance by result dtype; the absolute one is that times max(1, max |expected|)
TOLERANCES = {"float64": 1e-9, "complex128": 1e-9, "float32": 1e-4, "complex64": 1e-4,
              "float16": 4e-3, "bfloat16": 2e-2}


def lower(prog, inputs):
    import jax
    return jax.jit(prog.fn, keep_unused=True).lower(*inputs)


def xla_results(lowered, inputs) -> list:
    import jax
    exe = lowered.compile(compiler_options={"xla_allow_excess_precision": False})
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(exe(*inputs))]


def axle_results(text: str, inputs) -> list:
    import axle
    exe = axle.compile(text, backend="cpu")
    return [np.asarray(x) for x in exe.execute([np.asarray(a) for a in inputs])]


def compare(got: list, want: list, rtol=None) -> None:
    assert len(got) == len(want), f"{len(got)} results, XLA gives {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"result {k}: shape {g.shape}, XLA {w.shape}"
        assert g.dtype == w.dtype, f"result {k}: dtype {g.dtype}, XLA {w.dtype}"
        tol = rtol if rtol is not None else TOLERANCES.get(w.dtype.name)
        if tol is None:  # integers, booleans: exactly
            assert np.array_equal(g, w), f"result {k}: {int(np.sum(g != w))} of {w.size} elements differ"
            continue
        wide = np.complex128 if np.iscomplexobj(w) else np.float64
        gw, ww = g.astype(wide), w.astype(wide)
        finite = np.abs(ww[np.isfinite(ww)])
        scale = max(1.0, float(finite.max(initial=0.0)))
        np.testing.assert_allclose(gw, ww, rtol=tol, atol=tol * scale, equal_nan=True,
                                   err_msg=f"result {k} ({w.dtype})")


def exported(prog, inputs):
    """(StableHLO text, XLA's results) of `prog` exported with symbolic shapes (jax.export):
    the text carries `shape_assertion` custom calls checking the shapes at run time."""
    import jax
    from jax import export
    specs = export.symbolic_args_specs(inputs, prog.poly)
    exp = export.export(jax.jit(prog.fn))(*specs)
    return exp.mlir_module(), [np.asarray(x) for x in jax.tree_util.tree_leaves(exp.call(*inputs))]


def run(prog, seed: int = 0) -> None:
    """Raise AssertionError (or axle's error) when axle cannot run `prog` or differs from XLA."""
    inputs = prog.inputs(seed)
    if prog.poly is not None:
        text, want = exported(prog, inputs)
    else:
        lowered = lower(prog, inputs)
        text = lowered.as_text()
        want = xla_results(lowered, inputs)
    got = axle_results(text, inputs)
    compare(got, want, prog.rtol)
