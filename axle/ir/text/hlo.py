"""XLA HLO text in: `parse_hlo(text)` -> a StableHLO module in axle's IR.

Reads what XLA prints (`--xla_dump_to` `*.before_optimizations.txt`, `HloModule.to_string()`,
torch_xla and TensorFlow dumps): the `HloModule` header, the FileNames / FunctionNames /
FileLocations / StackFrames tables (skipped), computations `%name (p: shape, ...) -> shape {`,
one `ENTRY`, and instructions `[ROOT] %name = shape opcode(operands), attr=value, ...`.

How it maps (hlo_ops.py has one rule per opcode):
- A tuple is not a value in StableHLO: `tuple(...)` makes a Python list of values,
  `get-tuple-element` picks one, and a tuple-typed parameter (of a while body, a conditional
  branch, the entry) becomes one block argument per leaf. The ENTRY's tuple result becomes
  the function's results.
- Called computations are inlined where they are used: as the region of reduce /
  reduce-window / map / sort / scatter / select-and-scatter, as while's cond and body, as the
  branches of conditional, and as the body of `call`.
- Layouts (`{1,0}`) are accepted and dropped: HLO values are logical arrays.
- `metadata={op_name=... source_file=... source_line=...}` and the HLO position become the
  op's location: `loc("op_name"("file.hlo":line:col))`, so a verifier error names the HLO line.

The text is translated into StableHLO text (generic op form) and read by axle's MLIR
parser; every error is a ParseError with the HLO file's line:col and the line shown.

Modules: hlo_reader.py reads the HLO text into computations; hlo_emit.py emits StableHLO
text from them with one rule per opcode (hlo_ops.py, hlo_ops_region.py); this module drives
them and reports each error at the HLO instruction it comes from.
"""
from __future__ import annotations

import re

from axle.ir.text import hlo_ops, hlo_ops_region  # noqa: F401  (register the opcode rules)
from axle.ir.text.cursor import ParseError
from axle.ir.text.hlo_emit import Emitter, leaves
from axle.ir.text.hlo_reader import Shape, read_module


def hlo_to_stablehlo_text(text: str, filename: str = "<hlo>"):
    """(StableHLO text, origin of each of its lines: (HLO line, col) or None)."""
    name, comps, entry, reader = read_module(text, filename)
    e = Emitter(reader, comps)
    e.instr = entry.instrs[0]
    e.indent = 4
    args, decl = [], []
    for pname, shape in entry.params:
        def build(s: Shape, base=pname):
            if s.is_tuple:
                return [build(x, base) for x in s.tuple_of]
            ssa = e.fresh()
            decl.append(f"{ssa}: {s.mlir()}")
            return (ssa, s.mlir())
        args.append(build(shape))
    root = e.inline(entry, args)
    vals = leaves(root)
    e.instr = entry.root
    e.put(f'"func.return"({", ".join(s for s, _ in vals)}) : ({", ".join(t for _, t in vals)}) -> ()')
    header = [(f"module @{_sym(name)} {{", None),
              (f"  func.func @main({', '.join(decl)}) -> ({', '.join(t for _, t in vals)}) {{", (entry.line, 1))]
    lines = header + e.lines + [("  }", None), ("}", None)]
    return "\n".join(t for t, _ in lines) + "\n", [o for _, o in lines]


def _sym(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][\w.$]*", name) else '"' + name.replace('"', '') + '"'


def parse_hlo(text: str, filename: str = "<hlo>"):
    """A StableHLO axle.ir.Module (entry function @main) from XLA HLO text.

    The module is verified. Raises ParseError with the HLO file's line:col for malformed or
    unsupported input, and for an instruction whose StableHLO form the verifier refuses."""
    from axle.ir.text.reader import parse_module
    mlir, origins = hlo_to_stablehlo_text(text, filename)
    from axle.ir.verifier import VerificationError, verify
    try:
        module = parse_module(mlir, filename + ".stablehlo.mlir")
        verify(module)
        return module
    except VerificationError as err:
        m = re.search(r'":(\d+):(\d+)\)+$', str(getattr(err.op, "location", "") or ""))
        if m is None:
            raise
        line, col = int(m.group(1)), int(m.group(2))
        raise ParseError(f"{err.op.name if err.op else 'module'}: {err.detail}", filename, line, col,
                         text.split("\n")[line - 1]) from err
    except ParseError as err:
        origin = origins[err.line - 1] if 0 < err.line <= len(origins) else None
        if origin is None:
            raise
        src = text.split("\n")[origin[0] - 1]
        raise ParseError(f"{err.message} (in the StableHLO this instruction becomes: "
                         f"{mlir.splitlines()[err.line - 1].strip()[:160]})",
                         filename, origin[0], origin[1], src) from err
