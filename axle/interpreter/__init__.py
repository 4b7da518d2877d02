"""axle's reference interpreter: the semantics of every StableHLO op, in numpy.

`interpret(module, *args)` runs a module. The op implementations live in the ops_*.py
files, one short function per op, registered by name in registry.py.
"""
import importlib

from axle.interpreter.registry import InterpreterError, OpCall, Token, TOKEN, register, registered_ops

for _m in ("ops_elementwise", "ops_chlo", "ops_shape", "ops_indexing", "ops_dynamic", "ops_reduce",
           "ops_linalg", "ops_rng", "ops_quant", "collectives", "ops_check", "ops_sdy"):
    try:
        importlib.import_module(f"axle.interpreter.{_m}")
    except ModuleNotFoundError as _e:  # a module still being written
        if _e.name != f"axle.interpreter.{_m}":
            raise

from axle.interpreter.evaluator import (ArgumentError, Evaluator, check_arguments, interpret, run_function,  # noqa: E402
                                        register_custom_call)

__all__ = ["interpret", "InterpreterError", "ArgumentError", "OpCall", "Token", "TOKEN", "register",
           "registered_ops", "register_custom_call", "Evaluator", "check_arguments", "run_function"]
