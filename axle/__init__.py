"""axle: an ML compiler and runtime for StableHLO, written in Python.

    import axle
    m = axle.parse_module(text)          # axle.ir.Module
    out = axle.interpret(m, x, y)        # reference semantics, numpy in and out
"""
__version__ = "0.1.0"

__all__ = ["interpret", "parse_module", "__version__"]


def __getattr__(name):  # lazy: `import axle` stays cheap
    if name == "interpret":
        from axle.interpreter import interpret
        return interpret
    if name == "parse_module":
        from axle.ir import parse_module
        return parse_module
    raise AttributeError(f"module 'axle' has no attribute {name!r}")
