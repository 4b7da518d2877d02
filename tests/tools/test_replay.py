"""Process replay (axle/tools/replay.py): a recording of the CPU backend's LLVM IR is the same
twice, and a changed program is reported as differing."""
import os

from axle.tools import replay

CASE = """
func.func @main() -> tensor<4xf32> {
  %a = stablehlo.constant dense<[1.0, -2.0, 3.0, -4.0]> : tensor<4xf32>
  %b = stablehlo.abs %a : tensor<4xf32>
  %e = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  check.expect_eq %b, %e : tensor<4xf32>
  func.return %b : tensor<4xf32>
}
"""


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_record_twice_is_identical_and_a_change_is_seen(tmp_path):
    case = _write(tmp_path, "abs.mlir", CASE)
    a, b, c = (str(tmp_path / x) for x in ("a", "b", "c"))
    replay.record(a, [case], workloads=False, jobs=1, log=lambda *_: None)
    replay.record(b, [case], workloads=False, jobs=1, log=lambda *_: None)
    lls = [f for _, _, fs in os.walk(a) for f in fs if f.endswith(".cpu.ll")]
    assert lls, "nothing was recorded"
    res = replay.compare(a, b, log=lambda *_: None)
    assert res["same"] and not res["differ"] and not res["only_old"] and not res["only_new"]
    replay.record(c, [_write(tmp_path, "abs.mlir", CASE.replace("stablehlo.abs", "stablehlo.negate"))],
                  workloads=False, jobs=1, log=lambda *_: None)
    res = replay.compare(a, c, log=lambda *_: None)
    assert res["differ"] and not res["same"]


def test_normalize_hides_addresses_and_callback_keys():
    ir = 'call void %".14"(i64 7, i8** %".15")\n  %p = inttoptr i64 140234567890123 to i8*'
    out = replay.normalize(ir)
    assert "i64 KEY" in out and "ADDR" in out and "140234567890123" not in out
