"""Ahead-of-time artifacts: axle.save / axle.load / `axle compile -o model.axle`."""
import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import axle
from axle.runtime import ArtifactError
from axle.runtime.aot import MAGIC, pack, unpack

GPT2 = os.path.join(os.path.dirname(axle.__file__), "examples", "gpt2_block.mlir")
ADD = """func.func @main(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  %0 = stablehlo.add %x, %y : tensor<8xf32>
  %1 = stablehlo.tanh %0 : tensor<8xf32>
  return %1 : tensor<8xf32>
}"""


def _args(exe, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(t.shape).astype(t.dtype) for t in exe.program.arg_types]


@pytest.fixture(scope="module")
def gpt2_artifact(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("aot") / "gpt2.axle")
    r = subprocess.run([sys.executable, "-m", "axle", "compile", GPT2, "-o", path], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout and os.path.getsize(path) > 0
    return path


def test_new_process_runs_the_artifact_without_llvm(gpt2_artifact, tmp_path):
    exe = axle.compile(open(GPT2, encoding="utf-8").read())
    args = _args(exe)
    np.savez(tmp_path / "in.npz", *args)
    np.save(tmp_path / "want.npy", exe(*args))
    _run_without_llvm(f"""
exe = axle.load({gpt2_artifact!r})
data = np.load({str(tmp_path / 'in.npz')!r})
got = exe(*[data[f'arr_{{i}}'] for i in range(len(data.files))])
np.testing.assert_allclose(got, np.load({str(tmp_path / 'want.npy')!r}), rtol=1e-5, atol=1e-5)
assert axle.metrics()["native_compiles"] == 0 and axle.metrics()["aot_loads"] == 1
print("ok", exe.load_seconds)
""")


def _run_without_llvm(body: str) -> None:
    """Run body in a fresh process (no disk cache) where compiling anything with LLVM fails;
    it must print "ok"."""
    script = f"""
import numpy as np
import axle.backends.cpu.llvm_env as llvm_env
def no_llvm(*a, **k):
    raise AssertionError("LLVM compiled something while loading an artifact")
llvm_env.compile_to_object = no_llvm
import axle
{body}"""
    env = dict(os.environ, AXLE_CACHE_DIR="off")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ok")


def test_save_load_round_trip_and_buffers(tmp_path):
    exe = axle.compile(ADD)
    path = str(tmp_path / "add.axle")
    axle.save(exe, path)
    loaded = axle.load(path)
    x, y = _args(exe, 1)
    np.testing.assert_array_equal(loaded(x, y), exe(x, y))
    with pytest.raises(TypeError, match="argument 1 of @main: expected shape"):
        loaded(x, y[:4])
    rt = axle.client().load(path)
    out = rt.execute([axle.device_put(x), y])
    np.testing.assert_array_equal(np.asarray(out[0]), exe(x, y))


def test_bad_files_are_clear_errors(tmp_path):
    path = str(tmp_path / "add.axle")
    axle.save(axle.compile(ADD), path)
    data = open(path, "rb").read()
    cases = {
        "truncated": (data[: len(data) // 2], "truncated"),
        "tampered": (data[:-100] + bytes([data[-100] ^ 1]) + data[-99:], "corrupted"),
        "foreign": (b"\x7fELF" + data[4:], "not an axle artifact"),
        "empty": (b"", "not an axle artifact|truncated"),
    }
    for name, (blob, message) in cases.items():
        p = tmp_path / f"{name}.axle"
        p.write_bytes(blob)
        with pytest.raises(ArtifactError, match=message):
            axle.load(str(p))
    header, payload = unpack(data)
    (tmp_path / "v9.axle").write_bytes(pack(dict(header, format=9), payload))
    with pytest.raises(ArtifactError, match="format version 9"):
        axle.load(str(tmp_path / "v9.axle"))


def test_missing_cpu_features_are_refused(tmp_path):
    from axle.backends.cpu.llvm_env import host_cpu
    path = str(tmp_path / "add.axle")
    axle.save(axle.compile(ADD), path)
    header, payload = unpack(open(path, "rb").read())
    have = set(host_cpu()[1].split(","))
    lacking = next(f for f in ("avx512f", "amx-tile", "avx10.2-512", "sha512") if "+" + f not in have)
    bh = dict(header["backend_header"])
    bh["features"] = bh["features"].replace(f"-{lacking}", "") + f",+{lacking}"
    bh["cpu"] = "sapphirerapids"
    other = tmp_path / "other_host.axle"
    other.write_bytes(pack(dict(header, backend_header=bh), payload))  # a well-formed artifact from elsewhere
    with pytest.raises(ArtifactError, match=f"features this host lacks: {lacking}"):
        axle.load(str(other))


def test_programs_that_cannot_be_saved(tmp_path):
    dynamic = ADD.replace("tensor<8xf32>", "tensor<?xf32>")
    with pytest.raises(ArtifactError, match="dynamic shapes"):
        axle.save(axle.compile(dynamic), str(tmp_path / "d.axle"))
    axle.register_custom_call("test_aot.double", lambda call: call.operands[0] * 2)
    cc = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %0 = stablehlo.custom_call @test_aot.double(%x) : (tensor<4xf32>) -> tensor<4xf32>
      return %0 : tensor<4xf32>
    }"""
    with pytest.raises(ArtifactError, match="calls back into this process"):
        axle.save(axle.compile(cc), str(tmp_path / "c.axle"))


def test_header_layout_is_documented():
    blob = pack({"format": 1, "x": 1}, b"payload")
    assert blob.startswith(MAGIC)
    (n,) = struct.unpack_from("<I", blob, len(MAGIC))
    header = json.loads(blob[len(MAGIC) + 4: len(MAGIC) + 4 + n])
    assert header["payload_size"] == 7 and blob[len(MAGIC) + 4 + n: -32] == b"payload"


def test_artifact_carries_the_runtime_routines(tmp_path):
    """A program calling axle's runtime routines (a transposed convolution through the
    convolution library, an int8 dot through the host's low-precision kernel when it has
    one) is saved with their object code and runs in a fresh process without LLVM."""
    text = """func.func @main(%x: tensor<2x6x6x4xf32>, %w: tensor<3x3x4x5xf32>, %a: tensor<16x64xi8>, %b: tensor<64x32xi8>) -> (tensor<2x12x12x5xf32>, tensor<16x32xi32>) {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
       window = {stride = [1, 1], pad = [[1, 2], [1, 2]], lhs_dilate = [2, 2], rhs_dilate = [1, 1]}
       {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x6x6x4xf32>, tensor<3x3x4x5xf32>) -> tensor<2x12x12x5xf32>
  %1 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<16x64xi8>, tensor<64x32xi8>) -> tensor<16x32xi32>
  return %0, %1 : tensor<2x12x12x5xf32>, tensor<16x32xi32>
}"""
    exe = axle.compile(text)
    assert "axle_lowp_conv_tiles_f32" in exe.program.llvm_ir
    r = np.random.default_rng(3)
    args = [r.standard_normal((2, 6, 6, 4)).astype(np.float32), r.standard_normal((3, 3, 4, 5)).astype(np.float32),
            r.integers(-128, 128, (16, 64)).astype(np.int8), r.integers(-128, 128, (64, 32)).astype(np.int8)]
    want = exe(*args)
    np.testing.assert_allclose(want[0], axle.interpret(text, *args)[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(want[1], args[2].astype(np.int64) @ args[3].astype(np.int64))
    path = str(tmp_path / "conv.axle")
    axle.save(exe, path)
    np.savez(tmp_path / "in.npz", *args)
    np.savez(tmp_path / "want.npz", *want)
    _run_without_llvm(f"""
exe = axle.load({path!r})
data = np.load({str(tmp_path / 'in.npz')!r})
got = exe(*[data[f'arr_{{i}}'] for i in range(4)])
want = np.load({str(tmp_path / 'want.npz')!r})
np.testing.assert_array_equal(got[0], want['arr_0'])
np.testing.assert_array_equal(got[1], want['arr_1'])
print("ok")
""")
