"""axle.torch.export: an ExportedProgram as StableHLO text with named weight arguments, read
back by axle's parser and run (compiled, and by the reference interpreter)."""
import numpy as np
import pytest
import torch

import axle
import axle.torch
from axle.interpreter import interpret
from models import make


@pytest.mark.parametrize("name", ["mlp", "resnet", "gpt", "lstm"])
def test_exported_model_runs_and_matches_eager(name):
    model, x, _ = make(name)
    model.eval()
    text = axle.torch.export(model, x)
    module = axle.parse_module(text)  # readable by axle's parser
    assert module.function("main") is not None
    for pname, _ in model.named_parameters():  # every parameter is a named argument
        assert f'axle.name = "{pname}", axle.kind = "parameter"' in text
    run = axle.torch.compile_exported(text, model)
    with torch.no_grad():
        torch.testing.assert_close(run(x), model(x), atol=1e-4, rtol=1e-4)


def test_exported_text_runs_in_the_interpreter():
    model, x, _ = make("mlp")
    text = axle.torch.export(model.eval(), x)
    params = dict(model.named_parameters())
    run = axle.torch.compile_exported(text, model)
    args = [params[n].detach().numpy() if k == "parameter" else x.numpy() for n, k in run.inputs]
    got = interpret(axle.parse_module(text), *args)
    got = got[0] if isinstance(got, (list, tuple)) else got
    np.testing.assert_allclose(got, model(x).detach().numpy(), atol=1e-5, rtol=1e-5)


def test_training_mode_batch_norm_updates_buffers():
    model, x, _ = make("resnet")
    model.train()
    reference = make("resnet")[0].train()
    text = axle.torch.export(model, x)
    assert 'axle.output = "buffer:stem.1.running_mean"' in text
    run = axle.torch.compile_exported(text, model, update_buffers=True)
    got = run(x)
    want = reference(x)
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(model.stem[1].running_mean, reference.stem[1].running_mean, atol=1e-5, rtol=1e-5)


def test_missing_weights_are_named():
    model, x, _ = make("mlp")
    text = axle.torch.export(model.eval(), x)
    with pytest.raises(KeyError, match="net.0.weight"):
        axle.torch.compile_exported(text, {})


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_exported_interpolation_matches_eager(mode):
    """F.interpolate reaches the exported program decomposed (the table torch.compile's
    backend uses): core ATen keeps aten.upsample_*.vec whole, which had no rule."""
    class Up(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c = torch.nn.Conv2d(4, 8, 3, padding=1)

        def forward(self, x):
            return self.c(torch.nn.functional.interpolate(x, scale_factor=2, mode=mode))
    model, x = Up().eval(), torch.randn(2, 4, 9, 7, generator=torch.Generator().manual_seed(0))
    run = axle.torch.compile_exported(axle.torch.export(model, x), model)
    with torch.no_grad():
        torch.testing.assert_close(run(x), model(x), atol=1e-4, rtol=1e-4)


def test_dropout_in_training_is_refused_by_export():
    """An exported program takes no random state (the torch.compile backend feeds one from
    torch's generator on every call): a model exported in training mode with dropout is a
    clear error naming the way out; in eval mode it exports."""
    from axle.torch.lowering import UnsupportedOp
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5)).train()
    with pytest.raises(UnsupportedOp, match="eval mode"):
        axle.torch.export(m, torch.randn(2, 4))
    assert "rng_state" not in axle.torch.export(m.eval(), torch.randn(2, 4))
