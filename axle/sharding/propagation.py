"""Pass `sharding-propagation`: a sharding for every value of @main, and why.

Starts from the annotations (annotations.py: arguments, results, constraints; an
unannotated argument is replicated) and walks the function's ops in order, asking each
op's rule (rules.py, rules_dot.py) which shardings it wants its operands in and which its
results get. The choices are data: a `ShardingPlan` with one `OpChoice` per op, printed by
`plan.report()` (`axle compile --emit sharding`). Propagation is forward only: a value's
sharding comes from its producer, a consumer that wants another one gets a reshard (which
the partitioner turns into a slice or a collective). Ops inside regions (reduce bodies) are
scalar and not sharded. Calls are inlined first. The module is left unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from axle.ir.types import TensorType
from axle.sharding.annotations import function_shardings, module_mesh
from axle.sharding.mesh import Mesh, NamedSharding, ShardingError
from axle.sharding import rules, rules_dot, rules_more  # noqa: F401  (registers their rules)


@dataclass
class OpChoice:
    op: object
    operands: list  # wanted sharding per operand
    results: list
    note: str
    extra: dict = field(default_factory=dict)


@dataclass
class ShardingPlan:
    mesh: Mesh
    function: object
    args: list  # NamedSharding per argument
    outs: list  # requested NamedSharding per result, None where not annotated
    values: dict = field(default_factory=dict)  # Value -> NamedSharding
    choices: list = field(default_factory=list)

    def sharding(self, v) -> NamedSharding:
        return self.values[v]

    def report(self) -> str:
        lines = [f"sharding propagation for @{self.function.sym_name} on {self.mesh}"]
        for i, (a, s) in enumerate(zip(self.function.body.arguments, self.args)):
            lines.append(f"  arg {i} {a.type}: {s.normalized(len(a.type.shape))}")
        for c in self.choices:
            res = ", ".join(str(s.normalized(len(r.type.shape))) for r, s in zip(c.op.results, c.results))
            lines.append(f"  {_where(c.op)} -> {res}: {c.note}")
        for i, s in enumerate(self.outs):
            if s is not None:
                lines.append(f"  result {i} requested {s}")
        return "\n".join(lines) + "\n"


def _where(op) -> str:
    return op.where() or f"'{op.name}'"


def _tensor(v) -> bool:
    return isinstance(v.type, TensorType)


def propagate(module, function: str = "main") -> ShardingPlan:
    """The ShardingPlan of `function` (after `inline`). Raises ShardingError on annotations
    the partitioner cannot use, naming where."""
    fn = module.function(function)
    mesh = module_mesh(module)
    args, outs = function_shardings(fn, mesh)
    args = [(s if s is not None else NamedSharding(mesh)).normalized(len(getattr(a.type, "shape", ())))
            for a, s in zip(fn.body.arguments, args)]
    plan = ShardingPlan(mesh, fn, args, outs)
    for a, s in zip(fn.body.arguments, args):
        if not _tensor(a):
            raise ShardingError(f"@{function}: argument of type {a.type} cannot be partitioned")
        if not s.divides(a.type.shape):
            raise ShardingError(f"@{function} argument {a.index}: {s} does not divide {a.type}")
        plan.values[a] = s.normalized(len(a.type.shape))
    for op in fn.body.operations:
        if op.name == "func.return":
            continue
        if op.name == "func.call":
            raise ShardingError(f"{op.where()}: {op.name} is not partitioned (inline calls first)")
        for v in op.operands:
            if v not in plan.values:
                raise ShardingError(f"{op.where()}: operand defined outside @{function}")
        for r in op.results:
            if not _tensor(r):
                raise ShardingError(f"{op.where()}: {op.name} has a result of type {r.type}; "
                                    f"only tensors are partitioned")
        shs = [plan.values[v] for v in op.operands]
        d = rules.lookup(op)(op, shs, mesh)
        results = []
        for r, s in zip(op.results, d.results):
            if not s.divides(r.type.shape):  # an axis that does not divide the result: replicate it
                d.note += f"; {s} does not divide {r.type}: operands gathered, result replicated"
                d.operands = [NamedSharding(mesh) for _ in op.operands]
                s = NamedSharding(mesh)
            results.append(s.normalized(len(r.type.shape)))
        d.operands = [w.normalized(len(v.type.shape)) for w, v in zip(d.operands, op.operands)]
        for v, w in zip(op.operands, d.operands):
            if not w.divides(v.type.shape):
                raise ShardingError(f"{op.where()}: wanted {w} does not divide {v.type}")
        for r, s in zip(op.results, results):
            plan.values[r] = s
        plan.choices.append(OpChoice(op, d.operands, results, d.note, d.extra))
    return plan


class ShardingPropagation:
    """The pass form: runs `propagate` and keeps the plan on `self.plan`; changes nothing."""

    name = "sharding-propagation"

    def __init__(self, function: str = "main"):
        self.function = function
        self.plan = None

    def run(self, module) -> bool:
        self.plan = propagate(module, self.function)
        return False
