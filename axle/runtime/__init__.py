"""The runtime (PJRT-shaped): clients, devices, buffers, executables, the backend plugin
registry, compile options, ahead-of-time artifacts and native (XLA FFI) custom calls.
docs/runtime.md is the guide."""
from axle.runtime.aot import ArtifactError, load, save
from axle.runtime.buffer import Buffer, BufferDeletedError
from axle.runtime.client import Client, client, compile_backend, device_put, devices
from axle.runtime.devices import Device, set_cpu_device_count
from axle.runtime.donation import DonationError
from axle.runtime.executable import Executable
from axle.runtime.options import CompileOptions
from axle.runtime.registry import BackendError, available as available_backends, register_backend

__all__ = ["ArtifactError", "load", "save", "Buffer", "BufferDeletedError", "device_put", "Client", "client", "compile_backend", "devices",
           "Device", "set_cpu_device_count", "DonationError", "Executable", "CompileOptions",
           "BackendError", "available_backends", "register_backend"]
