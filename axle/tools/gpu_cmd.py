"""`axle compile MODEL --backend gpu --emit summary|llvm|ptx`: the gpu backend's output,
inspectable without a GPU."""
from __future__ import annotations

import sys

from axle.tools.cmd_io import read_module, report, write_output


def emit_main(a) -> int:
    from axle.backends.gpu import emit_llvm
    from axle.backends.gpu.nvptx import ir_to_ptx, ptx_version
    emit = a.emit or "summary"
    if emit not in ("summary", "llvm", "ptx"):
        print(f"axle compile: --backend gpu emits summary, llvm or ptx, not {emit}", file=sys.stderr)
        return 2
    try:
        name, text, _ = read_module(a.module)
        prog = emit_llvm(text, a.function or "main", filename=name)
        if emit == "llvm":
            out = prog.llvm_ir
        else:
            ptx = ir_to_ptx(prog.llvm_ir, opt=a.opt)
            if emit == "ptx":
                out = ptx
            else:
                rows = [f"@{a.function or 'main'} of {name} for the gpu backend (sm_90, PTX {ptx_version(ptx)}): "
                        f"{len(prog.kernels)} kernels, {len(prog.temps)} temporaries"]
                for k in prog.kernels:
                    launch = "1 thread" if k.kind == "serial" else f"{k.threads} threads"
                    rows.append(f"  {k.name:<28} {k.kind:<12} {launch:<16} {k.where}")
                out = "\n".join(rows) + "\n"
    except Exception as e:
        code = report(e, "axle compile")
        if code is None:
            raise
        return code
    return write_output(a.output, out, f"{emit}, {len(out)} bytes; {len(prog.kernels)} kernels")
