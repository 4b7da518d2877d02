"""The CPU backend: StableHLO -> LLVM IR (llvmlite) -> native code, one entry per program."""
from axle.errors import Unsupported


def compile(module, entry: str = "main", passes: bool = True, **options):
    """Compile `entry` of `module` for the host CPU, after the "cpu" pipeline (`passes`;
    without it, only the pipeline's lowering part runs: backends/cpu/pipeline.py). The
    module given is never changed: the executable compiles a copy.

    The pipeline runs only when code must be generated: a program found in the in-memory
    or disk cache (keyed by the module as given) is used as it is. `profile=True` times every
    top-level kernel natively on each call (profiling.ProfiledExecutable).

    A function whose returns or entry arguments do not match its signature raises
    axle.ir.verifier.VerificationError naming the op, before anything is compiled.
    A failure inside axle (not the input's fault) raises axle.reproducer.InternalCompilerError,
    after writing the module and a repro.py to the folder its message names."""
    from axle.backends.cpu.executable import CpuExecutable
    from axle.ir.verifier import verify_signatures
    verify_signatures(module)
    from axle.limits import check_program, compile_budget
    check_program(module)  # --max_buffer_bytes, before anything is allocated
    from axle.reproducer import guard_codegen, run_pipeline
    pipeline = None
    ran = [not passes]
    compiled = [module]  # the copy the executable compiles, once it has made it
    dump_to = options.pop("dump_to", None)  # AXLE_FLAGS' --dump_to for this compile only
    if passes:
        def pipeline(m):
            # an internal error in a pass leaves a reproducer (axle/reproducer.py)
            compiled[0] = m
            run_pipeline(m, "cpu", entry=entry, options=options, dump_to=dump_to)
            ran[0] = True
    with compile_budget(f"compiling @{entry} for the cpu"), \
            guard_codegen(lambda: compiled[0], entry, options, passes_done=lambda: ran[0],
                          codegen_options=codegen_options()):  # ... and in codegen
        if options.get("profile"):  # native per-kernel timing (profiling.py)
            from axle.backends.cpu.profiling import ProfiledExecutable
            return ProfiledExecutable(module, entry, pipeline, dump_to=dump_to, **options)
        return CpuExecutable(module, entry, pipeline, dump_to=dump_to, **options)


def codegen_options() -> tuple:
    """The options compile_function takes (a crash reproducer passes them on to it)."""
    import inspect
    from axle.backends.cpu.compiler import compile_function
    return tuple(inspect.signature(compile_function).parameters)


__all__ = ["compile", "Unsupported"]
