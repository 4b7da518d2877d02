"""Native collectives (axle/backends/cpu/collectives_native.py): every kind compiled to a call
of the runtime, no host callback left, the program cacheable; results equal to the
interpreter's on 4 devices of this process and, through MPI_Sendrecv from compiled code, on 2
MPI processes."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from axle.interpreter.collectives import run_parallel
from axle.interpreter.evaluator import Evaluator
from axle.ir import parse_module
from axle.backends.cpu.multi import compiled_program_runner


def _groups(rows):
    return "dense<" + str(rows).replace(" ", "") + "> : tensor<%dx%dxi64>" % (len(rows), len(rows[0]))


def program(n: int, et: str = "f32", body: str = "add") -> str:
    """Each device adds its partition id to x, then runs every collective kind."""
    half = [[i for i in range(n) if i % 2 == 0], [i for i in range(n) if i % 2 == 1]] if n > 2 else [list(range(n))]
    pairs = [[i, (i + 1) % n] for i in range(n)]
    g = len(half[0])
    conv = "stablehlo.convert %pid : (tensor<ui32>) -> tensor<" + et + ">"
    return f"""
module attributes {{mhlo.num_partitions = {n} : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func @main(%x: tensor<4x6x{2 * n}x{et}>) -> (tensor<4x6x{2 * n}x{et}>, tensor<4x{6 * g}x{2 * n}x{et}>,
      tensor<4x6x2x{et}>, tensor<{4 * n}x6x2x{et}>, tensor<4x6x{2 * n}x{et}>, tensor<4x6x{2 * n}x{et}>, tensor<ui32>) {{
    %pid = stablehlo.partition_id : tensor<ui32>
    %p = {conv}
    %pb = stablehlo.broadcast_in_dim %p, dims = [] : (tensor<{et}>) -> tensor<4x6x{2 * n}x{et}>
    %y = stablehlo.add %x, %pb : tensor<4x6x{2 * n}x{et}>
    %ar = "stablehlo.all_reduce"(%y) ({{
      ^bb0(%a: tensor<{et}>, %b: tensor<{et}>):
        %s = stablehlo.{body} %a, %b : tensor<{et}>
        stablehlo.return %s : tensor<{et}>
    }}) {{replica_groups = {_groups(half)}, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>,
         use_global_device_ids}} : (tensor<4x6x{2 * n}x{et}>) -> tensor<4x6x{2 * n}x{et}>
    %ag = "stablehlo.all_gather"(%y) {{all_gather_dim = 1 : i64, replica_groups = {_groups(half)},
         channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, use_global_device_ids}}
         : (tensor<4x6x{2 * n}x{et}>) -> tensor<4x{6 * g}x{2 * n}x{et}>
    %rs = "stablehlo.reduce_scatter"(%y) ({{
      ^bb0(%a: tensor<{et}>, %b: tensor<{et}>):
        %s = stablehlo.{body} %a, %b : tensor<{et}>
        stablehlo.return %s : tensor<{et}>
    }}) {{scatter_dimension = 2 : i64, replica_groups = {_groups([list(range(n))])},
         channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>, use_global_device_ids}}
         : (tensor<4x6x{2 * n}x{et}>) -> tensor<4x6x2x{et}>
    %aa = "stablehlo.all_to_all"(%y) {{split_dimension = 2 : i64, concat_dimension = 0 : i64, split_count = {n} : i64,
         replica_groups = {_groups([list(range(n))])}, channel_handle = #stablehlo.channel_handle<handle = 4, type = 1>}}
         : (tensor<4x6x{2 * n}x{et}>) -> tensor<{4 * n}x6x2x{et}>
    %cp = "stablehlo.collective_permute"(%y) {{source_target_pairs = {_groups(pairs)},
         channel_handle = #stablehlo.channel_handle<handle = 5, type = 1>}}
         : (tensor<4x6x{2 * n}x{et}>) -> tensor<4x6x{2 * n}x{et}>
    %cz = "stablehlo.collective_permute"(%y) {{source_target_pairs = {_groups([[0, 1]])},
         channel_handle = #stablehlo.channel_handle<handle = 6, type = 1>}}
         : (tensor<4x6x{2 * n}x{et}>) -> tensor<4x6x{2 * n}x{et}>
    return %ar, %ag, %rs, %aa, %cp, %cz, %pid : tensor<4x6x{2 * n}x{et}>, tensor<4x{6 * g}x{2 * n}x{et}>,
      tensor<4x6x2x{et}>, tensor<{4 * n}x6x2x{et}>, tensor<4x6x{2 * n}x{et}>, tensor<4x6x{2 * n}x{et}>, tensor<ui32>
  }}
}}"""


def _run(module, runner, n, x):
    outs, _ = run_parallel([["main"] * n], [x] * n, runner, lambda name: 1)
    k = len(outs) // n
    return [outs[p * k:(p + 1) * k] for p in range(n)]


@pytest.mark.parametrize("n,et,body", [(4, "f32", "add"), (4, "f64", "maximum"), (2, "i32", "add"),
                                       (4, "i64", "multiply"), (4, "ui8", "minimum"), (4, "f16", "add")])
def test_every_collective_matches_the_interpreter(n, et, body):
    m = parse_module(program(n, et, body))
    rng = np.random.default_rng(n)
    dtype = {"ui8": np.uint8, "f16": np.float16, "f32": np.float32, "f64": np.float64, "i32": np.int32,
             "i64": np.int64}[et]
    x = (rng.standard_normal((4, 6, 2 * n)) * 3).astype(dtype) if et[0] == "f" else \
        rng.integers(0, 5, (4, 6, 2 * n)).astype(dtype)
    ev = Evaluator(m)
    want = _run(m, lambda name, args, ctx: ev.call_function(name, args, ctx), n, x)
    runner = compiled_program_runner(m)
    got = _run(m, runner, n, x)
    prog = runner.executables["main"].program
    assert prog.host_callbacks is False and prog.cacheable is True
    for p in range(n):
        for w, g in zip(want[p], got[p]):
            np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=1e-3 if et == "f16" else 1e-6)
    # a second run reuses the compiled program and a fresh communicator
    again = _run(m, runner, n, x)
    for p in range(n):
        for w, g in zip(got[p], again[p]):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_a_failing_device_releases_the_others():
    """A device that raises before a collective aborts the communicator: the others leave
    their barrier and the run raises instead of hanging."""
    m = parse_module(program(4))
    runner = compiled_program_runner(m)
    x = np.zeros((4, 6, 8), np.float32)

    def run(name, args, ctx):
        if ctx.partition_id == 2:
            raise RuntimeError("device 2 failed")
        return runner(name, args, ctx)
    with pytest.raises(RuntimeError, match="device 2 failed"):
        run_parallel([["main"] * 4], [x] * 4, run, lambda name: 1)


def test_unsupported_forms_fall_back_to_the_host_callback():
    """A reduction body the runtime does not have (here `add` then `multiply`) still runs,
    through the host callback, and the program is then not cacheable."""
    text = program(2).replace("%s = stablehlo.add %a, %b : tensor<f32>\n        stablehlo.return %s",
                              "%s = stablehlo.add %a, %b : tensor<f32>\n        %t = stablehlo.multiply %s, %s : tensor<f32>\n"
                              "        stablehlo.return %t", 1)
    m = parse_module(text)
    x = np.random.default_rng(0).standard_normal((4, 6, 4)).astype(np.float32)
    ev = Evaluator(m)
    want = _run(m, lambda name, args, ctx: ev.call_function(name, args, ctx), 2, x)
    runner = compiled_program_runner(m)
    got = _run(m, runner, 2, x)
    prog = runner.executables["main"].program
    assert prog.host_callbacks is True and prog.cacheable is False
    for p in range(2):
        for w, g in zip(want[p], got[p]):
            np.testing.assert_allclose(g, w, rtol=1e-5)


def _mpiexec():
    exe = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return exe if os.path.exists(exe) else shutil.which("mpiexec")


MPI_SCRIPT = """
import sys, numpy as np
from mpi4py import MPI
from axle.ir import parse_module
from axle.sharding.mpi import MpiContext
from axle.backends.cpu.multi import compiled_program_runner
m = parse_module(open(sys.argv[1], encoding="utf-8").read())
x = np.load(sys.argv[2])
runner = compiled_program_runner(m)
outs = runner("main", [x], MpiContext(MPI.COMM_WORLD))
assert runner.executables["main"].program.cacheable
np.savez(sys.argv[3] + f".{MPI.COMM_WORLD.Get_rank()}.npz", *[np.asarray(o) for o in outs])
"""


def test_every_collective_on_two_mpi_processes(tmp_path):
    pytest.importorskip("mpi4py", reason="mpi4py is in the `test` and `mpi` extras")
    mpiexec = _mpiexec()
    if mpiexec is None:
        pytest.skip("no mpiexec (the `mpich` wheel of the `mpi` extra provides one)")
    text = program(2, "f32", "add")
    (tmp_path / "m.mlir").write_text(text)
    (tmp_path / "run.py").write_text(MPI_SCRIPT)
    x = np.random.default_rng(1).standard_normal((4, 6, 4)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    proc = subprocess.run([mpiexec, "-n", "2", sys.executable, str(tmp_path / "run.py"), str(tmp_path / "m.mlir"),
                           str(tmp_path / "x.npy"), str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    m = parse_module(text)
    ev = Evaluator(m)
    want = _run(m, lambda name, args, ctx: ev.call_function(name, args, ctx), 2, x)
    for p in range(2):
        got = np.load(tmp_path / f"out.{p}.npz")
        for j, w in enumerate(want[p]):
            np.testing.assert_allclose(got[f"arr_{j}"], w, rtol=1e-6)


CACHE_SCRIPT = """
import sys, numpy as np
from axle.ir import parse_module
from axle.interpreter.collectives import run_parallel
from axle.backends.cpu.multi import compiled_program_runner
m = parse_module(open(sys.argv[1], encoding="utf-8").read())
runner = compiled_program_runner(m)
x = np.arange(4 * 6 * 4, dtype=np.float32).reshape(4, 6, 4)
outs, _ = run_parallel([["main"] * 2], [x, x], runner, lambda name: 1)
native = next(iter(runner.executables["main"]._programs.values()))
print("FROM_DISK", native.from_disk, float(np.asarray(outs[0]).sum()))
"""


def test_a_program_with_collectives_is_cached_on_disk(tmp_path):
    """The second process loads the object code from the disk cache (the runtime's names are
    bound at link time) and gets the same results."""
    (tmp_path / "m.mlir").write_text(program(2))
    (tmp_path / "run.py").write_text(CACHE_SCRIPT)
    env = dict(os.environ, AXLE_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, str(tmp_path / "run.py"), str(tmp_path / "m.mlir")], env=env,
                           capture_output=True, text=True, timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr[-2000:]
    first, second = [r.stdout.split("FROM_DISK")[1].split() for r in runs]
    assert first[0] == "False" and second[0] == "True"
    assert first[1] == second[1]


@pytest.mark.parametrize("name", ["step_dp_tp", "gpt_tp"])
def test_partitioned_jax_programs_have_no_host_callback(jax_programs, name):
    """The partitioner's collectives (all_reduce, reduce_scatter, all_gather, all_to_all) on
    the CPU backend: all native, the program cacheable, results equal to XLA's."""
    from axle.sharding import partition
    from axle.sharding.run import PartitionedRunner
    p = jax_programs[name]
    runner = PartitionedRunner(partition(parse_module(p["mlir"])), "cpu")
    for g, w in zip(runner(*p["args"]), p["outs"]):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)
    prog = runner.run_function.executables["main"].program
    assert prog.host_callbacks is False and prog.cacheable is True and prog.host_ops == []


def test_single_device_collectives_from_several_threads():
    """A program with groups of one run by plain executables (no communicator bound) in four
    threads at once: each gets its own operand back, nothing is shared between them."""
    import threading
    from axle.backends.cpu.executable import CpuExecutable
    text = """module {
  func.func @main(%x: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
    %ar = "stablehlo.all_reduce"(%x) ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %s = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %s : tensor<f32>
    }) {replica_groups = dense<[[0]]> : tensor<1x1xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>,
        use_global_device_ids} : (tensor<64xf32>) -> tensor<64xf32>
    %cp = "stablehlo.collective_permute"(%x) {source_target_pairs = dense<[[0, 0]]> : tensor<1x2xi64>,
        channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>} : (tensor<64xf32>) -> tensor<64xf32>
    return %ar, %cp : tensor<64xf32>, tensor<64xf32>
  }
}"""
    ex = CpuExecutable(parse_module(text), "main")
    bad = []

    def work(k):
        x = np.full(64, k, np.float32)
        for _ in range(300):
            a, b = ex.execute([x])
            if not (np.all(a == k) and np.all(b == k)):
                bad.append(k)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads) and bad == []
    assert ex.program.cacheable and not ex.program.host_callbacks
