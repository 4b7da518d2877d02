"""The fuzz worker: runs cases sent by fuzz_harness.py, one JSON line each on stdin, and answers
one JSON line each on stdout: {"outcome": "ok" | "finding", "detail": ...}. It runs in a
child process of the harness, so a crash (a signal) or a hang (the harness's deadline) is
seen and counted by the harness, which starts a fresh worker.

Case kinds: parse, diff, badargs, cache, threads (see the functions below).
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen  # noqa: E402

import axle  # noqa: E402
from axle.interpreter.evaluator import ArgumentError  # noqa: E402
from axle.interpreter.registry import InterpreterError  # noqa: E402
from axle.ir import ParseError, parse_module  # noqa: E402
from axle.ir.equality import modules_equal  # noqa: E402
from axle.ir.verifier import VerificationError, verify  # noqa: E402
from axle.limits import ResourceLimitError  # noqa: E402

CLEAN = (ParseError, VerificationError, ResourceLimitError, ArgumentError)


def _fail_on_third(call):
    """Custom call target of corpus cases: raises on its third call in a program run."""
    _fail_on_third.n = getattr(_fail_on_third, "n", 0) + 1
    if _fail_on_third.n % 3 == 0:
        raise RuntimeError("fuzz.fail_on_third raised")
    return np.full(call.operands[0].shape, -2**62, call.operands[0].dtype)  # keeps a loop going


axle.register_custom_call("fuzz.fail_on_third", _fail_on_third)


class Finding(Exception):
    pass


def _clean_compile_errors():
    from axle.errors import Unsupported
    return CLEAN + (Unsupported,)


# ----------------------------------------------------------------- parse


def case_parse(c: dict) -> None:
    """Malformed text must give ParseError or VerificationError, nothing else; text that
    verifies must print to text that parses back to an equal module."""
    try:
        m = parse_module(c["text"])
        verify(m)
    except CLEAN:
        return
    except RecursionError as e:
        raise Finding(f"RecursionError: {e}")
    except Exception as e:
        raise Finding(f"{type(e).__name__} (not a ParseError/VerificationError): {e}")
    try:
        again = parse_module(str(m))
    except Exception as e:
        raise Finding(f"round trip: the printed module does not parse: {type(e).__name__}: {e}")
    if not modules_equal(m, again):
        raise Finding("round trip: the printed module parses to a different module")


# ----------------------------------------------------------------- differential


def _same(got: np.ndarray, want: np.ndarray, approx: bool, et: str) -> bool:
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if et not in gen.FLOATS:
        return bool(np.array_equal(got, want))
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(w)
    if not np.array_equal(nan, np.isnan(g)):
        return False
    g, w = g[~nan], w[~nan]
    if not approx:
        return bool(np.array_equal(g, w) and np.array_equal(np.signbit(g), np.signbit(w)))
    inf = np.isinf(w)
    if not np.array_equal(g[inf], w[inf]):
        return False
    rtol = {"f16": 2e-2, "bf16": 5e-2, "f32": 1e-4, "f64": 1e-9}[et]
    g, w = g[~inf], w[~inf]
    tiny = float(gen.ml_dtypes.finfo(gen.NP[et]).tiny) * 4
    return bool(np.all(np.abs(g - w) <= rtol * np.abs(w) + tiny))


def case_diff(c: dict) -> None:
    """A random program on adversarial inputs: the CPU backend must give the interpreter's
    results (bit for bit for exact ops, NaN for NaN), or both must refuse it cleanly."""
    p = gen.random_program(c["seed"]) if "text" not in c else c
    text = p["text"]
    shape = tuple(p["shape"])
    args = gen.program_inputs(p["et"], shape, p["n_args"], c["seed"]) + [gen.index_value(c["seed"], p.get("index_type", "i64"))]
    try:
        with np.errstate(all="ignore"):
            want = axle.interpret(parse_module(text), *args)
    except InterpreterError as e:
        want = e
    try:
        got = axle.compile(text)(*args)
    except _clean_compile_errors() as e:
        if isinstance(want, Exception):
            return
        raise Finding(f"the CPU backend refused a program the interpreter runs: {type(e).__name__}: {e}")
    except Exception as e:
        raise Finding(f"CPU backend: {type(e).__name__}: {e}")
    if isinstance(want, Exception):
        return  # the oracle has no answer (an op outside its domain): nothing to compare
    if not _same(np.asarray(got), np.asarray(want), p["approx"], p["et"]):
        g, w = np.asarray(got).reshape(-1), np.asarray(want).reshape(-1)
        bad = [k for k in range(min(len(g), len(w))) if not _same(g[k:k + 1], w[k:k + 1], p["approx"], p["et"])][:3]
        ins = [[a.reshape(-1)[k].item() for a in args[:-1]] for k in bad]
        raise Finding(f"wrong answer at {bad}: cpu {[g[k].item() for k in bad]} interpreter "
                      f"{[w[k].item() for k in bad]} inputs {ins} idx {int(args[-1])}")


def _array(spec) -> np.ndarray:
    """[dtype, shape, values]; one value fills the shape; strings are floats ("-inf")."""
    dtype, shape, values = spec
    dt = gen.NP.get(dtype, dtype)
    a = np.array([float(v) if isinstance(v, str) else v for v in values], dtype=dt)
    return np.full(shape, a[0], dt) if a.size == 1 and int(np.prod(shape)) != 1 else a.reshape(shape)


def case_program(c: dict) -> None:
    """A fixed program (a corpus entry) on given inputs: a clean error, or the interpreter's
    answer from the CPU backend (and `expect`, when given, from both)."""
    args = [_array(a) for a in c.get("inputs", [])]
    if c.get("expect_exception"):  # e.g. a custom call that raises inside a loop
        f = axle.compile(c["text"])
        _fail_on_third.n = 0
        try:
            f(*args)
        except Exception as e:
            if type(e).__name__ != c["expect_exception"]:
                raise Finding(f"{type(e).__name__} instead of {c['expect_exception']}: {e}")
            if _fail_on_third.n != 3:  # stopped at once: no call after the one that raised
                raise Finding(f"the program went on after the error: {_fail_on_third.n} custom calls")
            return
        raise Finding(f"no {c['expect_exception']}")
    if c.get("expect_verify_error"):  # verify() (or the parser) must refuse the program
        try:
            verify(parse_module(c["text"]))
        except (ParseError, VerificationError):
            return
        except Exception as e:
            raise Finding(f"{type(e).__name__} (not a ParseError/VerificationError): {e}")
        raise Finding("verify() accepted the program")
    try:
        m = parse_module(c["text"])
        verify(m)
    except CLEAN:
        if c.get("expect_error"):
            return
        raise
    except Exception as e:
        raise Finding(f"{type(e).__name__} (not a ParseError/VerificationError): {e}")
    if c.get("expect_error"):
        try:
            axle.compile(c["text"])(*args)
        except _clean_compile_errors():
            return
        raise Finding("no clean error")
    with np.errstate(all="ignore"):
        want = axle.interpret(m, *args)
    got = axle.compile(c["text"])(*args)
    for g, w in zip(got if isinstance(got, tuple) else [got], want if isinstance(want, tuple) else [want]):
        if not _same(np.asarray(g), np.asarray(w), c.get("approx", False), c.get("et", "f64")):
            raise Finding(f"cpu {np.asarray(g).tolist()} != interpreter {np.asarray(w).tolist()}")
    if "expect" in c:
        w = _array(c["expect"])
        for x in (got, want):
            if not _same(np.asarray(x), w, False, c.get("et", "f64")):
                raise Finding(f"{np.asarray(x).tolist()} != expected {w.tolist()}")


# ----------------------------------------------------------------- bad arguments

PROGRAM = """func.func @main(%a: tensor<4x3xf32>, %b: tensor<3xf32>) -> tensor<4x3xf32> {
  %0 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<3xf32>) -> tensor<4x3xf32>
  %1 = stablehlo.add %a, %0 : tensor<4x3xf32>
  return %1 : tensor<4x3xf32>
}"""
_EXE: dict = {}


def case_badargs(c: dict) -> None:
    """Wrong arguments must raise ArgumentError (or be converted and give the right answer)."""
    rng = np.random.default_rng(c["seed"])
    exe = _EXE.get("cpu") or _EXE.setdefault("cpu", axle.compile(PROGRAM))
    a, b = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    candidates = [
        (a.astype(np.float64), b), (a[:, :2], b), (a.T.copy(), b), (a, b[:2]), (a, b, b), (a,),
        (a.tolist(), b), ("text", b), (None, b), (np.asfortranarray(a), b), (a[::2], b),
        (np.zeros((0, 3), np.float32), b), (a.astype(np.int32), b), (a.reshape(12), b),
        (np.broadcast_to(a[:1], (4, 3)), b), (a, np.float32(1.0)), (a.view(np.int32), b), (object(), b),
    ]
    args = candidates[int(rng.integers(len(candidates)))]
    for runner in (exe, axle.compile(PROGRAM, backend="interpreter")):
        try:
            out = runner(*args)
        except ArgumentError:
            continue
        except Exception as e:
            raise Finding(f"bad argument {[type(x).__name__ for x in args]}: {type(e).__name__}: {e}")
        x = np.asarray(args[0], np.float32) if len(args) == 2 else None
        if x is None or x.shape != (4, 3):
            raise Finding(f"accepted bad arguments {[getattr(x, 'shape', x) for x in args]}")
        np.testing.assert_allclose(out, x + np.asarray(args[1], np.float32), rtol=1e-6)


# ----------------------------------------------------------------- cache faults


def case_cache(c: dict) -> None:
    """Damage the disk-cache entry of a program; the next compile must recompile and give
    the right answer, within the harness's deadline (no hang on a FIFO, no unbounded read)."""
    from axle.backends.cpu import disk_cache
    from axle.backends.cpu import executable as cpu_exe
    rng = np.random.default_rng(c["seed"])
    d = tempfile.mkdtemp(prefix="axle-fuzz-cache-")
    try:
        text = PROGRAM.replace("add", rng.choice(["add", "multiply", "subtract", "maximum"]))
        with disk_cache.using(d):
            cpu_exe.clear_memory_cache()
            axle.compile(text)
            (path,) = [os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs if f.endswith(".axc")]
            data = open(path, "rb").read()
            fault = c.get("fault") or rng.choice(["truncate", "flip", "zero", "fifo", "dev_zero", "dangling", "directory",
                                "append", "empty", "swap_header"])
            os.remove(path)
            if fault == "fifo":
                os.mkfifo(path)
            elif fault == "dev_zero":
                os.symlink("/dev/zero", path)
            elif fault == "dangling":
                os.symlink(path + ".missing", path)
            elif fault == "directory":
                os.mkdir(path)
            else:
                k = int(rng.integers(len(data)))
                new = {"truncate": data[:k], "flip": data[:k] + bytes([data[k] ^ 1 << int(rng.integers(8))]) + data[k + 1:],
                       "zero": bytes(len(data)), "append": data + b"junk", "empty": b"",
                       "swap_header": data[8:16] + data[:8] + data[16:]}[fault]
                open(path, "wb").write(new)
            cpu_exe.clear_memory_cache()
            a, b = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
            got = axle.compile(text)(a, b)
            want = axle.interpret(parse_module(text), a, b)
            if not np.array_equal(got, want):
                raise Finding(f"cache fault {fault}: wrong answer after recompiling")
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ----------------------------------------------------------------- threads


def case_threads(c: dict) -> None:
    """Several threads call one executable (and compile others) at once: every result right."""
    rng = np.random.default_rng(c["seed"])
    exe = _EXE.get("cpu") or _EXE.setdefault("cpu", axle.compile(PROGRAM))
    errors: list = []

    def work(t: int):
        r = np.random.default_rng(c["seed"] * 31 + t)
        try:
            for k in range(50):
                a, b = r.standard_normal((4, 3)).astype(np.float32), r.standard_normal(3).astype(np.float32)
                if not np.array_equal(exe(a, b), a + b):
                    errors.append(f"thread {t} call {k}: wrong answer")
            if t % 2:
                f = axle.compile(PROGRAM.replace("add", "multiply"))
                a, b = r.standard_normal((4, 3)).astype(np.float32), r.standard_normal(3).astype(np.float32)
                if not np.array_equal(f(a, b), a * b):
                    errors.append(f"thread {t}: wrong answer from a program compiled in a thread")
        except Exception as e:
            errors.append(f"thread {t}: {type(e).__name__}: {e}")
    threads = [threading.Thread(target=work, args=(t,)) for t in range(int(rng.integers(2, 9)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise Finding("; ".join(errors[:3]))


def case_selftest(c: dict) -> None:
    """The harness's own test: crash (abort) or hang on request."""
    if c.get("action") == "crash":
        os.abort()
    if c.get("action") == "hang":
        import time
        time.sleep(3600)


CASES = {"selftest": case_selftest, "parse": case_parse, "diff": case_diff, "program": case_program, "badargs": case_badargs, "cache": case_cache,
         "threads": case_threads}


def run_case(c: dict) -> dict:
    try:
        CASES[c["kind"]](c)
        return {"outcome": "ok"}
    except Finding as e:
        return {"outcome": "finding", "detail": str(e)[:2000]}
    except Exception as e:
        return {"outcome": "finding", "detail": f"harness-level {type(e).__name__}: {e}\n"
                                                f"{traceback.format_exc()[-1500:]}"}


def main() -> None:
    out = sys.stdout
    sys.stdout = sys.stderr  # prints of the code under test must not garble the protocol
    out.write(json.dumps({"ready": True}) + "\n")  # imports done: case deadlines start now
    out.flush()
    for line in sys.stdin:
        c = json.loads(line)
        out.write(json.dumps(run_case(c)) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
