// An XLA handler written with XLA's C++ binding (xla/ffi/api/ffi.h), unchanged: the
// binding checks the call frame's struct sizes, decodes buffers and attributes.
#include "xla/ffi/api/ffi.h"
namespace ffi = xla::ffi;
static ffi::Error Impl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y, float factor, int64_t offset) {
  if (factor < 0) return ffi::Error::InvalidArgument("negative factor");
  for (size_t i = 0; i < x.element_count(); ++i) y->typed_data()[i] = x.typed_data()[i] * factor + offset;
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(ScaleCpp, Impl,
    ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>().Attr<float>("factor").Attr<int64_t>("offset"));
