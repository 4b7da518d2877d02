"""The parser's error messages: malformed text raises ParseError naming file:line:col,
showing the offending line with a caret, and saying what was expected."""
import pytest

from axle.ir import ParseError, parse_module

GOOD_HEAD = "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"

CASES = [
    # (text, line, col or None, fragment of the message)
    ("func.func @main(", 1, 17, "expected"),
    ("func.func @main() {\n  %0 = stablehlo.constant dense<1.0> : tensor<f32>\n", 3, 1, "unterminated region"),
    (GOOD_HEAD + "  %0 = stablehlo.frobnicate %x : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}", 2, 8,
     "unknown operation 'stablehlo.frobnicate'"),
    (GOOD_HEAD + '  %0 = "foo.bar"(%x) : (tensor<2xf32>) -> tensor<2xf32>\n}', 2, 8, "unknown operation 'foo.bar'"),
    (GOOD_HEAD + "  %0 = stablehlo.add %x, %y : tensor<2xf32>\n}", 2, 26, "undefined value '%y'"),
    (GOOD_HEAD + "  %0 = stablehlo.add %x, %x : tensor<3xf32>\n}", 2, 30, "has type tensor<2xf32> but is used as tensor<3xf32>"),
    (GOOD_HEAD + "  %0, %1 = stablehlo.add %x, %x : tensor<2xf32>\n}", 2, 3, "has 1 results but 2 result names"),
    (GOOD_HEAD + "  %0 = stablehlo.add %x, %x : tensor<2xfoo>\n}", 2, 40, "expected type"),
    (GOOD_HEAD + "  %0 = stablehlo.add %x, %x : tensor<2xi3>\n}", 2, 40, "unsupported integer type 'i3'"),
    (GOOD_HEAD + "  %0 = stablehlo.add %x, %x : tensor<2xf32\n}", 3, 1, "expected '>'"),
    (GOOD_HEAD + "  %0 = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<2xf32>\n}", 2, 27,
     "does not match type tensor<2xf32>"),
    (GOOD_HEAD + "  %0 = stablehlo.constant dense<[[1.0], [2.0, 3.0]]> : tensor<2x1xf32>\n}", 2, 27, "ragged"),
    (GOOD_HEAD + '  %0 = stablehlo.constant dense<"0xZZ"> : tensor<1xi8>\n}', 2, 27, "malformed hex"),
    (GOOD_HEAD + '  %0 = stablehlo.constant dense<"0x0102"> : tensor<3xi8>\n}', 2, 27, "hex data has 2 bytes"),
    (GOOD_HEAD + "  %0 = stablehlo.constant dense<300> : tensor<i8>\n}", 2, 33, "does not fit in i8"),
    (GOOD_HEAD + "  %0 = stablehlo.constant dense<1.5> : tensor<i32>\n}", 2, 33, "float literal '1.5' for integer type"),
    (GOOD_HEAD + "  %0 = stablehlo.constant dense<1.0> : tensor<?xf32>\n}", 2, 27, "static shape"),
    (GOOD_HEAD + "  %0 = stablehlo.transpose %x, dims = [0 : (tensor<2xf32>) -> tensor<2xf32>\n}", 2, 42, "expected ']'"),
    (GOOD_HEAD + "  %0 = stablehlo.transpose %x, foo = [0] : (tensor<2xf32>) -> tensor<2xf32>\n}", 2, 32,
     "unknown keyword 'foo'"),
    (GOOD_HEAD + "  %0 = stablehlo.compare %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>\n}", 2, 8,
     "comparison direction"),
    (GOOD_HEAD + "  %0 = stablehlo.add %x, %x : tensor<2xf32>\n  %0 = stablehlo.add %x, %x : tensor<2xf32>\n}", 3, 3,
     "redefinition of SSA value '%0'"),
    (GOOD_HEAD + '  %0 = "stablehlo.add"(%x, %x) : tensor<2xf32>\n}', 2, 33, "expected function type"),
    (GOOD_HEAD + '  %0 = "stablehlo.add"(%x, %x {\n}', 2, 31, "expected ')'"),
    (GOOD_HEAD + '  %0 = "stablehlo.add"(%x, %x) {a = 1, a = 2} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n}', 2, 46,
     "duplicate attribute 'a'"),
    (GOOD_HEAD + '  %0 = stablehlo.add %x#3, %x : tensor<2xf32>\n}', 2, 22, "has only 1 results, no #3"),
    ("module {\n  func.func @f() {\n    return\n  }\n", 5, 1, "unterminated module"),
    ("module {} module {}", 1, 11, "single module"),
    ("func.func @main() -> tensor<!quant.uniform<f32:f32, 1.0>> {\n}", 1, 29, "storage type must be an integer"),
    ("func.func @main() -> tensor<2x!quant.uniform<i8:i32, 1.0>> {\n}", 1, 31, "expressed type must be a float"),
    ("func.func @main() -> tensor<*xf32> {\n}", 1, 29, "unranked tensors"),
    ("#a = 1\n#a = 2\n", 2, 1, "redefinition of alias '#a'"),
    ("func.func @main() -> tensor<#undefined> {\n}", 1, 29, "expected type, found '#'"),
    ('func.func @main() {\n  "stablehlo.add"() : () -> () loc(\n}', 3, 1, "unbalanced '}'"),
    ("func.func @main() {\n  %0 = stablehlo.iota dim = x : tensor<4xi32>\n}", 2, 29, "expected integer"),
    ("\x00\x01binary", 1, 1, "expected"),
    ('func.func @main() {\n  "stablehlo.add"() {a = #undefined} : () -> ()\n}', 2, 26,
     "undefined attribute alias '#undefined'"),
]


@pytest.mark.parametrize("text,line,col,fragment", CASES, ids=[c[3][:40] for c in CASES])
def test_error_names_place_and_problem(text, line, col, fragment):
    with pytest.raises(ParseError) as info:
        parse_module(text, "bad.mlir")
    e = info.value
    assert fragment in e.message, e.message
    assert (e.filename, e.line) == ("bad.mlir", line), str(e)
    if col is not None:
        assert e.col == col, str(e)
    text_lines = str(e).splitlines()
    assert text_lines[0].startswith(f"bad.mlir:{line}:{e.col}: error: ")
    if e.source_line:  # the offending line, then a caret under the column
        assert text_lines[1] == e.source_line
        assert text_lines[2] == " " * (e.col - 1) + "^"


def test_bytes_that_are_not_utf8():
    with pytest.raises(ParseError, match="not valid UTF-8"):
        parse_module(b"func.func @main() {\xff}", "bad.mlir")


def test_split_cases_keep_line_numbers_of_the_whole_file():
    from axle.ir import split_cases
    text = "func.func @a() {\n  return\n}\n// -----\nfunc.func @b() {\n  %0 = stablehlo.nope : tensor<f32>\n}\n"
    cases = split_cases(text)
    assert [line for line, _ in cases] == [1, 4]
    with pytest.raises(ParseError) as info:
        parse_module(cases[1][1], "f.mlir")
    assert info.value.line == 6
