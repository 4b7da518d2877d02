"""AXLE_FLAGS: options read from the environment, like XLA_FLAGS; and the one place axle
reads the environment at all.

    AXLE_FLAGS="--dump_to=/tmp/dump --dump_pass_regex=cse|simplify"

Each flag has help text here; `axle flags` (or `describe()`) lists them, and the other
environment variables axle reads (ENVIRONMENT, read with `env(name)`). No other module
of axle reads os.environ (tests/test_environment_reads.py checks it). Setting a variable
is allowed where a library or a child process reads it (`scoped_env`, `child_environment`):
that is how a variable reaches code that is not axle's.
"""
from __future__ import annotations

import functools
import os
import shlex
from contextlib import contextmanager
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
    Flag("cpu_lowp_dot", True, "int8, bf16 and f16 dot_generals on axle's kernels for the host's "
                               "instructions (AVX512-VNNI / AVX512-BF16, else AVX2 vpmaddwd / fma on widened "
                               "operands); false: the widening path (f32 / f64 BLAS)"),
    Flag("cpu_conv_library", True, "convolutions outside the direct NHWC kernel (im2col + GEMM) call "
                                   "routines compiled once per machine with run-time shapes "
                                   "(backends/cpu/conv_runtime.py); false: generate the loops per program"),
    Flag("cpu_blas_avx512", True, "on an AVX-512 host whose CPU model SciPy's OpenBLAS does not know (it "
                                  "then uses 256-bit Haswell kernels), switch OpenBLAS to its SkylakeX "
                                  "kernels before axle's first GEMM (blas.py); false: leave OpenBLAS as it is"),
    Flag("cpu_dedupe_kernels", True, "compile a top-level kernel once when later kernels of the program "
                                     "are the same code on other buffers (a model's repeated layers): "
                                     "kernels take their buffers' addresses as arguments "
                                     "(backends/cpu/context.py)"),
    Flag("cpu_compile_threads", 0, "threads LLVM compiles one CPU program on (its kernels split into "
                                   "modules, codegen/llvm_split.py); 0: one per core, 1: the whole module on "
                                   "the calling thread"),
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
    # cache bounds (least recently used entries go first)
    Flag("memory_cache_programs", 256, "compiled CPU programs kept in memory per process (the "
                                       "executable cache of backends/cpu/executable.py); 0: no limit"),
    Flag("result_pool_bytes", 1 << 30, "bytes of freed result buffers the CPU runtime keeps mapped "
                                       "for the next calls' results (backends/cpu/result_pool.py); "
                                       "0: every result freshly allocated"),
    Flag("jit_cache_entries", 64, "compiled signatures kept per function by axle.jax.jit and per "
                                  "graph by the torch backend; 0: no limit"),
]}


@dataclass(frozen=True)
class EnvVar:
    name: str
    help: str


# every environment variable axle reads, with what it means (read with env(name))
ENVIRONMENT = {e.name: e for e in [
    EnvVar("AXLE_FLAGS", "the flags above, as --name=value words"),
    EnvVar("AXLE_CACHE_DIR", "folder of the disk cache of compiled programs (default "
                             "$XDG_CACHE_HOME/axle); 'off', '0', 'none', 'false' or empty: no disk cache"),
    EnvVar("AXLE_CACHE_MAX_BYTES", "size of the disk cache in bytes (default 1 GiB); the least "
                                   "recently used programs go first"),
    EnvVar("AXLE_NUM_THREADS", "threads of axle's CPU pool (default: one per core this process may use)"),
    EnvVar("AXLE_TORCH_STRICT", "any non-empty value: the torch backend raises when a graph fails to "
                                "compile, instead of running it eagerly with a warning"),
    EnvVar("OPENBLAS_CORETYPE", "OpenBLAS's own choice of kernels: when set, axle leaves SciPy's "
                                "OpenBLAS on the kernels it names (see --cpu_blas_avx512)"),
    EnvVar("XDG_CACHE_HOME", "where the disk cache lives when AXLE_CACHE_DIR is not set (default ~/.cache)"),
    EnvVar("CUDA_HOME", "a CUDA installation the GPU backend looks in for libdevice and ptxas "
                        "(after it, /usr/local/cuda)"),
]}


def env(name: str) -> Optional[str]:
    """The value of environment variable `name` (one of ENVIRONMENT), or None when unset.
    Read on every call: a test or a program may change it while running."""
    if name not in ENVIRONMENT:
        raise KeyError(f"axle reads no environment variable {name}; add it to axle.flags.ENVIRONMENT "
                       f"with its help text")
    return os.environ.get(name)


def flags_text() -> str:
    """AXLE_FLAGS as set ("" when unset)."""
    return os.environ.get("AXLE_FLAGS", "")


@contextmanager
def scoped_env(**values: Optional[str]):
    """Set (None: unset) environment variables for the block, then restore them: for
    settings read by code that is not axle's, or by axle in this process (AXLE_FLAGS)."""
    old = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def child_environment(**values: str) -> dict:
    """The environment for a child process: this one's, with `values` set."""
    out = dict(os.environ)
    out.update(values)
    return out


def flag(name: str):
    """The current value of one flag (AXLE_FLAGS is read on each call, parsed once per text)."""
    return _parsed(flags_text())[name]


@functools.lru_cache(maxsize=8)
def _parsed(text: str) -> dict:
    return parse_flags(text)


def parse_flags(text: Optional[str] = None) -> dict:
    """Parse an AXLE_FLAGS string (default: the environment) into {name: value}."""
    text = flags_text() if text is None else text
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
    lines = [f"--{f.name} (default {f.default!r}): {f.help}" for f in FLAGS.values()]
    lines += ["", "environment variables:"]
    lines += [f"{e.name}: {e.help}" for e in ENVIRONMENT.values()]
    return "\n".join(lines)


def main(argv=None) -> int:
    """`axle flags`: print every flag and environment variable with its help."""
    print(describe())
    return 0
