"""`axle run`, `axle compile`, `axle demo` and every subcommand's --help, on real modules."""
import os
import re

import numpy as np
import pytest

import axle
from axle.interpreter.evaluator import run_function
from axle.ir import parse_module
from axle.tools import demo
from axle.tools.cli import main as cli_main, random_inputs

EXAMPLES = os.path.join(os.path.dirname(axle.__file__), "examples")
GPT2 = os.path.join(EXAMPLES, "gpt2_block.mlir")
MLP = os.path.join(EXAMPLES, "mlp.mlir")
SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "conformance")
CONFORMANCE_FILE = os.path.join(SHARED, "testdata", "abs_float32_20_20.mlir")


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _npz(path):
    data = np.load(path)
    return [data[k] for k in data.files]


def test_bundled_example_is_small_and_takes_its_weights_as_arguments():
    text = _read(GPT2)
    assert len(text.encode()) < 200_000
    m = parse_module(text, GPT2)
    names = [a.name_hint for a in m.main.body.arguments]
    assert names[-1] == "x" and {"w_qkv", "w_o", "w_fc", "w_proj"} <= set(names)
    for op in m.walk():  # no weight is baked in: constants are scalars or splats
        if op.name == "stablehlo.constant":
            assert op.attributes["value"].is_splat or op.results[0].type.num_elements <= 1


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_run_writes_outputs_that_match_the_interpreter(backend, tmp_path, capsys):
    m = parse_module(_read(GPT2), GPT2)
    args = demo.example_arguments(m.main, seed=3)  # weights at an initializer's scale
    inputs, outputs = str(tmp_path / "in.npz"), str(tmp_path / "out.npz")
    np.savez(inputs, *args)
    assert cli_main(["run", GPT2, "--backend", backend, "--inputs", inputs, "--outputs", outputs,
                     "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"result 0: float32\[1, 64, 128\] min \S+ max \S+ mean \S+ +first \[", out)
    if backend == "cpu":
        assert "matches the interpreter" in out
    ref = run_function(m, args, "main")
    got = _npz(outputs)
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5)


def test_run_with_random_inputs_keeps_the_old_flags(tmp_path, capsys):
    outputs = str(tmp_path / "o.npz")
    assert cli_main(["run", MLP, "--repeat", "3", "--buffers", "--outputs", outputs, "--seed", "5"]) == 0
    out = capsys.readouterr().out
    assert "random arguments (seed 5)" in out and "per call median" in out and "temporaries:" in out
    m = parse_module(_read(MLP), MLP)
    ref = run_function(m, random_inputs(m.main.function_type.inputs, 5), "main")
    np.testing.assert_allclose(_npz(outputs)[0], ref[0], rtol=1e-5, atol=1e-6)


def test_run_a_conformance_program_runs_its_checks(tmp_path, capsys):
    if not os.path.exists(CONFORMANCE_FILE):
        pytest.skip("conformance suite not there")
    outputs = str(tmp_path / "o.npz")
    assert cli_main(["run", CONFORMANCE_FILE, "--repeat", "1", "--outputs", outputs]) == 0
    out = capsys.readouterr().out
    assert "the program's own inputs" in out and "checks: 1 passed" in out and "matches the interpreter" in out
    (got,) = _npz(outputs)
    m = parse_module(_read(CONFORMANCE_FILE), CONFORMANCE_FILE)
    (ref,) = run_function(m, [], "main")
    np.testing.assert_array_equal(got, ref)


def test_run_a_jax_workload_matches_jax(tmp_path, capsys):
    jax = pytest.importorskip("jax")
    from axle.tools.workloads import transformer_block
    outputs = str(tmp_path / "o.npz")
    assert cli_main(["run", "jax:transformer_block", "--repeat", "1", "--outputs", outputs]) == 0
    assert "the program's own inputs" in capsys.readouterr().out
    fn, args = transformer_block()
    np.testing.assert_allclose(_npz(outputs)[0], np.asarray(jax.jit(fn)(*args)), rtol=1e-4, atol=1e-4)


def test_compile_summary(capsys):
    assert cli_main(["compile", GPT2]) == 0
    out = capsys.readouterr().out
    m = re.search(r"(\d+) kernels \((\d+) top level", out)
    assert m and int(m.group(1)) > 5
    lib = r"(blas\.sgemm|lowp\.f32(_avx2)?)"
    assert re.search(rf"library calls: [1-9]\d* \({lib} x\d+(, {lib} x\d+)*\)", out)
    assert re.search(r"temporaries: \d+ buffers, \d+ bytes if none shared; arena \(peak\) \d+ bytes", out)
    for k in range(int(m.group(1))):
        assert re.search(rf"^k{k} +\w+", out, re.M), f"no line for kernel k{k}"


def test_compile_emits_llvm_and_assembly(tmp_path, capsys):
    ll, s, opt = str(tmp_path / "m.ll"), str(tmp_path / "m.s"), str(tmp_path / "m.opt.ll")
    assert cli_main(["compile", MLP, "--emit", "llvm", "-o", ll]) == 0
    assert cli_main(["compile", MLP, "--emit", "asm", "-o", s]) == 0
    assert cli_main(["compile", MLP, "--emit", "llvm-opt", "-o", opt, "--opt", "2"]) == 0
    assert f"wrote {ll}" in capsys.readouterr().out
    text = _read(ll)
    assert 'define void @"axle_entry"' in text and 'define internal void @"k0.dot_general"' in text
    assert "axle_entry:" in _read(s) or "axle_entry" in _read(s)
    assert "define" in _read(opt)
    import llvmlite.binding as llvm
    llvm.parse_assembly(text).verify()


def test_compile_reports_user_errors(tmp_path, capsys):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @main( {")
    assert cli_main(["compile", str(bad)]) == 1
    assert "axle compile: error:" in capsys.readouterr().err


def test_demo_writes_picture_and_summary(tmp_path):
    lines = []
    res = demo.run_demo(GPT2, str(tmp_path / "d"), repeat=3, log=lines.append)
    text = "\n".join(lines)
    assert res["matches"] and res["median_seconds"] > 0
    assert "matches the interpreter" in text and "per call: median" in text
    assert re.search(r"\d+ kernels", text) and "library calls:" in text and "arena (peak)" in text
    for key in ("html", "svg"):
        assert os.path.getsize(res["files"][key]) > 1000 and res["files"][key] in text
    if "trace" in res["files"]:
        import json
        with open(res["files"]["trace"], encoding="utf-8") as fh:
            assert json.load(fh)["traceEvents"]
        assert "trace: " in text


def test_demo_command(tmp_path, capsys):
    assert cli_main(["demo", "--model", MLP, "--out", str(tmp_path), "--repeat", "2", "--no-profile"]) == 0
    out = capsys.readouterr().out
    assert f"{tmp_path}/graph.html" in out and os.path.exists(tmp_path / "graph.svg")


@pytest.mark.parametrize("command", ["opt", "interpret", "run", "compile", "viz", "demo", "conformance",
                                     "roundtrip", "profile", "explain"])
def test_every_subcommand_has_help_with_an_example(command, capsys):
    with pytest.raises(SystemExit) as e:
        cli_main([command, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "usage: axle" in out and re.search(r"examples?:", out), out
