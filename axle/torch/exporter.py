"""`axle.torch.export(module, *args)`: a torch.export ExportedProgram (after run_decompositions
with the core ATen table torch.compile(backend="axle") uses) as StableHLO text. Parameters and buffers are arguments of @main, each
with its name (`axle.name = "layers.0.weight"`) and kind (`axle.kind = "parameter"`); lifted
tensor constants are folded into the text. Results carry `axle.output = "user"` or
`"buffer:<name>"` (a buffer's new value, e.g. batch-norm statistics in training mode).

`axle.torch.compile_exported(text, module)` compiles that text with axle and runs it with
torch tensors, taking the named parameters and buffers from `module` (or a dict)."""
from __future__ import annotations

import re

import torch

from axle.torch.dtypes import from_numpy, to_numpy
from axle.torch.lowering import lower_graph

_KINDS = {"PARAMETER": "parameter", "BUFFER": "buffer", "USER_INPUT": "input",
          "CONSTANT_TENSOR": "constant", "CUSTOM_OBJ": "object", "TOKEN": "token"}


def export_stablehlo(module: torch.nn.Module, *args, dynamic_shapes=None, strict: bool = False) -> str:
    """StableHLO text of `module` called on `args` (see the module docstring)."""
    from axle.torch.backend import decompositions
    ep = torch.export.export(module, tuple(args), dynamic_shapes=dynamic_shapes, strict=strict)
    # the table torch.compile(backend="axle") uses: the default one keeps some ops whole
    # that have no rule here but decompose (aten.upsample_bilinear2d.vec)
    return program_to_stablehlo(ep.run_decompositions(decompositions()), args)


def export_quantized(module: torch.nn.Module, *args) -> str:
    """StableHLO text of a PT2E-quantized module (torchao's convert_pt2e output): q/dq pairs
    become `!quant.uniform` types, convolutions and linears on them integer ops (see
    axle/torch/rules_quant.py). Buffers (the int8 weights, scales, zero points) are folded
    into the text, since quantized types carry their scales; parameters stay arguments."""
    import axle.torch.rules_quant  # noqa: F401
    ep = torch.export.export(module, tuple(args), strict=False)
    return program_to_stablehlo(ep.run_decompositions(), args, fold_buffers=True)


def program_to_stablehlo(ep, args, fold_buffers: bool = False) -> str:
    gm = ep.graph_module
    sig = ep.graph_signature
    state = dict(ep.state_dict)
    state.update(ep.constants)
    values, names, attrs, constants = [], [], [], set()
    user = iter(args)
    for i, spec in enumerate(sig.input_specs):
        kind = _KINDS.get(spec.kind.name, spec.kind.name.lower())
        if kind == "input":
            value = next(user)
            name = spec.arg.name
        else:
            name = spec.target
            value = state[name]
        if kind == "constant" or (fold_buffers and kind == "buffer"):
            constants.add(i)
        values.append(value)
        names.append(name)
        attrs.append(f'axle.name = "{name}", axle.kind = "{kind}"')
    result_attrs = []
    for spec in sig.output_specs:
        if spec.kind.name == "BUFFER_MUTATION":
            result_attrs.append(f'axle.output = "buffer:{spec.target}"')
        else:
            result_attrs.append('axle.output = "user"')
    lowered = lower_graph(gm, values, names, attrs, constants=constants, result_attrs=result_attrs)
    if lowered.rng_state:  # (the backend feeds that state from torch's generator on each call)
        from axle.torch.lowering import UnsupportedOp
        raise UnsupportedOp("random numbers (dropout in training, bernoulli)",
                            "an exported program takes no random state: export the model in eval mode")
    return "module @exported {\n" + lowered.text.replace("func.func @main", "func.func public @main", 1) + "}\n"


_ARG = re.compile(r'%arg\d+: tensor<[^>]*> \{axle\.name = "([^"]*)", axle\.kind = "([^"]*)"\}')
_OUT = re.compile(r'axle\.output = "([^"]*)"')


class ExportedModule:
    """An exported program compiled by axle; call it with the user inputs (torch tensors).
    Returns the user outputs (one tensor or a tuple); buffer updates are written back into
    the tensors it was given when `update_buffers` is set."""

    def __init__(self, text: str, params, backend: str = "cpu", update_buffers: bool = False):
        import axle
        header = text[text.index("@main("):text.index("{\n", text.index("@main("))]
        self.inputs = _ARG.findall(header)
        self.outputs = _OUT.findall(header)
        if isinstance(params, torch.nn.Module):
            params = {**dict(params.named_parameters()), **dict(params.named_buffers())}
        missing = [n for n, k in self.inputs if k != "input" and n not in params]
        if missing:
            raise KeyError(f"compile_exported: no value for {', '.join(missing)} (the module or dict "
                           f"must hold every parameter and buffer the program takes)")
        self.params = params
        self.update_buffers = update_buffers
        self.executable = axle.compile(text, backend=backend)

    def __call__(self, *args):
        user = iter(args)
        values = [next(user) if kind == "input" else self.params[name] for name, kind in self.inputs]
        outs = self.executable.execute([to_numpy(v) for v in values])
        results = []
        for tag, out in zip(self.outputs or ["user"] * len(outs), outs):
            t = from_numpy(out)
            if tag.startswith("buffer:"):
                if self.update_buffers:
                    with torch.no_grad():
                        self.params[tag[len("buffer:"):]].copy_(t)
                continue
            results.append(t)
        return results[0] if len(results) == 1 else tuple(results)


def compile_exported(text: str, params, backend: str = "cpu", update_buffers: bool = False) -> ExportedModule:
    """Compile StableHLO text from `export` with axle; `params` is the module (or a name ->
    tensor dict) giving the parameters and buffers by name."""
    return ExportedModule(text, params, backend, update_buffers)
