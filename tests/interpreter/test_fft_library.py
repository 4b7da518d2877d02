"""axle/interpreter/fft_library.py: the transforms the interpreter and the CPU backend share,
against numpy.fft in both precisions, with ducc0 and without it."""
import sys

import numpy as np
import pytest

from axle.interpreter import fft_library

R = np.random.default_rng(3)
NUMPY = {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn, "IRFFT": np.fft.irfftn}


def _case(kind, shape, double):
    x = R.standard_normal(shape)
    if kind in ("FFT", "IFFT", "IRFFT"):
        x = x + 1j * R.standard_normal(shape)
    if kind == "IRFFT":
        lengths = [*shape[-2:-1], 2 * (shape[-1] - 1)]
    else:
        lengths = list(shape[-2:])
    out = (np.float64 if double else np.float32) if kind == "IRFFT" else (np.complex128 if double else np.complex64)
    return x, lengths, out


@pytest.mark.parametrize("kind", ["FFT", "IFFT", "RFFT", "IRFFT"])
@pytest.mark.parametrize("double", [False, True])
@pytest.mark.parametrize("shape", [(3, 16, 33), (64, 9), (4, 2, 128, 65)])
def test_transform_matches_numpy(kind, double, shape):
    x, lengths, out = _case(kind, shape, double)
    got = fft_library.transform(kind, lengths, x.astype(np.complex128 if np.iscomplexobj(x) else np.float64), out)
    want = NUMPY[kind](x, s=lengths, axes=[-2, -1])
    assert got.dtype == out and got.shape == want.shape
    tol = 1e-12 if double else 2e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


def test_libraries_by_precision():
    """64-bit transforms go to ducc0 when it is installed (a project dependency), 32-bit ones
    to SciPy's pocketfft."""
    pytest.importorskip("ducc0")
    assert fft_library.library_name(True) == "ducc0"
    assert fft_library.library_name(False) == "pocketfft"


def test_without_ducc0_pocketfft_does_both(monkeypatch):
    monkeypatch.setattr(fft_library, "_BINDINGS", {})
    monkeypatch.setitem(sys.modules, "ducc0", None)  # (import ducc0 then raises ImportError)
    monkeypatch.setitem(sys.modules, "ducc0.fft", None)
    assert fft_library.library_name(True) == "pocketfft"
    x, lengths, out = _case("FFT", (8, 32), True)
    np.testing.assert_allclose(fft_library.transform("FFT", lengths, x, out), np.fft.fft2(x), rtol=1e-12, atol=1e-10)


def test_mismatched_lengths_have_no_direct_caller():
    """Shapes the lengths do not give (a malformed op) get no library caller: the public
    scipy.fft route (which pads or truncates) is the fallback."""
    assert fft_library.caller("FFT", [8, 8], (4, 8, 9), (4, 8, 9), True) is None
    assert fft_library.caller("IRFFT", [8, 16], (8, 8), (8, 16), True) is None
    assert fft_library.caller("IRFFT", [8, 16], (8, 9), (8, 16), True) is not None
