"""The host CPU as a codegen Target (axle/codegen/target.py).

Everything the plain LLVM target does (intrinsics as intrinsics, libm by its C names,
constants as internal globals in address space 0, 64-byte aligned), plus what the host
says: whether it has FMA, its vector width, its triple and data layout (llvm_env).
"""
from __future__ import annotations

from functools import lru_cache

from axle.backends.cpu import llvm_env
from axle.codegen.target import Target


class CpuTarget(Target):
    name = "cpu"

    def has_fma(self) -> bool:
        return _has_fma()

    @property
    def vector_bits(self) -> int:
        """512 on AVX-512 hosts (llvm_env turns prefer-256-bit off), 256 with AVX, else 128."""
        features = llvm_env.host_cpu()[1].split(",")
        return 512 if "+avx512f" in features else 256 if "+avx" in features else 128

    @property
    def triple(self) -> str:
        return llvm_env.triple()

    @property
    def data_layout(self) -> str:
        return llvm_env.data_layout()


@lru_cache(maxsize=None)
def _has_fma() -> bool:
    return "+fma" in llvm_env.host_cpu()[1].split(",")


CPU = CpuTarget()  # the one instance the CPU backend's emitters use
