"""Link-time names of SciPy's LAPACK routines: `axle_lapack_<routine>` -> its address.

Generated code (kernels_lapack.py) calls these names; the JIT binds them when it links
object code, also object code loaded from the disk cache by a process that never compiled
a LAPACK call (linking.link_object registers them when the object mentions one)."""
from __future__ import annotations

from functools import lru_cache

from axle.backends.cpu.llvm_env import EXTERNAL_SYMBOLS
from axle.interpreter.lapack_plans import _COMPLEX_NAME, FAMILIES, LapackError, routine_address


def symbol_name(routine: str) -> str:
    return f"axle_lapack_{routine}"


@lru_cache(maxsize=None)
def register_symbols() -> None:
    for p in "sdcz":
        for fam in FAMILIES:
            name = p + (_COMPLEX_NAME.get(fam, fam) if p in "cz" else fam)
            try:
                EXTERNAL_SYMBOLS[symbol_name(name)] = routine_address("blas" if fam == "trsm" else "lapack", name)
            except LapackError:
                continue
    for name in ("strsv", "dtrsv"):  # (one right-hand side: kernels_lapack.trsm_row_major)
        try:
            EXTERNAL_SYMBOLS[symbol_name(name)] = routine_address("blas", name)
        except LapackError:
            continue
