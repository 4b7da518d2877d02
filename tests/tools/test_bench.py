"""`axle bench`: one workload end to end against XLA, the table, XLA's memory without YNNPACK."""
import math

import pytest

pytest.importorskip("jax")

from axle.tools import bench  # noqa: E402


def test_one_workload_end_to_end():
    """Compiled by both, outputs agree with XLA's, times and memory are measured."""
    r = bench.bench_workload("layernorm", rounds=2, compile_repeats=1, log=lambda s: None)
    assert r.error is None and r.ok, r.max_rel_err
    assert r.max_rel_err < 1e-5
    assert r.axle_ms > 0 and r.xla_ms > 0 and math.isfinite(r.speedup)
    assert r.kernels == 1  # the whole layernorm is one row-fused kernel
    assert r.axle_temp_bytes == 0 and r.xla_temp_bytes >= 0
    assert r.warm_start_ms > 0


def test_table_marks_wrong_results_and_leaves_them_out_of_the_mean():
    good = bench.Result("a", axle_ms=1.0, xla_ms=2.0, ok=True, max_rel_err=0.0,
                        axle_compile_s=1.0, xla_compile_s=1.0)
    bad = bench.Result("b", axle_ms=1.0, xla_ms=100.0, ok=False, max_rel_err=1.0,
                       axle_compile_s=1.0, xla_compile_s=1.0)
    broken = bench.Result("c", error="ValueError: no")
    text = bench.table([good, bad, broken], (5.0, 20.0, 1.0, 1.0))
    assert "WRONG" in text.splitlines()[3]
    assert "error: ValueError: no" in text
    assert "geometric mean of XLA time / axle time: 2.00 over 1 workloads" in text
    assert "n/a" in text  # XLA without YNNPACK: not measured
    assert bench.geomean([1.0, 4.0]) == pytest.approx(2.0)


def test_xla_without_ynnpack_counts_its_own_buffers():
    """XLA's memory_analysis reports 0 bytes for the CNN (YNNPACK's buffers are its own);
    with YNNPACK's fusions off, XLA's buffer assignment needs the feature maps."""
    own = bench.xla_own_temps(["cnn_inference"])
    assert own["cnn_inference"] >= 16 * 32 * 32 * 32 * 4  # at least the first conv's output


def test_background_load_runs_and_stops_busy_processes():
    with bench.background_load(2) as load:
        procs = list(load.procs)
        assert len(procs) == 2
        assert all(p.poll() is None for p in procs)  # running
    assert all(p.poll() is not None for p in procs)  # terminated and reaped


def test_background_flag_is_checked():
    assert bench.main(["--background", "-1"]) == 2


def test_new_workloads_are_in_the_suite():
    from axle.tools.bench_workloads import BENCH_WORKLOADS
    from axle.tools.bench_workloads_more import MORE_WORKLOADS
    assert len(MORE_WORKLOADS) >= 12
    assert set(MORE_WORKLOADS) <= set(BENCH_WORKLOADS)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(__import__("axle.tools.bench_workloads_more",
                                                   fromlist=["MORE_WORKLOADS"]).MORE_WORKLOADS))
def test_new_workload_matches_xla(name):
    r = bench.bench_workload(name, rounds=1, compile_repeats=1, log=lambda s: None)
    assert r.ok, (name, r.max_rel_err)


def test_background_spinner_ends_with_its_parent():
    """`axle bench --background N`'s busy processes stop by themselves when the bench is
    killed (its context manager's cleanup never runs then): a spinner under a parent that
    exits is gone a moment later."""
    import subprocess
    import sys
    import time
    from axle.tools.bench import SPINNER
    code = (f"import os, subprocess, sys; p = subprocess.Popen([sys.executable, '-c', {SPINNER!r}, "
            "str(os.getpid())]); print(p.pid, flush=True)")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    pid = int(parent.stdout.readline())
    parent.wait()
    for _ in range(50):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().split()[2] == "Z":
                    break
        except FileNotFoundError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the spinner outlived its parent")
