"""axle's reference interpreter: the semantics of every StableHLO op, in numpy.

`interpret(module, *args)` runs a module. The op implementations live in the ops_*.py
files, one short function per op, registered by name in registry.py.
"""
from axle.interpreter.registry import InterpreterError, OpCall, Token, TOKEN, register, registered_ops

# the op implementations (each module registers its ops)
from axle.interpreter import (ops_elementwise, ops_chlo, ops_shape, ops_indexing, ops_dynamic,  # noqa: E402,F401,I001
                              ops_reduce, ops_linalg, ops_rng, ops_quant, collectives, ops_check, ops_sdy)

from axle.interpreter.evaluator import (ArgumentError, Evaluator, check_arguments, interpret, run_function,  # noqa: E402
                                        register_custom_call)

__all__ = ["interpret", "InterpreterError", "ArgumentError", "OpCall", "Token", "TOKEN", "register",
           "registered_ops", "register_custom_call", "Evaluator", "check_arguments", "run_function"]
