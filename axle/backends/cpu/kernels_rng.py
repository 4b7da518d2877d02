"""rng_bit_generator and rng on the CPU backend, with the interpreter's numbers (ops_rng.py).

rng_bit_generator is bit-exact with the interpreter (which follows XLA): Threefry-2x32
(20 rounds) for THREE_FRY, Philox-4x32 (10 rounds) for PHILOX and DEFAULT, with the same
counters, word order and shape splitting. rng (whose numbers are implementation-defined)
draws from Threefry under the interpreter's fixed key, as the interpreter does; NORMAL
numbers use the C library's log and cos, so f64 results may differ from numpy's in the
last bit.

Every output element computes the block it comes from (a block gives two 32-bit words for
Threefry, four for Philox) and picks its word(s); the new state is the key and the counter
advanced by the number of blocks.
"""
from __future__ import annotations

from llvmlite import ir

from axle.codegen import scalar as S
from axle.codegen.bitcast import from_bits
from axle.codegen.elemental import index_i64 as _index
from axle.codegen.emitter import _ty
from axle.codegen.scalar import I32, I64
from axle.errors import Unsupported
from axle.backends.cpu.context import Context
from axle.backends.cpu.registry import kernel
from axle.ir.core import Operation

_ROTATIONS = [(13, 15, 26, 6), (17, 29, 16, 24)]


def _c32(v: int):
    return ir.Constant(I32, v & 0xFFFFFFFF)


def _rotl(b, x, r: int):
    return b.or_(b.shl(x, _c32(r)), b.lshr(x, _c32(32 - r)))


def threefry2x32(b, x0, x1, k0, k1):
    """Threefry-2x32, 20 rounds, on i32 registers."""
    ks = [k0, k1, b.xor(b.xor(_c32(0x1BD11BDA), k0), k1)]
    x0, x1 = b.add(x0, ks[0]), b.add(x1, ks[1])
    for group in range(5):
        for r in _ROTATIONS[group % 2]:
            x0 = b.add(x0, x1)
            x1 = b.xor(_rotl(b, x1, r), x0)
        x0 = b.add(x0, ks[(group + 1) % 3])
        x1 = b.add(b.add(x1, ks[(group + 2) % 3]), _c32(group + 1))
    return x0, x1


def _mulhilo(b, x, m: int):
    p = b.mul(b.zext(x, I64), ir.Constant(I64, m))
    return b.trunc(b.lshr(p, ir.Constant(I64, 32)), I32), b.trunc(p, I32)


def philox4x32(b, x, k0, k1):
    """Philox-4x32, 10 rounds, on i32 registers."""
    for _ in range(10):
        hi0, lo0 = _mulhilo(b, x[0], 0xD2511F53)
        hi1, lo1 = _mulhilo(b, x[2], 0xCD9E8D57)
        x = [b.xor(b.xor(hi1, x[1]), k0), lo1, b.xor(b.xor(hi0, x[3]), k1), lo0]
        k0, k1 = b.add(k0, _c32(0x9E3779B9)), b.add(k1, _c32(0xBB67AE85))
    return x


def _split(b, v):
    return b.trunc(v, I32), b.trunc(b.lshr(v, ir.Constant(I64, 32)), I32)


def _join(b, lo, hi):
    return b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), ir.Constant(I64, 32)))


def split_shape(shape) -> tuple[int, list]:
    """XLA's SplitShapeIntoHalves (as the interpreter): the dimension to split (first even,
    else the largest) and the shape of one half."""
    if not shape:
        return 0, [1]
    even = [d for d, n in enumerate(shape) if n % 2 == 0]
    split = even[0] if even else max(range(len(shape)), key=lambda d: (shape[d], -d))
    half = list(shape)
    half[split] = (shape[split] + 1) // 2
    return split, half


def _check(op: Operation) -> None:
    st, ot = _ty(op.operands[0]), _ty(op.results[1])
    algorithm = str(op.attr("rng_algorithm", "DEFAULT"))
    if st.rank != 1 or not st.element_type.is_int or st.element_type.bitwidth != 64:
        raise Unsupported(f"{op.where()}: state of type {st}")
    n = st.shape[0]
    if algorithm == "THREE_FRY" and n != 2 or algorithm in ("PHILOX", "DEFAULT") and n not in (2, 3) \
            or algorithm not in ("THREE_FRY", "PHILOX", "DEFAULT"):
        raise Unsupported(f"{op.where()}: {algorithm} with a state of {n} elements")
    et = ot.element_type
    if et.is_complex or et.bitwidth > 64 or et.bitwidth not in (1, 2, 4, 8, 16, 32, 64):
        raise Unsupported(f"{op.where()}: output of type {ot}")
    S.reg_type(et)


@kernel("stablehlo.rng_bit_generator", check=_check)
def rng_bit_generator(ctx: Context, op: Operation) -> None:
    em, b = ctx.em, ctx.b
    state = op.operands[0]
    st, ot = _ty(state), _ty(op.results[1])
    et = ot.element_type
    shape = list(ot.shape)
    n = 1
    for d in shape:
        n *= d
    bits = 64 if et.bitwidth == 64 else 32
    algorithm = str(op.attr("rng_algorithm", "DEFAULT"))
    s = [_index(em, state, [em.const_i64(k)]) for k in range(st.shape[0])]
    key0, key1 = _split(b, s[0])
    out = ctx.buffer(op.results[1])

    def store(idx, word):
        """word: i64 (64-bit outputs) or i32: the low bits become the element."""
        w = et.bitwidth
        v = word if word.type.width == w else b.trunc(word, ir.IntType(w))
        S.store(b, from_bits(b, v, et), em.element_ptr(out, et, em.linear(idx, shape)), et)

    if algorithm == "THREE_FRY":
        counter = s[1]
        if bits == 64:
            blocks = n

            def body(idx):
                block = b.add(counter, em.linear(idx, shape))
                y0, y1 = threefry2x32(b, *_split(b, block), key0, key1)
                store(idx, _join(b, y0, y1))
        else:
            split, half = split_shape(shape)
            blocks = 1
            for d in half:
                blocks *= d

            def body(idx):
                if not shape:
                    hidx, word = [em.const_i64(0)], None
                else:
                    hidx = list(idx)
                    hidx[split] = b.lshr(idx[split], em.const_i64(1))
                    word = b.trunc(idx[split], ir.IntType(1))
                block = b.add(counter, em.linear(hidx, half))
                y0, y1 = threefry2x32(b, *_split(b, block), key0, key1)
                store(idx, y0 if word is None else b.select(word, y1, y0))
        em.loop_nest(shape, body)
        new_state = [s[0], b.add(counter, em.const_i64(blocks))]
    else:
        low, high = (s[1], s[0]) if len(s) == 2 else (s[1], s[2])
        per_block = 2 if bits == 64 else 4
        count = -(-n // per_block)

        def body(idx):
            i = em.linear(idx, shape)
            block = b.udiv(i, em.const_i64(per_block))
            lane = b.urem(i, em.const_i64(per_block))
            lo = b.add(low, block)
            hi = b.add(high, b.zext(b.icmp_unsigned("<", lo, low), I64))
            x = philox4x32(b, [*_split(b, lo), *_split(b, hi)], key0, key1)
            if bits == 64:
                first, second = _join(b, x[0], x[1]), _join(b, x[2], x[3])
                store(idx, b.select(b.icmp_unsigned("==", lane, em.const_i64(0)), first, second))
            else:
                v = x[3]
                for k in (2, 1, 0):
                    v = b.select(b.icmp_unsigned("==", lane, em.const_i64(k)), x[k], v)
                store(idx, v)
        em.loop_nest(shape, body)
        new_low = b.add(low, em.const_i64(count))
        new_high = b.add(high, b.zext(b.icmp_unsigned("<", new_low, low), I64))
        new_state = [s[0], new_low] if len(s) == 2 else [s[0], new_low, new_high]
    sdst = ctx.buffer(op.results[0])
    set_ = _ty(op.results[0]).element_type
    for k, v in enumerate(new_state):
        S.store(b, v, em.element_ptr(sdst, set_, em.const_i64(k)), set_)


# ---------------------------------------------------------------- rng (the interpreter's numbers)

RNG_KEY = 0x0A11E0A11E  # the interpreter's fixed key (ops_rng.py): every run gives the same numbers


def _threefry64(b, em, counter: int, i):
    """The 64-bit block `counter + i` under RNG_KEY (i: an i64 register)."""
    k0, k1 = ir.Constant(I32, RNG_KEY & 0xFFFFFFFF), ir.Constant(I32, RNG_KEY >> 32)
    y0, y1 = threefry2x32(b, *_split(b, b.add(em.const_i64(counter), i)), k0, k1)
    return _join(b, y0, y1)


def _uniform01(b, em, counter: int, i):
    """An f64 in [0, 1) from the top 53 bits of block counter + i."""
    bits = _threefry64(b, em, counter, i)
    return b.fmul(b.uitofp(b.lshr(bits, ir.Constant(I64, 11)), S.F64), ir.Constant(S.F64, 2.0 ** -53))


def _check_rng(op: Operation) -> None:
    a, bb, shape = (_ty(v) for v in op.operands)
    et = _ty(op.results[0]).element_type
    if a.rank or bb.rank or shape.rank != 1 or shape.shape[0] != _ty(op.results[0]).rank:
        raise Unsupported(f"{op.where()}: rng with operands {a}, {bb}, {shape}")
    if et.is_complex or not (et.is_float or et.is_int or et.is_bool):
        raise Unsupported(f"{op.where()}: rng of {et}")
    if str(op.attr("rng_distribution", "UNIFORM")) == "NORMAL" and not et.is_float:
        raise Unsupported(f"{op.where()}: NORMAL rng of {et}")
    S.reg_type(et)


@kernel("stablehlo.rng", check=_check_rng)
def rng(ctx: Context, op: Operation) -> None:
    """UNIFORM: low + (high - low) * u (floats; below high), low + bits mod (high - low)
    (integers); NORMAL: Box-Muller on two uniform streams; in f64 / 64-bit integers, then
    rounded or wrapped to the result type, as the interpreter computes them."""
    from axle.backends.cpu.kernels_dynamic import runtime_check
    from axle.codegen.scalar_ops import convert
    from axle.ir.types import f64, i64, ui64
    em, b = ctx.em, ctx.b
    a_v, b_v, shape_v = op.operands
    rt = _ty(op.results[0])
    et = rt.element_type
    shape = list(rt.shape)
    dims = [_index(em, shape_v, [em.const_i64(k)]) for k in range(len(shape))]
    ok = ir.Constant(ir.IntType(1), 1)
    for x, d in zip(dims, shape):
        ok = b.and_(ok, b.icmp_signed("==", x, em.const_i64(d)))
    runtime_check(ctx, ok, f"{op.where()}: the shape operand does not match the result type {op.results[0].type}")
    out = ctx.buffer(op.results[0])
    distribution = str(op.attr("rng_distribution", "UNIFORM"))
    F64 = S.F64

    def libm(name, *args):
        fn = em.module.globals.get(name) or ir.Function(em.module, ir.FunctionType(F64, [F64] * len(args)), name)
        return b.call(fn, list(args))

    if et.is_float:
        lo = convert(em, et, f64, em.value_at(a_v, []))
        hi = convert(em, et, f64, em.value_at(b_v, []))
        below = libm("nextafter", hi, lo)
    else:
        wide = ui64 if et.is_unsigned else i64
        lo = convert(em, et, wide, em.value_at(a_v, []))
        hi = convert(em, et, wide, em.value_at(b_v, []))
        span = b.sub(hi, lo)
        empty = b.icmp_unsigned("<=", hi, lo) if et.is_unsigned else b.icmp_signed("<=", hi, lo)
        safe = b.select(empty, em.const_i64(1), span)

    def body(idx):
        i = em.linear(idx, shape)
        if distribution == "NORMAL":
            u1 = _uniform01(b, em, 0, i)
            tiny = ir.Constant(F64, 2.0 ** -53)
            u1 = b.select(b.fcmp_ordered("<", u1, tiny), tiny, u1)
            u2 = _uniform01(b, em, 1 << 40, i)
            r = b.call(em.module.declare_intrinsic("llvm.sqrt", [F64], ir.FunctionType(F64, [F64])),
                       [b.fmul(ir.Constant(F64, -2.0), libm("log", u1))])
            z = b.fmul(r, libm("cos", b.fmul(ir.Constant(F64, 2 * 3.141592653589793), u2)))
            v = convert(em, f64, et, b.fadd(lo, b.fmul(hi, z)))
        elif et.is_float:
            u = _uniform01(b, em, 0, i)
            x = b.fadd(lo, b.fmul(b.fsub(hi, lo), u))
            x = b.select(b.fcmp_ordered("<", below, x), below, x)  # np.minimum (NaN-propagating)
            x = b.select(b.fcmp_unordered("uno", below, below), below, x)
            x = b.select(b.fcmp_ordered(">", hi, lo), x, lo)
            v = convert(em, f64, et, x)
        else:
            bits = _threefry64(b, em, 0, i)
            x = b.add(lo, b.urem(bits, safe))
            v = b.select(empty, em.value_at(a_v, []), convert(em, wide, et, x))
        S.store(b, S.finish(b, v, et), em.element_ptr(out, et, em.linear(idx, shape)), et)

    em.loop_nest(shape, body)
