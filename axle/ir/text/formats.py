"""Pretty (custom) syntax of ops: how each op's short form reads and prints.

The op table names a `format` per op; this file has one reader per format and the
matching writers. A writer only prints the short form when the op's attributes are
exactly what its reader produces, so every printed op reads back equal; otherwise the
printer falls back to the generic form.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from axle.ir import attributes as A
from axle.ir import types as T
from axle.ir.core import Block, Operation, Region
from axle.ir.ops import OpDef

I64 = T.i64
I32 = T.i32

# Canonical field order of StableHLO's struct attributes (used by parser and printer).
DOT_FIELDS = ("lhs_batching_dimensions", "rhs_batching_dimensions", "lhs_contracting_dimensions",
              "rhs_contracting_dimensions")


# ---------------------------------------------------------------- shared readers


def _keyword_value(p, kind: str, attrs: dict, attr_name: str, pos: int):
    if kind == "i64_array":
        attrs[attr_name] = A.DenseArrayAttr(I64, tuple(_int_list(p)))
    elif kind == "i64":
        attrs[attr_name] = A.IntegerAttr(p.integer(), I64)
    elif kind == "bool":
        if p.accept_keyword("true"):
            attrs[attr_name] = A.BoolAttr(True)
        elif p.accept_keyword("false"):
            attrs[attr_name] = A.BoolAttr(False)
        else:
            raise p.error(f"expected true or false, found {p.describe()}")
    elif kind == "f64":
        txt = p.number_text()
        if txt is None:
            raise p.error(f"expected a number, found {p.describe()}")
        attrs[attr_name] = A.FloatAttr(float(txt), T.f64)
    elif kind == "string":
        attrs[attr_name] = A.StringAttr(p.string())
    elif kind.startswith("enum:"):
        attrs[attr_name] = A.EnumAttr("stablehlo", kind[5:], p.bare_id("enum value"))
    elif kind == "precision":
        p.expect("[")
        vals = []
        if not p.accept("]"):
            vals.append(A.EnumAttr("stablehlo", "precision", p.bare_id("precision")))
            while p.accept(","):
                vals.append(A.EnumAttr("stablehlo", "precision", p.bare_id("precision")))
            p.expect("]")
        attrs[attr_name] = A.ArrayAttr(tuple(vals))
    elif kind == "float_format":
        word = p.bare_id("float format like e5m10")
        import re
        m = re.fullmatch(r"e([0-9]+)m([0-9]+)", word)
        if not m:
            raise p.error(f"expected a float format like e5m10, found '{word}'", pos)
        attrs["exponent_bits"] = A.IntegerAttr(int(m.group(1)), I32)
        attrs["mantissa_bits"] = A.IntegerAttr(int(m.group(2)), I32)
    elif kind == "attr":
        if p.peek("<"):  # `algorithm = <...>`: the #stablehlo.dot_algorithm prefix is elided
            start = p.pos
            p.expect("<")
            attrs[attr_name] = A.StructAttr("stablehlo.dot_algorithm", tuple(p._struct_fields(start)))
        else:
            attrs[attr_name] = p.parse_attribute()
    else:  # pragma: no cover - table error
        raise p.error(f"internal: unknown keyword kind {kind}")


def _int_list(p) -> list[int]:
    p.expect("[")
    vals = []
    if not p.accept("]"):
        vals.append(p.integer())
        while p.accept(","):
            vals.append(p.integer())
        p.expect("]", "to close the list")
    return vals


def _items(p, opdef: OpDef, attrs: dict, dot: Optional[dict] = None):
    """Comma-separated operands, `keyword = value` pairs and bare enum words."""
    operands, enums = [], []
    first = True
    while True:
        p.ws()
        pos = p.pos
        if not first:
            save = p.pos
            if not p.accept(","):
                break
            p.ws()
            pos = p.pos
        first = False
        c = p.peek_char()
        if c == "%":
            operands.append(p.parse_operand())
            continue
        if c == "" or c in ":{}()":
            if not operands and not enums and pos == p.pos:
                break
            raise p.error(f"expected operand or keyword, found {p.describe()}")
        if p.text.startswith("dense<", p.pos) or p.text.startswith("dense_resource<", p.pos):
            attrs["value"] = p.parse_attribute()
            continue
        word = p.try_bare_id()
        if word is None:
            raise p.error(f"expected operand or keyword, found {p.describe()}")
        if p.peek("=") and not p.peek("=="):
            p.expect("=")
            kw = opdef.keyword(word)
            if kw is None:
                raise p.error(f"unknown keyword '{word}' for '{opdef.name}'", pos)
            attr_name, kind = kw
            if kind == "dot_dims":
                lhs = _int_list(p)
                p.expect("x", "between lhs and rhs dimensions")
                rhs = _int_list(p)
                pre = "batching" if word == "batching_dims" else "contracting"
                dot[f"lhs_{pre}_dimensions"] = lhs
                dot[f"rhs_{pre}_dimensions"] = rhs
            else:
                if attr_name in attrs:
                    raise p.error(f"keyword '{word}' given twice", pos)
                _keyword_value(p, kind, attrs, attr_name, pos)
            continue
        enums.append((word, pos))
    return operands, enums


def _attr_dict(p, attrs: dict) -> None:
    if p.peek("{"):
        for k, v in p.parse_attr_dict().entries:
            if k in attrs:
                raise p.error(f"attribute '{k}' given twice")
            attrs[k] = v


def _signature(p, n_operands: int, n_results: int, same_list=False):
    """`: T` | `: (T, ...) -> R` | `: T, T -> R` | `: T, T` -> (operand types, result types)."""
    p.expect(":", "before the op's type")
    pos = p.pos
    if p.peek("(") :
        save = p.pos
        try:
            ins = p.parse_type_list_parens()
        except Exception:
            p.pos = save
            ins = None
        if ins is not None and p.accept("->"):
            return ins, p.parse_result_types(), pos
        p.pos = save
    types = [p.parse_type()]
    while p.peek(",") :
        save = p.pos
        p.expect(",")
        if p.peek("%") or p.peek("^") :
            p.pos = save
            break
        types.append(p.parse_type())
    if p.accept("->"):
        return types, p.parse_result_types(), pos
    if same_list:
        return types, list(types), pos
    if len(types) == 1:
        res = [types[0]] * max(n_results, 0) if n_results >= 0 else [types[0]]
        return [types[0]] * n_operands, res, pos
    if len(types) == n_operands:
        return types, [], pos
    raise p.error(f"expected {n_operands} operand types, got {len(types)}", pos)


def _finish(p, opdef: OpDef, operands, in_types, out_types, attrs, regions=(), pos=0) -> Operation:
    p.check_types(operands, in_types, pos)
    return Operation(opdef.name, operands, out_types, attrs, regions)


# ---------------------------------------------------------------- readers per format


def _read_simple(p, opdef: OpDef, pos: int) -> Operation:
    attrs: dict = {}
    dot: dict = {}
    operands, enums = _items(p, opdef, attrs, dot)
    if dot:
        attrs["dot_dimension_numbers"] = A.StructAttr(
            "stablehlo.dot", tuple((k, A.ArrayAttr(tuple(A.IntegerAttr(x) for x in dot[k])))
                                   for k in DOT_FIELDS if dot.get(k)))
        # keep precision/algorithm after dimension numbers, as StableHLO orders them
        attrs = {"dot_dimension_numbers": attrs.pop("dot_dimension_numbers"), **attrs}
    if opdef.format == "compare":
        if not 1 <= len(enums) <= 2:
            raise p.error("expected comparison direction (EQ, NE, LT, LE, GT, GE)", pos)
        attrs = {"comparison_direction": A.EnumAttr("stablehlo", "comparison_direction", enums[0][0]), **attrs}
        if len(enums) == 2:
            attrs["compare_type"] = A.EnumAttr("stablehlo", "comparison_type", enums[1][0])
    elif enums:
        raise p.error(f"unexpected '{enums[0][0]}'", enums[0][1])
    _attr_dict(p, attrs)
    n_res = opdef.results
    if opdef.format in ("result_only", "constant"):
        if opdef.format == "constant" and "value" not in attrs:
            if p.peek(":"):
                raise p.error("constant needs a value")
            attrs["value"] = p.parse_attribute()
        if opdef.format == "constant":
            v = attrs["value"]
            if p.peek(":"):
                _, outs, _ = _signature(p, 0, 1)
            else:
                outs = [getattr(v, "type", None)]
                if outs[0] is None:
                    raise p.error("constant value needs a type", pos)
            return Operation(opdef.name, operands, outs, attrs)
        p.expect(":", "before the result type")
        return Operation(opdef.name, operands, [p.parse_type()], attrs)
    if opdef.format == "select":
        ins, outs, tpos = _select_signature(p)
    elif opdef.format == "check":
        if not p.peek(":"):
            ins = [v.type for v in operands]
            return Operation(opdef.name, operands, [], attrs)
        if "value" in attrs and not operands[1:]:
            return Operation(opdef.name, operands, [], attrs)  # type came with dense<...> : T
        ins, outs, tpos = _signature(p, len(operands), 0)
        outs = []
    else:
        ins, outs, tpos = _signature(p, len(operands), n_res, same_list=opdef.format == "same_list")
        if opdef.name == "stablehlo.complex" and not p.text[tpos:p.pos].lstrip().startswith("("):
            comp = outs[0].element_type.component if isinstance(outs[0], T.TensorType) else outs[0]
            ins = [outs[0].with_element_type(comp)] * 2  # `: tensor<complex<f32>>` names the result
    return _finish(p, opdef, operands, ins, outs, attrs, pos=tpos)


def _select_signature(p):
    p.expect(":")
    pos = p.pos
    if p.peek("("):
        ins = p.parse_type_list_parens()
        p.expect("->")
        return ins, p.parse_result_types(), pos
    pred = p.parse_type()
    p.expect(",")
    t = p.parse_type()
    return [pred, t, t], [t], pos


def _read_slice(p, opdef, pos):
    operand = p.parse_operand()
    attrs: dict = {}
    if p.accept(","):  # older spelling: %x, starts = [..], limits = [..], strides = [..]
        for kw, name in (("starts", "start_indices"), ("limits", "limit_indices"), ("strides", "strides")):
            p.ws()
            if p.accept_keyword(kw) or p.accept_keyword(name):
                p.expect("=")
                attrs[name] = A.DenseArrayAttr(I64, tuple(_int_list(p)))
                p.accept(",")
    else:
        p.expect("[", "slice ranges like [0:2]")
        starts, limits, strides = [], [], []
        if not p.accept("]"):
            while True:
                starts.append(p.integer("slice start"))
                p.expect(":")
                limits.append(p.integer("slice limit"))
                strides.append(p.integer("slice stride") if p.accept(":") else 1)
                if p.accept("]"):
                    break
                p.expect(",")
        attrs = {"start_indices": A.DenseArrayAttr(I64, tuple(starts)),
                 "limit_indices": A.DenseArrayAttr(I64, tuple(limits)),
                 "strides": A.DenseArrayAttr(I64, tuple(strides))}
    _attr_dict(p, attrs)
    ins, outs, tpos = _signature(p, 1, 1)
    return _finish(p, opdef, [operand], ins, outs, attrs, pos=tpos)


def _read_get_tuple_element(p, opdef, pos):
    operand = p.parse_operand()
    p.expect("[")
    attrs = {"index": A.IntegerAttr(p.integer("tuple index"), I32)}
    p.expect("]")
    _attr_dict(p, attrs)
    ins, outs, tpos = _signature(p, 1, 1)
    return _finish(p, opdef, [operand], ins, outs, attrs, pos=tpos)


def _read_return(p, opdef, pos):
    attrs: dict = {}
    operands = p.parse_operands()
    _attr_dict(p, attrs)
    if operands:
        p.expect(":", "before the returned types")
        tpos = p.pos
        types = [p.parse_type()]
        while p.accept(","):
            types.append(p.parse_type())
        p.check_types(operands, types, tpos)
    return Operation(opdef.name, operands, [], attrs)


def _read_call(p, opdef, pos):
    callee = p.suffix_id("@", "callee")
    p.expect("(")
    operands = []
    if not p.accept(")"):
        operands = p.parse_operands()
        p.expect(")")
    attrs: dict = {"callee": A.SymbolRefAttr((callee,))}
    _attr_dict(p, attrs)
    ins, outs, tpos = _signature(p, len(operands), -1)
    return _finish(p, opdef, operands, ins, outs, attrs, pos=tpos)


def _read_custom_call(p, opdef, pos):
    p.ws()
    target = p.string() if p.peek('"') else p.suffix_id("@", "custom call target")
    p.expect("(")
    operands = []
    if not p.accept(")"):
        operands = p.parse_operands()
        p.expect(")")
    attrs: dict = {"call_target_name": A.StringAttr(target)}
    _attr_dict(p, attrs)
    ins, outs, tpos = _signature(p, len(operands), -1)
    return _finish(p, opdef, operands, ins, outs, attrs, pos=tpos)


def _read_composite(p, opdef, pos):
    name = p.string()
    operands = p.parse_operands()
    attrs: dict = {"name": A.StringAttr(name)}
    _attr_dict(p, attrs)
    ins, outs, tpos = _signature(p, len(operands), -1)
    return _finish(p, opdef, operands, ins, outs, attrs, pos=tpos)


def _read_chlo(p, opdef, pos):
    return _read_simple(p, opdef, pos)


def _read_top_k(p, opdef, pos):
    p.expect("(")
    operand = p.parse_operand()
    p.expect(",")
    if not p.accept_keyword("k"):
        raise p.error("expected 'k = N'")
    p.expect("=")
    attrs = {"k": A.IntegerAttr(p.integer("k"), I64)}
    p.expect(")")
    _attr_dict(p, attrs)
    ins, outs, tpos = _signature(p, 1, 2)
    return _finish(p, opdef, [operand], ins, outs, attrs, pos=tpos)


def _read_convolution(p, opdef, pos):
    p.expect("(")
    operands = p.parse_operands()
    p.expect(")")
    attrs: dict = {}
    p.accept(",")
    if p.accept_keyword("dim_numbers"):
        p.expect("=")
        dn = p.parse_conv_layout()
        p.accept(",")
    else:
        dn = None
    if p.accept_keyword("window"):
        p.expect("=")
        p.expect("{")
        names = {"stride": "window_strides", "pad": "padding", "lhs_dilate": "lhs_dilation",
                 "rhs_dilate": "rhs_dilation", "reverse": "window_reversal"}
        if not p.accept("}"):
            while True:
                kpos = p.pos
                key = p.bare_id("window field")
                if key not in names:
                    raise p.error(f"unknown window field '{key}' (expected one of {', '.join(names)})", kpos)
                p.expect("=")
                if key == "pad":
                    p.expect("[")
                    rows = []
                    if not p.accept("]"):
                        while True:
                            rows.append(_int_list(p))
                            if p.accept("]"):
                                break
                            p.expect(",")
                    if any(len(r) != 2 for r in rows):
                        raise p.error("each padding entry must be [low, high]", kpos)
                    arr = np.array(rows, dtype=np.int64).reshape(len(rows), 2)
                    attrs["padding"] = A.DenseElementsAttr(T.TensorType((len(rows), 2), I64), arr)
                elif key == "reverse":
                    p.expect("[")
                    vals = []
                    if not p.accept("]"):
                        while True:
                            w = p.bare_id("true/false/0/1") if not p.peek_char().isdigit() else str(p.integer())
                            vals.append(w in ("true", "1"))
                            if p.accept("]"):
                                break
                            p.expect(",")
                    attrs["window_reversal"] = A.DenseArrayAttr(T.i1, tuple(vals))
                else:
                    attrs[names[key]] = A.DenseArrayAttr(I64, tuple(_int_list(p)))
                if p.accept("}"):
                    break
                p.expect(",")
    order = ["window_strides", "padding", "lhs_dilation", "rhs_dilation", "window_reversal"]
    attrs = {k: attrs[k] for k in order if k in attrs}
    if dn is not None:
        attrs["dimension_numbers"] = dn
    _attr_dict(p, attrs)
    ins, outs, tpos = _signature(p, len(operands), 1)
    return _finish(p, opdef, operands, ins, outs, attrs, pos=tpos)


def _read_reduce(p, opdef, pos):
    inputs, inits = [], []
    while True:
        p.expect("(")
        inputs.append(p.parse_operand())
        if not p.accept_keyword("init"):
            raise p.error("expected 'init:' in reduce operand")
        p.expect(":")
        inits.append(p.parse_operand())
        p.expect(")")
        if not p.accept(","):
            break
    body_op = None
    if p.accept_keyword("applies"):
        body_op = p.bare_id("reduction op name")
    if not p.accept_keyword("across"):
        raise p.error(f"expected 'across dimensions = [...]', found {p.describe()}")
    if not p.accept_keyword("dimensions"):
        raise p.error("expected 'dimensions'")
    p.expect("=")
    attrs: dict = {"dimensions": A.DenseArrayAttr(I64, tuple(_int_list(p)))}
    _attr_dict(p, attrs)
    operands = inputs + inits
    ins, outs, tpos = _signature(p, len(operands), len(inputs))
    p.check_types(operands, ins, tpos)
    n = len(inputs)
    elem = [T.TensorType((), t.element_type) if isinstance(t, T.TensorType) else t for t in ins[n:]]
    if body_op is not None:
        from axle.ir import ops as O
        name = O.ALIASES.get(body_op, body_op)
        if O.lookup(name) is None:
            raise p.error(f"unknown operation '{body_op}'")
        block = Block(elem + elem)
        r = Operation(name, block.arguments, [elem[0]])
        block.append(r)
        block.append(Operation("stablehlo.return", r.results))
        region = Region([block])
    else:
        if not p.accept_keyword("reducer"):
            raise p.error("expected 'applies OP' or a 'reducer(...)' body")
        lhs, rhs = [], []
        for _ in range(n):
            p.expect("(")
            for side in (lhs, rhs):
                apos = p.pos
                name = p.suffix_id("%", "reducer argument")
                p.expect(":")
                side.append((name, p.parse_type(), apos))
                if side is lhs:
                    p.expect(",")
            p.expect(")")
        region = p.parse_region(entry_args=lhs + rhs)
    return Operation(opdef.name, operands, outs, attrs, [region])


def _read_while(p, opdef, pos):
    p.expect("(")
    names, operands = [], []
    if not p.accept(")"):
        while True:
            apos = p.pos
            names.append((p.suffix_id("%", "loop variable"), apos))
            p.expect("=")
            operands.append(p.parse_operand())
            if p.accept(")"):
                break
            p.expect(",")
    types = []
    if operands:
        p.expect(":")
        tpos = p.pos
        types = [p.parse_type()]
        while p.accept(","):
            types.append(p.parse_type())
        p.check_types(operands, types, tpos)
    attrs: dict = {}
    if p.accept_keyword("attributes"):
        attrs = dict(p.parse_attr_dict().entries)
    if not p.accept_keyword("cond"):
        raise p.error(f"expected 'cond' region of while, found {p.describe()}")
    args = [(n, t, ps) for (n, ps), t in zip(names, types)]
    cond = p.parse_region(entry_args=args)
    if not p.accept_keyword("do"):
        raise p.error(f"expected 'do' region of while, found {p.describe()}")
    body = p.parse_region(entry_args=args)
    return Operation(opdef.name, operands, types, attrs, [cond, body])


def _read_bare_generic(p, opdef, pos):
    """`stablehlo.op(%a) {attrs} : (T) -> R`: the generic shape without quotes."""
    return p.parse_generic_tail(opdef.name)


def _read_scan(p, opdef, pos):
    """`chlo.scan(%xs) inits(%cs) dimension=N [attributes {...}] {body} : sig`."""
    p.expect("(")
    inputs = p.parse_operands()
    p.expect(")")
    if not p.accept_keyword("inits"):
        raise p.error(f"expected 'inits(...)', found {p.describe()}")
    p.expect("(")
    inits = p.parse_operands()
    p.expect(")")
    if not p.accept_keyword("dimension"):
        raise p.error("expected 'dimension = N'")
    p.expect("=")
    attrs: dict = {"dimension": A.IntegerAttr(p.integer("dimension"), I64),
                   "operandSegmentSizes": A.DenseArrayAttr(I32, (len(inputs), len(inits)))}
    if p.accept_keyword("attributes"):
        for k, v in p.parse_attr_dict().entries:
            attrs[k] = v
    region = p.parse_region()
    operands = inputs + inits
    ins, outs, tpos = _signature(p, len(operands), -1)
    return _finish(p, opdef, operands, ins, outs, attrs, [region], tpos)


READERS = {
    "same_or_functional": _read_simple, "functional": _read_simple, "compare": _read_simple,
    "select": _read_simple, "constant": _read_simple, "result_only": _read_simple,
    "same_list": _read_simple, "check": _read_simple, "chlo": _read_chlo,
    "slice": _read_slice, "get_tuple_element": _read_get_tuple_element, "return": _read_return,
    "call": _read_call, "custom_call": _read_custom_call, "composite": _read_composite,
    "top_k": _read_top_k, "convolution": _read_convolution, "reduce": _read_reduce,
    "while": _read_while, "scan": _read_scan,
}
from axle.ir.text.sdy import READERS as _SDY_READERS  # noqa: E402  (the Shardy dialect)
READERS.update(_SDY_READERS)


def parse_pretty(p, opdef: OpDef, pos: int) -> Operation:
    if opdef.format == "func":
        return p.parse_func(pos)
    reader = READERS.get(opdef.format)
    if opdef.format not in ("convolution", "reduce", "while", "top_k", "call", "custom_call", "constant", "scan",
                                 "sdy_manual") \
            and p.peek("(") and not p.peek("()") or reader is None:
        if reader is None and not p.peek("("):
            raise p.error(f"'{opdef.name}' has no short form; write it in generic form "
                          f"\"{opdef.name}\"(...) : (...) -> ...", pos)
        return _read_bare_generic(p, opdef, pos)
    return reader(p, opdef, pos)
