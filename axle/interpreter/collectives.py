"""Parallel execution and the ops that communicate between processes.

The spec ("Parallel execution", "Collective ops") runs a program on a grid of
`num_replicas x num_partitions` processes. Here every process is a Python thread with its own
`ExecContext`; the processes of a collective op meet at a rendezvous, exchange their operands
and each computes its own result.

API for the evaluator
---------------------

    run_parallel(programs, args, run_function, num_inputs, infeed=(), timeout=30.0,
                 probes=None) -> (results, grid)

      programs      nested list of function names, programs[replica_id][partition_id]
                    (the `programs` attribute of `interpreter.run_parallel`).
      args          the flat list of input values; the processes take theirs in row-major
                    order (replica-major), `num_inputs(name)` values each.
      run_function  run_function(name, args, ctx) -> list of results: evaluates function
                    `name` with every OpCall in it (regions and nested calls included)
                    getting `ctx` as `call.ctx`. It is called from several threads at once.
      infeed        the items of the grid's infeed queue, in order: a function name (the
                    `infeed` attribute of run_parallel; an `infeed` op evaluates it with
                    run_function(name, [], ctx) and takes its results) or a list of values.
      probes        a ProbeStore to share (pass the calling context's `ctx.probes`), so that
                    `interpreter.probe` values recorded by the processes can be checked by
                    the caller; by default the grid has its own.
      returns       the results of all processes concatenated in row-major process order,
                    and the ProcessGrid (whose `outfeed` lists what outfeed ops wrote).

    A process that raises stops the run: the others are woken from their rendezvous and
    run_parallel re-raises the first error. A rendezvous that does not complete within
    `timeout` seconds raises InterpreterError naming the op (a deadlock, or processes that
    disagree on the collectives they run).

    For a single-process run the evaluator passes `ExecContext.single_process(run_function)`
    (or None: every op then acts as process (0, 0) of a 1x1 grid, with a fresh context per
    op). Keeping one context per run keeps the state of send/recv channels, the infeed queue
    and probes (ops_check.py) for the whole run.

Process groups (spec "Collective ops"): `replica_groups` / `source_target_pairs` arrive as
2-D integer arrays; -1 entries pad ragged groups and are dropped, ids outside the grid are
dropped (so a program written for several replicas runs on fewer as groups of what exists),
and an empty attribute means one group of every id.

Rendezvous: a collective op's processes meet under the key (op name, channel id, process
group, n) where n counts the times this process ran that op on that group and channel, so
collectives inside loops pair up by iteration. send/recv go through a FIFO per channel id:
send never waits, recv waits for a value.
"""
from __future__ import annotations

import collections
import threading
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np

from axle.ir.types import QuantizedType
from axle.interpreter.registry import TOKEN, InterpreterError, OpCall, register

__all__ = ["ProcessGrid", "ExecContext", "ProbeStore", "run_parallel", "context_of",
           "process_groups", "DEFAULT_TIMEOUT"]

DEFAULT_TIMEOUT = 30.0

ProcessId = tuple  # (replica_id, partition_id)


# ---------------------------------------------------------------- probes


class ProbeStore:
    """Values recorded by `interpreter.probe`, per probe id in the order they were recorded
    (read back by `check.expect_serialized_eq`). Thread-safe."""

    def __init__(self):
        self._lock = threading.Lock()
        self._values: dict[str, list] = collections.defaultdict(list)

    def record(self, probe_id: str, type_, value) -> None:
        with self._lock:
            self._values[probe_id].append((type_, np.array(value, copy=True)))

    def get(self, probe_id: str, iteration: int = 0):
        """(type, value) recorded the `iteration`-th time for `probe_id`, or None."""
        with self._lock:
            values = self._values.get(probe_id, [])
            return values[iteration] if 0 <= iteration < len(values) else None

    def count(self, probe_id: str) -> int:
        with self._lock:
            return len(self._values.get(probe_id, []))


# ---------------------------------------------------------------- the grid


class ProcessGrid:
    """The shared state of a run: grid size, rendezvous points, channels, infeed, outfeed,
    probes, and the first error of any process."""

    def __init__(self, num_replicas: int = 1, num_partitions: int = 1, *,
                 run_function: Optional[Callable] = None, infeed: Sequence = (),
                 timeout: float = DEFAULT_TIMEOUT):
        self.num_replicas = num_replicas
        self.num_partitions = num_partitions
        self.run_function = run_function
        self.timeout = timeout
        self.outfeed: list = []  # (process_id, [values]) in the order they were written
        self.probes = ProbeStore()
        self._infeed = collections.deque(infeed)
        self._cond = threading.Condition()
        self._meetings: dict = {}
        self._channels: dict = collections.defaultdict(collections.deque)
        self._failure: Optional[BaseException] = None

    @property
    def num_processes(self) -> int:
        return self.num_replicas * self.num_partitions

    def process_ids(self) -> list:
        return [(r, p) for r in range(self.num_replicas) for p in range(self.num_partitions)]

    def contains(self, pid: ProcessId) -> bool:
        return 0 <= pid[0] < self.num_replicas and 0 <= pid[1] < self.num_partitions

    # -- failures

    def fail(self, error: BaseException) -> None:
        """Records the first error of a process and wakes every waiting process."""
        with self._cond:
            if self._failure is None:
                self._failure = error
            self._cond.notify_all()

    def _wait(self, ready: Callable[[], bool], what: str) -> None:
        """Waits (holding the condition) until `ready()`, a failure elsewhere, or timeout."""
        done = self._cond.wait_for(lambda: ready() or self._failure is not None, self.timeout)
        if self._failure is not None and not ready():
            raise InterpreterError(f"{what}: aborted, another process failed: {self._failure}")
        if not done:
            raise InterpreterError(f"{what}: timed out after {self.timeout} s waiting for the "
                                   f"other processes (deadlock or mismatched collectives?)")

    # -- rendezvous

    def rendezvous(self, key, group: Sequence[ProcessId], pid: ProcessId, value, what: str) -> dict:
        """Contributes `value` for process `pid` to the meeting `key` of `group`, waits for the
        whole group and returns {process_id: value} of all of it."""
        if len(group) == 1:
            return {pid: value}
        with self._cond:
            meeting = self._meetings.setdefault(key, {"values": {}, "left": len(group)})
            meeting["values"][pid] = value
            self._cond.notify_all()
            self._wait(lambda: len(meeting["values"]) == len(group), what)
            meeting["left"] -= 1
            if meeting["left"] == 0:
                del self._meetings[key]
            return dict(meeting["values"])

    # -- channels, infeed, outfeed

    def send(self, channel_id: int, values: list) -> None:
        with self._cond:
            self._channels[channel_id].append(list(values))
            self._cond.notify_all()

    def recv(self, channel_id: int, what: str) -> list:
        with self._cond:
            queue = self._channels[channel_id]
            self._wait(lambda: len(queue) > 0, f"{what} on channel {channel_id}")
            return queue.popleft()

    def pop_infeed(self, what: str):
        with self._cond:
            if not self._infeed:
                raise InterpreterError(f"{what}: the infeed is empty")
            return self._infeed.popleft()

    def write_outfeed(self, pid: ProcessId, values: list) -> None:
        with self._cond:
            self.outfeed.append((pid, list(values)))

    # -- running

    def run(self, programs: Sequence[Sequence[str]], args: Sequence, run_function: Callable,
            num_inputs: Callable[[str], int]) -> list:
        """Runs programs[r][p] as process (r, p), each in its own thread (see run_parallel)."""
        self.run_function = run_function
        jobs = []
        position = 0
        for r, row in enumerate(programs):
            for p, name in enumerate(row):
                n = num_inputs(name)
                jobs.append((name, list(args[position:position + n]),
                             ExecContext(self, r, p)))
                position += n
        if position != len(args):
            raise InterpreterError(f"run_parallel: {len(args)} inputs given, the programs "
                                   f"take {position}")
        outputs: list = [None] * len(jobs)

        def work(i, name, inputs, ctx):
            try:
                outputs[i] = list(run_function(name, inputs, ctx))
            except BaseException as error:  # noqa: BLE001 - re-raised below
                self.fail(error)

        if len(jobs) == 1:
            work(0, *jobs[0])
        else:
            threads = [threading.Thread(target=work, args=(i, *job), daemon=True,
                                        name=f"axle-process-{job[2].process_id}")
                       for i, job in enumerate(jobs)]
            for t in threads:
                t.start()
            try:
                for t in threads:
                    t.join()
            except BaseException as error:  # e.g. a timeout signal: stop the waiting processes
                self.fail(error)
                raise
        if self._failure is not None:
            raise self._failure
        return [value for output in outputs for value in output]


def run_parallel(programs, args, run_function, num_inputs, infeed=(),
                 timeout: float = DEFAULT_TIMEOUT, probes: Optional[ProbeStore] = None):
    """Runs `programs` on a num_replicas x num_partitions grid; see the module docstring.
    `probes` (e.g. the calling context's `ctx.probes`) is shared with the processes so that
    values they probe can be checked after the run. Returns (results, grid)."""
    programs = [list(row) for row in programs]
    if not programs or not programs[0] or any(len(row) != len(programs[0]) for row in programs):
        raise InterpreterError("run_parallel: `programs` must be a non-empty rectangular "
                               "array of function names")
    grid = ProcessGrid(len(programs), len(programs[0]), run_function=run_function,
                       infeed=infeed, timeout=timeout)
    if probes is not None:
        grid.probes = probes
    return grid.run(programs, args, run_function, num_inputs), grid


# ---------------------------------------------------------------- per-process context


@dataclass
class ExecContext:
    """What one process knows: its position in the grid and the grid's shared state."""

    grid: ProcessGrid
    replica_id: int = 0
    partition_id: int = 0
    _counts: dict = field(default_factory=dict, repr=False)

    @classmethod
    def single_process(cls, run_function: Optional[Callable] = None, infeed: Sequence = (),
                       timeout: float = DEFAULT_TIMEOUT) -> "ExecContext":
        """The context of a plain (not run_parallel) run: process (0, 0) of a 1x1 grid."""
        return cls(ProcessGrid(1, 1, run_function=run_function, infeed=infeed,
                               timeout=timeout))

    @property
    def process_id(self) -> ProcessId:
        return (self.replica_id, self.partition_id)

    @property
    def probes(self) -> ProbeStore:
        return self.grid.probes

    def exchange(self, what: str, channel_id: int, group: Sequence[ProcessId], value) -> dict:
        """Meets the rest of `group` for op `what`; returns {process_id: value}."""
        group = tuple(group)
        base = (what, channel_id, group)
        n = self._counts.get(base, 0)
        self._counts[base] = n + 1
        return self.grid.rendezvous(base + (n,), group, self.process_id, value, what)


def context_of(call: OpCall) -> ExecContext:
    """The call's context, or a fresh single-process one when it has none."""
    return call.ctx if call.ctx is not None else ExecContext.single_process()


# ---------------------------------------------------------------- process groups


def _id_lists(groups) -> list[list[int]]:
    """A replica_groups / partition_groups attribute as lists of ids (-1 padding dropped)."""
    if groups is None:
        return []
    array = np.asarray(groups)
    if array.size == 0:
        return []
    array = array.reshape(-1, array.shape[-1]) if array.ndim > 1 else array.reshape(1, -1)
    return [[int(i) for i in row if i >= 0] for row in array]


def process_groups(grid: ProcessGrid, mode: str, groups) -> list[list[ProcessId]]:
    """The spec's cross_replica / cross_partition / cross_replica_and_partition /
    flattened_ids strategies, keeping only processes that exist in the grid."""
    ids = _id_lists(groups)
    replicas, partitions = range(grid.num_replicas), range(grid.num_partitions)
    if not ids:
        everyone = {"cross_partition": partitions, "flattened_ids": range(grid.num_processes)}
        ids = [list(everyone.get(mode, replicas))]
    if mode == "cross_replica":
        result = [[(r, p) for r in g] for g in ids for p in partitions]
    elif mode == "cross_partition":
        result = [[(r, p) for p in g] for g in ids for r in replicas]
    elif mode == "cross_replica_and_partition":
        result = [[(r, p) for p in partitions for r in g] for g in ids]
    elif mode == "flattened_ids":
        n = grid.num_partitions
        result = [[(i // n, i % n) for i in g] for g in ids]
    else:
        raise ValueError(f"unknown process group mode {mode!r}")
    result = [[pid for pid in g if grid.contains(pid)] for g in result]
    return [g for g in result if g]


def _channel_id(call: OpCall) -> int:
    handle = call.attrs.get("channel_handle")
    if isinstance(handle, dict):
        return int(handle.get("handle", 0))
    if handle is not None:
        return int(handle)
    return int(call.attrs.get("channel_id", 0))


def _reduction_mode(call: OpCall) -> str:
    """all_gather, all_reduce, reduce_scatter."""
    channel_id = _channel_id(call)
    if call.attrs.get("use_global_device_ids"):
        return "flattened_ids"
    return "cross_replica_and_partition" if channel_id > 0 else "cross_replica"


def _channel_mode(call: OpCall) -> str:
    """all_to_all, collective_broadcast, collective_permute, collective_reduce."""
    return "cross_partition" if _channel_id(call) > 0 else "cross_replica"


def _my_group(call: OpCall, ctx: ExecContext, mode: str, groups, required=True):
    for group in process_groups(ctx.grid, mode, groups):
        if ctx.process_id in group:
            return group
    if required:
        raise call.error(f"process {ctx.process_id} is in no process group "
                         f"({mode} of {_id_lists(groups)})")
    return None


def _zeros(t) -> np.ndarray:
    """The spec's `broadcast_in_dim(constant(is_quantized ? quantize(0) : 0))`: zeros, or the
    zero point(s) for a quantized type."""
    et = t.element_type
    shape = tuple(t.shape)
    if not isinstance(et, QuantizedType):
        return np.zeros(shape, dtype=et.dtype)
    zero_points = np.asarray(et.zero_points, dtype=np.int64)
    if et.quantized_dimension is None:
        zero_points = zero_points.reshape(())
    else:
        zero_points = zero_points.reshape(
            [-1 if d == et.quantized_dimension else 1 for d in range(len(shape))])
    return np.broadcast_to(zero_points, shape).astype(et.dtype)


def _reduce_values(call: OpCall, values: list, result_type) -> np.ndarray:
    """Folds `values` (same-shaped arrays, in process-group order) element by element with
    the op's region: computation(...computation(v0, v1)..., vn)."""
    from axle.interpreter.ops_reduce import Body  # whole arrays at once when the body is elementwise
    dtype = result_type.element_type.dtype
    values = [np.asarray(v).astype(dtype) for v in values]
    body = Body(call, 0, [dtype])
    acc = values[0]
    for v in values[1:]:
        acc = np.asarray(body(acc, v)[0]).astype(dtype, copy=False)
    return acc.reshape(values[0].shape)


# ---------------------------------------------------------------- ops


@register("stablehlo.replica_id")
def replica_id(call: OpCall):
    ctx = call.ctx
    return np.array(ctx.replica_id if ctx else 0, dtype=call.result_type.dtype)


@register("stablehlo.partition_id")
def partition_id(call: OpCall):
    ctx = call.ctx
    return np.array(ctx.partition_id if ctx else 0, dtype=call.result_type.dtype)


@register("stablehlo.all_gather")
def all_gather(call: OpCall):
    ctx = context_of(call)
    group = _my_group(call, ctx, _reduction_mode(call), call.attrs.get("replica_groups"))
    received = ctx.exchange(call.name, _channel_id(call), group, list(call.operands))
    dim = int(call.attrs["all_gather_dim"])
    return [np.concatenate([received[pid][i] for pid in group], axis=dim)
            for i in range(len(call.operands))]


@register("stablehlo.all_reduce")
def all_reduce(call: OpCall):
    ctx = context_of(call)
    group = _my_group(call, ctx, _reduction_mode(call), call.attrs.get("replica_groups"))
    received = ctx.exchange(call.name, _channel_id(call), group, list(call.operands))
    return [_reduce_values(call, [received[pid][i] for pid in group], t)
            for i, t in enumerate(call.result_types)]


@register("stablehlo.reduce_scatter")
def reduce_scatter(call: OpCall):
    ctx = context_of(call)
    group = _my_group(call, ctx, _reduction_mode(call), call.attrs.get("replica_groups"))
    received = ctx.exchange(call.name, _channel_id(call), group, call.operands[0])
    reduced = _reduce_values(call, [received[pid] for pid in group], call.result_type)
    parts = np.split(reduced, len(group), axis=int(call.attrs["scatter_dimension"]))
    return parts[group.index(ctx.process_id)]


@register("stablehlo.all_to_all")
def all_to_all(call: OpCall):
    ctx = context_of(call)
    group = _my_group(call, ctx, _channel_mode(call), call.attrs.get("replica_groups"))
    received = ctx.exchange(call.name, _channel_id(call), group, list(call.operands))
    split_dim = int(call.attrs["split_dimension"])
    concat_dim = int(call.attrs["concat_dimension"])
    split_count = int(call.attrs["split_count"])
    me = group.index(ctx.process_id)
    return [np.concatenate([np.split(received[pid][i], split_count, axis=split_dim)[me]
                            for pid in group], axis=concat_dim)
            for i in range(len(call.operands))]


def _dynamic_roots(call: OpCall, count: int) -> Optional[list[int]]:
    """With has_dynamic_root, the root index of each data operand (the last operand)."""
    if not call.attrs.get("has_dynamic_root"):
        return None
    roots = np.asarray(call.operands[-1]).reshape(-1)
    if roots.size < count:
        raise call.error(f"has_dynamic_root needs {count} root indices, got {roots.size}")
    return [int(r) for r in roots[:count]]


def _root(call: OpCall, group: list, roots: Optional[list], j: int) -> ProcessId:
    if roots is None:
        return group[0]
    if not 0 <= roots[j] < len(group):
        raise call.error(f"dynamic root {roots[j]} out of range for a group of {len(group)}")
    return group[roots[j]]


@register("stablehlo.collective_broadcast")
def collective_broadcast(call: OpCall):
    ctx = context_of(call)
    count = len(call.result_types)
    data = list(call.operands[:count])
    roots = _dynamic_roots(call, count)
    group = _my_group(call, ctx, _channel_mode(call), call.attrs.get("replica_groups"),
                      required=False)
    if group is None:
        return [_zeros(t) for t in call.result_types]
    received = ctx.exchange(call.name, _channel_id(call), group, data)
    return [np.asarray(received[_root(call, group, roots, j)][j]) for j in range(count)]


@register("stablehlo.collective_reduce")
def collective_reduce(call: OpCall):
    ctx = context_of(call)
    count = len(call.result_types)
    data = list(call.operands[:count])
    roots = _dynamic_roots(call, count)
    group = _my_group(call, ctx, _channel_mode(call), call.attrs.get("replica_groups"),
                      required=False)
    if group is None:
        return [_zeros(t) for t in call.result_types]
    received = ctx.exchange(call.name, _channel_id(call), group, data)
    results = []
    for j, t in enumerate(call.result_types):
        if _root(call, group, roots, j) != ctx.process_id:
            results.append(_zeros(t))
        else:
            results.append(_reduce_values(call, [received[pid][j] for pid in group], t))
    return results


@register("stablehlo.collective_permute")
def collective_permute(call: OpCall):
    """Each (source, target) pair is a process group of two (crossed with the other axis);
    they meet in the order of `source_target_pairs`, which every process walks the same way."""
    ctx = context_of(call)
    operand = call.operands[0]
    result = None
    pairs = process_groups(ctx.grid, _channel_mode(call), call.attrs.get("source_target_pairs"))
    for pair in pairs:
        if len(pair) != 2 or ctx.process_id not in pair:
            continue
        source, target = pair
        if source == target:
            result = operand
            continue
        received = ctx.exchange(call.name, _channel_id(call), pair, operand)
        if target == ctx.process_id:
            result = received[source]
    if result is None:
        return _zeros(call.result_type)
    return np.asarray(result)


@register("stablehlo.send")
def send(call: OpCall):
    ctx = context_of(call)
    ctx.grid.send(_channel_id(call), call.operands[:-1])
    return TOKEN


@register("stablehlo.recv")
def recv(call: OpCall):
    ctx = context_of(call)
    values = ctx.grid.recv(_channel_id(call), call.name)
    expected = len(call.result_types) - 1
    if len(values) != expected:
        raise call.error(f"received {len(values)} values, expected {expected}")
    return [*values, TOKEN]


@register("stablehlo.infeed")
def infeed(call: OpCall):
    ctx = context_of(call)
    item = ctx.grid.pop_infeed(call.name)
    if isinstance(getattr(item, "name", None), str):  # a symbol reference attribute
        item = item.name
    if isinstance(item, str):
        if ctx.grid.run_function is None:
            raise call.error(f"cannot evaluate infeed function @{item}: no run_function")
        values = list(ctx.grid.run_function(item, [], ctx))
    else:
        values = list(item) if isinstance(item, (list, tuple)) else [item]
    expected = len(call.result_types) - 1
    if len(values) != expected:
        raise call.error(f"infeed gave {len(values)} values, expected {expected}")
    return [*values, TOKEN]


@register("stablehlo.outfeed")
def outfeed(call: OpCall):
    ctx = context_of(call)
    ctx.grid.write_outfeed(ctx.process_id, call.operands[:-1])
    return TOKEN

