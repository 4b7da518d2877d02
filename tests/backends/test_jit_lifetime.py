"""JIT linking (llvm_env.link_object): an object is linked in one piece, and its code lives
as long as its handle.

The intermittent SIGABRT inside llvmlite's orcjit link was RuntimeDyld's
`assert(isInt<32>(RealOffset))`: it mapped an object's code and its data separately, and in a
long-lived process they could land more than 2 GiB apart, out of reach of the 32-bit
PC-relative relocations between them (llvm_env.py, "One allocation per object").
"""
from __future__ import annotations

import ctypes
import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import axle
from axle.backends.cpu import linking, llvm_env

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux's /proc")

# calls a function of the process, so LLVM keeps its unwind table (an FDE libgcc registers)
IR = """
declare i32 @getpid()

define i32 @axle_probe(ptr %p, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%j, %loop]
  %a = getelementptr float, ptr %p, i64 %i
  %v = load float, ptr %a
  %w = fmul float %v, 1.25
  %x = fadd float %w, 3.25
  store float %x, ptr %a
  %j = add i64 %i, 1
  %c = icmp slt i64 %j, %n
  br i1 %c, label %loop, label %done
done:
  %g = call i32 @getpid()
  ret i32 %g
}
"""


@pytest.fixture(scope="module")
def probe_object() -> bytes:
    return llvm_env.compile_to_object(IR, 2)[1]


def _mappings() -> int:
    with open("/proc/self/maps", "rb") as f:
        return f.read().count(b"\n")


def _call(addresses: dict) -> np.ndarray:
    x = np.arange(8, dtype=np.float32)
    fn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64)(addresses["axle_probe"])
    assert fn(x.ctypes.data, 8) == os.getpid()
    return x


class _Bases(ctypes.Structure):
    _fields_ = [("tbase", ctypes.c_void_p), ("dbase", ctypes.c_void_p), ("func", ctypes.c_void_p)]


def _registered_function(pc: int):
    """The start of the function whose FDE libgcc's unwinder finds for `pc` (None: none)."""
    gcc = ctypes.CDLL("libgcc_s.so.1")
    gcc._Unwind_Find_FDE.restype = ctypes.c_void_p
    gcc._Unwind_Find_FDE.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Bases)]
    bases = _Bases()
    return bases.func if gcc._Unwind_Find_FDE(ctypes.c_void_p(pc), ctypes.byref(bases)) else None


def test_a_freed_jit_gives_back_its_mappings_and_its_eh_frames(probe_object):
    linking.link_object(probe_object, ["axle_probe"])  # the runtime (thread pool) is linked once
    gc.collect()
    start = _mappings()
    kept = [linking.link_object(probe_object, ["axle_probe"]) for _ in range(200)]
    held = _mappings()
    assert held - start >= 200, (start, held)  # each live JIT holds mappings of its own
    for _, addresses in kept:
        np.testing.assert_array_equal(_call(addresses), np.arange(8, dtype=np.float32) * 1.25 + 3.25)
    first, last = kept[0][1]["axle_probe"], kept[-1][1]["axle_probe"]
    assert _registered_function(first) == first  # libgcc knows the live code's unwind table
    del kept[:-1]
    gc.collect()
    assert _mappings() - start <= 32  # the freed JITs' code and data are unmapped
    # ... and their EH frames left libgcc's registry (a stale entry would describe memory
    # that is no longer ours); the one still held is still registered
    found = _registered_function(first)
    assert found is None or found != first
    assert _registered_function(last) == last
    np.testing.assert_array_equal(_call(kept[0][1]), np.arange(8, dtype=np.float32) * 1.25 + 3.25)


# A child process makes the kernel's free space scattered on purpose: it reserves 4 GiB,
# fills every free page above the reservation, then frees the reservation's top page. An
# object's first mapping lands in that page when it fits there alone (RuntimeDyld maps the
# code alone), and the next one 4 GiB below; JITLink maps the object in one piece, which
# does not fit the page, so all of it goes below.
FAR_APART = r"""
import ctypes, mmap, os, sys
import numpy as np
from axle.backends.cpu import linking, llvm_env
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
obj = llvm_env.compile_to_object(sys.argv[1], 2)[1]
linking.link_object(obj, ["axle_probe"])  # the runtime the link brings (thread pool) first
PAGE, GAP = mmap.PAGESIZE, 4 << 30
FLAGS = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x4000  # MAP_NORESERVE: address space only
top = libc.mmap(None, GAP, 0, FLAGS, -1, 0)
assert top not in (None, ctypes.c_void_p(-1).value)
for _ in range(1 << 20):  # fill every free page above the reservation
    p = libc.mmap(None, PAGE, 0, FLAGS, -1, 0)
    if p < top:
        break
libc.munmap(top + GAP - PAGE, PAGE)
h, addrs = linking.link_object(obj, ["axle_probe"])
x = np.arange(8, dtype=np.float32)
fn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64)(addrs["axle_probe"])
assert fn(x.ctypes.data, 8) == os.getpid()
print(" ".join(map(str, x.tolist())))
"""


def test_an_object_is_linked_in_one_piece_when_free_space_is_scattered():
    r = subprocess.run([sys.executable, "-c", FAR_APART, IR], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])  # RuntimeDyld: -6 (SIGABRT)
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(np.array(r.stdout.split(), dtype=np.float32), x * 1.25 + 3.25)


def test_a_link_near_the_mapping_cap_raises_instead_of_aborting(probe_object, monkeypatch):
    """At the kernel's cap on mappings (vm.max_map_count) LLVM aborts inside the link (JITLink
    too: an assertion on its failed allocation); the link is refused with an error first."""
    linking.link_object(probe_object, ["axle_probe"])
    gc.collect()
    cap = llvm_env.mapping_count() + llvm_env._MAPS_MARGIN + 200
    monkeypatch.setattr(llvm_env, "_max_map_count", lambda: cap)
    monkeypatch.setitem(llvm_env._maps, "count", -1)
    kept = []
    with pytest.raises(MemoryError, match="max_map_count"):
        for _ in range(1000):
            kept.append(linking.link_object(probe_object, ["axle_probe"]))
    assert 10 <= len(kept) < 200
    kept.clear()  # once the programs are dropped, linking works again
    handle, addresses = linking.link_object(probe_object, ["axle_probe"])
    np.testing.assert_array_equal(_call(addresses), np.arange(8, dtype=np.float32) * 1.25 + 3.25)


def test_evicted_programs_free_their_jits(monkeypatch):
    """Programs compiled through axle and dropped (evicted from the memory cache, no caller
    holding them) leave no mappings behind."""
    from axle.backends.cpu import disk_cache
    from axle.backends.cpu.executable import clear_memory_cache
    monkeypatch.setenv("AXLE_FLAGS", "--memory_cache_programs=2")
    clear_memory_cache()

    def run(n):
        x = np.arange(n, dtype=np.float32)
        text = f"""func.func @main(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %y = stablehlo.multiply %x, %x : tensor<{n}xf32>
  return %y : tensor<{n}xf32>
}}"""
        np.testing.assert_array_equal(axle.compile(text, backend="cpu")(x), x * x)

    with disk_cache.disabled():
        run(3)
        gc.collect()
        start = _mappings()
        for n in range(4, 64):
            run(n)
        gc.collect()
        assert _mappings() - start <= 48  # not 2 or more per program compiled
    clear_memory_cache()


@pytest.mark.slow
def test_forty_thousand_links_in_one_process_do_not_abort(probe_object):
    """What aborted (~32,700 links with every JIT kept, at the default cap of 65530): a child
    process links 40,000 times, holding the latest 16 programs."""
    script = textwrap.dedent(f"""
        from axle.backends.cpu import linking, llvm_env
        obj = llvm_env.compile_to_object({IR!r}, 2)[1]
        kept = []
        for i in range(40000):
            kept.append(linking.link_object(obj, ["axle_probe"]))
            del kept[:-16]
        print("maps", open("/proc/self/maps").read().count("\\n"))
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert int(r.stdout.split()[-1]) < 5000
