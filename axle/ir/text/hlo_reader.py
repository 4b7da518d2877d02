"""XLA HLO text read into computations and instructions (hlo.py's `parse_hlo` drives this
reader and the emitter, hlo_emit.py; the module docstring there says how HLO maps)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from axle.ir.text.cursor import ParseError

_NAME = re.compile(r"%?([A-Za-z_][\w.\-]*)")
_WS = re.compile(r"\s*")


# -- shapes -------------------------------------------------------------------------------
PRIMITIVES = {"pred": "i1", "s2": "i2", "s4": "i4", "s8": "i8", "s16": "i16", "s32": "i32", "s64": "i64",
              "u2": "ui2", "u4": "ui4", "u8": "ui8", "u16": "ui16", "u32": "ui32", "u64": "ui64",
              "f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64", "c64": "complex<f32>",
              "c128": "complex<f64>", "f8e4m3fn": "f8E4M3FN", "f8e5m2": "f8E5M2", "f8e4m3": "f8E4M3",
              "f8e4m3fnuz": "f8E4M3FNUZ", "f8e5m2fnuz": "f8E5M2FNUZ", "f8e4m3b11fnuz": "f8E4M3B11FNUZ",
              "f8e3m4": "f8E3M4", "f4e2m1fn": "f4E2M1FN", "f8e8m0fnu": "f8E8M0FNU"}


@dataclass(frozen=True)
class Shape:
    """An array shape `f32[8,32]` (element type as MLIR writes it) or a tuple of shapes."""
    element: Optional[str] = None          # MLIR element type; None for a tuple
    dims: tuple = ()
    tuple_of: tuple = ()

    @property
    def is_tuple(self) -> bool:
        return self.element is None

    def mlir(self) -> str:
        if self.is_tuple:
            raise ValueError("a tuple has no tensor type")
        if self.element == "token":
            return "!stablehlo.token"
        return "tensor<" + "".join(f"{d}x" for d in self.dims) + self.element + ">"

    def leaves(self) -> list:
        if not self.is_tuple:
            return [self]
        return [leaf for s in self.tuple_of for leaf in s.leaves()]


@dataclass
class Instr:
    name: str
    shape: Shape
    opcode: str
    operands: list
    attrs: dict                    # name -> raw text of the value
    line: int
    col: int
    root: bool = False
    literal: str = ""              # constant(...)'s text; parameter(N)'s number
    attr_pos: dict = field(default_factory=dict)


@dataclass
class Computation:
    name: str
    params: list                   # [(name, Shape)]
    result: Shape
    instrs: list
    line: int
    entry: bool = False

    @property
    def root(self) -> Instr:
        for i in self.instrs:
            if i.root:
                return i
        return self.instrs[-1]


class HloReader:
    """A position in HLO text with MLIR-style errors (file:line:col and the line)."""

    def __init__(self, text: str, filename: str):
        self.text, self.filename = text, filename
        self.lines = text.split("\n")
        self.pos = 0

    def where(self, pos: int) -> tuple:
        line = self.text.count("\n", 0, pos) + 1
        col = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return line, col

    def error(self, message: str, pos: Optional[int] = None) -> ParseError:
        line, col = self.where(self.pos if pos is None else pos)
        return self.error_at(message, line, col)

    def error_at(self, message: str, line: int, col: int) -> ParseError:
        src = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return ParseError(message, self.filename, line, col, src)

    def skip_ws(self) -> None:
        while True:
            self.pos = _WS.match(self.text, self.pos).end()
            if self.text.startswith("/*", self.pos):
                end = self.text.find("*/", self.pos)
                self.pos = len(self.text) if end < 0 else end + 2
            elif self.text.startswith("//", self.pos):
                end = self.text.find("\n", self.pos)
                self.pos = len(self.text) if end < 0 else end
            else:
                return

    def peek(self, s: str) -> bool:
        self.skip_ws()
        return self.text.startswith(s, self.pos)

    def accept(self, s: str) -> bool:
        if self.peek(s):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str, what: str = "") -> None:
        if not self.accept(s):
            found = self.text[self.pos:self.pos + 12].split("\n")[0] or "end of input"
            raise self.error(f"expected '{s}'{' ' + what if what else ''}, found '{found}'")

    def name(self, what: str = "a name") -> str:
        self.skip_ws()
        m = _NAME.match(self.text, self.pos)
        if not m:
            found = self.text[self.pos:self.pos + 12].split("\n")[0] or "end of input"
            raise self.error(f"expected {what}, found '{found}'")
        self.pos = m.end()
        return m.group(1)

    def balanced(self) -> str:
        """Raw text of one attribute value: up to the next ',' or ')' at depth 0 (or line end)."""
        self.skip_ws()
        start, depth, t = self.pos, 0, self.text
        while self.pos < len(t):
            c = t[self.pos]
            if c == '"':
                end = self.pos + 1
                while end < len(t) and t[end] != '"':
                    end += 2 if t[end] == "\\" else 1
                self.pos = end + 1
                continue
            if c in "{([":
                depth += 1
            elif c in "})]":
                if depth == 0:
                    break
                depth -= 1
            elif (c == "," or c == "\n") and depth == 0:
                break
            self.pos += 1
        if depth:
            raise self.error("unbalanced brackets in this attribute value", start)
        return t[start:self.pos].strip()

    # -- shapes ---------------------------------------------------------------------------
    def shape(self) -> Shape:
        self.skip_ws()
        start = self.pos
        if self.accept("("):
            parts = []
            if not self.accept(")"):
                while True:
                    parts.append(self.shape())
                    if self.accept(")"):
                        break
                    self.expect(",", "between the elements of a tuple shape")
            return Shape(tuple_of=tuple(parts))
        prim = self.name("an element type (f32, s32, pred, ...)")
        if prim == "token":
            self.accept("[]")
            return Shape("token")
        if prim not in PRIMITIVES:
            raise self.error(f"unknown element type '{prim}'; known: {', '.join(PRIMITIVES)}", start)
        self.expect("[", "after the element type")
        dims = []
        if not self.accept("]"):
            while True:
                self.skip_ws()
                if self.text.startswith("<=", self.pos) or self.text.startswith("?", self.pos):
                    raise self.error("dynamic dimensions ('<=N', '?') in HLO text are not supported")
                m = re.compile(r"\d+").match(self.text, self.pos)
                if not m:
                    raise self.error("expected a dimension size")
                dims.append(int(m.group()))
                self.pos = m.end()
                if self.accept("]"):
                    break
                self.expect(",", "between dimensions")
        if self.text.startswith("{", self.pos):  # a layout follows ']' directly: dropped
            self.balanced_braces()
        return Shape(PRIMITIVES[prim], tuple(dims))

    def balanced_braces(self) -> str:
        self.skip_ws()
        start, depth = self.pos, 0
        while self.pos < len(self.text):
            c = self.text[self.pos]
            depth += c == "{"
            depth -= c == "}"
            self.pos += 1
            if depth == 0:
                return self.text[start:self.pos]
        raise self.error("unclosed '{'", start)


def _skip_tables(r: HloReader) -> None:
    """The FileNames/FunctionNames/FileLocations/StackFrames sections of newer dumps."""
    while True:
        r.skip_ws()
        m = re.compile(r"(FileNames|FunctionNames|FileLocations|StackFrames)\s*\n").match(r.text, r.pos)
        if not m:
            return
        r.pos = m.end()
        while True:
            line_end = r.text.find("\n", r.pos)
            line = r.text[r.pos:line_end if line_end >= 0 else len(r.text)]
            if not re.match(r"\s*\d+\s", line):
                break
            r.pos = len(r.text) if line_end < 0 else line_end + 1


def read_module(text: str, filename: str = "<hlo>"):
    """(module name, computations by name, the entry computation, the reader)."""
    r = HloReader(text, filename)
    r.expect("HloModule", "at the start of HLO text")
    name = r.name("the module's name")
    while r.accept(","):  # header attributes: entry_computation_layout={...}, ...
        r.name("a module attribute")
        r.expect("=")
        r.balanced()
    _skip_tables(r)
    comps: dict = {}
    entry = None
    while True:
        r.skip_ws()
        if r.pos >= len(r.text):
            break
        comp = _computation(r)
        if comp.name in comps:
            raise r.error_at(f"computation '{comp.name}' defined twice", comp.line, 1)
        comps[comp.name] = comp
        if comp.entry:
            if entry is not None:
                raise r.error_at("a second ENTRY computation", comp.line, 1)
            entry = comp
    if entry is None:
        raise r.error("no ENTRY computation in the module")
    return name, comps, entry, r


def _computation(r: HloReader) -> Computation:
    r.skip_ws()
    start = r.pos
    is_entry = r.accept("ENTRY")
    cname = r.name("a computation name ('%name (params) -> shape {')")
    params = []
    if r.accept("("):
        if not r.accept(")"):
            while True:
                pname = r.name("a parameter name")
                r.expect(":", "after the parameter's name")
                params.append((pname, r.shape()))
                if r.accept(")"):
                    break
                r.expect(",", "between parameters")
        r.expect("->", "before the computation's result shape")
        result = r.shape()
    else:
        result = None
    r.expect("{", "to open the computation's body")
    instrs = []
    while not r.accept("}"):
        if r.pos >= len(r.text):
            raise r.error(f"computation '{cname}' is not closed with '}}'", start)
        instrs.append(_instruction(r))
    if not instrs:
        raise r.error(f"computation '{cname}' has no instructions", start)
    line, _ = r.where(start)
    comp = Computation(cname, params, result, instrs, line, is_entry)
    if result is None:  # the short form `name {`: parameters from the parameter(N) instructions
        comp.result = comp.root.shape
        numbered = []
        for i in instrs:
            if i.opcode == "parameter":
                if not i.literal.isdigit():
                    raise r.error_at(f"parameter({i.literal}): expected a parameter number", i.line, i.col)
                numbered.append((int(i.literal), i))
        numbered.sort(key=lambda p: p[0])
        if [k for k, _ in numbered] != list(range(len(numbered))):
            raise r.error_at(f"computation '{cname}': parameters must be numbered 0..{len(numbered) - 1}",
                             line, 1)
        comp.params = [(i.name, i.shape) for _, i in numbered]
    return comp


def _instruction(r: HloReader) -> Instr:
    r.skip_ws()
    start = r.pos
    root = r.accept("ROOT")
    name = r.name("an instruction ('%name = shape opcode(operands)')")
    r.expect("=", "after the instruction's name")
    shape = r.shape()
    r.skip_ws()
    op_pos = r.pos
    opcode = r.name("an opcode")
    line, col = r.where(start)
    instr = Instr(name, shape, opcode, [], {}, line, col, root)
    r.expect("(", f"after '{opcode}'")
    if opcode in ("constant", "parameter"):
        depth, begin = 1, r.pos
        while depth:
            if r.pos >= len(r.text):
                raise r.error(f"'{opcode}(' is not closed", op_pos)
            depth += {"(": 1, ")": -1}.get(r.text[r.pos], 0)
            r.pos += 1
        instr.literal = r.text[begin:r.pos - 1].strip()
    elif not r.accept(")"):
        while True:
            r.skip_ws()
            if re.match(r"[a-z]\w*\[|\(", r.text[r.pos:r.pos + 12]) and not r.peek("%"):
                r.shape()  # older dumps write operands as `f32[3] %x`
            r.skip_ws()
            opos = r.pos
            instr.operands.append((r.name("an operand"), r.where(opos)))
            if r.accept(")"):
                break
            r.expect(",", "between operands")
    while r.accept(","):
        r.skip_ws()
        apos = r.pos
        key = r.name("an attribute name")
        r.expect("=", f"after attribute '{key}'")
        instr.attrs[key] = r.balanced()
        instr.attr_pos[key] = r.where(apos)
    return instr
