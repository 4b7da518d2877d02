"""Case generators of the fuzz campaigns (deterministic from a seed).

- `mutate_text`: parser fuzzing, mutations of a conformance program (byte flips, token
  deletion and duplication, extreme numbers, splices of other lines, deep nesting).
- `random_program`: differential fuzzing, a random straight-line program over adversarial
  inputs (NaN, infinities, signed zeros, subnormals, extreme integers, out-of-range
  indices, empty and large tensors); `program_inputs` makes its arguments.
"""
from __future__ import annotations

import random
import re

import ml_dtypes
import numpy as np

# ----------------------------------------------------------------- parser mutations

EXTREMES = ["0", "-0", "1e400", "-1e400", "9223372036854775808", "-9223372036854775809",
            "18446744073709551616", "99999999999999999999999", "0x7FC00000", "0xFFFFFFFFFFFFFFFFFF",
            "nan", "inf", "-inf", "1.5", "-1", "4294967296", "0.0", "1e-400", "2147483648"]
TOKENS = re.compile(r"%[\w#.]+|@[\w.]+|[\w.]+|\d+|[^\s\w]")


def mutate_text(text: str, rng: random.Random, corpus_lines: list[str]) -> str:
    """One to four random mutations of `text`."""
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(9)
        if not text:
            return text
        if kind == 0:  # flip a byte to a random printable / structural character
            k = rng.randrange(len(text))
            text = text[:k] + rng.choice("{}[]()<>,:=%@#\"x0-9.\n ?!^") + text[k + 1:]
        elif kind == 1:  # delete a token
            toks = list(TOKENS.finditer(text))
            if toks:
                m = rng.choice(toks)
                text = text[:m.start()] + text[m.end():]
        elif kind == 2:  # duplicate a token
            toks = list(TOKENS.finditer(text))
            if toks:
                m = rng.choice(toks)
                text = text[:m.end()] + " " + m.group(0) + text[m.end():]
        elif kind == 3:  # replace a number by an extreme one
            nums = list(re.finditer(r"-?\d+(\.\d+)?(e-?\d+)?", text))
            if nums:
                m = rng.choice(nums)
                text = text[:m.start()] + rng.choice(EXTREMES) + text[m.end():]
        elif kind == 4:  # splice a line of another program
            lines = text.split("\n")
            k = rng.randrange(len(lines))
            lines.insert(k, rng.choice(corpus_lines) if corpus_lines else lines[k])
            text = "\n".join(lines)
        elif kind == 5:  # delete a line
            lines = text.split("\n")
            del lines[rng.randrange(len(lines))]
            text = "\n".join(lines)
        elif kind == 6:  # a huge or odd dimension in a type
            dims = list(re.finditer(r"tensor<(\d+)", text))
            if dims:
                m = rng.choice(dims)
                text = text[:m.start(1)] + rng.choice(["9511627776", "0", "?", "1x0", "4294967297", "-1"]) + text[m.end(1):]
        elif kind == 7:  # truncate
            text = text[:rng.randrange(len(text))]
        else:  # swap two lines
            lines = text.split("\n")
            if len(lines) > 2:
                a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
                lines[a], lines[b] = lines[b], lines[a]
                text = "\n".join(lines)
    return text


# ----------------------------------------------------------------- differential programs

FLOATS = ["f32", "f64", "f16", "bf16"]
INTS = ["i8", "i32", "i64", "ui8", "ui32", "ui64"]
NP = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
      "i8": np.int8, "i32": np.int32, "i64": np.int64, "ui8": np.uint8, "ui32": np.uint32,
      "ui64": np.uint64, "i1": np.bool_}

EXACT_FLOAT_BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "remainder", "atan2", "power",
                      "chlo.next_after"]
EXACT_FLOAT_UNARY = ["abs", "negate", "sign", "floor", "ceil", "round_nearest_even", "round_nearest_afz", "sqrt"]
APPROX_FLOAT_UNARY = ["exponential", "log", "tanh", "logistic", "sine", "cosine", "exponential_minus_one",
                      "log_plus_one", "rsqrt", "cbrt"]
INT_BINARY = ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "and", "or", "xor",
              "shift_left", "shift_right_logical", "shift_right_arithmetic"]
INT_UNARY = ["abs", "negate", "not", "popcnt", "count_leading_zeros", "sign"]
APPROXIMATE = set(APPROX_FLOAT_UNARY) | {"atan2", "power", "divide", "sqrt", "remainder"}


def _float_specials(et: str) -> list[float]:
    info = ml_dtypes.finfo(NP[et])
    return [0.0, -0.0, np.inf, -np.inf, np.nan, float(info.max), -float(info.max), float(info.tiny),
            float(info.smallest_subnormal), -float(info.smallest_subnormal), 1.0, -1.0, 0.5, 2.0]


def _int_specials(et: str) -> list[int]:
    info = np.iinfo(NP[et])
    vals = [0, 1, 2, 7, 31, 63, 64, int(info.max), int(info.max) - 1, int(info.min), int(info.min) + 1]
    if info.min < 0:
        vals += [-1, -2, -64]
    return [v for v in vals if info.min <= v <= info.max]


def program_inputs(et: str, shape: tuple, n: int, seed: int) -> list[np.ndarray]:
    """n arrays of `shape`: about half adversarial special values, half random."""
    rng = np.random.default_rng(seed)
    out = []
    size = int(np.prod(shape, dtype=np.int64))
    for _ in range(n):
        if et in FLOATS:
            special = np.array(_float_specials(et), np.float64)
            vals = np.where(rng.random(size) < 0.5, rng.choice(special, size),
                            rng.standard_normal(size) * 10.0 ** rng.integers(-3, 4, size))
            a = vals.astype(NP[et])
        else:
            special = np.array(_int_specials(et), dtype=object)
            info = np.iinfo(NP[et])
            rnd = rng.integers(max(info.min, -1000), min(info.max, 1000), size, endpoint=True)
            pick = rng.random(size) < 0.5
            a = np.array([int(s) if p else int(r) for p, s, r in zip(pick, rng.choice(special, size), rnd)],
                         dtype=NP[et]) if size else np.zeros(0, NP[et])
        out.append(a.reshape(shape))
    return out


def random_program(seed: int) -> dict:
    """A random program: {"text", "et", "shape", "n_args", "approx", "index_args"}."""
    rng = random.Random(seed)
    et = rng.choice(FLOATS + INTS)
    shape = rng.choice([(8,), (3, 5), (0,), (2, 0, 3), (1,), (4, 4), (65536,), (300, 7)])
    n_args = rng.randint(1, 3)
    t = f"tensor<{'x'.join(map(str, shape))}x{et}>" if shape else f"tensor<{et}>"
    it = rng.choice(["i64", "ui64", "i32", "ui32", "i8"])  # the type of the index argument %idx
    lines = [f"func.func @main({', '.join(f'%a{k}: {t}' for k in range(n_args))}, %idx: tensor<{it}>) -> {t} {{"]
    vals = [f"%a{k}" for k in range(n_args)]
    approx = False
    is_float = et in FLOATS
    inexact: set = set()  # values computed by approximate ops (libm vs polynomials: ulps apart)
    for k in range(rng.randint(1, 8)):
        r = f"%v{k}"
        choice = rng.random()
        x, y = rng.choice(vals), rng.choice(vals)
        if (x in inexact or y in inexact) and rng.random() < 0.9:
            # a discontinuous op (remainder, floor, compare, ...) turns an ulp into any
            # difference: give those exact inputs
            exact = [v for v in vals if v not in inexact]
            x, y = rng.choice(exact), rng.choice(exact)
        if choice < 0.45:
            op = rng.choice(EXACT_FLOAT_BINARY if is_float else INT_BINARY)
            approx |= op in APPROXIMATE
            if op.startswith("chlo."):
                lines.append(f"  {r} = {op} {x}, {y} : ({t}, {t}) -> {t}")
            else:
                lines.append(f"  {r} = stablehlo.{op} {x}, {y} : {t}")
        elif choice < 0.7:
            pool = EXACT_FLOAT_UNARY + APPROX_FLOAT_UNARY if is_float else \
                [u for u in INT_UNARY if not (et.startswith("ui") and u in ("abs", "negate", "sign"))]
            op = rng.choice(pool)
            approx |= op in APPROXIMATE
            lines.append(f"  {r} = stablehlo.{op} {x} : {t}")
        elif choice < 0.8:
            d = rng.choice(["EQ", "NE", "LT", "LE", "GT", "GE"])
            bt = t.replace(f"x{et}>", "xi1>").replace(f"<{et}>", "<i1>")
            lines.append(f"  {r}c = stablehlo.compare {d}, {x}, {y} : ({t}, {t}) -> {bt}")
            lines.append(f"  {r} = stablehlo.select {r}c, {x}, {y} : {bt}, {t}")
        elif choice < 0.87:
            z = rng.choice(vals)
            lines.append(f"  {r} = stablehlo.clamp {x}, {y}, {z} : {t}")
        elif choice < 0.94 and shape and all(shape):
            # dynamic_slice / dynamic_update_slice with an index from the argument %idx
            # (adversarial: negative, huge, out of range)
            size = [max(1, d // 2) for d in shape]
            st = f"tensor<{'x'.join(map(str, size))}x{et}>"
            idx = ", ".join(["%idx"] * len(shape))
            lines.append(f"  {r}s = stablehlo.dynamic_slice {x}, {idx}, sizes = [{', '.join(map(str, size))}] : "
                         f"({t}, {', '.join([f'tensor<{it}>'] * len(shape))}) -> {st}")
            lines.append(f"  {r} = stablehlo.dynamic_update_slice {y}, {r}s, {idx} : "
                         f"({t}, {st}, {', '.join([f'tensor<{it}>'] * len(shape))}) -> {t}")
        elif shape:
            dims = ", ".join(str(d) for d in range(len(shape)) if rng.random() < 0.5) or "0"
            lines.append(f"  {r} = stablehlo.reverse {x}, dims = [{dims}] : {t}")
        else:
            lines.append(f"  {r} = stablehlo.negate {x} : {t}")
        if any(f" {v}" in lines[-1] or f"({v}" in lines[-1] for v in inexact) or \
                any(f"stablehlo.{op} " in lines[-1] for op in APPROXIMATE):
            inexact.add(r)
        vals.append(r)
    lines.append(f"  return {vals[-1]} : {t}")
    lines.append("}")
    return {"text": "\n".join(lines), "et": et, "shape": shape, "n_args": n_args, "approx": approx,
            "index_type": it}


def index_value(seed: int, index_type: str = "i64") -> np.ndarray:
    """An adversarial start index of `index_type`: negative, huge, out of range (ui64 at or
    above 2^63 must clamp to the end)."""
    rng = random.Random(seed ^ 0x5DEECE66D)
    dt = NP[index_type]
    info = np.iinfo(dt)
    v = rng.choice([0, 1, -1, 3, 1000, int(info.max), int(info.min), int(info.max) // 2 + 1, 2**63, 2**63 + 5,
                    -(2**31) - 1, 2**31])
    return np.array(min(max(v, int(info.min)), int(info.max)), dt)
