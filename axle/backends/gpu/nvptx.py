"""LLVM IR -> PTX through llvmlite's NVPTX target, and ptxas (when installed) to check it.

LLVM's NVPTX backend dies with a fatal error (the whole process, uncatchable) on some math
intrinsics it cannot select (llvm.exp, llvm.log, llvm.pow, ...), and leaves calls to libm
as unresolved externals that ptxas refuses. So before code generation every call in the
module is checked against the calls known to lower to PTX instructions, and anything
else raises Unsupported naming the kernel's op.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import tempfile
import threading
from functools import lru_cache
from typing import Optional

from llvmlite import ir

from axle.errors import Unsupported

TRIPLE = "nvptx64-nvidia-cuda"
DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-v16:16-v32:32-n16:32:64"
CPU = "sm_90"
FEATURES = "+ptx88"  # ptxas 12.9 refuses PTX ISA 9.0, LLVM 22's default for sm_90
_LOCK = threading.Lock()

# LLVM intrinsics (by name without the type suffix) that NVPTX lowers to instructions
_SAFE = ("llvm.nvvm.", "llvm.fabs.", "llvm.sqrt.", "llvm.fma.", "llvm.fmuladd.", "llvm.floor.",
         "llvm.ceil.", "llvm.trunc.", "llvm.rint.", "llvm.nearbyint.", "llvm.roundeven.",
         "llvm.round.", "llvm.minnum.", "llvm.maxnum.", "llvm.minimum.", "llvm.maximum.",
         "llvm.copysign.", "llvm.ctpop.", "llvm.ctlz.", "llvm.cttz.", "llvm.abs.", "llvm.smax.",
         "llvm.smin.", "llvm.umax.", "llvm.umin.", "llvm.bswap.", "llvm.bitreverse.", "llvm.fshl.",
         "llvm.fshr.", "llvm.memcpy.", "llvm.memset.", "llvm.memmove.", "llvm.lifetime.",
         "llvm.assume", "llvm.expect.", "llvm.fptosi.sat.", "llvm.fptoui.sat.", "llvm.is.fpclass.",
         "llvm.sadd.with.overflow.", "llvm.uadd.with.overflow.", "llvm.ssub.with.overflow.",
         "llvm.usub.with.overflow.", "llvm.smul.with.overflow.", "llvm.umul.with.overflow.",
         "llvm.sadd.sat.", "llvm.uadd.sat.", "llvm.ssub.sat.", "llvm.usub.sat.", "llvm.canonicalize.")


# LLVM math intrinsics NVPTX cannot select (fatal errors): called through libdevice instead
_LIBDEVICE_INTRINSICS = {"exp": "exp", "exp2": "exp2", "exp10": "exp10", "log": "log", "log2": "log2",
                         "log10": "log10", "pow": "pow", "sin": "sin", "cos": "cos", "tan": "tan",
                         "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asin": "asin", "acos": "acos",
                         "atan": "atan", "atan2": "atan2", "powi": "powi"}


def check_calls(mod: ir.Module, what: dict) -> dict:
    """Every call in every kernel must be to a function defined in the module, an
    intrinsic NVPTX lowers, or a libdevice function (`__nv_*`, when libdevice is found);
    LLVM math intrinsics NVPTX cannot select are redirected to libdevice here. `what`
    maps a kernel's name to its op (for the message). Returns {intrinsic: libdevice name}
    for redirect_calls."""
    redirect = {}
    for fn in list(mod.functions):
        if fn.is_declaration:
            continue
        for blk in fn.blocks:
            for ins in blk.instructions:
                if not isinstance(ins, ir.CallInstr):
                    continue
                callee = ins.callee
                name = getattr(callee, "name", "")
                if not callee.is_declaration or name.startswith(_SAFE):
                    continue
                m = re.match(r"llvm\.(\w+)\.(f32|f64)(\.i32)?$", name)
                if m and m.group(1) in _LIBDEVICE_INTRINSICS and find_libdevice() is not None:
                    nv = f"__nv_{_LIBDEVICE_INTRINSICS[m.group(1)]}" + ("f" if m.group(2) == "f32" else "")
                    redirect[name] = nv
                    continue
                if name.startswith("__nv_") and find_libdevice() is not None and name in _libdevice_names():
                    continue
                if not name.startswith("llvm.") and find_libdevice() is not None \
                        and f"__nv_{name}" in _libdevice_names():  # a libm function called directly
                    redirect[name] = f"__nv_{name}"
                    continue
                kind = "LLVM intrinsic" if name.startswith("llvm.") else "external function"
                why = "no libdevice found" if find_libdevice() is None else "not in libdevice"
                raise Unsupported(f"{what.get(fn.name, fn.name)}: not supported by the gpu backend yet: "
                                  f"the {kind} '{name}' has no NVPTX lowering ({why})")
    for fn in mod.functions:  # f128/x86 types never lower
        if "fp128" in str(fn.type) or "x86_fp80" in str(fn.type):
            raise Unsupported(f"{what.get(fn.name, fn.name)}: 128/80-bit floats are not supported by the gpu backend")
    return redirect


def redirect_calls(ir_text: str, redirect: dict) -> str:
    """Calls to the intrinsics in `redirect` become calls to their libdevice functions (one
    declaration each)."""
    for old, new in redirect.items():
        ir_text = ir_text.replace(f'@"{old}"(', f'@"{new}"(')
    seen, lines = set(), []
    for line in ir_text.splitlines():
        m = re.match(r'declare .*?@"?([\w.$]+)"?\(', line)
        if m:
            if m.group(1) in seen:
                continue
            seen.add(m.group(1))
        lines.append(line)
    return "\n".join(lines) + "\n"


@lru_cache(maxsize=None)
def find_libdevice() -> Optional[str]:
    """libdevice.10.bc from the nvidia-cuda-nvcc-cu12 wheel or $CUDA_HOME; None if absent."""
    bases = []
    try:
        import nvidia.cuda_nvcc as nv
        bases += list(getattr(nv, "__path__", []))
    except ImportError:
        pass
    from axle.flags import env
    bases += [h for h in (env("CUDA_HOME"), "/usr/local/cuda") if h]
    for base in bases:
        p = os.path.join(base, "nvvm", "libdevice", "libdevice.10.bc")
        if os.path.isfile(p):
            return p
    return None


@lru_cache(maxsize=None)
def _libdevice():
    import llvmlite.binding as llvm
    _init()
    with open(find_libdevice(), "rb") as f:
        return llvm.parse_bitcode(f.read())


@lru_cache(maxsize=None)
def _libdevice_names() -> frozenset:
    return frozenset(f.name for f in _libdevice().functions)


@lru_cache(maxsize=None)
def _init() -> None:
    import llvmlite.binding as llvm
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def target_machine(cpu: str = CPU, features: str = FEATURES, opt: int = 3):
    import llvmlite.binding as llvm
    _init()
    return llvm.Target.from_triple(TRIPLE).create_target_machine(cpu=cpu, features=features, opt=opt)


def ir_to_ptx(ir_text: str, cpu: str = CPU, features: str = FEATURES, opt: int = 3) -> str:
    """Parse, verify, optimize (O`opt`) and emit PTX for a module that passed check_calls."""
    import llvmlite.binding as llvm
    with _LOCK:
        _init()
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
        tm = target_machine(cpu, features, opt)
        mod.triple = TRIPLE
        mod.data_layout = str(tm.target_data)
        if "__nv_" in ir_text:  # link libdevice; keep only what the kernels call
            kernels = {f.name for f in mod.functions if not f.is_declaration}
            lib = _libdevice()
            lib.triple, lib.data_layout = mod.triple, mod.data_layout
            mod.link_in(lib, preserve=True)
            for f in mod.functions:
                if not f.is_declaration and f.name not in kernels:
                    f.linkage = "internal"
            for g in mod.global_variables:
                if not g.is_declaration and g.name.startswith("__"):
                    g.linkage = "internal"
        if opt:
            pto = llvm.create_pipeline_tuning_options(speed_level=opt)
            pto.loop_unrolling = False
            pb = llvm.create_pass_builder(tm, pto)
            pb.getModulePassManager().run(mod, pb)
        return tm.emit_assembly(mod)


@lru_cache(maxsize=None)
def find_ptxas() -> Optional[str]:
    """ptxas from the nvidia-cuda-nvcc-cu12 wheel, $CUDA_HOME, or PATH; None if absent."""
    try:
        import nvidia.cuda_nvcc as nv  # the wheel (a namespace package)
        for base in list(getattr(nv, "__path__", [])):
            p = os.path.join(base, "bin", "ptxas")
            if os.access(p, os.X_OK):
                return p
    except ImportError:
        pass
    from axle.flags import env
    for home in (env("CUDA_HOME"), "/usr/local/cuda"):
        if home and os.access(os.path.join(home, "bin", "ptxas"), os.X_OK):
            return os.path.join(home, "bin", "ptxas")
    for p in glob.glob(os.path.join(os.path.dirname(os.__file__), "..", "**", "cuda_nvcc", "bin", "ptxas")):
        if os.access(p, os.X_OK):
            return p
    return shutil.which("ptxas")


class PtxasError(RuntimeError):
    """ptxas refused the PTX (its messages are in the exception's text)."""


def ptxas(ptx: str, gpu: str = CPU, timeout: float = 120) -> str:
    """Assemble PTX with ptxas for `gpu`; returns ptxas' messages (-v); raises PtxasError."""
    exe = find_ptxas()
    if exe is None:
        raise FileNotFoundError("ptxas not found: pip install nvidia-cuda-nvcc-cu12, or set CUDA_HOME")
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        p = subprocess.run([exe, "--gpu-name", gpu, "-v", src, "-o", out], capture_output=True,
                           text=True, timeout=timeout)
        if p.returncode != 0:
            raise PtxasError(f"ptxas --gpu-name {gpu} failed: {p.stderr.strip()[:2000]}")
        return p.stderr + p.stdout


def ptx_version(ptx: str) -> str:
    m = re.search(r"^\.version\s+(\S+)", ptx, re.M)
    return m.group(1) if m else ""
