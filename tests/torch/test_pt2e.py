"""PT2E quantization (torchao's prepare_pt2e / convert_pt2e with X86InductorQuantizer) to
StableHLO with `!quant.uniform` types, compiled by axle (lower-quant: integer convolution
and dot), against PyTorch's quantized reference (the converted model run eagerly).

Tolerance: one quantization step of the output's input activation (the last q/dq scale)
times the largest row of |fc weight|: a value that rounds to the other side of a .5
boundary in one of the two computations moves by one step; here the results agree to
float rounding."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn as nn

import axle
import axle.torch

pt2e = pytest.importorskip("torchao.quantization.pt2e.quantize_pt2e")
xiq = pytest.importorskip("torchao.quantization.pt2e.quantizer.x86_inductor_quantizer")


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.c1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


def _quantized(x):
    torch.manual_seed(0)
    model = SmallCNN().eval()
    captured = torch.export.export(model, (x,)).module()
    quantizer = xiq.X86InductorQuantizer()
    quantizer.set_global(xiq.get_default_x86_inductor_quantization_config())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prepared = pt2e.prepare_pt2e(captured, quantizer)
        for seed in range(3):  # calibration
            prepared(torch.randn(x.shape, generator=torch.Generator().manual_seed(seed)))
        return pt2e.convert_pt2e(prepared)


def test_pt2e_cnn_becomes_integer_stablehlo_and_matches_reference():
    x = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(7))
    converted = _quantized(x)
    text = axle.torch.export_quantized(converted, x)
    assert "stablehlo.uniform_quantize" in text and "stablehlo.uniform_dequantize" in text
    conv_lines = [l for l in text.splitlines() if '"stablehlo.convolution"' in l]
    dot_lines = [l for l in text.splitlines() if '"stablehlo.dot_general"' in l]
    assert len(conv_lines) == 2 and all("!quant.uniform<i32:f32:3" in l for l in conv_lines)
    assert len(dot_lines) == 1 and "!quant.uniform<i32:f32:1" in dot_lines[0]

    # axle's lower-quant turns them into integer convolutions / dots (no float fallback)
    from axle.passes.lower_quant import LowerQuant
    module = axle.parse_module(text)
    LowerQuant().run(module)
    lowered = str(module)
    assert "!quant" not in lowered
    contractions = [l.split(" : ")[-1] for l in lowered.splitlines()
                    if "stablehlo.convolution" in l or "stablehlo.dot_general" in l]
    assert len(contractions) >= 3
    assert all("xi32>" in t and "xf32>" not in t for t in contractions), contractions

    run = axle.torch.compile_exported(text, converted)
    got = run(x)
    ref = converted(x)
    scales = [float(s) for s in __import__("re").findall(r"quant.uniform<i8:f32, ([0-9.e-]+):", text)]
    w = converted.fc.weight.detach() if hasattr(converted, "fc") else None
    step = scales[-1] * (float(w.abs().sum(1).max()) if w is not None else 1.0)
    diff = (got - ref).abs().max().item()
    assert diff <= step, (diff, step)
    np.testing.assert_allclose(got.numpy(), ref.detach().numpy(), atol=1e-4, rtol=1e-4)
