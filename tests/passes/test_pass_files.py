"""Text-in/text-out pass tests: every tests/passes/*.mlir file.

A file starts with `// RUN: passes=NAME[,NAME...]`; its `// -----` parts are cases. Each
case is parsed, run through the named passes (verifying after each one), printed, and the
printed text is checked against the case's `// CHECK` lines (axle/tools/filecheck.py).
When a case's @main has no arguments, the interpreter must also give the same results
before and after the passes (translation validation).
"""
import glob
import os
import re

import numpy as np
import pytest

from axle.ir import parse_module, print_module, split_cases
from axle.passes import PassManager, make_pass
from axle.tools.filecheck import directives, filecheck

HERE = os.path.dirname(__file__)
FILES = sorted(glob.glob(os.path.join(HERE, "*.mlir")))


def _cases():
    for f in FILES:
        text = open(f, encoding="utf-8").read()
        m = re.search(r"//\s*RUN:\s*passes=([\w,\-]+)", text)
        assert m, f"{f}: first line must be '// RUN: passes=...'"
        for line, chunk in split_cases(text):
            if "CHECK" in chunk:
                yield pytest.param(f, m.group(1).split(","), chunk, id=f"{os.path.basename(f)}:{line}")


@pytest.mark.parametrize("path,passes,case", list(_cases()))
def test_pass_case(path, passes, case):
    module = parse_module(case, path)
    before = None
    main = module.functions.get("main")
    run_it = main is not None and not main.function_type.inputs and "// NO-INTERPRET" not in case
    if run_it:
        from axle.interpreter import interpret
        before = interpret(module)
    PassManager([make_pass(p) for p in passes], verify_each=True).run(module)
    out = print_module(module)
    filecheck(out, directives(case))
    reparsed = parse_module(out)  # the result must still be valid text
    assert reparsed == module
    if run_it:
        from axle.interpreter import interpret
        after = interpret(module)
        for a, b in zip(before if isinstance(before, tuple) else (before,),
                        after if isinstance(after, tuple) else (after,)):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
