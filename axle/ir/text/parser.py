"""MLIR text -> axle.ir.Module, for the StableHLO, CHLO, func and check dialects.

Reads both the generic form (`"stablehlo.add"(%a, %b) : (T, T) -> T`) and the pretty
forms that JAX, torch-xla and stablehlo-opt print (the per-op syntax lives in
formats.py). Any malformed input raises ParseError naming file:line:col; no other
exception escapes `parse_module`.
"""
from __future__ import annotations

import re
from typing import Optional

import numpy as np

from axle.ir import attributes as A
from axle.ir.core import Block, Module, Operation, Region, Value
from axle.ir.text.cursor import Cursor, ParseError
from axle.ir.text import dense as D
from axle.ir import types as T

_INT_TYPE = re.compile(r"(?:si|ui|i)(?:[0-9]+)\b")
_FLOAT_TYPES = sorted((n for n, e in T.ELEMENT_TYPES.items() if e.kind == "float"), key=len, reverse=True)
_SPLIT = re.compile(r"^// -----\s*$", re.M)


class Parser(Cursor):
    def __init__(self, text: str, filename: Optional[str] = None):
        super().__init__(text, filename)
        self.attr_aliases: dict[str, A.Attribute] = {}
        self.type_aliases: dict[str, T.Type] = {}
        self.loc_aliases: dict[str, str] = {}
        self.scopes: list[dict[str, list[Value]]] = []
        self.resources: dict[str, str] = {}

    # ------------------------------------------------------------------ types
    def parse_type(self) -> T.Type:
        self.ws()
        start = self.pos
        text = self.text
        if text.startswith("tensor<", self.pos):
            self.pos += 7
            return self._tensor_body(start)
        if text.startswith("tuple<", self.pos):
            self.pos += 6
            types = []
            if not self.accept(">"):
                types.append(self.parse_type())
                while self.accept(","):
                    types.append(self.parse_type())
                self.expect(">", "to close tuple type")
            return T.TupleType(tuple(types))
        if text.startswith("complex<", self.pos):
            self.pos += 8
            inner = self.parse_type()
            self.expect(">", "to close complex type")
            name = f"complex<{inner}>"
            if name not in T.ELEMENT_TYPES:
                raise self.error(f"unsupported complex element type '{inner}' (expected f32 or f64)", start)
            return T.ELEMENT_TYPES[name]
        if text.startswith("!", self.pos):
            return self._bang_type()
        if text.startswith("(", self.pos):
            return self.parse_function_type()
        m = _INT_TYPE.match(text, self.pos)
        if m:
            name = m.group(0)
            try:
                et = T.element_type(name)
            except KeyError:
                raise self.error(f"unsupported integer type '{name}'", start) from None
            self.pos = m.end()
            return et
        for name in _FLOAT_TYPES:
            if text.startswith(name, self.pos):
                end = self.pos + len(name)
                if end < len(text) and (text[end].isalnum() or text[end] == "_"):
                    continue
                self.pos = end
                return T.ELEMENT_TYPES[name]
        if self.accept_keyword("index"):
            return T.ELEMENT_TYPES["index"]
        if self.accept_keyword("none"):
            return T.OpaqueType("none")
        raise self.error(f"expected type, found {self.describe()}")

    def _tensor_body(self, start: int) -> T.TensorType:
        shape: list[Optional[int]] = []
        text = self.text
        while True:
            self.ws()
            m = re.compile(r"(\?|[0-9]+)x").match(text, self.pos)
            if not m:
                break
            shape.append(None if m.group(1) == "?" else int(m.group(1)))
            self.pos = m.end()
        if self.peek("*"):
            raise self.error("unranked tensors are not supported by StableHLO")
        et = self.parse_type()
        if not isinstance(et, (T.ElementType, T.QuantizedType)):
            raise self.error(f"tensor element type must be a scalar type, got '{et}'", start)
        bounds = None
        encoding = None
        if self.accept(","):
            enc = self.parse_attribute()
            bounds = _bounds_of(enc)
            if bounds is None:
                encoding = enc
            elif len(bounds) != len(shape):
                raise self.error(f"bounds have {len(bounds)} entries for a rank-{len(shape)} tensor", start)
        self.expect(">", "to close tensor type")
        return T.TensorType(tuple(shape), et, bounds, encoding)

    def _bang_type(self) -> T.Type:
        start = self.pos
        self.pos += 1
        name = self.bare_id("type name after '!'")
        if name == "stablehlo.token" or name == "mhlo.token":
            return T.TOKEN
        if name == "quant.uniform":
            return self._quant_uniform(start)
        if name in self.type_aliases and not self.peek("<"):
            return self.type_aliases[name]
        if self.peek("<"):
            body = self.balanced("<", ">")
            return T.OpaqueType(f"!{name}{body}")
        if "." not in name:
            raise self.error(f"undefined type alias '!{name}'", start)
        return T.OpaqueType(f"!{name}")

    def _quant_uniform(self, start: int) -> T.QuantizedType:
        self.expect("<")
        storage = self.parse_type()
        if not isinstance(storage, T.ElementType) or not storage.is_int:
            raise self.error("quantized storage type must be an integer type", start)
        smin = smax = None
        if self.accept("<"):
            smin = self.integer("storage minimum")
            self.expect(":")
            smax = self.integer("storage maximum")
            self.expect(">")
        self.expect(":")
        expressed = self.parse_type()
        if not isinstance(expressed, T.ElementType) or not expressed.is_float:
            raise self.error("quantized expressed type must be a float type", start)
        axis = None
        if self.accept(":"):
            axis = self.integer("quantization axis")
        self.expect(",")
        scales, zps = [], []

        def one():
            s = self.number_text()
            if s is None:
                raise self.error("expected quantization scale")
            scales.append(float(s))
            zps.append(self.integer("zero point") if self.accept(":") else 0)

        if self.accept("{"):
            one()
            while self.accept(","):
                one()
            self.expect("}")
        else:
            one()
        self.expect(">", "to close !quant.uniform")
        return T.QuantizedType(storage, expressed, tuple(scales), tuple(zps), axis, smin, smax)

    def parse_function_type(self) -> T.FunctionType:
        inputs = self.parse_type_list_parens()
        self.expect("->", "in function type")
        results = self.parse_result_types()
        return T.FunctionType(tuple(inputs), tuple(results))

    def parse_type_list_parens(self) -> list[T.Type]:
        self.expect("(")
        types = []
        if not self.accept(")"):
            types.append(self.parse_type())
            while self.accept(","):
                types.append(self.parse_type())
            self.expect(")", "to close type list")
        return types

    def parse_result_types(self) -> list[T.Type]:
        """`T` or `(T, ...)` after an arrow (a parenthesized single function type is `(T)`)."""
        if self.peek("("):
            save = self.pos
            types = self.parse_type_list_parens()
            if self.peek("->"):  # it was a function type as a result
                self.pos = save
                return [self.parse_type()]
            return types
        return [self.parse_type()]

    # ------------------------------------------------------------------ attributes
    def parse_attribute(self, type_hint: Optional[T.Type] = None) -> A.Attribute:
        self.ws()
        text, pos = self.text, self.pos
        c = text[pos] if pos < len(text) else ""
        if c == "[":
            self.pos += 1
            elems = []
            if not self.accept("]"):
                elems.append(self.parse_attribute())
                while self.accept(","):
                    elems.append(self.parse_attribute())
                self.expect("]", "to close array attribute")
            return A.ArrayAttr(tuple(elems))
        if c == "{":
            return self.parse_attr_dict()
        if c == '"':
            return A.StringAttr(self.string())
        if c == "@":
            path = [self.suffix_id("@", "symbol")]
            while self.accept("::"):
                path.append(self.suffix_id("@", "symbol"))
            return A.SymbolRefAttr(tuple(path))
        if c == "#":
            return self._hash_attribute()
        if text.startswith("dense<", pos):
            return self._dense()
        if text.startswith("dense_resource<", pos):
            return self._dense_resource()
        if text.startswith("array<", pos):
            return self._dense_array()
        if c == "-" or c == "+" or c.isdigit():
            return self._number_attr(type_hint)
        word = _peek_word(text, pos)
        if word == "true" or word == "false":
            self.pos += len(word)
            return A.BoolAttr(word == "true")
        if word == "unit":
            self.pos += 4
            return A.UnitAttr()
        if word in ("affine_map", "affine_set", "strided", "distinct", "sparse"):
            self.pos += len(word)
            return A.OpaqueAttr(word + self.balanced(*(("[", "]") if self.peek("[") else ("<", ">")))
                                + (self.balanced() if word == "distinct" and self.peek("<") else ""))
        try:
            return A.TypeAttr(self.parse_type())
        except ParseError:
            self.pos = pos
            raise self.error(f"expected attribute, found {self.describe()}")

    def _number_attr(self, type_hint=None) -> A.Attribute:
        start = self.pos
        num = self.number_text()
        if num is None:
            raise self.error(f"expected number, found {self.describe()}")
        ty = None
        if self.accept(":"):
            ty = self.parse_type()
        elif type_hint is not None:
            ty = type_hint
        is_float = ("." in num or "e" in num.lower()) and not num.lower().startswith(("0x", "-0x"))
        if ty is not None and isinstance(ty, T.ElementType) and (ty.is_float):
            if num.lower().lstrip("-+").startswith("0x"):
                return A.FloatAttr(float(D.float_from_hex(num, ty)), ty)
            return A.FloatAttr(float(num), ty)
        if is_float:
            if ty is not None and not (isinstance(ty, T.ElementType) and ty.is_float):
                raise self.error(f"float literal with non-float type '{ty}'", start)
            return A.FloatAttr(float(num), ty)
        return A.IntegerAttr(int(num, 0) if "x" in num.lower() else int(num), ty)

    def parse_attr_dict(self) -> A.DictAttr:
        self.expect("{")
        entries = []
        if not self.accept("}"):
            entries.append(self._named_attr())
            while self.accept(","):
                entries.append(self._named_attr())
            self.expect("}", "to close attribute dictionary")
        names = [k for k, _ in entries]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise self.error(f"duplicate attribute '{dup}'")
        return A.DictAttr(tuple(entries))

    def _named_attr(self) -> tuple[str, A.Attribute]:
        self.ws()
        if self.peek('"'):
            name = self.string()
        else:
            name = self.bare_id("attribute name")
        if self.accept("="):
            return name, self.parse_attribute()
        return name, A.UnitAttr()

    def _hash_attribute(self) -> A.Attribute:
        start = self.pos
        self.pos += 1
        name = self.bare_id("attribute name after '#'")
        if not self.peek("<"):
            if name in self.attr_aliases:
                return self.attr_aliases[name]
            raise self.error(f"undefined attribute alias '#{name}'", start)
        if name in ("stablehlo", "chlo", "mhlo"):  # #stablehlo<comparison_direction EQ>
            self.expect("<")
            enum = self.bare_id("enum name")
            value = self.bare_id("enum value")
            self.expect(">")
            return A.EnumAttr(name, enum, value)
        if name.startswith("sdy."):  # Shardy meshes and shardings (text/sdy.py)
            from axle.ir.text.sdy import read_hash_attr
            save = self.pos
            attr = read_hash_attr(self, name)
            if attr is not None:
                return attr
            self.pos = save
        if name in ("stablehlo.conv", "mhlo.conv"):
            self.expect("<")
            self.accept_keyword("raw")
            if self.peek("["):
                dn = self.parse_conv_layout()
                self.expect(">")
                return dn
            fields = self._struct_fields(start)
            return conv_from_fields(fields, self, start)
        if name in ("stablehlo.bounds", "stablehlo.type_extensions", "mhlo.type_extensions"):
            self.expect("<")
            self.accept_keyword("bounds")
            self.accept("=")
            bracket = self.accept("[")
            vals = []
            if not self.peek(">") and not self.peek("]"):
                vals.append(None if self.accept("?") else self.integer("bound"))
                while self.accept(","):
                    vals.append(None if self.accept("?") else self.integer("bound"))
            if bracket:
                self.expect("]")
            self.expect(">")
            return _BoundsAttr(tuple(vals))
        if name.startswith(("stablehlo.", "chlo.", "mhlo.")):
            save = self.pos
            try:
                self.expect("<")
                if self.accept(">"):
                    return A.StructAttr(name, ())
                # enum form: #stablehlo.comparison_direction<EQ>
                word = self.try_bare_id()
                if word is not None and self.accept(">"):
                    return A.EnumAttr(name.split(".", 1)[0], name.split(".", 1)[1], word)
                self.pos = save
                self.expect("<")
                fields = self._struct_fields(start)
                return A.StructAttr(name, tuple(fields))
            except ParseError:
                self.pos = save
        return A.OpaqueAttr(f"#{name}" + self.balanced("<", ">"))

    def _struct_fields(self, start: int) -> list[tuple[str, A.Attribute]]:
        fields = []
        if self.accept(">"):
            return fields
        while True:
            key = self.bare_id("field name")
            self.expect("=")
            fields.append((key, self._struct_value()))
            if self.accept(">"):
                return fields
            self.expect(",", "between fields")

    def _struct_value(self) -> A.Attribute:
        self.ws()
        c = self.peek_char()
        if c == "[":
            self.pos += 1
            elems = []
            if not self.accept("]"):
                elems.append(self._struct_value())
                while self.accept(","):
                    elems.append(self._struct_value())
                self.expect("]")
            return A.ArrayAttr(tuple(elems))
        word = _peek_word(self.text, self.pos)
        if word and word not in ("true", "false", "dense", "array", "tensor", "unit") and not _INT_TYPE.fullmatch(word) \
                and not self.text.startswith(word + "<", self.pos):
            self.pos += len(word)
            return A.EnumAttr("", "", word)
        return self.parse_attribute()

    def parse_conv_layout(self) -> A.ConvDimensionNumbersAttr:
        """`[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`."""
        start = self.pos

        def side(letters):
            self.expect("[")
            named = {}
            spatial = {}
            i = 0
            while True:
                self.ws()
                n = self.try_integer()
                if n is not None:
                    if n in spatial:
                        raise self.error(f"spatial dimension {n} repeated in convolution layout")
                    spatial[n] = i
                else:
                    w = self.bare_id("convolution layout letter")
                    if w not in letters or w in named:
                        raise self.error(f"unexpected '{w}' in convolution layout (expected one of "
                                         f"{', '.join(letters)} and spatial indices)")
                    named[w] = i
                i += 1
                if self.accept("]"):
                    break
                self.expect(",")
            if set(named) != set(letters) or sorted(spatial) != list(range(len(spatial))):
                raise self.error("incomplete convolution layout", start)
            return named, tuple(spatial[k] for k in range(len(spatial)))

        a, asp = side(("b", "f"))
        self.expect("x")
        k, ksp = side(("i", "o"))
        self.expect("->")
        o, osp = side(("b", "f"))
        return A.ConvDimensionNumbersAttr(a["b"], a["f"], asp, k["i"], k["o"], ksp, o["b"], o["f"], osp)

    def _dense_array(self) -> A.DenseArrayAttr:
        start = self.pos
        self.pos += len("array<")
        et = self.parse_type()
        if not isinstance(et, T.ElementType):
            raise self.error("array<...> needs a scalar element type", start)
        vals = []
        if self.accept(":"):
            vals.append(self._scalar(et))
            while self.accept(","):
                vals.append(self._scalar(et))
        self.expect(">", "to close array<...>")
        return A.DenseArrayAttr(et, tuple(vals))

    def _scalar(self, et: T.ElementType):
        """One element of a dense literal, as a Python value of the element type's kind."""
        self.ws()
        if et.is_complex:
            self.expect("(")
            re_ = self._scalar(et.component)
            self.expect(",")
            im = self._scalar(et.component)
            self.expect(")")
            return complex(re_, im)
        if self.accept_keyword("true"):
            return True if et.is_bool else 1
        if self.accept_keyword("false"):
            return False if et.is_bool else 0
        start = self.pos
        num = self.number_text()
        if num is None:
            if self.accept_keyword("inf"):
                return float("inf")
            if self.accept_keyword("nan"):
                return float("nan")
            raise self.error(f"expected {et} literal, found {self.describe()}")
        low = num.lower()
        if et.is_float:
            if low.lstrip("-+").startswith("0x"):
                return D.float_from_hex(num, et)
            return float(num)
        if "." in low or ("e" in low and not low.lstrip("-").startswith("0x")):
            raise self.error(f"float literal '{num}' for integer type {et}", start)
        v = int(num, 16) if "0x" in low else int(num)
        if et.is_bool:
            if v not in (0, 1):
                raise self.error(f"invalid i1 value {v}", start)
            return bool(v)
        lo, hi = T.int_range(et)
        if not (lo <= v <= hi):
            # MLIR accepts two's-complement spellings of unsigned/signed values of the width
            if -(1 << (et.bitwidth - 1)) <= v < (1 << et.bitwidth):
                v = ((v - lo) % (1 << et.bitwidth)) + lo
            else:
                raise self.error(f"integer {v} does not fit in {et}", start)
        return v

    def _dense(self) -> A.DenseElementsAttr:
        start = self.pos
        self.pos += len("dense<")
        hexdata = self.string_bytes_hex()
        raw = None
        if hexdata is None and not self.peek(">"):
            raw = self._dense_literal_tree()
        self.expect(">", "to close dense<...>")
        self.expect(":", "and the type of the dense literal")
        ty = self.parse_type()
        if not isinstance(ty, T.TensorType):
            raise self.error(f"dense literal needs a tensor type, got '{ty}'", start)
        if not ty.is_static:
            raise self.error("dense literal needs a static shape", start)
        return A.DenseElementsAttr(ty, self._dense_array_value(ty, hexdata, raw, start))

    def _dense_literal_tree(self):
        """Parse nested lists of scalar tokens, keeping the token texts (typed later)."""
        self.ws()
        if self.accept("["):
            items = []
            if not self.accept("]"):
                items.append(self._dense_literal_tree())
                while self.accept(","):
                    items.append(self._dense_literal_tree())
                self.expect("]", "to close dense list")
            return items
        start = self.pos
        if self.accept("("):
            re_ = self._dense_token()
            self.expect(",")
            im = self._dense_token()
            self.expect(")")
            return ("c", re_, im, start)
        return self._dense_token()

    def _dense_token(self):
        self.ws()
        start = self.pos
        w = _peek_word(self.text, self.pos)
        if w in ("true", "false", "inf", "nan"):
            self.pos += len(w)
            return (w, start)
        if self.peek('"'):
            raise self.error("string elements are not supported in dense literals")
        num = self.number_text()
        if num is None:
            raise self.error(f"expected dense element, found {self.describe()}")
        return (num, start)

    def _dense_array_value(self, ty: T.TensorType, hexdata, raw, start) -> np.ndarray:
        et = D.storage_type(ty)
        shape = tuple(ty.shape)
        if hexdata is not None:
            try:
                data = bytes.fromhex(hexdata)
            except ValueError:
                raise self.error("malformed hex string in dense literal", start) from None
            try:
                return D.array_from_hex(data, ty)
            except ValueError as e:
                raise self.error(str(e), start) from None
        if raw is None:
            if int(np.prod(shape, dtype=np.int64)) != 0:
                raise self.error(f"empty dense literal for non-empty type {ty}", start)
            return np.zeros(shape, dtype=et.np_dtype)
        if not isinstance(raw, list):  # splat
            v = self._convert_token(raw, et)
            return np.full(shape, v, dtype=et.np_dtype) if not et.is_bool else np.full(shape, bool(v))
        flat = []
        got_shape = _tree_shape(raw, flat)
        if got_shape is None:
            raise self.error("ragged dense literal", start)
        if tuple(got_shape) != shape:
            if int(np.prod(got_shape, dtype=np.int64)) == int(np.prod(shape, dtype=np.int64)) == 0:
                return np.zeros(shape, dtype=et.np_dtype)
            raise self.error(f"dense literal of shape {list(got_shape)} does not match type {ty}", start)
        vals = [self._convert_token(t, et) for t in flat]
        if et.is_float:
            arr = np.array([float(v) for v in vals], dtype=np.float64).astype(et.np_dtype) \
                if not any(isinstance(v, np.generic) for v in vals) else \
                np.array([np.array(v).astype(et.np_dtype) for v in vals], dtype=et.np_dtype)
        elif et.is_int and et.bitwidth == 64 and et.is_unsigned:
            arr = np.array(vals, dtype=np.uint64)
        else:
            arr = np.array(vals, dtype=et.np_dtype if et.bitwidth >= 8 or et.is_bool else np.int64).astype(et.np_dtype)
        return arr.reshape(shape)

    def _convert_token(self, tok, et: T.ElementType):
        if tok[0] == "c":
            if not et.is_complex:
                raise self.error(f"complex literal for non-complex type {et}", tok[3])
            return complex(self._convert_token(tok[1], et.component), self._convert_token(tok[2], et.component))
        text, pos = tok
        save = self.pos
        try:
            self.pos = pos
            if et.is_complex:
                v = self._scalar(et.component)
                return complex(v, 0)
            return self._scalar(et)
        finally:
            self.pos = save

    def _dense_resource(self) -> A.Attribute:
        start = self.pos
        self.pos += len("dense_resource<")
        key = self.bare_id("resource name")
        self.expect(">")
        self.expect(":")
        ty = self.parse_type()
        return _DenseResourcePending(key, ty, start)

    # ------------------------------------------------------------------ locations
    def parse_location_trailer(self) -> Optional[A.Location]:
        if not self.peek_keyword("loc"):
            return None
        self.accept_keyword("loc")
        body = self.balanced("(", ")")[1:-1].strip()
        return A.Location(self._resolve_loc(body))

    def _resolve_loc(self, body: str) -> str:
        if body.startswith("#") and body[1:] in self.loc_aliases:
            return self.loc_aliases[body[1:]]
        if "#" in body:
            def rep(m):
                if m.group(1) is not None:  # loc(#alias)
                    return "loc(" + self.loc_aliases.get(m.group(1), "#" + m.group(1)) + ")"
                if m.group(2) is not None:  # a bare #alias inside a name, callsite or fused loc
                    return self.loc_aliases.get(m.group(2), "#" + m.group(2))
                return m.group(0)           # a string: left as it is
            return re.sub(r'"(?:[^"\\]|\\.)*"|loc\(#([A-Za-z0-9_$.\-]+)\)|#([A-Za-z0-9_$.\-]+)', rep, body)
        return body


class _BoundsAttr(A.Attribute):
    def __init__(self, bounds):
        self.bounds = bounds


class _DenseResourcePending(A.Attribute):
    def __init__(self, key, type, pos):
        self.key, self.type, self.pos = key, type, pos


def _bounds_of(enc) -> Optional[tuple]:
    return enc.bounds if isinstance(enc, _BoundsAttr) else None


def _peek_word(text: str, pos: int) -> str:
    m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").match(text, pos)
    return m.group(0) if m else ""


def _tree_shape(tree, flat) -> Optional[list]:
    if not isinstance(tree, list):
        flat.append(tree)
        return []
    shapes = [_tree_shape(t, flat) for t in tree]
    if any(s is None for s in shapes) or any(s != shapes[0] for s in shapes[1:]):
        return None
    return [len(tree)] + (shapes[0] if shapes else [])


def conv_from_fields(fields, parser, start) -> A.ConvDimensionNumbersAttr:
    d = {k: v.to_python() for k, v in fields}
    try:
        return A.ConvDimensionNumbersAttr(
            d["input_batch_dimension"], d["input_feature_dimension"], tuple(d.get("input_spatial_dimensions", [])),
            d["kernel_input_feature_dimension"], d["kernel_output_feature_dimension"],
            tuple(d.get("kernel_spatial_dimensions", [])), d["output_batch_dimension"],
            d["output_feature_dimension"], tuple(d.get("output_spatial_dimensions", [])))
    except KeyError as e:
        raise parser.error(f"#stablehlo.conv is missing field {e}", start) from None
