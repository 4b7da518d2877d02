"""Crash reproducers: what to hand over when the compiler itself fails.

When compiling fails inside axle with an exception that is not the user's error (not a
ParseError, VerificationError, Unsupported or ArgumentError), the module is written out as
it was before the failing pass (for a failure in code generation: the module after all
passes), beside a standalone `repro.py` that reads it and runs the same step again, and an
`error.txt` with the traceback. The error raised instead, InternalCompilerError, names the
folder. The folder is made under AXLE_FLAGS' --dump_to when set, else under the system's
temporary folder (`axle-ice-*`). MLIR's pass manager does the same with
--mlir-pass-pipeline-crash-reproducer.

Finding the module before the failing pass costs nothing while compiling goes well: the
module is printed once before the pipeline, and only after a failure is the pipeline
replayed on a copy, pass by pass, to capture the text just before the pass that fails.

    from axle.reproducer import guard_codegen, run_pipeline
    run_pipeline(module, "cpu", entry="main")          # passes, with the reproducer
    with guard_codegen(module, "main", options): ...   # code generation, with the reproducer
"""
from __future__ import annotations

import json
import os
import tempfile
import traceback
from contextlib import contextmanager
from typing import Optional

from axle.passes.pass_manager import FixedPoint, PassError, PassManager


from axle.errors import InternalCompilerError  # noqa: E402


class PassCrash(InternalCompilerError, PassError):
    """An internal compiler error inside a pass (still a PassError for code that catches those)."""


def user_error_types() -> tuple:
    """Exceptions that report a problem with the input, not with axle."""
    from axle.errors import ArgumentError, ResourceLimitError, Unsupported
    from axle.ir.text.cursor import ParseError
    from axle.ir.verifier import VerificationError
    return (ParseError, VerificationError, Unsupported, ArgumentError, ResourceLimitError)


def is_user_error(e: BaseException) -> bool:
    if not isinstance(e, Exception):  # KeyboardInterrupt, SystemExit: not a crash
        return True
    if isinstance(e, user_error_types()):
        return True
    # a pass that refuses the input raises Unsupported (say) inside a PassError; one that leaves
    # the module invalid (a VerificationError) has a bug
    if isinstance(e, PassError) and not isinstance(e, InternalCompilerError) and e.__cause__ is not None:
        from axle.ir.verifier import VerificationError
        cause = e.__cause__
        return isinstance(cause, user_error_types()) and not isinstance(cause, VerificationError)
    return False


PIPELINES = {
    "cpu": ("axle.backends.cpu.pipeline", "cpu_pipeline"),  # optimizations, then the CPU lowering
    "cpu-lowering": ("axle.backends.cpu.pipeline", "lowering_pipeline"),  # compiling with passes=False
    "default": ("axle.passes.pipelines", "default_pipeline"),
}


def make_pipeline(name: str) -> list:
    """A fresh pipeline by name (looked up at call time, so a replaced pipeline is seen)."""
    import importlib
    mod, fn = PIPELINES[name]
    return getattr(importlib.import_module(mod), fn)()


def find_pass(pipeline: list, name: str):
    """The first pass called `name` in a pipeline (looking inside FixedPoint groups)."""
    for p in pipeline:
        if isinstance(p, FixedPoint):
            q = find_pass(p.passes, name)
            if q is not None:
                return q
        elif p.name == name:
            return p
    return None


class _Recording(PassManager):
    """A pass manager that keeps the module's text before each pass it runs (for replays)."""

    def __post_init__(self):
        super().__post_init__()
        self.current: Optional[str] = None
        self.before: Optional[str] = None

    def _run_one(self, p, module):
        if not isinstance(p, FixedPoint):
            from axle.ir.text.printer import print_module
            self.current = p.name
            self.before = print_module(module)
        return super()._run_one(p, module)


def run_pipeline(module, pipeline: str = "cpu", entry: str = "main", options: Optional[dict] = None,
                 dump_to: Optional[str] = None):
    """Run a named pipeline on `module` (in place) with AXLE_FLAGS' dumps and checks; an
    internal error in a pass becomes a PassCrash naming the reproducer's folder."""
    from axle.ir.text.printer import print_module
    try:
        snapshot = print_module(module)
    except Exception:  # cannot keep a copy: run without a reproducer
        snapshot = None
    pm = PassManager.from_flags(make_pipeline(pipeline), dump_to=dump_to)
    try:
        return pm.run(module)
    except Exception as e:
        if is_user_error(e) or isinstance(e, InternalCompilerError) or snapshot is None:
            raise
        failed = _pass_name(e)
        text, replayed = _before_failing_pass(snapshot, pipeline, failed, pm.verify_each)
        if replayed is None:
            # the failure did not recur on a copy: keep the module as it came in and the
            # whole pipeline in the reproducer
            kind, text = "pipeline", snapshot
        else:
            kind, failed = "pass", replayed
        directory = write_reproducer(text, {"kind": kind, "pipeline": pipeline, "pass": failed,
                                            "entry": entry, "options": _jsonable(options or {}),
                                            "verify_each": bool(pm.verify_each)}, e)
        what = f"pass '{failed}'" if failed else f"the {pipeline} pipeline"
        raise PassCrash(_message(f"internal compiler error in {what}", e, directory,
                                 "the module before the pass" if kind == "pass"
                                 else "the module before the pipeline"),
                        directory, "pass", failed) from e


def _pass_name(e: Exception) -> Optional[str]:
    import re
    m = re.match(r"pass '([^']+)'", str(e)) if isinstance(e, PassError) else None
    return m.group(1) if m else None


def _before_failing_pass(snapshot: str, pipeline: str, failed: Optional[str], verify_each: bool):
    """Replay the pipeline on a copy; (module text before the pass that fails, its name),
    or (None, None) when no pass fails this time (or a different one does)."""
    from axle.ir import parse_module
    try:
        copy = parse_module(snapshot, "snapshot.mlir")
        pm = _Recording(make_pipeline(pipeline), verify_each=verify_each)
    except Exception:
        return None, None
    try:
        pm.run(copy)
    except Exception:
        if failed is None or pm.current == failed:
            return pm.before, pm.current
    return None, None


@contextmanager
def guard_codegen(module, entry: str = "main", options: Optional[dict] = None, passes_done=lambda: True,
                  pipeline: str = "cpu", codegen_options=()):
    """Code generation inside this block: an internal error becomes an InternalCompilerError
    naming a reproducer of the module as it is then (after the passes, when `passes_done()`).
    `module` may be a function returning it (the copy a backend compiles). `codegen_options`:
    the names of the options the backend's code generation (compile_function) takes, which
    repro.py passes on to it (the backend says which: this layer does not import it)."""
    try:
        yield
    except Exception as e:
        if is_user_error(e) or isinstance(e, InternalCompilerError):
            raise
        from axle.ir.text.printer import print_module
        try:
            text = print_module(module() if callable(module) else module)  # (the copy being compiled)
        except Exception:
            raise e from None
        done = bool(passes_done())
        directory = write_reproducer(text, {"kind": "codegen", "pipeline": None if done else pipeline,
                                            "pass": None, "entry": entry, "options": _jsonable(options or {}),
                                            "codegen_options": sorted(codegen_options),
                                            "verify_each": False}, e)
        raise InternalCompilerError(_message("internal compiler error in code generation", e, directory,
                                             "the module after all passes" if done
                                             else "the module as given"),
                                    directory, "codegen") from e


def _jsonable(options: dict) -> dict:
    out = {}
    for k, v in options.items():
        try:
            json.dumps(v)
        except TypeError:
            continue
        out[k] = v
    return out


def _message(head: str, e: Exception, directory: str, module_is: str) -> str:
    cause = e.__cause__ if isinstance(e, PassError) and e.__cause__ is not None else e
    first = (str(cause).strip().splitlines() or [""])[0]
    return (f"{head}: {type(cause).__name__}: {first}\n"
            f"  reproducer in {directory}:\n"
            f"    module.mlir  {module_is}\n"
            f"    repro.py     run `python {os.path.join(directory, 'repro.py')}` to reproduce\n"
            f"    error.txt    the traceback\n"
            f"  this is a bug in axle; please report it with these files")


def dump_root() -> Optional[str]:
    from axle.flags import parse_flags
    try:
        return parse_flags()["dump_to"]
    except ValueError:
        return None


def write_reproducer(module_text: str, info: dict, error: BaseException) -> str:
    """Write module.mlir, repro.py, error.txt (and repro.json) into a new folder; its path."""
    root = dump_root()
    if root:
        os.makedirs(root, exist_ok=True)
    directory = tempfile.mkdtemp(prefix="axle-ice-" if not root else "crash-", dir=root or None)
    with open(os.path.join(directory, "module.mlir"), "w", encoding="utf-8") as fh:
        fh.write(module_text)
    with open(os.path.join(directory, "repro.json"), "w", encoding="utf-8") as fh:
        json.dump(info, fh, indent=1)
    with open(os.path.join(directory, "error.txt"), "w", encoding="utf-8") as fh:
        fh.write("".join(traceback.format_exception(type(error), error, error.__traceback__)))
    with open(os.path.join(directory, "repro.py"), "w", encoding="utf-8") as fh:
        fh.write(_repro_script(info))
    return directory


def _repro_script(info: dict) -> str:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    kind, pipeline, entry = info["kind"], info["pipeline"], info["entry"]
    verify = bool(info.get("verify_each"))
    if kind == "pass":
        what = f"runs pass '{info['pass']}' (of the {pipeline} pipeline) on the module before it"
        steps = (f"pass_ = find_pass(make_pipeline({pipeline!r}), {info['pass']!r}) or make_pass({info['pass']!r})\n"
                 f"    PassManager([pass_], verify_each={verify}).run(module)")
    elif kind == "pipeline":
        what = f"runs the {pipeline} pipeline on the module as it came in"
        steps = f"PassManager(make_pipeline({pipeline!r}), verify_each={verify}).run(module)"
    else:
        what = "generates code for the module (after the passes) and compiles it with LLVM"
        steps = ""
        if pipeline:  # the failure came before the passes had run: run them too
            what = f"runs the {pipeline} pipeline, generates code and compiles it with LLVM"
            steps = f"PassManager(make_pipeline({pipeline!r})).run(module)\n    "
        accepted = set(info.get("codegen_options", ()))
        opts = "".join(f", {k}={v!r}" for k, v in info.get("options", {}).items()
                       if k in accepted and k not in ("module", "entry"))
        steps += (f"program = compile_function(module, {entry!r}{opts})  # axle's code generation\n"
                  f"    NativeProgram.compile(program)  # LLVM: optimize, object code")
    return f'''"""axle crash reproducer: {what}.

    python repro.py    (ends with the original error's traceback when it reproduces)

Written by axle.reproducer after an internal compiler error; module.mlir beside this file
is the module, error.txt the original traceback.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import axle  # noqa: F401
except ImportError:  # run outside axle's environment: use the checkout that wrote this file
    sys.path.insert(0, {root!r})

from axle.backends.cpu.compiler import compile_function  # noqa: F401
from axle.backends.cpu.executable import NativeProgram  # noqa: F401
from axle.ir import parse_module
from axle.passes import PassManager, make_pass  # noqa: F401
from axle.reproducer import find_pass, make_pipeline  # noqa: F401


def main():
    path = os.path.join(HERE, "module.mlir")
    with open(path, encoding="utf-8") as fh:
        module = parse_module(fh.read(), path)
    {steps}
    print("did not reproduce: the step ran without error")


if __name__ == "__main__":
    main()
'''
