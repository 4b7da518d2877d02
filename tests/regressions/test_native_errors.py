"""Regression (issue 21): a custom call that raised inside a `while` loop left the native loop
running on an uninitialized result (forever, ignoring SIGINT). Errors from native code
(custom calls, run-time checks) now set the call's status word: loops leave at the end of
the iteration, the entry returns, and the caller gets the Python exception, from any depth
of control flow. Each case runs in a child process with a timeout, so a hang fails."""
import os
import subprocess
import sys
import textwrap

import pytest


def _nested(depth: int) -> str:
    """`depth` nested while loops counting to 10 each; the innermost body calls the target."""
    lines = ["func.func @main(%x: tensor<i64>) -> tensor<i64> {"]
    ind = "  "

    def loop(level: int, var: str) -> list:
        out, i = [], f"%i{level}"
        out.append(f"{ind * (level + 1)}%r{level} = stablehlo.while({i} = {var}) : tensor<i64>")
        out.append(f"{ind * (level + 1)}cond {{")
        out.append(f"{ind * (level + 2)}%lim{level} = stablehlo.constant dense<10> : tensor<i64>")
        out.append(f"{ind * (level + 2)}%c{level} = stablehlo.compare LT, {i}, %lim{level} : (tensor<i64>, tensor<i64>) -> tensor<i1>")
        out.append(f"{ind * (level + 2)}stablehlo.return %c{level} : tensor<i1>")
        out.append(f"{ind * (level + 1)}}} do {{")
        if level + 1 < depth:
            out += loop(level + 1, i)
            step = f"%r{level + 1}"
        else:
            out.append(f"{ind * (level + 2)}%t{level} = stablehlo.custom_call @test.regressions.fail_on_third({i}) : (tensor<i64>) -> tensor<i64>")
            step = f"%t{level}"
        out.append(f"{ind * (level + 2)}%one{level} = stablehlo.constant dense<1> : tensor<i64>")
        out.append(f"{ind * (level + 2)}%n{level} = stablehlo.add {i}, %one{level} : tensor<i64>")
        out.append(f"{ind * (level + 2)}%m{level} = stablehlo.maximum %n{level}, {step} : tensor<i64>")
        out.append(f"{ind * (level + 2)}stablehlo.return %m{level} : tensor<i64>")
        out.append(f"{ind * (level + 1)}}}")
        return out
    lines += loop(0, "%x")
    lines.append("  return %r0 : tensor<i64>")
    lines.append("}")
    return "\n".join(lines)


CHILD = textwrap.dedent("""
    import sys, threading
    import numpy as np
    import axle
    calls = threading.local()
    def fail_on_third(call):
        calls.n = getattr(calls, "n", 0) + 1
        if calls.n == 3:
            raise KeyError("raised by the custom call")
        # the value the loop runs on after a failure is garbage: make it keep looping
        return np.array(-2**62, np.int64)
    axle.register_custom_call("test.regressions.fail_on_third", fail_on_third)
    f = axle.compile(sys.stdin.read())
    for attempt in range(3):  # and again: each call starts with a clear status
        calls.n = 0
        try:
            f(np.array(0, np.int64))
        except KeyError as e:
            assert "raised by the custom call" in str(e), e
            assert calls.n == 3, calls.n  # stopped at once: no call after the failing one
        else:
            raise AssertionError("no exception")
    print("ok")
""")


@pytest.mark.parametrize("depth", [1, 3, 8])
def test_custom_call_raising_in_nested_loops_stops_the_program(depth):
    r = subprocess.run([sys.executable, "-c", CHILD], input=_nested(depth), capture_output=True,
                       text=True, timeout=300, env=dict(os.environ, AXLE_CACHE_DIR="off"))
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]


def test_runtime_check_failing_in_a_loop_raises():
    """A failing run-time check (a dynamic shape that does not match) inside a loop."""
    import numpy as np

    import axle
    from axle.backends.cpu.kernels_dynamic import RuntimeCheckError
    text = """func.func @main(%x: tensor<4xf32>, %n: tensor<i64>) -> tensor<i64> {
  %r:2 = stablehlo.while(%i = %n, %a = %x) : tensor<i64>, tensor<4xf32>
  cond {
    %lim = stablehlo.constant dense<1000000000> : tensor<i64>
    %c = stablehlo.compare LT, %i, %lim : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %s = stablehlo.reshape %i : (tensor<i64>) -> tensor<1xi64>
    %shape = stablehlo.concatenate %s, dim = 0 : (tensor<1xi64>) -> tensor<1xi64>
    %d = stablehlo.dynamic_reshape %a, %shape : (tensor<4xf32>, tensor<1xi64>) -> tensor<4xf32>
    %one = stablehlo.constant dense<1> : tensor<i64>
    %j = stablehlo.add %i, %one : tensor<i64>
    stablehlo.return %j, %d : tensor<i64>, tensor<4xf32>
  }
  return %r#0 : tensor<i64>
}"""
    f = axle.compile(text)
    with pytest.raises(RuntimeCheckError):
        f(np.zeros(4, np.float32), np.array(3, np.int64))
    assert f(np.zeros(4, np.float32), np.array(1000000000, np.int64)) == 1000000000  # no iteration
