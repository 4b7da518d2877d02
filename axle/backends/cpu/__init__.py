"""The CPU backend: StableHLO -> LLVM IR (llvmlite) -> native code, one entry per program."""
from axle.backends.cpu.scalar import Unsupported


def compile(module, entry: str = "main", passes: bool = True):
    """Optimize `module` with the default pipeline and compile `entry` for the host CPU."""
    from axle.backends.cpu.executable import CpuExecutable
    if passes:
        from axle.passes import PassManager, default_pipeline
        PassManager.from_flags(default_pipeline()).run(module)
    return CpuExecutable(module, entry)


__all__ = ["compile", "Unsupported"]
