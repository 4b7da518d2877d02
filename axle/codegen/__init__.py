"""Target-independent code generation: LLVM IR for StableHLO ops, for every backend.

The elemental emitter (emitter.py: the value of a fusible op at an index), the scalar rules
of every element type (scalar*.py, bitcast.py), the vectorizable math (fastmath.py), the
element mappers of index-mapping ops (elemental.py), dot bookkeeping (dot.py) and the
`Target` interface (target.py) that says what differs between machines. A backend passes
its Target to the Emitter and wraps the emitter in its own loops (a loop nest on the CPU, a
thread grid on the GPU). Nothing here imports a backend, the runtime, the interpreter or a
frontend (INVARIANTS.md).
"""
