"""Random numbers: rng_bit_generator and rng (spec.md).

rng_bit_generator's output is implementation-defined; this one is bit-exact with XLA (whose
results the conformance suites record), following its public RngBitGeneratorExpander and prng
library:

* THREE_FRY: state = [key, counter]. Threefry-2x32 with 20 rounds (Salmon et al. 2011) encrypts
  consecutive 64-bit counters `counter + i` (split into two 32-bit words, low word first) under
  the 64-bit key. A 64-bit output element is one block (word 0 low, word 1 high). For 32-bit
  outputs the shape is split in two along its first even dimension (else its largest): block i
  gives the elements 2i and 2i+1 along that dimension. Narrower types keep the low bits of a
  32-bit value. The new state is [key, counter + number of blocks].
* PHILOX (and DEFAULT, which is Philox on XLA's CPU and GPU backends): Philox-4x32 with 10
  rounds encrypts consecutive 128-bit counters under the 64-bit key state[0]. The counter is
  [state[1], state[2]] (low, high) for a 3-element state and [state[1], state[0]] for a
  2-element one. Each block gives four 32-bit values in order, or two 64-bit values (words 0|1,
  then 2|3). The new state is the key followed by the advanced counter (its low word only for a
  2-element state).

Float outputs are the generated bit patterns reinterpreted as the float type.

rng's numbers are implementation-defined too: here they come from Threefry with a fixed key, so
every evaluation is deterministic and has no hidden state.
"""
from __future__ import annotations

import numpy as np

from axle.interpreter.numerics import element_type, from_raw_bits, raw_bits, round_float, wrap_int
from axle.interpreter.registry import OpCall, register

_U32 = np.uint64(0xFFFFFFFF)


def _u32(x) -> np.ndarray:
    """Values as uint64 kept to their low 32 bits (32-bit words live in uint64 arrays)."""
    return np.asarray(x, dtype=np.uint64) & _U32


def _split64(x) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=np.uint64)
    return x & _U32, x >> np.uint64(32)


def _join64(low, high) -> np.ndarray:
    return (np.asarray(low, np.uint64) & _U32) | (np.asarray(high, np.uint64) << np.uint64(32))


# ---------------------------------------------------------------- Threefry-2x32


def _rotate_left32(x, distance: int):
    return _u32((x << np.uint64(distance)) | (x >> np.uint64(32 - distance)))


def threefry2x32(x0, x1, key0, key1):
    """Threefry-2x32 with 20 rounds on 32-bit words (uint64 arrays holding 32 bits)."""
    rotations = [(13, 15, 26, 6), (17, 29, 16, 24)]
    ks = [_u32(key0), _u32(key1), _u32(np.uint64(0x1BD11BDA) ^ _u32(key0) ^ _u32(key1))]
    x0, x1 = _u32(x0 + ks[0]), _u32(x1 + ks[1])
    for group in range(5):
        for r in rotations[group % 2]:
            x0 = _u32(x0 + x1)
            x1 = _rotate_left32(x1, r) ^ x0
        x0 = _u32(x0 + ks[(group + 1) % 3])
        x1 = _u32(x1 + ks[(group + 2) % 3] + np.uint64(group + 1))
    return x0, x1


# ---------------------------------------------------------------- Philox-4x32


def _mul_hi_lo(x, multiplier: int):
    product = _u32(x) * np.uint64(multiplier)  # < 2**64: exact in uint64
    return product >> np.uint64(32), product & _U32


def philox4x32(words, key0, key1):
    """Philox-4x32 with 10 rounds on four 32-bit words (uint64 arrays holding 32 bits)."""
    x = [_u32(w) for w in words]
    k0, k1 = _u32(key0), _u32(key1)
    for _ in range(10):
        hi0, lo0 = _mul_hi_lo(x[0], 0xD2511F53)
        hi1, lo1 = _mul_hi_lo(x[2], 0xCD9E8D57)
        x = [hi1 ^ x[1] ^ k0, lo1, hi0 ^ x[3] ^ k1, lo0]
        k0, k1 = _u32(k0 + np.uint64(0x9E3779B9)), _u32(k1 + np.uint64(0xBB67AE85))
    return x


# ---------------------------------------------------------------- bit generators


def _split_shape(shape: tuple) -> tuple[int, list[int]]:
    """XLA's SplitShapeIntoHalves: the dimension to split (first even one, else the largest)
    and the shape of one half."""
    if not shape:
        return 0, [1]
    even = [d for d, size in enumerate(shape) if size % 2 == 0]
    split = even[0] if even else int(np.argmax(shape))
    half = list(shape)
    half[split] = (shape[split] + 1) // 2
    return split, half


def threefry_bits(key, counter, shape: tuple, bits: int):
    """(uint64 array of `shape` with the generated bits, new counter)."""
    key0, key1 = _split64(key)
    with np.errstate(over="ignore"):
        if bits == 64:
            n = int(np.prod(shape, dtype=np.int64))
            blocks = np.uint64(counter) + np.arange(n, dtype=np.uint64)
            y0, y1 = threefry2x32(*_split64(blocks), key0, key1)
            return _join64(y0, y1).reshape(shape), np.uint64(counter) + np.uint64(n)
        split, half = _split_shape(shape)
        n = int(np.prod(half, dtype=np.int64))
        blocks = np.uint64(counter) + np.arange(n, dtype=np.uint64)
        y0, y1 = threefry2x32(*_split64(blocks), key0, key1)
        if not shape:
            return y0.reshape(()), np.uint64(counter) + np.uint64(n)
        pairs = np.stack([y0.reshape(half), y1.reshape(half)], axis=split + 1)
        joined = list(shape)
        joined[split] = 2 * half[split]
        values = pairs.reshape(joined)
        values = values[tuple(slice(0, size) for size in shape)]
        return values, np.uint64(counter) + np.uint64(n)


def philox_bits(key, counter_low, counter_high, shape: tuple, bits: int):
    """(uint64 array of `shape` with the generated bits, new 128-bit counter as (low, high))."""
    key0, key1 = _split64(key)
    n = int(np.prod(shape, dtype=np.int64))
    words = 2 * n if bits == 64 else n
    count = -(-words // 4)
    with np.errstate(over="ignore"):
        low = np.uint64(counter_low) + np.arange(count, dtype=np.uint64)
        carry = (low < np.uint64(counter_low)).astype(np.uint64)  # the low word wrapped around
        high = np.uint64(counter_high) + carry
        out = philox4x32([*_split64(low), *_split64(high)], key0, key1)
        if bits == 64:
            values = np.stack([_join64(out[0], out[1]), _join64(out[2], out[3])], axis=-1).reshape(-1)
        else:
            values = np.stack(out, axis=-1).reshape(-1)
        new_low = np.uint64(counter_low) + np.uint64(count)
        new_high = np.uint64(counter_high) + np.uint64(1) if new_low < np.uint64(counter_low) \
            else np.uint64(counter_high)
    return values[:n].reshape(shape), (new_low, new_high)


@register("stablehlo.rng_bit_generator")
def rng_bit_generator(call: OpCall):
    state_et = element_type(call.operand_types[0])
    state = raw_bits(call.operands[0], state_et)
    out_type = call.result_types[1]
    out_et = element_type(out_type)
    shape = tuple(out_type.shape)
    if any(d is None for d in shape):
        raise call.error(f"rng_bit_generator needs a static output shape, got {out_type}")
    bits = 64 if out_et.bitwidth == 64 else 32
    algorithm = call.attrs.get("rng_algorithm", "DEFAULT")
    if algorithm == "THREE_FRY":
        if state.size != 2:
            raise call.error(f"THREE_FRY needs a state of 2 elements, got {state.size}")
        values, counter = threefry_bits(state[0], state[1], shape, bits)
        new_state = np.array([state[0], counter], dtype=np.uint64)
    elif algorithm in ("PHILOX", "DEFAULT"):
        if state.size == 2:
            values, (low, _) = philox_bits(state[0], state[1], state[0], shape, bits)
            new_state = np.array([state[0], low], dtype=np.uint64)
        elif state.size == 3:
            values, (low, high) = philox_bits(state[0], state[1], state[2], shape, bits)
            new_state = np.array([state[0], low, high], dtype=np.uint64)
        else:
            raise call.error(f"PHILOX needs a state of 2 or 3 elements, got {state.size}")
    else:
        raise call.error(f"unknown rng_algorithm {algorithm!r}")
    if out_et.bitwidth < 32:
        values = values & np.uint64((1 << out_et.bitwidth) - 1)
    return [from_raw_bits(new_state, state_et), from_raw_bits(values, out_et)]


# ---------------------------------------------------------------- rng


_RNG_KEY = 0x0A11E0A11E  # any fixed key: rng's numbers are implementation-defined


def _uniform01(shape: tuple, counter: int = 0) -> np.ndarray:
    """float64 numbers in [0, 1) from 53 random bits each."""
    bits, _ = threefry_bits(np.uint64(_RNG_KEY), np.uint64(counter), shape, 64)
    return (bits >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


@register("stablehlo.rng")
def rng(call: OpCall):
    a, b = (np.asarray(v) for v in call.operands[:2])
    result_type = call.result_types[0]
    et = element_type(result_type)
    shape = tuple(int(d) for d in np.asarray(call.operands[2]).reshape(-1))
    distribution = call.attrs.get("rng_distribution", "UNIFORM")
    if distribution == "NORMAL":
        u1 = np.maximum(_uniform01(shape, 0), 2.0 ** -53)
        u2 = _uniform01(shape, 1 << 40)
        z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
        return round_float(a.astype(np.float64) + b.astype(np.float64) * z, et)
    if distribution != "UNIFORM":
        raise call.error(f"unknown rng_distribution {distribution!r}")
    if et.is_float:
        low, high = a.astype(np.float64), b.astype(np.float64)
        values = np.minimum(low + (high - low) * _uniform01(shape), np.nextafter(high, low))
        return round_float(np.where(high > low, values, low), et)
    # integers and booleans: a + (bits mod (b - a)); the sum is exact modulo 2**64 and lies in
    # [a, b), so wrapping it to the type gives the value itself
    unsigned = et.is_unsigned
    low, high = (int(v.astype(np.uint64 if unsigned else np.int64)) for v in (a, b))
    span = high - low
    if span <= 0:
        return np.full(shape, a, dtype=et.dtype)
    bits, _ = threefry_bits(np.uint64(_RNG_KEY), np.uint64(0), shape, 64)
    with np.errstate(over="ignore"):
        values = np.uint64(low % 2 ** 64) + bits % np.uint64(span)
    return wrap_int(values, et)
