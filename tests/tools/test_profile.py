"""Profiling: native per-kernel timing, the Chrome trace, `axle profile` and `axle explain`."""
import json
import os

import numpy as np
import pytest

import axle
from axle import profiler
from axle.backends.cpu.compiler import compile_function
from axle.backends.cpu.executable import clear_memory_cache
from axle.backends.cpu.profiling import ProfiledExecutable, top_level_kernels
from axle.ir import parse_module, print_module
from axle.tools import explain, profile
from axle.tools.cli import main as cli_main

EXAMPLE = os.path.join(os.path.dirname(axle.__file__), "examples", "mlp.mlir")
CONFORMANCE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "conformance", "testdata")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CALLS = 3


def _events(path):
    with open(path, encoding="utf-8") as fh:
        trace = json.load(fh)
    assert set(trace) >= {"traceEvents"}
    for e in trace["traceEvents"]:
        assert isinstance(e["name"], str) and isinstance(e["pid"], int) and isinstance(e["tid"], int)
        assert e["ph"] in ("X", "M")
        if e["ph"] == "X":
            assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float)) and e["dur"] >= 0
    return [e for e in trace["traceEvents"] if e["ph"] == "X"]


def _check_trace(events, n_kernels, calls):
    execs = [e for e in events if e["cat"] == "execute"]
    kernels = [e for e in events if e["cat"] == "kernel"]
    assert len(execs) == calls
    assert len(kernels) == n_kernels * calls, "one event per top-level kernel per call"
    for k in kernels:
        assert set(k["args"]) >= {"op", "location", "shape", "fused_ops", "bytes", "flops", "library"}
        # nested inside its call, on the same track
        assert any(x["tid"] == k["tid"] and x["ts"] <= k["ts"] + 1e-3
                   and k["ts"] + k["dur"] <= x["ts"] + x["dur"] + 1e-3 for x in execs), k
    return kernels


@pytest.fixture(scope="module")
def transformer(tmp_path_factory):
    pytest.importorskip("jax")
    from axle.tools.workloads import lower
    text, args, _, _ = lower("transformer_block")
    clear_memory_cache()  # compile here, so that the trace shows the compile phases
    path = str(tmp_path_factory.mktemp("trace") / "transformer.json")
    with profiler.trace(path) as prof:
        ex = axle.compile(text, backend="cpu", profile=True)
        outs = [ex.execute(args) for _ in range(CALLS)]
    return text, args, ex, outs, path, prof


def test_transformer_trace_has_compile_phases_and_a_kernel_event_per_kernel_per_call(transformer):
    text, args, ex, outs, path, _ = transformer
    assert isinstance(ex, ProfiledExecutable)
    events = _events(path)
    n = len(top_level_kernels(ex.program))
    assert n == len(ex.kernels) > 5
    kernels = _check_trace(events, n, CALLS)
    names = {e["name"] for e in events}
    assert {"parse", "pipeline", "codegen", "llvm.parse", "llvm.optimize", "llvm.object", "llvm.link"} <= names
    passes = [e for e in events if e["cat"] == "pass"]
    assert passes and all(isinstance(e["args"].get("changed", False), bool) for e in passes)
    # the library gemms and the fused loops are both there, with their costs
    assert any(k["args"]["library"] for k in kernels)
    assert any(k["args"]["fused_ops"] > 0 for k in kernels)
    assert sum(k["args"]["flops"] for k in kernels[:n]) == sum(k.flops() for k in ex.kernels)


def test_profiled_results_equal_unprofiled_results(transformer):
    text, args, ex, outs, _, _ = transformer
    plain = axle.compile(text, backend="cpu")
    assert not isinstance(plain, ProfiledExecutable)
    ref = plain.execute(args)
    for got in outs:
        for g, r in zip(got, ref):
            np.testing.assert_array_equal(g, r)


def test_per_call_per_kernel_durations(transformer):
    _, args, ex, _, _, _ = transformer
    ex.reset_profile()
    for _ in range(2):
        ex(*args)
    d = ex.kernel_durations()
    assert d.shape == (2, len(ex.kernels))
    assert (d >= 0).all() and d.sum() > 0
    for call, row in zip(ex.calls, d):
        assert row.sum() <= (call.end_ns - call.start_ns) * 1e-9  # kernels run inside the call
        assert (np.diff(call.starts) >= 0).all()  # in program order


def test_unprofiled_code_reads_no_clock():
    m = parse_module(open(EXAMPLE, encoding="utf-8").read())
    plain = compile_function(m)
    timed = compile_function(m, profile=True)
    assert "clock_gettime" not in plain.llvm_ir and plain.profile_offset is None
    calls = [line for line in timed.llvm_ir.splitlines() if "call" in line and "clock_gettime" in line]
    assert len(calls) == 2 * len(top_level_kernels(timed))
    assert timed.profile_offset >= plain.arena_bytes and not timed.cacheable


def test_a_trace_records_plain_executions_and_nothing_outside(tmp_path):
    text = open(EXAMPLE, encoding="utf-8").read()
    r = np.random.default_rng(0)
    args = [r.standard_normal(s).astype(np.float32) for s in [(4, 8), (8, 16), (16,), (16, 4), (4,)]]
    ex = axle.compile(text, backend="cpu")
    ex(*args)
    with profiler.trace(str(tmp_path / "t.json")) as prof:
        ex(*args)
        ex.execute(args)
    assert profiler.ACTIVE is None
    ex(*args)
    execs = [e for e in _events(tmp_path / "t.json") if e["cat"] == "execute"]
    assert len(execs) == 2 and len(prof.complete_events("execute")) == 2


@pytest.mark.skipif(not os.path.isdir(CONFORMANCE), reason="../shared/conformance is not beside the project")
def test_profile_a_conformance_program(tmp_path):
    from axle.tools.lifting import lift
    path = os.path.join(CONFORMANCE, "dot_general_float16_4_3_float32_3_6.mlir")
    lifted = lift(parse_module(open(path, encoding="utf-8").read(), path), "main")
    trace = str(tmp_path / "conf.json")
    res = profile.run_profile(print_module(lifted.module), lifted.args, path, repeat=4, warmup=1,
                              trace_path=trace)
    lifted.run_checks(res.outputs)  # profiled code still computes the right answer
    n = len(res.kernels)
    assert n >= 1 and any(k.info.name == "stablehlo.dot_general" for k in res.kernels)
    _check_trace(_events(trace), n, 5)
    table = profile.format_table(res)
    assert all(k.label in table for k in res.kernels)


def test_axle_profile_command(tmp_path, capsys):
    trace = str(tmp_path / "mlp.json")
    assert cli_main(["profile", EXAMPLE, "-o", trace, "--repeat", "3"]) == 0
    out = capsys.readouterr().out
    assert "GFLOP/s" in out and "dot_general" in out and trace in out
    events = _events(trace)
    n = len({e["name"] for e in events if e["cat"] == "kernel"})
    _check_trace(events, n, 4)  # one warm-up call and three timed ones
    with pytest.raises(SystemExit) as e:
        cli_main(["profile", "--help"])
    assert e.value.code == 0
    assert "axle profile" in capsys.readouterr().out


def test_axle_profile_inputs_keep_0d_arguments(tmp_path, capsys):
    prog = tmp_path / "scale.mlir"
    prog.write_text("""func.func @main(%x: tensor<4xf32>, %s: tensor<f32>) -> tensor<4xf32> {
  %b = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %0 = stablehlo.multiply %x, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}""")
    inputs = tmp_path / "args.npz"
    np.savez(inputs, np.arange(4, dtype=np.float32), np.array(2.0, np.float32))
    assert cli_main(["profile", str(prog), "--inputs", str(inputs), "--repeat", "2",
                     "-o", str(tmp_path / "t.json")]) == 0
    assert "multiply" in capsys.readouterr().out


def test_axle_profile_reports_a_bad_file(tmp_path, capsys):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @main( {")
    assert cli_main(["profile", str(bad), "-o", str(tmp_path / "t.json")]) == 1
    assert "axle profile: error" in capsys.readouterr().err


def test_explain_writes_html_and_png_naming_every_kernel(transformer, tmp_path):
    pytest.importorskip("matplotlib")
    text, args, _, _, _, _ = transformer
    res = profile.run_profile(text, args, "transformer_block", repeat=3)
    machine = explain.Machine(10e9, 40e9, 100e9)
    report = explain.explain(res, str(tmp_path / "report.html"), machine=machine)
    png = tmp_path / "report.png"
    assert report.png_path == str(png)
    data = png.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) < 300_000
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "data:image/png;base64," in page
    for k in res.kernels:
        assert f">{k.label}<" in page
    kinds = {b.kind for b in report.kernels}
    assert kinds <= {"memory", "compute"} and "compute" in kinds  # the gemms at 100 GFLOP/s / 10 GB/s
    for b in report.kernels:
        assert b.bound_seconds > 0 and 0 <= b.percent
    assert "slowest kernels" in report.summary()


def test_axle_explain_command_measures_the_machine(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out_html = str(tmp_path / "sub" / "mlp.html")
    assert cli_main(["explain", EXAMPLE, "-o", out_html, "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    assert "GB/s" in out and "GFLOP/s" in out and "wrote" in out
    assert open(str(tmp_path / "sub" / "mlp.png"), "rb").read(8) == PNG_MAGIC
    m = explain.measure_machine()
    assert m.memory_bandwidth > 1e8 and m.cache_bandwidth > 1e8 and m.peak_flops > 1e8
    assert explain.measure_machine() is m  # measured once per process


def test_operation_counts_of_lapack_calls_and_ffts():
    """The profile's flop column for library work: a batched LU (2/3 n^3 per matrix), a
    Cholesky (n^3 / 3), a triangular solve (n^2 per right-hand side column), a batch of
    complex FFTs (5 N log2 N per row) and a real one (half), not one per result element."""
    from axle.backends.cpu.costs import op_flops
    m = parse_module("""
func.func @main(%a: tensor<3x64x64xf32>, %b: tensor<64x10xf32>, %c: tensor<8x256xcomplex<f32>>,
                %r: tensor<8x256xf32>) -> (tensor<3x64x64xf32>, tensor<64x64xf32>, tensor<64x10xf32>,
                                          tensor<8x256xcomplex<f32>>, tensor<8x129xcomplex<f32>>) {
  %lu:3 = "stablehlo.custom_call"(%a) {call_target_name = "lapack_sgetrf_ffi", api_version = 4 : i32}
      : (tensor<3x64x64xf32>) -> (tensor<3x64x64xf32>, tensor<3x64xi32>, tensor<3xi32>)
  %a0 = stablehlo.slice %a [0:1, 0:64, 0:64] : (tensor<3x64x64xf32>) -> tensor<1x64x64xf32>
  %a1 = stablehlo.reshape %a0 : (tensor<1x64x64xf32>) -> tensor<64x64xf32>
  %ch:2 = "stablehlo.custom_call"(%a1) {call_target_name = "lapack_spotrf_ffi", api_version = 4 : i32,
      mhlo.backend_config = {uplo = 76 : ui8}} : (tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<i32>)
  %x = "stablehlo.custom_call"(%a1, %b) {call_target_name = "lapack_strsm_ffi", api_version = 4 : i32}
      : (tensor<64x64xf32>, tensor<64x10xf32>) -> tensor<64x10xf32>
  %f = stablehlo.fft %c, type = FFT, length = [256] : (tensor<8x256xcomplex<f32>>) -> tensor<8x256xcomplex<f32>>
  %g = stablehlo.fft %r, type = RFFT, length = [256] : (tensor<8x256xf32>) -> tensor<8x129xcomplex<f32>>
  return %lu#0, %ch#0, %x, %f, %g : tensor<3x64x64xf32>, tensor<64x64xf32>, tensor<64x10xf32>, tensor<8x256xcomplex<f32>>, tensor<8x129xcomplex<f32>>
}
""")
    ops = {op.attr("call_target_name") if op.name == "stablehlo.custom_call" else str(op.attr("fft_type")): op
           for op in m.walk() if op.name in ("stablehlo.custom_call", "stablehlo.fft")}
    assert op_flops(ops["lapack_sgetrf_ffi"]) == pytest.approx(3 * 2 / 3 * 64 ** 3, rel=1e-6)
    assert op_flops(ops["lapack_spotrf_ffi"]) == 64 ** 3 // 3
    assert op_flops(ops["lapack_strsm_ffi"]) == 64 * 64 * 10
    assert op_flops(ops["FFT"]) == 8 * 5 * 256 * 8
    assert op_flops(ops["RFFT"]) == 8 * 5 * 256 * 8 // 2
