/* XLA typed-FFI handlers written against xla/ffi/api/c_api.h (the header jaxlib ships),
   compiled by gcc in tests/runtime/test_ffi.py and run by axle-compiled code. */
#include <string.h>
#include <stdint.h>
#include "xla/ffi/api/c_api.h"

static XLA_FFI_Error* fail(const XLA_FFI_Api* api, XLA_FFI_Error_Code code, const char* msg) {
  XLA_FFI_Error_Create_Args a;
  a.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
  a.extension_start = NULL;
  a.message = msg;
  a.errc = code;
  return api->XLA_FFI_Error_Create(&a);
}

static void* find_attr(XLA_FFI_CallFrame* f, const char* name, XLA_FFI_AttrType type) {
  for (int64_t i = 0; i < f->attrs.size; ++i) {
    XLA_FFI_ByteSpan* n = f->attrs.names[i];
    if (n->len == strlen(name) && memcmp(n->ptr, name, n->len) == 0 && f->attrs.types[i] == type)
      return f->attrs.attrs[i];
  }
  return NULL;
}

/* out = x * factor + offset; checks the attribute `tag` */
XLA_FFI_Error* scale_offset(XLA_FFI_CallFrame* f) {
  if (f->struct_size < XLA_FFI_CallFrame_STRUCT_SIZE) return fail(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "frame");
  if (f->stage != XLA_FFI_ExecutionStage_EXECUTE) return NULL;
  if (f->args.size != 1 || f->rets.size != 1) return fail(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "arity");
  XLA_FFI_Buffer* x = (XLA_FFI_Buffer*)f->args.args[0];
  XLA_FFI_Buffer* y = (XLA_FFI_Buffer*)f->rets.rets[0];
  if (x->dtype != XLA_FFI_DataType_F32 || y->dtype != XLA_FFI_DataType_F32)
    return fail(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "dtype");
  XLA_FFI_Scalar* factor = find_attr(f, "factor", XLA_FFI_AttrType_SCALAR);
  XLA_FFI_Scalar* offset = find_attr(f, "offset", XLA_FFI_AttrType_SCALAR);
  XLA_FFI_ByteSpan* tag = find_attr(f, "tag", XLA_FFI_AttrType_STRING);
  if (!factor || factor->dtype != XLA_FFI_DataType_F32 || !offset || offset->dtype != XLA_FFI_DataType_S64)
    return fail(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "attributes");
  if (!tag || tag->len != 4 || memcmp(tag->ptr, "axle", 4) != 0)
    return fail(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "tag");
  int64_t n = 1;
  for (int64_t d = 0; d < x->rank; ++d) n *= x->dims[d];
  float a = *(float*)factor->value;
  int64_t b = *(int64_t*)offset->value;
  for (int64_t i = 0; i < n; ++i) ((float*)y->data)[i] = ((float*)x->data)[i] * a + (float)b;
  return NULL;
}

XLA_FFI_Error* always_fails(XLA_FFI_CallFrame* f) {
  return fail(f->api, XLA_FFI_Error_Code_OUT_OF_RANGE, "index 7 is out of range [0, 4)");
}

/* y0 = x + sum(weights) + config.bias (x: f32, weights: array<i32>, config: {bias = f32}),
   y1 = x as int32 (a second result); reads an ARRAY and a DICTIONARY attribute */
XLA_FFI_Error* array_and_dict(XLA_FFI_CallFrame* f) {
  if (f->args.size != 1 || f->rets.size != 2) return fail(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "arity");
  XLA_FFI_Array* w = find_attr(f, "weights", XLA_FFI_AttrType_ARRAY);
  XLA_FFI_Attrs* cfg = find_attr(f, "config", XLA_FFI_AttrType_DICTIONARY);
  if (!w || w->dtype != XLA_FFI_DataType_S32 || !cfg || cfg->size != 1 || cfg->types[0] != XLA_FFI_AttrType_SCALAR)
    return fail(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "attributes");
  XLA_FFI_Scalar* bias = (XLA_FFI_Scalar*)cfg->attrs[0];
  if (bias->dtype != XLA_FFI_DataType_F32) return fail(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "bias");
  float total = *(float*)bias->value;
  for (size_t i = 0; i < w->size; ++i) total += ((int32_t*)w->data)[i];
  XLA_FFI_Buffer* x = (XLA_FFI_Buffer*)f->args.args[0];
  XLA_FFI_Buffer* y0 = (XLA_FFI_Buffer*)f->rets.rets[0];
  XLA_FFI_Buffer* y1 = (XLA_FFI_Buffer*)f->rets.rets[1];
  if (y1->dtype != XLA_FFI_DataType_S32) return fail(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "y1");
  int64_t n = 1;
  for (int64_t d = 0; d < x->rank; ++d) n *= x->dims[d];
  for (int64_t i = 0; i < n; ++i) {
    ((float*)y0->data)[i] = ((float*)x->data)[i] + total;
    ((int32_t*)y1->data)[i] = (int32_t)((float*)x->data)[i];
  }
  return NULL;
}
