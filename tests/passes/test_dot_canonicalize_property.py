"""Property: dot-canonicalize keeps results for random dimension numbers and shapes
(exact for integers; floats within a tight tolerance, since merging several contracting
dimensions into one keeps the summation order)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from axle.interpreter.evaluator import run_function
from axle.ir import parse_module
from axle.ir.verifier import verify
from axle.passes import PassManager, make_pass


def _t(shape, et):
    return "tensor<" + "".join(f"{d}x" for d in shape) + et + ">"


@st.composite
def dots(draw):
    nb, nc = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    nlf, nrf = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    sizes = draw(st.lists(st.integers(1, 3), min_size=nb + nc + nlf + nrf, max_size=nb + nc + nlf + nrf))
    bs, cs = sizes[:nb], sizes[nb:nb + nc]
    lfs, rfs = sizes[nb + nc:nb + nc + nlf], sizes[nb + nc + nlf:]
    lroles = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [("f", i) for i in range(nlf)]
    rroles = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [("f", i) for i in range(nrf)]
    lperm = draw(st.permutations(lroles))
    rperm = draw(st.permutations(rroles))
    size = {"b": bs, "c": cs}
    lshape = [size[k][i] if k != "f" else lfs[i] for k, i in lperm]
    rshape = [size[k][i] if k != "f" else rfs[i] for k, i in rperm]
    lb = [lperm.index(("b", i)) for i in range(nb)]
    rb = [rperm.index(("b", i)) for i in range(nb)]
    lc = [lperm.index(("c", i)) for i in range(nc)]
    rc = [rperm.index(("c", i)) for i in range(nc)]
    out = bs + [lshape[d] for d in range(len(lshape)) if d not in lb + lc] + \
        [rshape[d] for d in range(len(rshape)) if d not in rb + rc]
    et = draw(st.sampled_from(["f32", "i32"]))
    batching = f"batching_dims = {lb} x {rb}, " if nb else ""
    text = (f"func.func @main(%a: {_t(lshape, et)}, %b: {_t(rshape, et)}) -> {_t(out, et)} {{\n"
            f"  %0 = stablehlo.dot_general %a, %b, {batching}contracting_dims = {lc} x {rc} : "
            f"({_t(lshape, et)}, {_t(rshape, et)}) -> {_t(out, et)}\n  return %0 : {_t(out, et)}\n}}")
    return text, lshape, rshape, et


@settings(max_examples=80, deadline=None)
@given(dots(), st.integers(0, 2**31 - 1))
def test_dot_canonicalize_keeps_results(case, seed):
    text, ls, rs, et = case
    r = np.random.default_rng(seed)
    dt = np.float32 if et == "f32" else np.int32
    args = [r.integers(-5, 5, ls).astype(dt), r.integers(-5, 5, rs).astype(dt)]
    m = parse_module(text)
    verify(m)
    before = run_function(m, args)
    PassManager([make_pass("dot-canonicalize")], verify_each=True).run(m)
    for op in m.walk():
        if op.name == "stablehlo.dot_general":
            assert op.operands[0].type.rank in (2, 3)
    np.testing.assert_allclose(run_function(m, args)[0], before[0], rtol=1e-6)
