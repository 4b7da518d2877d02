"""A native custom call with XLA's typed FFI ABI: a C handler (built here with gcc against
the c_api.h that jaxlib ships) called from axle-compiled code."""
import ctypes
import os
import shutil
import subprocess
import tempfile

import numpy as np

import axle

HANDLER = r"""
#include "xla/ffi/api/c_api.h"
/* y = x * scale, with `scale` an attribute (the only one); a negative scale is an error */
XLA_FFI_Error* scale(XLA_FFI_CallFrame* frame) {
  XLA_FFI_Buffer* x = (XLA_FFI_Buffer*)frame->args.args[0];
  XLA_FFI_Buffer* y = (XLA_FFI_Buffer*)frame->rets.rets[0];
  float s = *(float*)((XLA_FFI_Scalar*)frame->attrs.attrs[0])->value;
  if (s < 0) {
    XLA_FFI_Error_Create_Args e = {XLA_FFI_Error_Create_Args_STRUCT_SIZE, 0, "scale must be >= 0",
                                   XLA_FFI_Error_Code_INVALID_ARGUMENT};
    return frame->api->XLA_FFI_Error_Create(&e);
  }
  long n = 1;
  for (long d = 0; d < x->rank; ++d) n *= x->dims[d];
  for (long i = 0; i < n; ++i) ((float*)y->data)[i] = ((float*)x->data)[i] * s;
  return 0;
}
"""
try:
    import jax.ffi
    include = jax.ffi.include_dir()
except ImportError:
    include = None
if shutil.which("gcc") is None or include is None:
    print("skipped: needs gcc and jaxlib's xla/ffi/api/c_api.h")
    raise SystemExit(0)
d = tempfile.mkdtemp()
with open(os.path.join(d, "scale.c"), "w") as f:
    f.write(HANDLER)
subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-I", include, os.path.join(d, "scale.c"),
                "-o", os.path.join(d, "scale.so")], check=True)
lib = ctypes.CDLL(os.path.join(d, "scale.so"))
axle.register_ffi_target("example.scale", lib.scale)

TEXT = """func.func @main(%x: tensor<6xf32>) -> tensor<6xf32> {
  %0 = stablehlo.custom_call @example.scale(%x) {api_version = 4 : i32, backend_config = {scale = SCALE : f32}} : (tensor<6xf32>) -> tensor<6xf32>
  %1 = stablehlo.add %0, %x : tensor<6xf32>
  return %1 : tensor<6xf32>
}"""
x = np.arange(6, dtype=np.float32)
y = axle.compile(TEXT.replace("SCALE", "2.0"))(x)
print("x * 2 + x =", y)
np.testing.assert_array_equal(y, 3 * x)
try:
    axle.compile(TEXT.replace("SCALE", "-1.0"))(x)
except RuntimeError as e:
    print("handler error:", e)
print("ok")
