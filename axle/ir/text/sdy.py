"""The Shardy (`sdy`) dialect in MLIR text: its attributes and the pretty forms of its ops.

    sdy.mesh @mesh = <["x"=2]> {attrs}
    %1 = sdy.sharding_constraint %0 <@mesh, [{"x"}, {?}]> : tensor<4x16xf32>
    %2 = sdy.reshard %1 <@mesh, [{}, {}]> : tensor<4x16xf32>
    %3 = sdy.manual_computation(%a, %b) in_shardings=[<@mesh, [{"x"}, {}]>, ...]
           out_shardings=[...] manual_axes={"x"} (%x: tensor<2x16xf32>, ...) {
      ...
      sdy.return %r : tensor<2x16xf32>
    } : (tensor<4x16xf32>, ...) -> tensor<4x16xf32>

Readers take the parser (`p`, a Cursor) and return attributes of axle/ir/sdy.py or ops;
writers print the same text, so that a printed module reads back equal.
"""
from __future__ import annotations

from typing import Optional

from axle.ir import attributes as A
from axle.ir import sdy as S
from axle.ir import types as T
from axle.ir.core import Operation

# ---------------------------------------------------------------- attributes


def read_mesh(p) -> S.MeshAttr:
    """`<["x"=2, "y"=4], device_ids=[...]>` (the `<` not yet read)."""
    p.expect("<", "to open a mesh")
    p.expect("[", "before the mesh axes")
    axes = []
    if not p.accept("]"):
        while True:
            name = p.string()
            p.expect("=", "after a mesh axis name")
            size = p.integer("mesh axis size")
            if size < 1:
                raise p.error(f"mesh axis \"{name}\" has size {size}; sizes are positive")
            axes.append((name, size))
            if p.accept("]"):
                break
            p.expect(",", "between mesh axes")
    ids = None
    if p.accept(","):
        if not p.accept_keyword("device_ids"):
            raise p.error(f"expected 'device_ids=[...]', found {p.describe()}")
        p.expect("=")
        ids = tuple(_int_list(p))
    p.expect(">", "to close the mesh")
    names = [n for n, _ in axes]
    if len(set(names)) != len(names):
        raise p.error(f"mesh axis names repeat: {names}")
    return S.MeshAttr(tuple(axes), ids)


def _int_list(p) -> list[int]:
    p.expect("[")
    vals = []
    if not p.accept("]"):
        vals.append(p.integer())
        while p.accept(","):
            vals.append(p.integer())
        p.expect("]")
    return vals


def _axis_ref(p) -> S.AxisRef:
    name = p.string()
    if p.text.startswith(":(", p.pos):
        p.pos += 2
        pre = p.integer("sub-axis pre-size")
        p.expect(")")
        size = p.integer("sub-axis size")
        return S.AxisRef(name, (pre, size))
    return S.AxisRef(name)


def _axis_set(p) -> tuple:
    p.expect("{")
    axes = []
    if not p.accept("}"):
        axes.append(_axis_ref(p))
        while p.accept(","):
            axes.append(_axis_ref(p))
        p.expect("}")
    return tuple(axes)


def _dim(p) -> S.DimSharding:
    p.expect("{", "to open a dimension sharding")
    axes, closed = [], True
    if not p.accept("}"):
        while True:
            if p.accept("?"):
                closed = False
                p.expect("}", "after '?' (the open marker comes last)")
                break
            axes.append(_axis_ref(p))
            if p.accept("}"):
                break
            p.expect(",", "between axes")
    priority = None
    if p.text.startswith("p", p.pos) and p.pos + 1 < len(p.text) and p.text[p.pos + 1].isdigit():
        p.pos += 1
        priority = p.integer("priority")
    return S.DimSharding(tuple(axes), closed, priority)


def read_sharding(p) -> S.ShardingAttr:
    """`<@mesh, [{...}, ...], replicated={...}, unreduced={...}>` (the `<` not yet read)."""
    p.expect("<", "to open a sharding")
    p.ws()
    if p.peek("@"):
        mesh = p.suffix_id("@", "mesh name")
    elif p.peek("<"):
        mesh = read_mesh(p)
    else:
        raise p.error(f"expected a mesh name '@mesh' or an inline mesh '<[...]>', found {p.describe()}")
    p.expect(",", "after the mesh")
    p.expect("[", "before the dimension shardings")
    dims = []
    if not p.accept("]"):
        dims.append(_dim(p))
        while p.accept(","):
            dims.append(_dim(p))
        p.expect("]", "after the dimension shardings")
    replicated = unreduced = ()
    while p.accept(","):
        if p.accept_keyword("replicated"):
            p.expect("=")
            replicated = _axis_set(p)
        elif p.accept_keyword("unreduced"):
            p.expect("=")
            unreduced = _axis_set(p)
        else:
            raise p.error(f"expected 'replicated=' or 'unreduced=', found {p.describe()}")
    p.expect(">", "to close the sharding")
    return S.ShardingAttr(mesh, tuple(dims), replicated, unreduced)


def _sharding_list(p) -> S.ShardingPerValueAttr:
    p.expect("[")
    items = []
    if not p.accept("]"):
        items.append(read_sharding(p))
        while p.accept(","):
            items.append(read_sharding(p))
        p.expect("]")
    return S.ShardingPerValueAttr(tuple(items))


def read_hash_attr(p, name: str) -> Optional[A.Attribute]:
    """`#sdy.sharding<...>`, `#sdy.sharding_per_value<[...]>`, `#sdy.mesh<[...]>` (after
    the name); None for other sdy attributes (kept as opaque text by the caller)."""
    if name == "sdy.sharding":
        return read_sharding(p)
    if name == "sdy.sharding_per_value":
        p.expect("<")
        out = _sharding_list(p)
        p.expect(">")
        return out
    if name == "sdy.mesh":
        return read_mesh(p)
    return None


# ---------------------------------------------------------------- ops


def _trailing_attrs(p, attrs: dict) -> None:
    if p.peek("{"):
        for k, v in p.parse_attr_dict().entries:
            if k in attrs:
                raise p.error(f"attribute '{k}' given twice")
            attrs[k] = v


def read_mesh_op(p, opdef, pos) -> Operation:
    name = p.suffix_id("@", "mesh name")
    p.expect("=", "after the mesh name")
    attrs: dict = {"sym_name": A.StringAttr(name), "mesh": read_mesh(p)}
    _trailing_attrs(p, attrs)
    return Operation(opdef.name, [], [], attrs)


def read_constraint(p, opdef, pos) -> Operation:
    operand = p.parse_operand()
    attrs: dict = {"sharding": read_sharding(p)}
    _trailing_attrs(p, attrs)
    p.expect(":", "before the type")
    tpos = p.pos
    t = p.parse_type()
    p.check_types([operand], [t], tpos)
    return Operation(opdef.name, [operand], [t], attrs)


def read_manual(p, opdef, pos) -> Operation:
    p.expect("(")
    operands = []
    if not p.accept(")"):
        operands = p.parse_operands()
        p.expect(")")
    attrs: dict = {}
    for key in ("in_shardings", "out_shardings"):
        if not p.accept_keyword(key):
            raise p.error(f"expected '{key}=[...]', found {p.describe()}")
        p.expect("=")
        attrs[key] = _sharding_list(p)
    if not p.accept_keyword("manual_axes"):
        raise p.error(f"expected 'manual_axes={{...}}', found {p.describe()}")
    p.expect("=")
    p.expect("{")
    axes = []
    if not p.accept("}"):
        axes.append(p.string())
        while p.accept(","):
            axes.append(p.string())
        p.expect("}")
    attrs["manual_axes"] = S.ManualAxesAttr(tuple(axes))
    p.expect("(", "before the body's arguments")
    args = []
    if not p.accept(")"):
        while True:
            apos = p.pos
            n = p.suffix_id("%", "body argument")
            p.expect(":")
            args.append((n, p.parse_type(), apos))
            if p.accept(")"):
                break
            p.expect(",")
    region = p.parse_region(entry_args=args, isolated=True)
    _trailing_attrs(p, attrs)
    p.expect(":", "before the op's type")
    tpos = p.pos
    ft = p.parse_type()
    if not isinstance(ft, T.FunctionType):
        raise p.error("expected the function type '(...) -> ...' of sdy.manual_computation", tpos)
    p.check_types(operands, list(ft.inputs), tpos)
    return Operation(opdef.name, operands, list(ft.results), attrs, [region])


READERS = {"sdy_mesh": read_mesh_op, "sdy_constraint": read_constraint, "sdy_manual": read_manual}

# ---------------------------------------------------------------- printing

_OWN = {"sdy.mesh": ("sym_name", "mesh"), "sdy.sharding_constraint": ("sharding",),
        "sdy.reshard": ("sharding",), "sdy.manual_computation": ("in_shardings", "out_shardings", "manual_axes")}


def _rest(op: Operation) -> str:
    rest = {k: v for k, v in op.attributes.items() if k not in _OWN[op.name]}
    return " {" + ", ".join(A.format_named(k, v) for k, v in rest.items()) + "}" if rest else ""


def printable(op: Operation) -> bool:
    """Whether op's attributes are what the short form reads (else it prints generically)."""
    a = op.attributes
    if op.name == "sdy.mesh":
        return isinstance(a.get("sym_name"), A.StringAttr) and isinstance(a.get("mesh"), S.MeshAttr)
    if op.name in ("sdy.sharding_constraint", "sdy.reshard"):
        return isinstance(a.get("sharding"), S.ShardingAttr) and len(op.operands) == 1 and len(op.results) == 1
    if op.name == "sdy.manual_computation":
        return isinstance(a.get("in_shardings"), S.ShardingPerValueAttr) \
            and isinstance(a.get("out_shardings"), S.ShardingPerValueAttr) \
            and isinstance(a.get("manual_axes"), S.ManualAxesAttr) and len(op.regions) == 1 \
            and len(op.regions[0].blocks) == 1
    return False


def print_op(pr, op: Operation, indent: int, prefix: str) -> None:
    """Append op's short form to printer `pr`'s lines."""
    pad = "  " * indent
    a = op.attributes
    if op.name == "sdy.mesh":
        pr.lines.append(f"{pad}sdy.mesh {A.format_symbol(a['sym_name'].value)} = {a['mesh']}{_rest(op)}"
                        + pr.loc(op.location))
        return
    names = ", ".join(pr.namer(v) for v in op.operands)
    if op.name != "sdy.manual_computation":
        pr.lines.append(f"{pad}{prefix}{op.name} {names} {a['sharding'].body()}{_rest(op)} : "
                        f"{op.results[0].type}" + pr.loc(op.location))
        return
    block = op.regions[0].blocks[0]
    ins = "[" + ", ".join(s.body() for s in a["in_shardings"].shardings) + "]"
    outs = "[" + ", ".join(s.body() for s in a["out_shardings"].shardings) + "]"
    args = ", ".join(f"{pr.namer.name_arg(x)}: {x.type}" for x in block.arguments)
    pr.lines.append(f"{pad}{prefix}{op.name}({names}) in_shardings={ins} out_shardings={outs} "
                    f"manual_axes={a['manual_axes']} ({args}) {{")
    for o in block.operations:
        pr.op(o, indent + 1)
    sig = T.FunctionType(tuple(op.operand_types), tuple(op.result_types))
    pr.lines.append(f"{pad}}}{_rest(op)} : {sig}" + pr.loc(op.location))
