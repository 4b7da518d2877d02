"""AXLE_FLAGS: options read from the environment, like XLA_FLAGS.

    AXLE_FLAGS="--dump_to=/tmp/dump --dump_pass_regex=cse|simplify"

Each flag has help text here; `axle flags` (or `describe()`) lists them.
"""
from __future__ import annotations

import functools
import os
import shlex
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Flag:
    name: str
    default: object
    help: str


FLAGS = {f.name: f for f in [
    Flag("dump_to", None, "folder to write the module as imported and as optimized (and each pass "
                          "matching --dump_pass_regex), with names that sort in pipeline order"),
    Flag("dump_pass_regex", None, "also dump the module after every pass whose name matches this regex"),
    Flag("verify_each_pass", False, "run the verifier after every pass (tests turn this on)"),
    Flag("cpu_device_count", 1, "number of CPU devices the CPU backend exposes"),
    Flag("cpu_parallel", True, "split large CPU kernels into chunks run by axle's thread pool "
                               "(thread count from AXLE_NUM_THREADS, default one per core); "
                               "false: every kernel runs on the calling thread"),
    Flag("cpu_lowp_dot", True, "int8 and bf16 dot_generals with the host's AVX512-VNNI / AVX512-BF16 "
                               "instructions where it has them; false: the widening path (f32 / f64 BLAS)"),
    Flag("explain_cache_misses", False, "on every compile that misses the in-memory cache, log (logger "
                                        "'axle.compile', level WARNING) which part of the cache key "
                                        "differs from the closest earlier compile of the same entry: "
                                        "module, signature, options or environment"),
    # resource limits (axle/limits.py): exceeding one raises axle.limits.ResourceLimitError
    Flag("max_constant_bytes", 1 << 30, "largest constant (bytes) the interpreter or a backend may "
                                        "materialize; splats are held as one element until then; 0: no limit"),
    Flag("max_buffer_bytes", 0, "largest single tensor (bytes: argument, result or temporary) the "
                                "interpreter computes or the CPU backend allocates; 0: half the physical memory"),
    Flag("compile_time_budget_s", 0.0, "seconds one compilation (passes and code generation) may take, "
                                       "checked between passes and kernels; 0: no budget"),
]}


def flag(name: str):
    """The current value of one flag (AXLE_FLAGS is read on each call, parsed once per text)."""
    return _parsed(os.environ.get("AXLE_FLAGS", ""))[name]


@functools.lru_cache(maxsize=8)
def _parsed(text: str) -> dict:
    return parse_flags(text)


def parse_flags(text: Optional[str] = None) -> dict:
    """Parse an AXLE_FLAGS string (default: the environment) into {name: value}."""
    text = os.environ.get("AXLE_FLAGS", "") if text is None else text
    out = {name: f.default for name, f in FLAGS.items()}
    for item in shlex.split(text):
        if not item.startswith("--"):
            raise ValueError(f"AXLE_FLAGS: expected --name=value, found {item!r}")
        name, _, value = item[2:].partition("=")
        if name not in FLAGS:
            raise ValueError(f"AXLE_FLAGS: unknown flag --{name}; known: "
                             + ", ".join("--" + n for n in sorted(FLAGS)))
        default = FLAGS[name].default
        if isinstance(default, bool):
            out[name] = value.lower() not in ("0", "false", "no") if value else True
        elif isinstance(default, float):
            try:
                out[name] = float(value)
            except ValueError:
                raise ValueError(f"AXLE_FLAGS: --{name} expects a number, got {value!r}") from None
        elif isinstance(default, int):
            try:
                out[name] = int(value)
            except ValueError:
                raise ValueError(f"AXLE_FLAGS: --{name} expects an integer, got {value!r}") from None
        else:
            out[name] = value
    return out


def describe() -> str:
    return "\n".join(f"--{f.name} (default {f.default!r}): {f.help}" for f in FLAGS.values())
