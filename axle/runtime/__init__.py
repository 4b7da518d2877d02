"""The runtime: devices, and (to come) clients, buffers and the compile caches."""
from axle.runtime.devices import Device, devices, set_cpu_device_count

__all__ = ["Device", "devices", "set_cpu_device_count"]
