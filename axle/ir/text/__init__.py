"""MLIR text in and out."""
from axle.ir.text.cursor import ParseError
from axle.ir.text.printer import print_module
from axle.ir.text.reader import parse_module, split_cases

__all__ = ["ParseError", "parse_module", "print_module", "split_cases"]
