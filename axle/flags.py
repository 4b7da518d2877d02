"""AXLE_FLAGS: options read from the environment, like XLA_FLAGS.

    AXLE_FLAGS="--dump_to=/tmp/dump --dump_pass_regex=cse|simplify"

Each flag has help text here; `axle flags` (or `describe()`) lists them.
"""
from __future__ import annotations

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
    Flag("explain_cache_misses", False, "on every compile that misses the in-memory cache, log (logger "
                                        "'axle.compile', level WARNING) which part of the cache key "
                                        "differs from the closest earlier compile of the same entry: "
                                        "module, signature, options or environment"),
]}


def flag(name: str):
    """The current value of one flag (AXLE_FLAGS is read on each call; it is short)."""
    return parse_flags()[name]


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
