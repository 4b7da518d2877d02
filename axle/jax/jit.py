"""`axle.jax.jit`: jax.jit's signature and behaviour, with axle compiling and running.

    step = axle.jax.jit(train_step, donate_argnums=0)
    params, loss = step(params, batch)          # pytrees of jax or numpy arrays in, jax arrays out

JAX traces and lowers the function to StableHLO (`jax.jit(fn, ...).lower(*args)`); axle
parses that text and compiles it (`axle.compile(text, backend=...)`). One compiled entry is
kept per call signature: the pytree structure of the dynamic arguments, each leaf's shape,
dtype and weak type, and the values of the static arguments (as jax.jit keys its cache).

A call on a known signature flattens the arguments (jax's C++ pytree), looks the signature
up in a dict, hands the leaves to the executable as numpy arrays (a jax array on the CPU is
viewed without a copy), and wraps the results as jax arrays without a copy
(`batched_device_put` of the fresh numpy results); `benchmarks/results/bridges-jax.md` has
the measured cost. Nothing is traced or lowered again.

Donation: `donate_argnums` / `donate_argnames` mean what they mean to jax.jit. The donated
arguments are marked in the lowered module (`tf.aliasing_output` / `jax.buffer_donor`, as
JAX writes them), and after the call every donated jax array is deleted, so using it again
raises JAX's own "Array has been deleted" error.

Recompiles are explained on request (`explain=True`, or `AXLE_FLAGS=--explain_cache_misses`
where the runtime defines that flag): the log line (logger `axle.jax`, also kept in
`jitted.last_miss`) names the argument whose shape, dtype, weak type or static value changed,
or the pytree structure that did.
"""
from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

import jax
from jax import tree_util

log = logging.getLogger("axle.jax")
_flatten, _unflatten = tree_util.tree_flatten, tree_util.tree_unflatten
_SCALARS = (bool, int, float, complex)


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    if isinstance(x, (int, str)):
        return (x,)
    return tuple(x)


def _explain_flag() -> bool:
    try:  # the runtime branch defines --explain_cache_misses; before it, the flag is off
        from axle.flags import flag
        return bool(flag("explain_cache_misses"))
    except (KeyError, ValueError, ImportError):
        return False


try:
    from jax._src.array import ArrayImpl as _ArrayImpl
except ImportError:  # another jax layout: the generic checks below still apply
    _ArrayImpl = None


def _leaf_signature(x):
    """What of one argument leaf the compiled code depends on: (shape, dtype, weak type)."""
    t = type(x)
    if t is _ArrayImpl:
        return (x.shape, x.dtype, x.weak_type)
    if t is np.ndarray:
        return (x.shape, x.dtype, False)
    if t in _SCALARS:
        return t  # a Python scalar is weakly typed; its value does not matter
    if isinstance(x, jax.Array):
        return (x.shape, x.dtype, x.weak_type)
    if isinstance(x, np.generic):
        return ((), x.dtype, False)
    if isinstance(x, jax.ShapeDtypeStruct):  # lower(...) with abstract arguments
        return (tuple(x.shape), np.dtype(x.dtype), bool(getattr(x, "weak_type", False)))
    a = np.asarray(x)
    return (a.shape, a.dtype, False)


def _describe_leaf(sig) -> str:
    if isinstance(sig, type):
        return f"weakly typed Python {sig.__name__}"
    shape, dtype, weak = sig
    return f"{np.dtype(dtype).name}[{','.join(map(str, shape))}]" + (" (weak type)" if weak else "")


class _Signature:
    """Resolves static_argnums/static_argnames and donate_* against the function's signature."""

    def __init__(self, fn, static_argnums, static_argnames, donate_argnums, donate_argnames):
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            params = []
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self.names = positional

        def resolve(nums, names):
            nums, names = set(_as_tuple(nums)), set(_as_tuple(names))
            for n in list(nums):  # an index names the parameter too, and a name its index
                if 0 <= n < len(positional):
                    names.add(positional[n])
            for name in list(names):
                if name in positional:
                    nums.add(positional.index(name))
            return tuple(sorted(nums)), tuple(sorted(names))

        self.static_argnums, self.static_argnames = resolve(static_argnums, static_argnames)
        self.donate_argnums, self.donate_argnames = resolve(donate_argnums, donate_argnames)
        self.static_set = frozenset(self.static_argnums)
        self.static_names = frozenset(self.static_argnames)

    def split(self, args: tuple, kwargs: dict):
        """(dynamic positional args, dynamic kwargs, static values as a hashable tuple)."""
        static = ()
        if self.static_set:
            dyn, st = [], []
            for i, a in enumerate(args):
                if i in self.static_set:
                    st.append((i, a))
                else:
                    dyn.append(a)
            args, static = tuple(dyn), tuple(st)
        if kwargs and self.static_names:
            st = tuple(sorted((k, v) for k, v in kwargs.items() if k in self.static_names))
            if st:
                kwargs = {k: v for k, v in kwargs.items() if k not in self.static_names}
                static = static + st
        return args, kwargs, static

    def arg_name(self, i) -> str:
        if isinstance(i, str):
            return f"argument '{i}'"
        name = f" '{self.names[i]}'" if i < len(self.names) else ""
        return f"argument {i}{name}"


@dataclass
class _Entry:
    """One compiled signature."""
    lowered: Any                  # jax's Lowered
    text: str                     # the StableHLO text JAX wrote
    executable: Any               # axle's executable
    in_dtypes: tuple              # numpy dtype each leaf is converted to
    out_tree: Any                 # pytree of the results
    out_avals: tuple              # ShapedArray per result leaf (weak types kept)
    donated: tuple                # flat indices of donated leaves
    donate_hint: bool             # whether axle.compile took the donation hint
    out_shardings: tuple = ()     # a partitioned program: jax's sharding of each result leaf


def _compile_options(options: dict, donated: Sequence[int]) -> tuple[dict, bool]:
    """Pass the donated leaves to axle.compile only if it has such a parameter."""
    import axle
    params = inspect.signature(axle.compile).parameters
    for name in ("donate_argnums", "donate"):
        if name in params and donated:
            return dict(options, **{name: tuple(donated)}), True
    return options, False


class Jitted:
    """What `axle.jax.jit(fn, ...)` returns: call it like the jax.jit-wrapped function."""

    def __init__(self, fn: Callable, *, static_argnums=None, static_argnames=None, donate_argnums=None,
                 donate_argnames=None, keep_unused: bool = False, backend: str = "cpu",
                 explain: bool = False, compile_options: Optional[dict] = None, **jax_options):
        if not callable(fn):
            raise TypeError(f"axle.jax.jit: expected a function, got {type(fn).__name__}")
        self.fn = fn
        self.backend = backend
        self.explain = explain
        self.compile_options = dict(compile_options or {})
        self._sig = _Signature(fn, static_argnums, static_argnames, donate_argnums, donate_argnames)
        # keep_unused=True: the lowered @main takes every dynamic leaf, in flattening order
        self._jax = jax.jit(fn, static_argnums=self._sig.static_argnums, static_argnames=self._sig.static_argnames,
                            donate_argnums=self._sig.donate_argnums, donate_argnames=self._sig.donate_argnames,
                            keep_unused=True, **jax_options)
        from axle.flags import flag
        from axle.lru import LRU
        self._cache = LRU(lambda: flag("jit_cache_entries"))  # bounded: least recently used out
        self.last_miss: Optional[str] = None
        self.compiles = 0
        try:
            self.__wrapped__ = fn
            self.__name__ = getattr(fn, "__name__", "fn")
            self.__doc__ = getattr(fn, "__doc__", None)
        except AttributeError:
            pass

    def _key(self, args, kwargs):
        if self._sig.static_set or (kwargs and self._sig.static_names):
            dyn_args, dyn_kwargs, static = self._sig.split(args, kwargs)
        else:
            dyn_args, dyn_kwargs, static = args, kwargs, ()
        leaves, treedef = tree_util.tree_flatten((dyn_args, dyn_kwargs))
        try:
            key = (treedef, static, tuple(map(_leaf_signature, leaves)))
            hash(key)
        except TypeError as e:
            raise ValueError(f"axle.jax.jit: a static argument of {self.__name__} is not hashable "
                             f"(static arguments must be hashable, as for jax.jit): {e}") from None
        return key, leaves, dyn_args, dyn_kwargs

    def __call__(self, *args, **kwargs):
        sig = self._sig
        if sig.static_set or (kwargs and sig.static_names):
            key, leaves, _, _ = self._key(args, kwargs)
        else:  # the common case, inlined: no static arguments, so the key always hashes
            leaves, treedef = _flatten((args, kwargs))
            key = (treedef, (), tuple([_leaf_signature(x) for x in leaves]))
        entry = self._cache.get(key)
        if entry is None:
            entry = self._miss(key, args, kwargs)
        flat = [np.asarray(x) if type(x) is _ArrayImpl and x.dtype == dt else
                x if type(x) is np.ndarray and x.dtype == dt else np.asarray(x, dt)
                for x, dt in zip(leaves, entry.in_dtypes)]
        outs = entry.executable.execute(flat)
        # donation as jax.jit does it: the donated jax arrays are deleted. When the runtime took
        # the hint it may have written a result into a donated input's memory; that memory was
        # handed over as a numpy view, which holds its own reference to the jax buffer, so the
        # delete does not free it while the result uses it (and the runtime may have deleted
        # the array already)
        for i in entry.donated:
            x = leaves[i]
            if isinstance(x, jax.Array) and not x.is_deleted():
                x.delete()
        if entry.out_shardings:  # sharded jax arrays on XLA's devices, as jax.jit returns them
            return _unflatten(entry.out_tree, _put_sharded(outs, entry.out_shardings))
        put = _PUT[0] if _PUT else _device_put()
        return _unflatten(entry.out_tree, [put(o, a) for o, a in zip(outs, entry.out_avals)])

    # -- compiling ------------------------------------------------------------------------
    def _miss(self, key, args, kwargs) -> _Entry:
        if self._cache and (self.explain or _explain_flag()):
            self.last_miss = self._explain(key, args, kwargs)
            log.warning("%s", self.last_miss)
        entry = self._build(self._jax.lower(*args, **kwargs), key[0])
        self._cache[key] = entry
        return entry

    def _build(self, lowered, treedef) -> _Entry:
        import axle
        from axle.ir import parse_module
        text = lowered.as_text()
        module = parse_module(text, f"<jax.jit({self.__name__})>")
        main = module.function("main")
        in_types = list(main.function_type.inputs)
        in_avals = tree_util.tree_leaves(lowered.in_avals)
        if len(in_types) != len(in_avals):
            raise NotImplementedError(
                f"axle.jax.jit({self.__name__}): the lowered @main takes {len(in_types)} values for "
                f"{len(in_avals)} argument leaves (ordered effects or tokens, such as jax.debug.print "
                f"with ordered=True, are not supported)")
        donated = tuple(i for i, info in enumerate(tree_util.tree_leaves(lowered.args_info)) if info.donated)
        options, hint = _compile_options(self.compile_options, donated)
        from axle.sharding.run import ShardedExecutable, is_sharded
        out_shardings = ()
        if is_sharded(module):  # in_shardings / out_shardings over several devices: partition (docs/sharding.md)
            executable, hint = ShardedExecutable(module, backend=self.backend), False
            out_shardings = _out_shardings(lowered)
        else:
            executable = axle.compile(module, backend=self.backend, **options)
        self.compiles += 1
        out_avals = _out_avals(lowered)
        return _Entry(lowered, text, executable, tuple(np.dtype(t.dtype) for t in in_types),
                      lowered.out_tree, tuple(out_avals), donated, hint, out_shardings)

    def _explain(self, key, args, kwargs) -> str:
        """Name what differs between this call's signature and the closest cached one."""
        treedef, static, sigs = key
        head = f"axle.jax.jit({self.__name__}): recompiling (signature {len(self._cache) + 1})"
        same_tree = [k for k in self._cache if k[0] == treedef]
        if not same_tree:
            old = next(reversed(self._cache))[0]
            return f"{head}: the pytree structure of the arguments changed: {old} -> {treedef}"
        diffs = []
        best = min(same_tree, key=lambda k: (k[1] != static) + sum(a != b for a, b in zip(k[2], sigs)))
        old_static = dict(best[1])
        for i, v in static:
            if i not in old_static:
                diffs.append(f"static {self._sig.arg_name(i)} given now")
            elif old_static[i] != v:
                diffs.append(f"static {self._sig.arg_name(i)} changed: {old_static[i]!r} -> {v!r}")
        dyn_args, dyn_kwargs, _ = self._sig.split(args, kwargs)
        paths = [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path((dyn_args, dyn_kwargs))[0]]
        dynamic_positions = [i for i in range(len(args)) if i not in self._sig.static_set]
        for path, a, b in zip(paths, best[2], sigs):
            if a != b:
                diffs.append(f"{_path_name(path, dynamic_positions, self._sig)}: "
                             f"{_describe_leaf(a)} -> {_describe_leaf(b)}")
        return f"{head}: " + ("; ".join(diffs) if diffs else "no difference found")

    def lower(self, *args, **kwargs) -> "Lowered":
        key, _, _, _ = self._key(args, kwargs)
        return Lowered(self, key, self._jax.lower(*args, **kwargs))

    def clear_cache(self) -> None:
        self._cache.clear()

    def _cache_size(self) -> int:
        return len(self._cache)


def _out_shardings(lowered) -> tuple:
    """jax's sharding of each result leaf of a lowered sharded program (() when jax gives none)."""
    shardings = tuple(getattr(leaf, "sharding", None) for leaf in tree_util.tree_leaves(lowered.out_info))
    return shardings if all(isinstance(s, jax.sharding.Sharding) for s in shardings) else ()


def _put_sharded(outs, shardings) -> list:
    """Global results -> jax arrays with the requested shardings: each of XLA's devices gets its
    block (jax.make_array_from_callback)."""
    return [jax.make_array_from_callback(o.shape, s, lambda idx, o=o: o[idx]) for o, s in zip(outs, shardings)]


def _out_avals(lowered) -> list:
    """The result avals with their weak types (jax keeps them in `_out_types`)."""
    types = getattr(lowered, "_out_types", None)
    if isinstance(types, tuple) and len(types) == 2 and isinstance(types[1], list):
        return types[1]
    return [jax.core.ShapedArray(s.shape, s.dtype) for s in tree_util.tree_leaves(lowered.out_info)]


def _path_name(path: str, dynamic_positions, sig: _Signature) -> str:
    """'[0][1]['w']' of the flattened (args, kwargs) -> "argument 1 'params'['w']"."""
    import re
    m = re.match(r"\[(\d)\]\[('?[^\]]*'?)\](.*)", path)
    if not m:
        return f"argument{path}"
    group, index, rest = m.groups()
    if group == "0":
        return sig.arg_name(dynamic_positions[int(index)]) + rest
    return sig.arg_name(index.strip("'")) + rest


_PUT: list = []


def _device_put():
    if _PUT:
        return _PUT[0]
    try:
        from jax._src.lib import _jax
        device = jax.devices("cpu")[0]
        sharding = jax.sharding.SingleDeviceSharding(device)
        batched, devices = _jax.batched_device_put, [device]
        probe = batched(jax.core.ShapedArray((1,), np.float32), sharding, [np.zeros(1, np.float32)], devices, False)
        assert isinstance(probe, jax.Array)

        def put(x, aval):  # zero copy: the array keeps the numpy result alive
            return batched(aval, sharding, [x], devices, True)
    except Exception:  # a jax without this internal: the public, copying path
        def put(x, aval):
            return jax.device_put(x)
    _PUT.append(put)
    return put


class Lowered:
    """`jitted.lower(*args)`: the StableHLO JAX wrote; `.compile()` gives axle's executable."""

    def __init__(self, jitted: Jitted, key, lowered):
        self._jitted, self._key, self.jax_lowered = jitted, key, lowered

    def as_text(self, dialect: Optional[str] = None, **kw) -> str:
        return self.jax_lowered.as_text(**kw)

    def compiler_ir(self):
        """The module as axle's IR."""
        from axle.ir import parse_module
        return parse_module(self.as_text())

    def compile(self) -> "Compiled":
        j = self._jitted
        entry = j._cache.get(self._key)
        if entry is None:
            entry = j._build(self.jax_lowered, self._key[0])
            j._cache[self._key] = entry
        return Compiled(j, entry)


class Compiled:
    """`jitted.lower(*args).compile()`: callable on arguments of that one signature."""

    def __init__(self, jitted: Jitted, entry: _Entry):
        self._jitted, self._entry = jitted, entry
        self.executable = entry.executable

    def as_text(self) -> str:
        return self._entry.text

    def __call__(self, *args, **kwargs):
        key, _, _, _ = self._jitted._key(args, kwargs)
        if self._jitted._cache.get(key) is not self._entry:
            raise TypeError("axle.jax.jit: the compiled function was called with arguments of another "
                            "signature (shapes, dtypes, pytree or static values) than it was lowered for")
        return self._jitted(*args, **kwargs)


def jit(fn: Optional[Callable] = None, *, static_argnums=None, static_argnames=None, donate_argnums=None,
        donate_argnames=None, keep_unused: bool = False, backend: str = "cpu", explain: bool = False,
        compile_options: Optional[dict] = None, **jax_options):
    """jax.jit with axle as the compiler: JAX traces and lowers `fn`, axle compiles and runs it.

    static_argnums / static_argnames: arguments that are Python values baked into the
    program (must be hashable; a new value compiles again). donate_argnums /
    donate_argnames: arguments whose jax arrays are deleted after the call, as jax.jit does.
    keep_unused: accepted for compatibility (axle always keeps every argument).
    backend: axle's backend ("cpu" or "interpreter"); compile_options: passed to axle.compile.
    explain: log (logger `axle.jax`) why each recompile happened. Other keyword arguments
    go to jax.jit for lowering. Usable as a decorator, with or without arguments."""
    opts = dict(static_argnums=static_argnums, static_argnames=static_argnames, donate_argnums=donate_argnums,
                donate_argnames=donate_argnames, keep_unused=keep_unused, backend=backend, explain=explain,
                compile_options=compile_options, **jax_options)
    if fn is None:
        return lambda f: Jitted(f, **opts)
    return Jitted(fn, **opts)
