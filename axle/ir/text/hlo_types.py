"""Element types of HLO shapes as numpy dtypes (for constants)."""
from __future__ import annotations

import numpy as np


def numpy_dtype(mlir_element: str):
    import ml_dtypes
    table = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
             "ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32, "ui64": np.uint64,
             "f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16,
             "i4": ml_dtypes.int4, "ui4": ml_dtypes.uint4, "i2": ml_dtypes.int2, "ui2": ml_dtypes.uint2,
             "f8E4M3FN": ml_dtypes.float8_e4m3fn, "f8E5M2": ml_dtypes.float8_e5m2,
             "f8E4M3": ml_dtypes.float8_e4m3, "f8E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
             "f8E5M2FNUZ": ml_dtypes.float8_e5m2fnuz, "f8E4M3B11FNUZ": ml_dtypes.float8_e4m3b11fnuz,
             "f8E3M4": ml_dtypes.float8_e3m4, "f4E2M1FN": ml_dtypes.float4_e2m1fn,
             "f8E8M0FNU": ml_dtypes.float8_e8m0fnu}
    return table.get(mlir_element, np.float32)
