"""HLO computations -> StableHLO text (generic op form), one rule per opcode in hlo_ops.py.

A value is `(ssa_name, mlir_type)`; an HLO tuple is a Python list of values (nested for
nested tuples). Each emitted line remembers the HLO line:col it came from, so that an error
found while reading the StableHLO text is reported at the HLO instruction.
"""
from __future__ import annotations

import re
from typing import Optional

from axle.ir.text.hlo_reader import Computation, HloReader, Instr, Shape

RULES: dict = {}  # HLO opcode -> rule(emitter, instruction, operand values) (hlo_ops*.py)


def rule(*opcodes):
    def register(fn):
        for name in opcodes:
            RULES[name] = fn
        return fn
    return register


_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')


def leaves(v) -> list:
    if isinstance(v, list):
        return [x for item in v for x in leaves(item)]
    return [v]


def array_attr(xs, et: str = "i64") -> str:
    xs = list(xs)
    if et == "i1":
        return f"array<i1{': ' if xs else ''}{', '.join('true' if x else 'false' for x in xs)}>"
    return f"array<{et}{': ' if xs else ''}{', '.join(str(int(x)) for x in xs)}>"


class Emitter:
    def __init__(self, reader: HloReader, comps: dict):
        self.reader, self.comps = reader, comps
        self.lines: list = []          # (text, (line, col) or None)
        self.counter = 0
        self.indent = 2
        self.instr: Optional[Instr] = None
        self.active: list = []         # computations being inlined (recursion guard)

    # -- names and errors -------------------------------------------------------------------
    def fresh(self) -> str:
        self.counter += 1
        return f"%v{self.counter}"

    def error(self, message: str, instr: Optional[Instr] = None, attr: Optional[str] = None):
        instr = instr or self.instr
        line, col = instr.attr_pos.get(attr, (instr.line, instr.col)) if attr else (instr.line, instr.col)
        return self.reader.error_at(message, line, col)

    def attr(self, name: str, default=None, required: bool = False) -> Optional[str]:
        raw = self.instr.attrs.get(name)
        if raw is None:
            if required:
                raise self.error(f"'{self.instr.opcode}' needs the attribute '{name}='")
            return default
        return raw

    def location(self) -> str:
        i = self.instr
        fname = self.reader.filename.replace("\\", "\\\\").replace('"', '\\"')
        pos = f'"{fname}":{i.line}:{i.col}'
        m = _OP_NAME.search(i.attrs.get("metadata", ""))
        return f'loc("{m.group(1)}"({pos}))' if m else f"loc({pos})"

    def put(self, text: str) -> None:
        origin = (self.instr.line, self.instr.col) if self.instr else None
        self.lines.append((" " * self.indent + text, origin))

    # -- emitting ops -----------------------------------------------------------------------
    def op(self, name: str, operands: list, results: list, attrs: Optional[dict] = None,
           regions: Optional[list] = None) -> list:
        """Emit one op; returns its result values. `regions`: callables that emit a region."""
        names = [self.fresh() for _ in results]
        head = (", ".join(names) + " = ") if len(names) == 1 else ""
        if len(names) > 1:
            base = self.fresh()
            head = f"{base}:{len(names)} = "
            names = [f"{base}#{k}" for k in range(len(names))]
        attr_text = ""
        if attrs:
            attr_text = " {" + ", ".join(f"{k} = {v}" for k, v in attrs.items()) + "}"
        sig = f"({', '.join(t for _, t in operands)}) -> ({', '.join(results)})"
        args = ", ".join(s for s, _ in operands)
        if not regions:
            self.put(f'{head}"{name}"({args}){attr_text} : {sig} {self.location()}')
            return list(zip(names, results))
        self.put(f'{head}"{name}"({args}) (')
        instr = self.instr
        for k, emit_region in enumerate(regions):
            self.indent += 2
            emit_region()
            self.indent -= 2
            self.instr = instr
            if k + 1 < len(regions):
                self.lines[-1] = (self.lines[-1][0] + ",", self.lines[-1][1])
        self.put(f"){attr_text} : {sig} {self.location()}")
        return list(zip(names, results))

    def one(self, name: str, operands: list, result: str, attrs: Optional[dict] = None):
        return self.op(name, operands, [result], attrs)[0]

    def region(self, comp_name: str, arg_types: list, attr: str = "to_apply"):
        """A callable that emits the computation `comp_name` as a region `({ ^bb0(...): ... })`
        taking one block argument per leaf of its parameters, returning its root's leaves."""
        comp = self.computation(comp_name, attr)

        def emit():
            self.put("{")
            args = self.block_args(comp, arg_types)
            root = self.inline(comp, args)
            vals = leaves(root)
            self.instr = comp.root
            self.put(f'"stablehlo.return"({", ".join(s for s, _ in vals)}) : '
                     f'({", ".join(t for _, t in vals)}) -> () {self.location()}')
            self.indent -= 2
            self.put("}")
            self.indent += 2
        return emit

    def block_args(self, comp: Computation, arg_types: Optional[list]):
        """`^bb0(...)` for the leaves of comp's parameters; the parameters as (tuples of) values."""
        params = []
        decl = []
        for _, shape in comp.params:
            def build(s: Shape):
                if s.is_tuple:
                    return [build(e) for e in s.tuple_of]
                name = self.fresh()
                decl.append(f"{name}: {s.mlir()}")
                return (name, s.mlir())
            params.append(build(shape))
        self.indent -= 2
        self.put(f"^bb0({', '.join(decl)}):")
        self.indent += 2
        return params

    def computation(self, name_raw: str, attr: str) -> Computation:
        name = name_raw.strip().lstrip("%")
        comp = self.comps.get(name)
        if comp is None:
            raise self.error(f"'{attr}' names computation '{name}', which is not defined", attr=attr)
        return comp

    def ordered(self, comp: Computation) -> list:
        """comp's instructions with every operand before its users (XLA prints them so; text
        written by hand need not be), by an explicit depth-first walk."""
        by_name = {}
        for ins in comp.instrs:
            if ins.name in by_name:
                raise self.error(f"'%{ins.name}' is defined twice in computation '{comp.name}'", ins)
            by_name[ins.name] = ins
        done, order, on_path = set(), [], set()
        for top in comp.instrs:
            stack = [(top, 0)]
            while stack:
                ins, k = stack.pop()
                if ins.name in done:
                    continue
                if k == 0:
                    on_path.add(ins.name)
                if k < len(ins.operands):
                    stack.append((ins, k + 1))
                    oname, (line, col) = ins.operands[k]
                    dep = by_name.get(oname)
                    if dep is None:
                        raise self.reader.error_at(f"use of undefined value '%{oname}' (not defined in "
                                                   f"computation '{comp.name}')", line, col)
                    if dep.name in on_path:
                        raise self.reader.error_at(f"'%{oname}' depends on itself (a cycle in "
                                                   f"computation '{comp.name}')", line, col)
                    if dep.name not in done:
                        stack.append((dep, 0))
                    continue
                on_path.discard(ins.name)
                done.add(ins.name)
                order.append(ins)
        return order

    def inline(self, comp: Computation, args: list):
        """Emit comp's instructions here with its parameters bound to `args`; its root value."""
        if comp.name in self.active:
            raise self.error(f"computation '{comp.name}' calls itself")
        self.active.append(comp.name)
        if len(args) != len(comp.params):
            raise self.error(f"computation '{comp.name}' takes {len(comp.params)} parameters, "
                             f"given {len(args)}")
        env: dict = {}
        outer = self.instr
        for ins in self.ordered(comp):
            self.instr = ins
            if ins.name in env:
                raise self.error(f"'%{ins.name}' is defined twice in computation '{comp.name}'")
            if ins.opcode == "parameter":
                try:
                    k = int(ins.literal)
                except ValueError:
                    raise self.error(f"parameter({ins.literal}): expected a parameter number") from None
                if not 0 <= k < len(args):
                    raise self.error(f"parameter({k}) of computation '{comp.name}', which has "
                                     f"{len(args)} parameters")
                env[ins.name] = args[k]
                continue
            operands = []
            for oname, (line, col) in ins.operands:
                if oname not in env:
                    raise self.reader.error_at(f"use of undefined value '%{oname}' (operands must be "
                                               f"defined earlier in computation '{comp.name}')", line, col)
                operands.append(env[oname])
            rule = RULES.get(ins.opcode)
            if rule is None:
                raise self.error(f"HLO opcode '{ins.opcode}' is not supported by axle's HLO reader")
            env[ins.name] = rule(self, ins, operands)
        self.active.pop()
        self.instr = outer
        return env[comp.root.name]
