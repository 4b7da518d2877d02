"""A correctness fallback: a lent kernel (axle.codegen.kernel_library, the CPU's) run by one GPU thread.

For ops the gpu backend has no parallel kernel for yet (scatter, sort, reduce_window,
convolution, ...), the CPU backend's own kernel function is emitted
inside a ptx_kernel guarded by `blockIdx.x == 0 && threadIdx.x == 0`, with a small
stand-in for the CPU's compile Context (`SerialContext`). The CPU kernels' loops are plain
LLVM IR; anything they need that a GPU thread does not have (BLAS, host callbacks,
the arena for scratch, nested program blocks) raises Unsupported naming the op.

This is slow by construction (one thread does the whole op): it exists so that every
program the backend accepts is complete, and it is the list of kernels a GPU session
must replace with parallel ones (docs/gpu.md).
"""
from __future__ import annotations

from axle.codegen import scalar as S
from axle.codegen.emitter import _ty, is_constant
from axle.codegen.scalar import I8
from axle.errors import Unsupported


class SerialContext:
    """What the CPU kernels read from their Context, for a kernel run by one thread."""

    in_kernel_function = False  # parallel.parallel_ok: never split across a thread pool
    split_kernels = False

    def __init__(self, em, op, scratch=None):
        self.em = em
        self.op = op
        self.scratch = scratch  # generic i8* to the program's scratch buffer
        self.scratch_used = 0
        self.kernels = []
        self.row_fusions = {}
        self.conv_rows = {}

    @property
    def mod(self):
        return self.em.module

    @property
    def b(self):
        return self.em.b

    def buffer(self, v):
        if v not in self.em.buffers:
            g = self.em.constant_global(v)
            if g is not None:
                return self.b.bitcast(g, I8.as_pointer())
            raise Unsupported(f"{self.op.where()}: an operand of this op has no buffer in the gpu backend")
        return self.em.buffers[v]

    def has_buffer(self, v) -> bool:
        return v in self.em.buffers or is_constant(v)

    def same_buffer(self, a, b) -> bool:
        return False  # results never share an operand's buffer here

    def copy(self, v, dst) -> None:
        t = _ty(v)
        em = self.em
        em.loop_nest(t.shape, lambda idx: S.store(em.b, em.value_at(v, idx),
                                                   em.element_ptr(dst, t.element_type, em.linear(idx, t.shape)),
                                                   t.element_type))

    def temp_ref(self, t, value=None, until=None):
        """Room for a temporary in the scratch buffer (64-byte aligned offsets)."""
        if self.scratch is None:
            raise Unsupported(f"{self.op.where()}: no scratch buffer for the gpu backend's fallback")
        off = self.scratch_used
        self.scratch_used = off + (_nbytes(t) + 63) // 64 * 64
        return ("scratch", off)

    def resolve(self, ref):
        return self.em.b.gep(self.scratch, [self.em.const_i64(ref[1])], inbounds=True)

    def temp(self, t, value=None):
        return self.resolve(self.temp_ref(t, value))

    def release(self, value) -> None:
        pass  # scratch is not reused inside a kernel

    def __getattr__(self, name):
        raise Unsupported(f"{self.op.where()}: not supported by the gpu backend yet (its CPU kernel needs "
                          f"Context.{name}, which the one-thread fallback does not provide)")


def _nbytes(t) -> int:
    n = t.element_type.np_dtype.itemsize
    for d in t.shape:
        n *= d
    return n
