"""Backends as plugins (entry-point group axle.backends): axle's own, a third-party toy
backend installed as a distribution on sys.path, and absent or broken ones."""
import sys
import textwrap
from importlib import metadata

import numpy as np
import pytest

import axle
from axle.interpreter import interpret
from axle.runtime import BackendError, registry
from axle.runtime.client import reset_clients

ADD = """func.func @main(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.add %x, %y : tensor<3xf32>
  return %0 : tensor<3xf32>
}"""

TOY = '''
"""A third-party axle backend: runs programs with the interpreter and counts what it did."""
import numpy as np

COMPILED = []


class ToyExecutable:
    aliases = {}

    def __init__(self, module, entry):
        self.module, self.entry, self.calls = module, entry, 0

    def execute(self, args, donate=()):
        from axle.interpreter.evaluator import run_function
        self.calls += 1
        return [np.asarray(o) for o in run_function(self.module, list(args), self.entry)]


class ToyBackend:
    name = "toy"
    platform = "toy"

    def device_count(self):
        return 2

    def compile(self, module, entry, options):
        COMPILED.append((entry, dict(options)))
        return ToyExecutable(module, entry)
'''


def _install(root, dist: str, entry_points: str, files: dict) -> None:
    """A distribution as pip leaves it: the package and NAME.dist-info with entry_points.txt."""
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    _install(tmp_path, "axle_toy_backend", "[axle.backends]\ntoy = axle_toy:ToyBackend\n",
             {"axle_toy/__init__.py": TOY})
    _install(tmp_path, "axle_broken_backend",
             "[axle.backends]\nbroken = axle_broken_missing.module:Backend\nnotabackend = axle_toy:COMPILED\n", {})
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.reset()
    yield
    registry.reset()
    reset_clients()
    for m in [m for m in sys.modules if m.startswith("axle_toy")]:
        del sys.modules[m]


def test_axle_registers_its_own_backends_as_entry_points():
    eps = {ep.name: ep.value for ep in metadata.entry_points(group="axle.backends")}
    assert eps.get("cpu") == "axle.backends.cpu.plugin:CpuBackend"
    assert eps.get("interpreter") == "axle.backends.interpreter:InterpreterBackend"
    assert {"cpu", "interpreter"} <= set(axle.available_backends())


def test_toy_backend_compiles_and_runs(plugins):
    assert "toy" in axle.available_backends()
    x, y = np.arange(3, dtype=np.float32), np.ones(3, np.float32)
    exe = axle.compile(ADD, backend="toy", passes=False, flavour="mild")
    np.testing.assert_array_equal(exe.execute([x, y])[0], interpret(axle.parse_module(ADD), x, y))
    import axle_toy
    assert axle_toy.COMPILED[-1] == ("main", {"passes": False, "flavour": "mild"})
    c = axle.client("toy")
    assert [str(d) for d in c.devices()] == ["toy:0", "toy:1"]
    out = c.compile(ADD).execute([axle.device_put(x, c.devices()[1]), y])
    assert str(out[0].device) == "toy:0"
    np.testing.assert_array_equal(np.asarray(out[0]), x + y)


def test_absent_and_broken_plugins_are_clear_errors(plugins):
    with pytest.raises(BackendError, match=r"unknown backend 'nope'.*available: .*cpu.*interpreter.*toy"):
        axle.compile(ADD, backend="nope")
    with pytest.raises(BackendError, match=r"backend 'broken' failed to load \(entry point broken = "
                                           r"axle_broken_missing.module:Backend \(from axle_broken_backend 0.1\)\)"
                                           r": ModuleNotFoundError.*available: "):
        axle.compile(ADD, backend="broken")
    with pytest.raises(BackendError, match=r"backend 'notabackend' .*is not a backend: it has no compile\(\)"):
        axle.compile(ADD, backend="notabackend")


def test_register_backend_in_process():
    class Doubling:
        name = "doubling"

        def compile(self, module, entry, options):
            inner = axle.compile(module, backend="interpreter", entry=entry)

            class Exe:
                def execute(self, args, donate=()):
                    return [2 * o for o in inner.execute(args)]
            return Exe()
    registry.register_backend("doubling", Doubling)
    try:
        x = np.arange(3, dtype=np.float32)
        np.testing.assert_array_equal(axle.compile(ADD, backend="doubling").execute([x, x])[0], 4 * x)
    finally:
        registry.reset()
