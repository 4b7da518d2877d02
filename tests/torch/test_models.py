"""torch.compile(backend="axle") on four small models, inference and three training steps
(SGD with momentum), against eager PyTorch in float32.

Tolerances: outputs within 1e-4 absolute + 1e-4 relative, parameters after three steps within
2e-4 (the same math in a different order of summation: BLAS blocking, fused reductions)."""
import copy
import warnings

import pytest
import torch

from axle.torch.backend import STATS, AxleFallbackWarning
from models import NAMES, make


def _compiled(model, **kw):
    torch._dynamo.reset()
    return torch.compile(model, backend="axle", **kw)


@pytest.fixture(autouse=True)
def _trace_rnns():
    # Dynamo leaves nn.LSTM to eager PyTorch unless allow_rnn is set; with it the LSTM's
    # unrolled ATen graph is what axle compiles
    with torch._dynamo.config.patch(allow_rnn=True):
        yield


@pytest.mark.parametrize("name", NAMES)
def test_inference_matches_eager(name):
    model, x, _ = make(name)
    model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error", AxleFallbackWarning)
        before = STATS["axle_calls"]
        with torch.no_grad():
            got = _compiled(model)(x)
        assert STATS["axle_calls"] > before  # axle ran it, not the eager fallback
    torch.testing.assert_close(got, model(x), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", NAMES)
def test_three_training_steps_match_eager(name):
    model, x, loss_fn = make(name)
    ref = copy.deepcopy(model)
    compiled = _compiled(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AxleFallbackWarning)
        before = STATS["axle_calls"]
        for _ in range(3):
            for f, o in ((compiled, opt), (ref, ref_opt)):
                o.zero_grad()
                loss = loss_fn(f(x))
                loss.backward()
                o.step()
        assert STATS["axle_calls"] >= before + 6  # forward and backward, three times
    for (n, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, atol=2e-4, rtol=2e-4, msg=lambda m: f"{name} {n}: {m}")
    for (n, b), c in zip(model.named_buffers(), ref.buffers()):  # batch-norm running statistics
        torch.testing.assert_close(b, c, atol=2e-4, rtol=2e-4, msg=lambda m: f"{name} {n}: {m}")
