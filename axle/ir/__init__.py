"""axle's IR: types, attributes, operations and modules, with MLIR text in and out."""
from axle.ir.attributes import *  # noqa: F401,F403
from axle.ir.core import Block, BlockArgument, Module, Operation, OpResult, Region, Value, make_function
from axle.ir.ops import OPS, OpDef
from axle.ir.text import ParseError, parse_module, print_module, split_cases
from axle.ir.types import *  # noqa: F401,F403
from axle.ir import clone as _clone, core as _core, equality as _equality
from axle.ir.text import printer as _printer

# str(), clone() and == of ops and modules (core.py cannot import these: they import it)
_core.install_services(_printer.print_op, _printer.print_module, _clone.clone_op, _clone.clone_module,
                       _equality.modules_equal)


def parse_bytecode(data: bytes, name: str = "<bytecode>") -> Module:
    """A Module from MLIR bytecode or a StableHLO portable artifact (reads through jaxlib)."""
    from axle.ir.text.bytecode import parse_bytecode as parse
    return parse(data, name)


def parse_hlo(text: str, filename: str = "<hlo>") -> Module:
    """A StableHLO Module from XLA HLO text (`--xla_dump_to` *.before_optimizations.txt)."""
    from axle.ir.text.hlo import parse_hlo as parse
    return parse(text, filename)


__all__ = ["Block", "BlockArgument", "Module", "Operation", "OpResult", "Region", "Value", "make_function",
           "OPS", "OpDef", "ParseError", "parse_bytecode", "parse_hlo", "parse_module", "print_module", "split_cases"]
