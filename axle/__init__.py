"""axle: an ML compiler and runtime for StableHLO, written in Python.

    import axle
    m = axle.parse_module(text)          # axle.ir.Module
    out = axle.interpret(m, x, y)        # reference semantics, numpy in and out
"""
__version__ = "0.1.0"

__all__ = ["compile", "interpret", "load_exported", "parse_module", "register_custom_call", "__version__"]


def __getattr__(name):  # lazy: `import axle` stays cheap
    if name == "interpret":
        from axle.interpreter import interpret
        return interpret
    if name == "register_custom_call":
        # register_custom_call("my.target", fn): `stablehlo.custom_call @my.target` then runs
        # fn(call) (call.operands: numpy arrays, call.attrs: attributes) in the interpreter
        # and, as a host call, in compiled CPU programs
        from axle.interpreter.evaluator import register_custom_call
        return register_custom_call
    if name == "load_exported":  # a jax.export artifact (bytes or path) compiled by axle; needs jax
        from axle.jax.export import load_exported
        return load_exported
    if name == "parse_module":
        from axle.ir import parse_module
        return parse_module
    raise AttributeError(f"module 'axle' has no attribute {name!r}")


def compile(module, backend: str = "cpu", entry: str = "main", **options):
    """Compile a module (an axle.ir.Module or StableHLO text) for a backend; returns an
    executable: call it with numpy arrays."""
    if isinstance(module, str):
        from axle.ir import parse_module
        module = parse_module(module)
    if backend == "cpu":
        from axle.backends.cpu import compile as cpu_compile
        return cpu_compile(module, entry, **options)
    if backend == "interpreter":
        from axle.interpreter.evaluator import run_function
        from axle.ir.verifier import verify_signatures
        verify_signatures(module)

        class _Interpreted:
            def execute(self, args):
                return run_function(module, list(args), entry)

            def __call__(self, *args):
                out = self.execute(args)
                return out[0] if len(out) == 1 else tuple(out)
        return _Interpreted()
    raise ValueError(f"unknown backend '{backend}'; available: cpu, interpreter")
