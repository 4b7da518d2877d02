"""The CPU backend: StableHLO -> LLVM IR (llvmlite) -> native code, one entry per program."""
from axle.backends.cpu.scalar import Unsupported


def compile(module, entry: str = "main", passes: bool = True, **options):
    """Compile `entry` of `module` for the host CPU, after the default pipeline (`passes`).

    The pipeline runs only when code must be generated: a program found in the in-memory
    or disk cache (keyed by the module as given) is used as it is."""
    from axle.backends.cpu.executable import CpuExecutable
    pipeline = None
    if passes:
        def pipeline(m):
            from axle.passes import PassManager, default_pipeline
            PassManager.from_flags(default_pipeline()).run(m)
    return CpuExecutable(module, entry, pipeline, **options)


__all__ = ["compile", "Unsupported"]
