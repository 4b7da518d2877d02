"""Round-trip check of MLIR files: parse -> print -> parse must give an equal module,
and printing twice must give the same text. Used by tests and `axle roundtrip`."""
from __future__ import annotations

import os
import sys
import time
from typing import Iterable

from axle.ir import parse_module, print_module, split_cases
from axle.ir.equality import first_difference
from axle.ir.text.cursor import ParseError


def mlir_files(paths: Iterable[str]) -> list[str]:
    out = []
    for p in paths:
        if os.path.isdir(p):
            for root, _, files in os.walk(p):
                out.extend(os.path.join(root, f) for f in files if f.endswith(".mlir"))
        else:
            out.append(p)
    return sorted(out)


def roundtrip_case(text: str, filename: str) -> str | None:
    """None if the case round-trips; otherwise a one-line reason."""
    try:
        m1 = parse_module(text, filename)
    except ParseError as e:
        return f"parse: {str(e).splitlines()[0]}"
    t1 = print_module(m1)
    try:
        m2 = parse_module(t1, filename + " (printed)")
    except ParseError as e:
        return f"reparse: {e}"
    if m1 != m2:
        return "modules differ: " + first_difference(m1, m2)
    t2 = print_module(m2)
    if t1 != t2:
        import difflib
        d = [l for l in difflib.unified_diff(t1.splitlines(), t2.splitlines(), lineterm="", n=0)][2:5]
        return "unstable printing: " + " | ".join(d)
    return None


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="axle roundtrip",
                                 description="Check that every case ('// -----' part) of the given .mlir "
                                             "files parses, prints, parses back to an equal module and "
                                             "prints the same text again.",
                                 epilog="example: axle roundtrip ../shared/conformance/testdata")
    ap.add_argument("paths", nargs="+", help=".mlir files or folders of them")
    files = mlir_files(ap.parse_args(sys.argv[1:] if argv is None else argv).paths)
    ok = bad = 0
    t0 = time.perf_counter()
    for f in files:
        text = open(f, encoding="utf-8").read()
        for line, case in split_cases(text):
            why = roundtrip_case(case, f)
            if why is None:
                ok += 1
            else:
                bad += 1
                print(f"FAIL {f}:{line}: {why[:300]}")
    print(f"roundtrip: {ok} passed, {bad} failed ({time.perf_counter() - t0:.1f}s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
