"""Every module that registers CPU kernels (registry.KERNELS) or scalar rules, imported in
this order (a later registration of an op replaces an earlier one). Kernel modules import
registry.py and context.py, never the compiler; the compiler imports this module last, so
nothing imports back in a circle."""
from __future__ import annotations

from axle.backends.cpu import elementwise  # noqa: F401  (the loop kernel)
from axle.backends.cpu import kernels  # noqa: F401
from axle.backends.cpu import kernels_collective  # noqa: F401
from axle.backends.cpu import kernels_control  # noqa: F401
from axle.backends.cpu import kernels_indexing  # noqa: F401
from axle.backends.cpu import kernels_window  # noqa: F401
from axle.backends.cpu import kernels_conv  # noqa: F401
from axle.backends.cpu import kernels_linalg  # noqa: F401
from axle.backends.cpu import kernels_fft  # noqa: F401
from axle.backends.cpu import kernels_dynamic  # noqa: F401
from axle.backends.cpu import kernels_rng  # noqa: F401
from axle.backends.cpu import kernels_extra  # noqa: F401
from axle.backends.cpu import kernels_scan  # noqa: F401
from axle.backends.cpu import kernels_ragged  # noqa: F401
from axle.backends.cpu import kernels_cholesky  # noqa: F401
from axle.codegen import scalar_special  # noqa: F401
from axle.backends.cpu import kernels_lapack  # noqa: F401

MODULES = ("elementwise", "kernels", "kernels_collective", "kernels_control", "kernels_indexing",
           "kernels_window", "kernels_conv", "kernels_linalg", "kernels_fft", "kernels_dynamic",
           "kernels_rng", "kernels_extra", "kernels_scan", "kernels_ragged", "kernels_cholesky",
           "kernels_lapack")
