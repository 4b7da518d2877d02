"""axle's IR: types, attributes, operations and modules, with MLIR text in and out."""
from axle.ir.attributes import *  # noqa: F401,F403
from axle.ir.core import Block, BlockArgument, Module, Operation, OpResult, Region, Value, make_function
from axle.ir.ops import OPS, OpDef
from axle.ir.text import ParseError, parse_module, print_module, split_cases
from axle.ir.types import *  # noqa: F401,F403

__all__ = ["Block", "BlockArgument", "Module", "Operation", "OpResult", "Region", "Value", "make_function",
           "OPS", "OpDef", "ParseError", "parse_module", "print_module", "split_cases"]
