"""`axle compile --emit sharding|spmd`, and the per-device program is valid StableHLO."""
import subprocess
import sys

from axle.ir import parse_module
from axle.ir.verifier import verify
from axle.sharding import partition
from test_reshard import _module

BODY = """    %0 = stablehlo.dot_general %a0, %a1, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
    return %0 : tensor<8x8xf32>"""


def _program():
    return _module(BODY, [("tensor<8x16xf32>", [[], ["x"]]), ("tensor<16x8xf32>", [["x"], []])],
                   [("tensor<8x8xf32>", [["x"], []])])


def test_per_device_module_verifies_and_round_trips():
    prog = partition(_program())
    verify(prog.module)
    text = str(prog.module)
    assert "stablehlo.reduce_scatter" in text and "tensor<8x8xf32>" in text and "tensor<4x8xf32>" in text
    assert str(parse_module(text)) == text


def _axle(*args):
    return subprocess.run([sys.executable, "-m", "axle", "compile", *args], capture_output=True, text=True,
                          timeout=120)


def test_emit_sharding(tmp_path):
    path = tmp_path / "m.mlir"
    path.write_text(str(_program()))
    proc = _axle(str(path), "--emit", "sharding")
    assert proc.returncode == 0, proc.stderr
    assert "collectives inserted (1):" in proc.stdout
    assert "reduce_scatter" in proc.stdout and "pending sum over ['x'] wanted split on dim 0" in proc.stdout
    assert "total: 512 B per step over 4 devices" in proc.stdout  # (2-1)/2 of 8x8 f32, 4 devices
    proc = _axle(str(path), "--emit", "spmd")
    assert proc.returncode == 0, proc.stderr
    verify(parse_module(proc.stdout))


def test_emit_sharding_bad_annotation(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text(str(_program()).replace('{"x"}, {}]>}) ->', '{"x"}, {}]>}) ->', 1)
                    .replace("tensor<8x16xf32> {sdy.sharding", "tensor<8x16xf32> {mhlo.sharding = \"{devices=[3]0,1,2}\", x.sdy", 1))
    proc = _axle(str(path), "--emit", "sharding")
    assert proc.returncode == 1
    assert "axle compile: error:" in proc.stderr and "devices" in proc.stderr
