"""The pass manager: dumps in pipeline order, timing, fixed points, verification after
passes, and translation validation naming the first pass that changes results."""
import os

import numpy as np
import pytest

from axle.ir import parse_module
from axle.ir.core import Operation
from axle.passes import FixedPoint, Pass, PassError, PassManager, default_pipeline, make_pass
from axle.passes.validate import validate

TEXT = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %a = stablehlo.multiply %x, %one : tensor<4xf32>
  %b = stablehlo.multiply %x, %one : tensor<4xf32>
  %c = stablehlo.add %a, %b : tensor<4xf32>
  return %c : tensor<4xf32>
}"""


def test_dumps_sort_in_pipeline_order(tmp_path):
    m = parse_module(TEXT)
    pm = PassManager(default_pipeline(), dump_to=str(tmp_path), dump_pass_regex="simplify|cse")
    pm.run(m)
    names = sorted(os.listdir(tmp_path))
    assert names[0].startswith("000.") and names[0].endswith(".imported.mlir")
    assert names[-1].endswith(".optimized.mlir")
    middle = names[1:-1]
    assert middle and all("after_simplify" in n or "after_cse" in n for n in middle)
    assert [int(n.split(".")[0]) for n in names] == list(range(len(names)))
    final = parse_module((tmp_path / names[-1]).read_text(encoding="utf-8"))
    assert [op.name for op in final.main.body.operations] == ["stablehlo.add", "func.return"]


def test_flags_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("AXLE_FLAGS", f"--dump_to={tmp_path} --dump_pass_regex=dce")
    pm = PassManager.from_flags(default_pipeline())
    pm.run(parse_module(TEXT))
    assert any("after_dce" in n for n in os.listdir(tmp_path))
    monkeypatch.setenv("AXLE_FLAGS", "--no_such_flag=1")
    with pytest.raises(ValueError, match="unknown flag --no_such_flag"):
        PassManager.from_flags([])


def test_timing_records_every_run_and_fixed_point_stops():
    pm = PassManager([FixedPoint([make_pass("simplify"), make_pass("cse"), make_pass("dce")])])
    pm.run(parse_module(TEXT))
    names = [r.name for r in pm.records]
    assert names[:3] == ["simplify", "cse", "dce"]
    assert not any(r.changed for r in pm.records[-3:])  # the last round changed nothing
    assert "simplify" in pm.timing_report()


class _Breaks(Pass):
    """A wrong pass: turns every add into a subtract."""
    name = "break-adds"

    def run(self, module):
        for op in module.walk():
            if op.name == "stablehlo.add":
                op.name = "stablehlo.subtract"
        return True


class _Corrupts(Pass):
    name = "corrupt"

    def run(self, module):
        body = module.main.body
        body.operations.insert(0, Operation("stablehlo.negate", [body.operations[-1].operands[0]],
                                            [body.operations[-1].operands[0].type]))
        return True


def test_translation_validation_names_the_first_bad_pass():
    m = parse_module(TEXT)
    x = np.array([1.0, 2.0, -3.0, 0.5], np.float32)
    report = validate(m, [make_pass("simplify"), make_pass("cse"), _Breaks(), make_pass("dce")], [x])
    assert not report.ok and report.pass_name == "break-adds"
    assert "result 0" in report.detail
    good = validate(parse_module(TEXT), default_pipeline(), [x])
    assert good.ok, str(good)


def test_verify_each_pass_catches_invalid_ir():
    with pytest.raises(PassError, match="pass 'corrupt' left the module invalid"):
        PassManager([_Corrupts()], verify_each=True).run(parse_module(TEXT))
