"""`torch.compile(model, backend="axle")`: Dynamo hands each captured graph to `axle_backend`;
aot_autograd (with the core ATen decompositions) splits it into a forward and, in training, a
backward graph of ATen ops, and each is compiled by axle (axle/torch/lowering.py -> StableHLO
text -> axle.compile).

A graph with an ATen op axle cannot lower runs eagerly instead, with one warning naming the op;
so does a graph whose lowering or compilation fails (the warning says why). Symbolic sizes
(dynamic=True) are bound per call: each distinct input signature is lowered and compiled once."""
from __future__ import annotations

import warnings

import torch

from axle.torch.dtypes import from_numpy, to_numpy
from axle.torch.lowering import UnsupportedOp, lower_graph, replay_view, unsupported_ops


STATS = {"axle_calls": 0, "compiles": 0}  # counters the tests read (resettable)


class AxleFallbackWarning(UserWarning):
    """A graph (or one signature of it) runs in eager PyTorch instead of axle."""


class CompiledGraph:
    """An ATen graph compiled by axle, once per input signature; called with a list of args."""

    _boxed_call = True

    def __init__(self, gm: torch.fx.GraphModule, name: str = "graph"):
        self.gm = gm
        self.name = name
        from axle.flags import flag
        from axle.lru import LRU
        self.cache = LRU(lambda: flag("jit_cache_entries"))  # per signature, least recently used out
        self.calls = 0  # calls run by axle (tests read it)
        # a graph without symbolic sizes has one signature (Dynamo guards the rest; the
        # executable still checks every argument): no key to compute per call
        self.static = all(not isinstance(n.meta.get("val"), (torch.SymInt, torch.SymFloat))
                          and not (isinstance(n.meta.get("val"), torch.Tensor)
                                   and any(isinstance(d, torch.SymInt) for d in n.meta["val"].shape))
                          for n in gm.graph.nodes if n.op == "placeholder")

    def _key(self, args):
        return tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else a for a in args)

    def _build(self, args):
        import axle
        lowered = lower_graph(self.gm, args, input_views=True)
        exe = axle.compile(lowered.text, backend="cpu")
        STATS["compiles"] += 1
        return exe, lowered

    def __call__(self, *args):
        # boxed (one list) when aot_autograd sees _boxed_call, else unpacked (a torch wrapper
        # around the backward compiler drops the attribute); graph inputs are never lists
        args = list(args[0]) if len(args) == 1 and isinstance(args[0], list) else list(args)
        key = None if self.static else self._key(args)
        entry = self.cache.get(key)
        if entry is None:
            try:
                entry = self._build(args)
            except UnsupportedOp as e:
                _warn(f"axle: ATen op {e} has no axle lowering; {self.name} runs eagerly")
                entry = False
            except Exception as e:  # never a crash: the eager graph answers, the warning says why
                from axle.flags import env
                if env("AXLE_TORCH_STRICT"):
                    raise
                _warn(f"axle: compiling {self.name} failed ({type(e).__name__}: {str(e)[:300]}); "
                      f"it runs eagerly")
                entry = False
            self.cache[key] = entry
        if entry is False:
            return self.gm(*args)
        exe, lowered = entry
        tensors = [to_numpy(a if perm is None else a.permute(perm))
                   for a, perm in zip((a for a in args if isinstance(a, torch.Tensor)), lowered.arg_perms)]
        if lowered.rng_state:  # torch's generator decides the graph's random numbers (manual_seed)
            tensors.append(torch.randint(-2 ** 63, 2 ** 63 - 1, (2,), dtype=torch.int64).numpy().view("uint64"))
        outs = exe.execute(tensors)
        self.calls += 1
        STATS["axle_calls"] += 1
        results = []
        for kind, *rest in lowered.outputs:
            if kind == "view":  # a view of an input (a saved, transposed weight): torch's own
                results.append(replay_view(args[rest[0]], rest[1]))
                continue
            if kind != "tensor":
                results.append(rest[0])
                continue
            t = from_numpy(outs[rest[0]])
            if rest[2] is not None:  # computed in memory order (lower_graph): the view eager's strides make
                t = t.permute([rest[2].index(d) for d in range(t.dim())])
            if rest[1] is not None:  # eager consumers (a kernel's backward) may expect torch's strides
                t = with_strides(t, rest[1])
            results.append(t)
        return results


def with_strides(t: torch.Tensor, strides) -> torch.Tensor:
    """t laid out with `strides` (the graph's output as eager made it). Zero strides (an
    expand: F.normalize's denominators, a squeezed broadcast) are an expand of t's first
    slice along those dimensions, laid out by the other strides; eager's tensor shares
    that memory, which one copy into overlapping strides cannot reproduce."""
    shape = tuple(t.shape)
    strides = tuple(int(s) for s in strides)
    if len(strides) != len(shape) or strides == tuple(t.stride()):
        return t
    expanded = [s == 0 and n > 1 for s, n in zip(strides, shape)]
    if not any(expanded):
        return torch.empty_strided(shape, strides, dtype=t.dtype).copy_(t)
    base = t[tuple(slice(0, 1) if e else slice(None) for e in expanded)]
    inner = torch.empty_strided(tuple(base.shape), tuple(s if s else 1 for s in strides), dtype=t.dtype)
    return inner.copy_(base).expand(shape)


def _warn(msg: str):
    warnings.warn(msg, AxleFallbackWarning, stacklevel=3)


def compile_graph(gm: torch.fx.GraphModule, example_inputs, name: str = "graph"):
    """Compile one ATen graph: a boxed callable (a list of args in, a list of outputs out).
    A graph with ops axle does not lower is returned eager, with one warning naming the op."""
    from torch._functorch.aot_autograd import make_boxed_func
    missing = unsupported_ops(gm)
    if missing:
        _warn(f"axle: ATen op {missing[0]} has no axle lowering; this {name} runs eagerly"
              + (f" (also missing: {', '.join(missing[1:])})" if len(missing) > 1 else ""))
        _eager_flash_backward(gm)
        return make_boxed_func(gm.forward)
    return make_boxed_func(CompiledGraph(gm, name))


def _flash_backward_recomputing(g, q, k, v, o, lse, dropout_p, is_causal, *, attn_mask=None, scale=None):
    """The CPU flash attention's backward given the forward's true output and logsumexp,
    recomputed: what a decomposed forward saved in their place is not them."""
    a = torch.ops.aten
    o, lse = a._scaled_dot_product_flash_attention_for_cpu.default(q, k, v, dropout_p, is_causal,
                                                                  attn_mask=attn_mask, scale=scale)[:2]
    return a._scaled_dot_product_flash_attention_for_cpu_backward.default(g, q, k, v, o, lse, dropout_p, is_causal,
                                                                         attn_mask=attn_mask, scale=scale)


def _eager_flash_backward(gm) -> None:
    """In a graph left to eager, the flash attention backward recomputes its forward first
    (_flash_backward_recomputing): the forward graph ran the decomposition (decompositions()),
    which returns the attention weights where the op returns the logsumexp, and the eager
    backward read them as such (gradients off by 50x behind a replicate pad the bridge did
    not lower then)."""
    target = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default
    hits = [n for n in gm.graph.nodes if n.op == "call_function" and n.target is target]
    for n in hits:
        n.target = _flash_backward_recomputing
    if hits:
        gm.recompile()


def decompositions() -> dict:
    """Core ATen decompositions, keeping whole the ops axle lowers better as one rule."""
    from torch._decomp import core_aten_decompositions, get_decompositions
    table = dict(core_aten_decompositions())
    # recurrent layers as their unrolled cell math (in inference they would become mkldnn_rnn_layer)
    table.update(get_decompositions([torch.ops.aten.lstm.input, torch.ops.aten.gru.input,
                                     torch.ops.aten.rnn_tanh.input, torch.ops.aten.rnn_relu.input]))
    # interpolation (F.interpolate) as index arithmetic and gathers: core ATen keeps these
    # whole, and torch.export's programs reach axle with them (aten.upsample_bilinear2d.vec)
    a = torch.ops.aten
    table.update(get_decompositions([
        a.upsample_bilinear2d.vec, a.upsample_bilinear2d.default, a.upsample_nearest2d.vec,
        a.upsample_nearest2d.default, a.upsample_bicubic2d.vec, a.upsample_nearest1d.vec,
        a.upsample_linear1d.vec, a.upsample_trilinear3d.vec, a.upsample_nearest3d.vec]))
    # kept whole, lowered by its rule: eye (its decomposition counts in uint16 for a bool
    # eye of 256 rows or more, a type neither the bridge nor eager's arange takes). (The CPU
    # flash attention stays decomposed: kept whole, its forward computed the logsumexp in a
    # second pass that cost RoPE attention 15 -> 17.5 ms a step; the decomposition returns
    # the attention weights where the op returns the logsumexp, which only the eager flash
    # backward would misread: the bridge lowers that backward, grouped-query attention too,
    # and a backward graph left to eager recomputes them: _eager_flash_backward.)
    for op in (a.eye.default, a.eye.m):
        table.pop(op, None)
    return table


def axle_backend(gm: torch.fx.GraphModule, example_inputs, **kwargs):
    """The Dynamo backend registered as "axle" (entry point `torch_dynamo_backends`)."""
    from torch._dynamo.backends.common import aot_autograd
    fw = lambda g, ex: compile_graph(g, ex, "forward graph")
    bw = lambda g, ex: compile_graph(g, ex, "backward graph")
    compiler = aot_autograd(fw_compiler=fw, bw_compiler=bw, inference_compiler=fw,
                            decompositions=decompositions())
    # with mkldnn enabled, the LSTM decomposition picks mkldnn_rnn_layer in inference
    with torch.backends.mkldnn.flags(enabled=False):
        return compiler(gm, example_inputs)
