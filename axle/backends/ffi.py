"""Native custom calls with XLA's typed FFI ABI (xla/ffi/api/c_api.h).

    lib = ctypes.CDLL("./my_ops.so")
    axle.register_ffi_target("my_op", lib.MyOp)     # XLA_FFI_Error* MyOp(XLA_FFI_CallFrame*)
    # `stablehlo.custom_call @my_op(...) {api_version = 4 : i32, backend_config = {...}}`

A handler compiled for XLA (against c_api.h directly or through ffi.h's binding) runs
unchanged: compiled code builds an XLA_FFI_CallFrame on its stack for each call (the
operands and results as XLA_FFI_Buffer {dtype, data, rank, dims}, the op's backend_config
dictionary as sorted XLA_FFI_Attrs) and calls the handler; a non-NULL XLA_FFI_Error it
returns is raised as FfiCallError after the program's native call returns.

The XLA_FFI_Api table given to handlers (`call_frame->api`) implements the error functions
(XLA_FFI_Error_Create / GetMessage / Destroy); every other entry returns an UNIMPLEMENTED
error (CPU handlers that bind only buffers and attributes never call them). This is the
layout of FFI API version 0.1 (jaxlib 0.10's header); struct sizes are what the header's
XLA_FFI_STRUCT_SIZE computes, so ffi.h's size checks pass.
"""
from __future__ import annotations

import ctypes
import threading
from typing import Optional

_TARGETS: dict = {}  # name -> (address, the object keeping it alive)
_LOCK = threading.Lock()

API_MAJOR, API_MINOR = 0, 1
ERROR_CODES = ["OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
               "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
               "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"]
# XLA_FFI_DataType (xla_data.proto's PrimitiveType) by axle element type name
DATA_TYPES = {"i1": 1, "i8": 2, "i16": 3, "i32": 4, "i64": 5, "ui8": 6, "ui16": 7, "ui32": 8, "ui64": 9,
              "f16": 10, "f32": 11, "f64": 12, "bf16": 16, "complex<f32>": 15, "complex<f64>": 18,
              "f8E5M2": 19, "f8E4M3FN": 20, "f8E4M3B11FNUZ": 23, "f8E5M2FNUZ": 24, "f8E4M3FNUZ": 25,
              "f8E4M3": 28, "f8E3M4": 29}


class FfiCallError(RuntimeError):
    """A native custom call's handler returned an error (its code and message are shown)."""


def register_ffi_target(name: str, handler, platform: str = "cpu") -> None:
    """Register a native handler `XLA_FFI_Error* handler(XLA_FFI_CallFrame*)` for custom
    calls to `name`. handler: an address (int), a ctypes function (e.g. `lib.MyHandler`), or
    a PyCapsule holding the pointer (as `jax.ffi.pycapsule` makes)."""
    if platform not in ("cpu", "host"):
        raise ValueError(f"register_ffi_target('{name}'): platform '{platform}' has no FFI support; use 'cpu'")
    addr = _address(handler)
    if not addr:
        raise ValueError(f"register_ffi_target('{name}'): the handler is a NULL pointer")
    with _LOCK:
        _TARGETS[name] = (addr, handler)


def unregister_ffi_target(name: str) -> None:
    with _LOCK:
        _TARGETS.pop(name, None)


def lookup(name: str) -> Optional[int]:
    """The handler's address for target `name`, or None."""
    entry = _TARGETS.get(name)
    return entry[0] if entry is not None else None


def _address(handler) -> int:
    if isinstance(handler, int):
        return handler
    if type(handler).__name__ == "PyCapsule":
        api = ctypes.pythonapi
        api.PyCapsule_GetName.restype = ctypes.c_char_p
        api.PyCapsule_GetName.argtypes = [ctypes.py_object]
        api.PyCapsule_GetPointer.restype = ctypes.c_void_p
        api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
        return api.PyCapsule_GetPointer(handler, api.PyCapsule_GetName(handler)) or 0
    if isinstance(handler, (ctypes._CFuncPtr, ctypes.c_void_p)):
        return ctypes.cast(handler, ctypes.c_void_p).value or 0
    raise TypeError(f"an FFI handler must be a function pointer (int, ctypes function or PyCapsule), "
                    f"got {type(handler).__name__}")


# -- the XLA_FFI_Api table ---------------------------------------------------------------
_ERRORS: dict = {}  # address -> (code, message bytes, the ctypes buffer at that address)
_ERR_LOCK = threading.Lock()


class _Version(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("major_version", ctypes.c_int), ("minor_version", ctypes.c_int)]


_API_FUNCTIONS = ["Error_Create", "Error_GetMessage", "Error_Destroy", "Handler_Register", "Stream_Get",
                  "Type_Register", "ExecutionContext_Get", "State_Set", "State_Get", "DeviceMemory_Allocate",
                  "DeviceMemory_Free", "ThreadPool_Schedule", "ThreadPool_NumThreads", "Future_Create",
                  "Future_SetAvailable", "Future_SetError", "RunId_Get", "DeviceOrdinal_Get"]


class _Api(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("api_version", _Version), ("internal_api", ctypes.c_void_p)] + \
               [(f, ctypes.c_void_p) for f in _API_FUNCTIONS]


def _new_error(code: int, message: bytes) -> int:
    buf = ctypes.create_string_buffer(message)
    addr = ctypes.addressof(buf)
    with _ERR_LOCK:
        _ERRORS[addr] = (code, message, buf)
    return addr


def take_error(addr: int) -> tuple[int, str]:
    """(code, message) of an XLA_FFI_Error made by the Api, which is destroyed."""
    with _ERR_LOCK:
        entry = _ERRORS.pop(addr, None)
    if entry is None:
        return 2, "(an XLA_FFI_Error not made by this process's XLA_FFI_Api)"
    return entry[0], entry[1].decode("utf-8", "replace")


def _error_create(args: int) -> int:  # XLA_FFI_Error_Create_Args {size, ext, message, errc}
    msg = ctypes.c_char_p.from_address(args + 16).value or b""
    code = ctypes.c_int.from_address(args + 24).value
    return _new_error(code, msg)


def _error_get_message(args: int) -> None:  # XLA_FFI_Error_GetMessage_Args {size, ext, error, message}
    err = ctypes.c_void_p.from_address(args + 16).value
    with _ERR_LOCK:
        entry = _ERRORS.get(err)
    ctypes.c_void_p.from_address(args + 24).value = ctypes.addressof(entry[2]) if entry else None


def _error_destroy(args: int) -> None:  # XLA_FFI_Error_Destroy_Args {size, ext, error}
    err = ctypes.c_void_p.from_address(args + 16).value
    with _ERR_LOCK:
        _ERRORS.pop(err, None)


_RET_ERR = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)
_RET_VOID = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_KEEP: list = []


def _unimplemented(name: str):
    def fn(args):
        return _new_error(12, f"XLA_FFI_{name} is not implemented by axle's CPU runtime".encode())
    return _RET_ERR(fn)


_API: Optional[_Api] = None


def api_address() -> int:
    """Address of this process's XLA_FFI_Api (made once)."""
    global _API
    with _LOCK:
        if _API is None:
            api = _Api()
            api.struct_size = ctypes.sizeof(_Api)
            api.api_version = _Version(ctypes.sizeof(_Version), None, API_MAJOR, API_MINOR)
            fns = {"Error_Create": _RET_ERR(_error_create), "Error_GetMessage": _RET_VOID(_error_get_message),
                   "Error_Destroy": _RET_VOID(_error_destroy)}
            for f in _API_FUNCTIONS:
                cb = fns.get(f) or _unimplemented(f)
                _KEEP.append(cb)
                setattr(api, f, ctypes.cast(cb, ctypes.c_void_p).value)
            _API = api
        return ctypes.addressof(_API)
