"""Internal compiler errors leave a reproducer: the module before the failing pass (or after
all passes, for code generation) and a repro.py that fails the same way."""
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import pytest

import axle
from axle.backends.cpu.executable import clear_memory_cache
from axle.ir import parse_module, print_module
from axle.passes import PassError, PassManager
from axle.passes.pipelines import cpu_pipeline
from axle.reproducer import InternalCompilerError, PassCrash
from axle.tools.cli import main as cli_main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(axle.__file__)))
MLP = os.path.join(ROOT, "axle", "examples", "mlp.mlir")

# Installed in this process by monkeypatch, and in repro.py's process by importing this
# text as a module first: a pass that fails on modules that still have an add, appended to
# the CPU pipeline, and a dot_general kernel that fails.
INJECT = textwrap.dedent('''
    from axle.passes import pipelines
    from axle.passes.pass_manager import Pass


    class Boom(Pass):
        name = "boom"

        def run(self, module):
            if any(op.name == "stablehlo.add" for op in module.walk()):
                raise RuntimeError("injected pass failure: an add is left")
            return False


    def cpu_pipeline_with_boom(original=pipelines.cpu_pipeline):
        return original() + [Boom()]


    def failing_kernel(ctx, op):
        raise ZeroDivisionError("injected codegen failure in " + op.name)


    def install_pass(setattr_=setattr):
        setattr_(pipelines, "cpu_pipeline", cpu_pipeline_with_boom)


    def install_kernel(setattr_=setattr):
        import axle.backends.cpu.kernels  # noqa: F401  (registers dot_general)
        from axle.backends.cpu.compiler import KERNELS
        setattr_(KERNELS["stablehlo.dot_general"], "fn", failing_kernel)
''')


@pytest.fixture
def inject(tmp_path, monkeypatch):
    """The injection module, importable here and in subprocesses; no compile cache."""
    d = tmp_path / "inject"
    d.mkdir()
    (d / "axle_inject.py").write_text(INJECT)
    monkeypatch.syspath_prepend(str(d))
    monkeypatch.setenv("AXLE_CACHE_DIR", "off")
    monkeypatch.setenv("AXLE_FLAGS", f"--dump_to={tmp_path / 'dumps'}")
    clear_memory_cache()
    import importlib
    import axle_inject
    importlib.reload(axle_inject)
    yield axle_inject, d
    clear_memory_cache()


def _run_repro(directory, inject_dir, install):
    """Run repro.py in a fresh interpreter that first installs the same failure."""
    code = (f"import axle_inject; axle_inject.{install}(); import runpy; "
            f"runpy.run_path({os.path.join(directory, 'repro.py')!r}, run_name='__main__')")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(inject_dir), ROOT]), AXLE_FLAGS="")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300,
                          cwd=str(inject_dir))


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def test_pass_failure_writes_the_module_before_the_pass(inject, tmp_path, monkeypatch):
    mod, inject_dir = inject
    mod.install_pass(monkeypatch.setattr)
    with pytest.raises(PassCrash) as e:
        axle.compile(_read(MLP), backend="cpu")
    err = e.value
    assert isinstance(err, InternalCompilerError) and isinstance(err, PassError)
    assert err.pass_name == "boom" and err.stage == "pass"
    d = err.directory
    assert d.startswith(str(tmp_path / "dumps")), "under AXLE_FLAGS' --dump_to"
    assert d in str(err) and "repro.py" in str(err) and "injected pass failure" in str(err)
    assert isinstance(err.__cause__, PassError)
    for f in ("module.mlir", "repro.py", "error.txt"):
        assert os.path.exists(os.path.join(d, f))
    assert "RuntimeError: injected pass failure" in _read(os.path.join(d, "error.txt"))
    # module.mlir is the module as the passes before `boom` left it
    expected = parse_module(_read(MLP), "mlp.mlir")
    PassManager([p for p in cpu_pipeline() if getattr(p, "name", "") != "boom"]).run(expected)
    got = parse_module(_read(os.path.join(d, "module.mlir")), "module.mlir")
    assert print_module(got, canonical=True) == print_module(expected, canonical=True)
    # repro.py fails the same way
    r = _run_repro(d, inject_dir, "install_pass")
    assert r.returncode != 0
    assert "RuntimeError: injected pass failure: an add is left" in r.stderr
    assert "pass 'boom' failed" in r.stderr


def test_codegen_failure_writes_the_optimized_module(inject, tmp_path, monkeypatch):
    mod, inject_dir = inject
    mod.install_kernel(monkeypatch.setattr)
    monkeypatch.delenv("AXLE_FLAGS")  # no dump folder: a temporary one
    with pytest.raises(InternalCompilerError) as e:
        axle.compile(_read(MLP), backend="cpu")
    err = e.value
    assert err.stage == "codegen" and not isinstance(err, PassError)
    assert "code generation" in str(err) and "ZeroDivisionError: injected codegen failure" in str(err)
    d = err.directory
    assert os.path.basename(d).startswith("axle-ice-") and os.path.dirname(d) == tempfile.gettempdir()
    expected = parse_module(_read(MLP), "mlp.mlir")
    PassManager(cpu_pipeline()).run(expected)
    got = parse_module(_read(os.path.join(d, "module.mlir")), "module.mlir")
    assert print_module(got, canonical=True) == print_module(expected, canonical=True), "after all passes"
    r = _run_repro(d, inject_dir, "install_kernel")
    assert r.returncode != 0 and "ZeroDivisionError: injected codegen failure in stablehlo.dot_general" in r.stderr
    # without the injected failure the reproducer compiles (it says so)
    env = dict(os.environ, PYTHONPATH=ROOT, AXLE_FLAGS="")
    ok = subprocess.run([sys.executable, os.path.join(d, "repro.py")], capture_output=True, text=True, env=env,
                        timeout=300)
    assert ok.returncode == 0 and "did not reproduce" in ok.stdout, ok.stderr
    shutil.rmtree(d, ignore_errors=True)


def test_commands_report_internal_errors(inject, tmp_path, monkeypatch, capsys):
    mod, _ = inject
    mod.install_pass(monkeypatch.setattr)
    assert cli_main(["compile", MLP]) == 3
    err = capsys.readouterr().err
    assert "axle compile: internal compiler error in pass 'boom'" in err and "repro.py" in err
    assert cli_main(["run", MLP, "--repeat", "1"]) == 3
    assert "axle run: internal compiler error" in capsys.readouterr().err
    assert cli_main(["viz", MLP, "-o", str(tmp_path / "g.svg")]) == 3


def test_user_errors_leave_no_reproducer(inject, tmp_path, monkeypatch):
    from axle.errors import Unsupported
    from axle.ir import ParseError
    with pytest.raises(ParseError):
        axle.compile("func.func @main( {", backend="cpu")
    unsupported = textwrap.dedent("""
        func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
          %0 = stablehlo.custom_call @no_such_target(%x) : (tensor<4xf32>) -> tensor<4xf32>
          return %0 : tensor<4xf32>
        }""")
    with pytest.raises(Unsupported):
        axle.compile(unsupported, backend="cpu")
    dumps = tmp_path / "dumps"
    assert not dumps.exists() or not [p for p in os.listdir(dumps) if p.startswith("crash-")]
