"""The table of JAX programs: each one a function, how to make its arguments, and (for the
few that axle cannot run yet) the missing feature, named.

`@program(name, *args)` registers a function; `args` are argument specs made by `f32(...)`,
`i32(...)`, ... (random values of that shape, drawn from a seed). `core=True` puts a
program in the representative part that `make test` runs; `xfail=` names what is missing
(a reason string) so that the test expects the failure and turns red
as soon as the feature lands (strict xfail), and the mark can be removed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np


@dataclass
class Arg:
    shape: tuple
    dtype: str
    kind: str = "normal"  # normal | positive | unit (in (-1, 1)) | int range | key | bool | prob
    lo: int = -5
    hi: int = 5

    def make(self, rng: np.random.Generator):
        import jax
        import ml_dtypes  # noqa: F401  (bfloat16 through numpy)
        dt = np.dtype(ml_dtypes.bfloat16) if self.dtype == "bf16" else np.dtype(self.dtype)
        if self.kind == "key":
            return jax.random.key_data(jax.random.PRNGKey(int(rng.integers(0, 2**31))))
        if self.kind == "bool":
            return rng.integers(0, 2, self.shape).astype(np.bool_)
        if np.issubdtype(dt, np.integer):
            return rng.integers(self.lo, self.hi, self.shape).astype(dt)
        if self.kind == "positive":
            x = rng.uniform(0.1, 3.0, self.shape)
        elif self.kind == "unit":
            x = rng.uniform(-0.95, 0.95, self.shape)
        elif self.kind == "prob":
            x = rng.uniform(0.02, 0.98, self.shape)
        else:
            x = rng.standard_normal(self.shape)
        if np.issubdtype(dt, np.complexfloating):
            x = x + 1j * rng.standard_normal(self.shape)
        return np.asarray(x).astype(dt)


def f32(*shape, kind="normal"):
    return Arg(shape, "float32", kind)


def f64(*shape, kind="normal"):
    return Arg(shape, "float64", kind)


def bf16(*shape, kind="normal"):
    return Arg(shape, "bf16", kind)


def f16(*shape, kind="normal"):
    return Arg(shape, "float16", kind)


def c64(*shape):
    return Arg(shape, "complex64")


def i32(*shape, lo=-5, hi=5):
    return Arg(shape, "int32", "int", lo, hi)


def u8(*shape):
    return Arg(shape, "uint8", "int", 0, 255)


def boolean(*shape):
    return Arg(shape, "bool", "bool")


def key():
    return Arg((2,), "uint32", "key")


@dataclass
class Program:
    name: str
    fn: Callable
    args: list
    family: str
    core: bool = False
    xfail: Optional[str] = None
    rtol: Optional[float] = None  # None: by the result's dtype (harness.TOLERANCES)
    poly: object = None  # exported with these symbolic shapes (jax.export): "(b, 4)", or one per argument

    def inputs(self, seed: int = 0) -> list:
        rng = np.random.default_rng(seed)
        return [a.make(rng) for a in self.args]


PROGRAMS: dict[str, Program] = {}
_FAMILY = ["misc"]


def family(name: str) -> None:
    """The family of the programs registered next (jnp, lax, nn, ...)."""
    _FAMILY[0] = name


def program(name: str, *args: Arg, core: bool = False, xfail: Optional[str] = None,
            rtol: Optional[float] = None, poly=None):
    def deco(fn):
        if name in PROGRAMS:
            raise ValueError(f"program {name} registered twice")
        PROGRAMS[name] = Program(name, fn, list(args), _FAMILY[0], core, xfail, rtol, poly)
        return fn
    return deco


def load_all() -> dict[str, Program]:
    import programs_control  # noqa: F401
    import programs_models  # noqa: F401
    import programs_nn  # noqa: F401
    import programs_numpy  # noqa: F401
    return PROGRAMS
