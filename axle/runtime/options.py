"""Compile options: one documented object (axle.CompileOptions)."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Optional, Sequence


@dataclass
class CompileOptions:
    """Everything a compile can be told, in one place.

    backend: the backend's name (`axle.available_backends()` lists them); None: "cpu".
    entry: the function to compile.
    device_assignment: the device ids (of the backend's platform) the executable runs on;
        None: the first device. An executable runs on one device (several: one executable each).
    passes: run the backend's default optimization pipeline (False: compile the module as given).
    dump_to: a folder for the module as imported and as optimized (as AXLE_FLAGS=--dump_to,
        for this compile only).
    profile: time every top-level kernel natively on each call (cpu: `kernel_durations()`).
    donate_argnums: argument positions whose memory the outputs may reuse (donation); added to
        the ones the module marks (`tf.aliasing_output`, `jax.buffer_donor`).
    backend_options: passed to the backend untouched.
    """
    backend: Optional[str] = None
    entry: str = "main"
    device_assignment: Optional[Sequence[int]] = None
    passes: bool = True
    dump_to: Optional[str] = None
    profile: bool = False
    donate_argnums: Sequence[int] = ()
    backend_options: dict = field(default_factory=dict)

    @classmethod
    def from_kwargs(cls, backend: Optional[str] = None, entry: str = "main", **kw) -> "CompileOptions":
        """Options from `axle.compile`'s keywords: known names become fields (`donate` is
        `donate_argnums`), anything else goes to backend_options."""
        if "donate" in kw:
            kw["donate_argnums"] = tuple(kw.pop("donate") or ())
        names = {f.name for f in fields(cls)}
        known = {k: v for k, v in kw.items() if k in names}
        rest = {k: v for k, v in kw.items() if k not in names}
        opts = cls(backend=backend, entry=entry, **known)
        opts.backend_options = dict(opts.backend_options, **rest)
        return opts

    def to_backend(self, aliases: dict) -> dict:
        """The keyword options the backend's compile receives."""
        out = dict(self.backend_options)
        if not self.passes:
            out["passes"] = False
        if self.profile:
            out["profile"] = True
        if self.dump_to:
            out["dump_to"] = self.dump_to
        if aliases:
            out["aliases"] = {int(k): int(j) for k, j in sorted(aliases.items())}
        return out
