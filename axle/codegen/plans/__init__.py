"""Code-generation decisions as data, computed before any code is emitted and shared by
the backends: the fusion plan (which ops form each kernel, of which kind), the schedule
(the order kernels run in, and why) and the buffer assignment (where each value lives,
and when). Each has a text form that `--dump_to` writes and tests check (docs/plans.md).

- graph.py: data flow of a block under a fusion decision (reads, deps, last readers)
- fusion.py: FusionPlan / FusedKernel / RowFusion
- schedule.py: Schedule and the list scheduler for low peak memory
- arena.py: best-fit placement of temporaries (Pool), nbytes, ALIGN
- buffers.py: BufferAssignment
- names.py: value names for the text forms

What to fuse is a backend's choice (backends/cpu/fusion.py for the CPU); these modules
hold the data and the target-independent algorithms.
"""
