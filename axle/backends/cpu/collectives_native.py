"""Native collectives: the runtime compiled programs call, and the communicators it runs on.

Generated code calls `axle_coll_all_reduce`, `axle_coll_all_gather`,
`axle_coll_reduce_scatter`, `axle_coll_all_to_all`, `axle_coll_collective_permute`,
`axle_coll_partition_id` and `axle_coll_replica_id` (kernels_collective_native.py emits the
calls). They are link-time names (llvm_env.EXTERNAL_SYMBOLS), so a program with collectives
holds no process address and is cached like any other. The runtime is LLVM IR
(collectives_ir.py, collectives_ir_ops.py) built once per process by `runtime()`.

A `Communicator` is the shared state of one run: N devices of this process (shared memory:
one thread per device, bound with `bind(device)`), or this process as one rank of an MPI
world (`Communicator.mpi(comm)`: MPI_Sendrecv of raw bytes from compiled code, the address
taken from the MPI library mpi4py loaded). No Python runs inside a collective.
"""
from __future__ import annotations

import ctypes

import numpy as np

from axle import forks
from axle.backends.cpu.llvm_env import EXTERNAL_SYMBOLS

EXPORTS = ["axle_coll_bind", "axle_coll_unbind", "axle_coll_partition_id", "axle_coll_replica_id",
           "axle_coll_all_reduce", "axle_coll_all_gather", "axle_coll_reduce_scatter",
           "axle_coll_all_to_all", "axle_coll_collective_permute"]
WORDS = 16 + 8 * 64  # header + per-device slots (at most 64 devices in one process)
_STATE: dict = {}
_LOCK = forks.lock(rlock=True)  # (axle/forks.py: reset in a forked child)


def _handle_kind() -> str:
    """'i32' (MPICH: handles are ints) or 'ptr' (Open MPI: pointers); 'i32' without mpi4py."""
    try:
        from mpi4py import MPI
        return "i32" if "MPICH" in MPI.Get_library_version() else "ptr"
    except ImportError:
        return "i32"


def runtime() -> dict:
    """Build and link the runtime once; registers its names for generated code."""
    if "addrs" in _STATE:
        return _STATE["addrs"]
    with _LOCK:
        if "addrs" in _STATE or "building" in _STATE:  # (linking the runtime itself asks again)
            return _STATE.get("addrs")
        _STATE["building"] = True
        from axle.backends.cpu.collectives_ir import RUNTIME_IR, _reductions
        from axle.backends.cpu.collectives_ir_ops import ENTRIES
        from axle.backends.cpu.llvm_env import compile_to_object, link_object
        libc = ctypes.CDLL(None)
        for name, fn in (("axle_pthread_self", libc.pthread_self), ("axle_syscall", libc.syscall),
                         ("axle_malloc", libc.malloc), ("axle_free", libc.free)):
            EXTERNAL_SYMBOLS[name] = ctypes.cast(fn, ctypes.c_void_p).value
        h = _handle_kind()
        conv_c = "trunc i64 %cw to i32" if h == "i32" else "inttoptr i64 %cw to ptr"
        conv_b = "trunc i64 %bw to i32" if h == "i32" else "inttoptr i64 %bw to ptr"
        text = (RUNTIME_IR.replace("HANDLE_CONV_C", conv_c).replace("HANDLE_CONV_B", conv_b)
                .replace("HANDLE", h) + _reductions() + ENTRIES)
        try:
            _, obj = compile_to_object(text, 3)
            handle, addrs = link_object(obj, EXPORTS)
        finally:
            _STATE.pop("building", None)
        for name in EXPORTS:
            EXTERNAL_SYMBOLS[name] = addrs[name]
        _STATE.update(handle=handle, addrs=addrs, handles=h)
        _STATE["bind"] = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64)(addrs["axle_coll_bind"])
        _STATE["unbind"] = ctypes.CFUNCTYPE(None)(addrs["axle_coll_unbind"])
        return addrs


class Communicator:
    """The shared words of one run (collectives_ir.py's layout)."""

    def __init__(self, num_devices: int, num_partitions: int | None = None):
        if not 1 <= num_devices <= 64:
            raise ValueError(f"native collectives: 1 to 64 devices in one process, got {num_devices}")
        runtime()
        self.words = np.zeros(WORDS, dtype=np.int64)
        self.words[0] = num_devices
        self.words[7] = num_partitions or num_devices
        self.num_devices = num_devices
        self.done = 0  # devices finished (multi.py's watchdog stops when all are)

    @property
    def finished(self) -> bool:
        return self.done >= self.num_devices or bool(self.words[1])

    @property
    def address(self) -> int:
        return self.words.ctypes.data

    @classmethod
    def mpi(cls, comm, num_partitions: int | None = None) -> "Communicator":
        """This process as rank `comm.Get_rank()` of `comm` (an mpi4py communicator)."""
        from mpi4py import MPI
        c = cls.__new__(cls)
        runtime()
        n = comm.Get_size()
        c.words = np.zeros(WORDS, dtype=np.int64)
        c.num_devices = n
        c.words[0] = n
        c.words[2] = 1
        lib = ctypes.CDLL(_mpi_library(), mode=ctypes.RTLD_GLOBAL)
        c.words[3] = ctypes.cast(lib.MPI_Sendrecv, ctypes.c_void_p).value
        c.words[4] = MPI._handleof(comm)
        c.words[5] = MPI._handleof(MPI.BYTE)
        c.words[6] = 1 if _STATE["handles"] == "i32" else 0  # MPI_STATUS_IGNORE
        c.words[7] = num_partitions or n
        c.words[8] = MPI.PROC_NULL
        c.rank = comm.Get_rank()
        c.done = 0
        return c

    def bind(self, device: int) -> None:
        """The calling thread runs as `device` of this communicator until unbind()."""
        if not 0 <= device < self.num_devices:
            raise ValueError(f"device {device} is not in a communicator of {self.num_devices}")
        if _STATE["bind"](self.address, device):
            raise RuntimeError("native collectives: more than 256 threads bound at once")

    @staticmethod
    def unbind() -> None:
        _STATE["unbind"]()

    def abort(self) -> None:
        """Release every device waiting in a collective (one device failed)."""
        self.words[1] = 1

    @property
    def failed(self) -> bool:
        return bool(self.words[9])

    def check(self, where: str = "a collective") -> None:
        if self.words[9]:
            raise RuntimeError(f"{where}: a device is in no group of a collective, or a group names a "
                               f"device outside the {self.num_devices} of this run, or MPI failed")


def _mpi_library() -> str:
    """The MPI shared library mpi4py was built against (already loaded in this process)."""
    import os
    import mpi4py.MPI as M
    with open(f"/proc/{os.getpid()}/maps", encoding="utf-8") as fh:
        for line in fh:
            path = line.split()[-1] if "/" in line else ""
            base = os.path.basename(path)
            if base.startswith(("libmpi.so", "libmpich.so", "libmpi_")) or ("libmpi" in base and ".so" in base):
                return path
    return M.__file__  # its symbols resolve MPI_* through its own dependencies
