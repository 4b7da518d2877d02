"""Property: whatever the input, the parser raises ParseError and nothing else; and what
it accepts prints and parses back equal."""
import glob
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axle.ir import ParseError, parse_module, print_module, split_cases

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "conformance")
SAMPLES = []
for _f in sorted(glob.glob(os.path.join(ROOT, "interpret", "*.mlir")))[::4]:
    SAMPLES.extend(c for _, c in split_cases(open(_f, encoding="utf-8").read())[:2] if len(c) < 4000)
if not SAMPLES:  # without ../shared, fuzz a module of our own
    SAMPLES = [open(os.path.join(os.path.dirname(__file__), "..", "..", "axle", "examples", "mlp.mlir")).read()]

FUZZ = settings(max_examples=int(os.environ.get("AXLE_FUZZ_EXAMPLES", "250")), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _parse_only_parse_error(text):
    try:
        m = parse_module(text, "fuzz.mlir")
    except ParseError:
        return
    printed = print_module(m)
    assert parse_module(printed) == m


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes(data):
    try:
        m = parse_module(data, "fuzz.mlir")
    except ParseError:
        return
    assert parse_module(print_module(m)) == m


@FUZZ
@given(st.lists(st.sampled_from(list("%@#!^()[]{}<>:=,.-x0123456789\"abcdefistuv \n") +
                                ["tensor", "dense", "func.func", "stablehlo.add", "->", "i32", "f32",
                                 "loc(", "array<i64:", "module", "// -----\n"]), max_size=60))
def test_random_token_soup(tokens):
    _parse_only_parse_error("".join(tokens))


@st.composite
def mutated(draw):
    text = draw(st.sampled_from(SAMPLES))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "insert", "replace", "duplicate", "truncate"]))
        i = draw(st.integers(0, max(len(text) - 1, 0)))
        j = min(len(text), i + draw(st.integers(1, 20)))
        if kind == "delete":
            text = text[:i] + text[j:]
        elif kind == "insert":
            text = text[:i] + draw(st.sampled_from(["(", ")", "{", "}", "<", ">", "%0", ",", ":", "x", "?", "\"",
                                                    "dense<", "tensor<", "#", "!", "-1", "0x", "\n"])) + text[i:]
        elif kind == "replace":
            text = text[:i] + draw(st.text(max_size=5)) + text[j:]
        elif kind == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        else:
            text = text[:i]
    return text


@FUZZ
@given(mutated())
def test_mutations_of_real_modules(text):
    _parse_only_parse_error(text)
