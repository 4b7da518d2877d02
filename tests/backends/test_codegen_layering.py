"""axle/codegen is the target-independent layer: it imports no backend, runtime, interpreter,
tool or frontend, and the gpu backend reaches the CPU backend's kernels only through
axle.codegen.kernel_library (by name), never by importing axle.backends.cpu."""
import ast
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
AXLE = os.path.join(ROOT, "axle")


def _imports(folder: str) -> list:
    """(file, line, module) for every import in folder's .py files, in functions too."""
    out = []
    for dirpath, _, files in os.walk(folder):
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            path = os.path.join(dirpath, f)
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    out += [(path, node.lineno, a.name) for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    out += [(path, node.lineno, node.module)]
                    out += [(path, node.lineno, f"{node.module}.{a.name}") for a in node.names]
                elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "__import__" \
                        and node.args and isinstance(node.args[0], ast.Constant):
                    out.append((path, node.lineno, node.args[0].value))
    return out


def _axle_modules(folder):
    return [(p, n, m) for p, n, m in _imports(folder) if m.startswith("axle.")]  # (`from axle import x`: axle.x)


def test_codegen_imports_only_ir_errors_flags_forks_and_itself():
    allowed = ("axle.codegen", "axle.ir", "axle.errors", "axle.flags", "axle.forks", "axle.limits")
    bad = [f"{os.path.relpath(p, ROOT)}:{n}: {m}" for p, n, m in _axle_modules(os.path.join(AXLE, "codegen"))
           if not (m in allowed or m.startswith(tuple(a + "." for a in allowed)))]
    assert not bad, "axle/codegen imports a higher layer:\n" + "\n".join(bad)
    # the check sees imports inside functions too (it is not vacuous)
    assert any(m.startswith("axle.ir") for _, _, m in _axle_modules(os.path.join(AXLE, "codegen")))


def test_no_module_of_the_gpu_backend_names_the_cpu_backend():
    bad = [f"{os.path.relpath(p, ROOT)}:{n}: {m}" for p, n, m in _axle_modules(os.path.join(AXLE, "backends", "gpu"))
           if m.startswith("axle.backends.cpu")]
    assert not bad, "\n".join(bad)


def _run(code: str, **constants) -> str:
    """Run code in a fresh interpreter (constants bound first); returns its stdout."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(ROOT))
    source = "".join(f"{k} = {v!r}\n" for k, v in constants.items()) + textwrap.dedent(code)
    r = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, env=env,
                       cwd=os.path.abspath(ROOT), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_importing_the_gpu_backend_loads_no_cpu_backend_module():
    out = _run("""
        import sys
        import axle.backends.gpu, axle.backends.gpu.codegen, axle.backends.gpu.nvptx, axle.backends.gpu.serial
        import axle.backends.gpu.simulate, axle.backends.gpu.target, axle.backends.gpu.plugin
        print(sorted(m for m in sys.modules if m.startswith("axle.backends.cpu")))
        print("axle.codegen.emitter" in sys.modules)
    """).split("\n")
    assert out[0] == "[]", out[0]
    assert out[1] == "True"  # (the imports above did load the codegen layer)


ELEMENTWISE = """
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %s = stablehlo.add %a, %bb : tensor<4x8xf32>
  %e = stablehlo.exponential %s : tensor<4x8xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  return %e, %r : tensor<4x8xf32>, tensor<4xf32>
}
"""

SORT = """
func.func @main(%a: tensor<9xi32>) -> tensor<9xi32> {
  %s = "stablehlo.sort"(%a) ({
  ^bb0(%x: tensor<i32>, %y: tensor<i32>):
    %c = stablehlo.compare GT, %x, %y, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }) {dimension = 0 : i64, is_stable = true} : (tensor<9xi32>) -> tensor<9xi32>
  return %s : tensor<9xi32>
}
"""


def test_the_gpu_backend_without_the_cpu_library_emits_its_own_kernels_and_refuses_the_rest():
    """With the CPU's kernel library withdrawn (as if backends/cpu were deleted), elementwise
    and reduce programs still compile for the gpu without loading any CPU module, and an op
    that needs a lent kernel (sort) is Unsupported naming the op."""
    out = _run("""
        import sys
        import axle.backends  # (registers the library "cpu")
        from axle.codegen.kernel_library import register_library
        register_library("cpu", None)
        from axle.backends.gpu import emit_llvm, Unsupported
        from axle.ir import parse_module
        from axle.passes import PassManager, default_pipeline
        m = parse_module(ELEMENTWISE)
        PassManager(default_pipeline()).run(m)
        prog = emit_llvm(m, passes=False)
        print([k.kind for k in prog.kernels])
        try:
            emit_llvm(parse_module(SORT), passes=False)
            print("compiled")
        except Unsupported as e:
            print("Unsupported:", e)
        print(sorted(m for m in sys.modules if m.startswith("axle.backends.cpu")))
    """, ELEMENTWISE=ELEMENTWISE, SORT=SORT).strip().split("\n")
    assert out[0] == "['elementwise', 'reduce']", out
    assert out[1].startswith("Unsupported:") and "stablehlo.sort" in out[1] and "gpu backend" in out[1], out[1]
    assert out[2] == "[]", out[2]


def test_with_the_cpu_library_the_gpu_borrows_its_sort_kernel():
    from axle.backends.gpu import emit_llvm
    prog = emit_llvm(SORT)
    assert [k.kind for k in prog.kernels] == ["serial"]


@pytest.mark.parametrize("name", ["llvm_env", "blas", "parallel", "linking"])
def test_llvm_env_blas_and_the_pool_import_no_circle(name):
    """llvm_env imports no other module of the CPU backend; blas and parallel import llvm_env,
    never the other way (linking.py registers their symbols before linking)."""
    cpu = os.path.join(AXLE, "backends", "cpu")
    mods = {m for p, _, m in _axle_modules(cpu) if os.path.basename(p) == f"{name}.py"}
    cpu_mods = {m for m in mods if m.startswith("axle.backends.cpu.")}
    if name == "llvm_env":
        assert not cpu_mods, cpu_mods
    elif name in ("blas", "parallel"):
        assert not any(m.startswith(("axle.backends.cpu.linking", "axle.backends.cpu.executable",
                                     "axle.backends.cpu.compiler")) for m in cpu_mods), cpu_mods
    else:
        assert {"axle.backends.cpu.blas", "axle.backends.cpu.parallel", "axle.backends.cpu.llvm_env"} <= mods
