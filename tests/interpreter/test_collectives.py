"""Parallel execution and collective ops (collectives.py), run with threads and hand-built
OpCalls standing in for the evaluator."""
import threading
import time

import numpy as np
import pytest

from axle.ir import types
from axle.ir.types import QuantizedType, TensorType, TokenType, element_type, tensor
from axle.interpreter.collectives import (
    ExecContext, ProcessGrid, process_groups, run_parallel,
)
from axle.interpreter.registry import TOKEN, InterpreterError, OpCall, lookup

def op(name, operands, result_types, ctx, attrs=None, regions=()):
    operands = [o if o is TOKEN else np.asarray(o) for o in operands]
    operand_types = [TokenType() if o is TOKEN else tensor(o.shape, element_type_of(o))
                     for o in operands]
    c = OpCall(name, operands, operand_types, list(result_types), attrs or {}, list(regions),
               ctx)
    result = lookup(name)(c)
    return result


def element_type_of(x):
    return types.element_type_of(x.dtype)


def add_region(a, b):
    return [np.asarray(a + b)]


def groups(*rows):
    return np.array(rows, dtype=np.int64)


def run(programs, args, num_inputs=1, **kw):
    """programs: nested lists of Python functions f(args, ctx) -> list of results."""
    table = {}
    names = []
    for row in programs:
        names.append([])
        for fn in row:
            table[fn.__name__] = fn
            names[-1].append(fn.__name__)

    def run_function(name, inputs, ctx):
        return table[name](inputs, ctx)

    arity = num_inputs if callable(num_inputs) else (lambda name: num_inputs)
    results, grid = run_parallel(names, args, run_function, arity, **kw)
    return results, grid


def i64(*values):
    return np.array(values, dtype=np.int64)


# ---------------------------------------------------------------- process groups


def test_process_group_strategies_spec_examples():
    grid = ProcessGrid(4, 2)
    assert process_groups(grid, "cross_replica", groups([0, 1], [2, 3])) == [
        [(0, 0), (1, 0)], [(0, 1), (1, 1)], [(2, 0), (3, 0)], [(2, 1), (3, 1)]]
    assert process_groups(grid, "cross_partition", groups([0, 1])) == [
        [(0, 0), (0, 1)], [(1, 0), (1, 1)], [(2, 0), (2, 1)], [(3, 0), (3, 1)]]
    assert process_groups(grid, "cross_replica_and_partition", groups([0, 1], [2, 3])) == [
        [(0, 0), (1, 0), (0, 1), (1, 1)], [(2, 0), (3, 0), (2, 1), (3, 1)]]
    assert process_groups(grid, "flattened_ids", groups([0, 1, 2, 3], [4, 5, 6, 7])) == [
        [(0, 0), (0, 1), (1, 0), (1, 1)], [(2, 0), (2, 1), (3, 0), (3, 1)]]


def test_process_groups_padding_empty_and_out_of_grid_ids():
    grid = ProcessGrid(3, 1)
    assert process_groups(grid, "cross_replica", groups([0, 1], [2, -1])) == [
        [(0, 0), (1, 0)], [(2, 0)]]
    assert process_groups(grid, "cross_replica", np.zeros((0,), np.int64)) == [
        [(0, 0), (1, 0), (2, 0)]]
    assert process_groups(ProcessGrid(1, 1), "cross_replica", groups([0, 1])) == [[(0, 0)]]


# ---------------------------------------------------------------- ids


def test_replica_and_partition_ids():
    def ids(args, ctx):
        t = tensor((), "ui32")
        return [op("stablehlo.replica_id", [], [t], ctx),
                op("stablehlo.partition_id", [], [t], ctx)]

    results, _ = run([[ids, ids, ids], [ids, ids, ids]], [], num_inputs=0)
    got = [(int(r), int(p)) for r, p in zip(results[::2], results[1::2])]
    assert got == [(r, p) for r in range(2) for p in range(3)]
    assert results[0].dtype == np.uint32 and results[0].shape == ()


def test_ids_without_context_are_zero():
    t = tensor((), "ui32")
    assert op("stablehlo.replica_id", [], [t], None) == 0
    assert op("stablehlo.partition_id", [], [t], None) == 0


# ---------------------------------------------------------------- all_gather


def gather_fn(attrs, result_shape):
    def all_gather(args, ctx):
        return op("stablehlo.all_gather", args, [tensor(result_shape, "i64")] * len(args), ctx,
                  attrs)
    return all_gather


def test_all_gather_cross_replica_spec_example():
    fn = gather_fn({"all_gather_dim": 1, "replica_groups": groups([0, 1])}, (2, 4))
    results, _ = run([[fn], [fn]], [np.array([[1, 2], [3, 4]]), np.array([[5, 6], [7, 8]])])
    for r in results:
        np.testing.assert_array_equal(r, [[1, 2, 5, 6], [3, 4, 7, 8]])


def test_all_gather_cross_replica_and_partition():
    fn = gather_fn({"all_gather_dim": 1, "replica_groups": groups([0, 1]),
                    "channel_handle": {"handle": 1, "type": 0}}, (2, 8))
    a, b = np.array([[1, 2], [3, 4]]), np.array([[5, 6], [7, 8]])
    results, _ = run([[fn, fn], [fn, fn]], [b, b, a, b])
    for r in results:
        np.testing.assert_array_equal(r, [[5, 6, 1, 2, 5, 6, 5, 6], [7, 8, 3, 4, 7, 8, 7, 8]])


def test_all_gather_flattened_ids_variadic():
    attrs = {"all_gather_dim": 0, "replica_groups": groups([0, 1]),
             "channel_handle": {"handle": 1, "type": 0}, "use_global_device_ids": True}

    def fn(args, ctx):
        return op("stablehlo.all_gather", args, [tensor((4,), "i64"), tensor((2, 2), "i32")],
                  ctx, attrs)

    results, _ = run([[fn, fn]], [i64(1, 2), np.int32([[1, 2]]), i64(3, 4), np.int32([[3, 4]])],
                     num_inputs=2)
    np.testing.assert_array_equal(results[0], [1, 2, 3, 4])
    np.testing.assert_array_equal(results[1], [[1, 2], [3, 4]])
    assert results[1].dtype == np.int32


# ---------------------------------------------------------------- all_reduce / reduce_scatter


def test_all_reduce_ragged_groups():
    attrs = {"replica_groups": groups([0, 1], [2, -1])}

    def fn(args, ctx):
        return op("stablehlo.all_reduce", args, [tensor((4,), "i64")], ctx, attrs, [add_region])

    results, _ = run([[fn], [fn], [fn]], [i64(1, 2, 3, 4), i64(5, 6, 7, 8), i64(6, 8, 10, 12)])
    for r in results:
        np.testing.assert_array_equal(r, [6, 8, 10, 12])


def test_all_reduce_variadic_and_repeated_in_a_loop():
    attrs = {"replica_groups": groups([0, 1])}

    def fn(args, ctx):
        x, y = args
        for _ in range(3):  # the n-th call of each process meets the n-th call of the other
            x, y = op("stablehlo.all_reduce", [x, y], [tensor((2,), "i64"), tensor((), "f32")],
                      ctx, attrs, [add_region])
        return [x, y]

    results, _ = run([[fn], [fn]], [i64(1, 2), np.float32(0.5), i64(3, 4), np.float32(1.5)],
                     num_inputs=2)
    np.testing.assert_array_equal(results[0], [16, 24])  # (1+3)*2*2, (2+4)*2*2
    assert results[1] == np.float32(8.0) and results[1].dtype == np.float32
    np.testing.assert_array_equal(results[2], [16, 24])


def test_all_reduce_applies_the_region_in_group_order():
    order = []

    def record(a, b):
        order.append((int(a), int(b)))
        return [np.asarray(a * 10 + b)]

    attrs = {"replica_groups": groups([2, 0, 1])}

    def fn(args, ctx):
        return op("stablehlo.all_reduce", args, [tensor((), "i64")], ctx, attrs, [record])

    results, _ = run([[fn], [fn], [fn]], [np.int64(1), np.int64(2), np.int64(3)])
    assert [int(r) for r in results] == [312] * 3  # ((3*10 + 1)*10 + 2)


def test_all_reduce_without_context_is_a_group_of_one():
    t = tensor((3,), "i64")
    result = op("stablehlo.all_reduce", [i64(1, 2, 3)], [t], None,
                {"replica_groups": groups([0, 1])}, [add_region])
    np.testing.assert_array_equal(result[0], [1, 2, 3])


def test_reduce_scatter():
    attrs = {"scatter_dimension": 1, "replica_groups": groups([0, 1])}

    def fn(args, ctx):
        return [op("stablehlo.reduce_scatter", args, [tensor((2, 2), "i64")], ctx, attrs,
                   [add_region])]

    results, _ = run([[fn], [fn]], [np.array([[1, 2, 3, 4], [5, 6, 7, 8]]),
                                    np.array([[9, 10, 11, 12], [13, 14, 15, 16]])])
    np.testing.assert_array_equal(results[0], [[10, 12], [18, 20]])
    np.testing.assert_array_equal(results[1], [[14, 16], [22, 24]])


# ---------------------------------------------------------------- all_to_all


def test_all_to_all_with_reordered_group():
    attrs = {"split_dimension": 1, "concat_dimension": 0, "split_count": 2,
             "replica_groups": groups([1, 0])}

    def fn(args, ctx):
        return op("stablehlo.all_to_all", args, [tensor((4, 2), "i64")], ctx, attrs)

    results, _ = run([[fn], [fn]], [np.array([[1, 2, 3, 4], [5, 6, 7, 8]]),
                                    np.array([[9, 10, 11, 12], [13, 14, 15, 16]])])
    np.testing.assert_array_equal(results[0], [[11, 12], [15, 16], [3, 4], [7, 8]])
    np.testing.assert_array_equal(results[1], [[9, 10], [13, 14], [1, 2], [5, 6]])


def test_all_to_all_cross_partition():
    attrs = {"split_dimension": 1, "concat_dimension": 0, "split_count": 2,
             "replica_groups": groups([0, 1]), "channel_handle": {"handle": 1, "type": 0}}

    def fn(args, ctx):
        return op("stablehlo.all_to_all", args, [tensor((4, 2), "i64")], ctx, attrs)

    results, _ = run([[fn, fn]], [np.array([[1, 2, 3, 4], [5, 6, 7, 8]]),
                                  np.array([[9, 10, 11, 12], [13, 14, 15, 16]])])
    np.testing.assert_array_equal(results[0], [[1, 2], [5, 6], [9, 10], [13, 14]])
    np.testing.assert_array_equal(results[1], [[3, 4], [7, 8], [11, 12], [15, 16]])


# ---------------------------------------------------------------- collective_broadcast


def broadcast_fn(attrs, result_types):
    def collective_broadcast(args, ctx):
        return op("stablehlo.collective_broadcast", args, result_types, ctx, attrs)
    return collective_broadcast


def test_collective_broadcast_spec_example():
    fn = broadcast_fn({"replica_groups": groups([2, 1]),
                       "channel_handle": {"handle": 0, "type": 0}}, [tensor((1, 2), "i64")])
    results, _ = run([[fn]] * 4, [np.array([[1, 2]]), np.array([[3, 4]]), np.array([[5, 6]]),
                                  np.array([[7, 8]])])
    expected = [[[0, 0]], [[5, 6]], [[5, 6]], [[0, 0]]]
    for r, e in zip(results, expected):
        np.testing.assert_array_equal(r, e)


def test_collective_broadcast_cross_partition_with_replicas():
    fn = broadcast_fn({"replica_groups": groups([1, 0]),
                       "channel_handle": {"handle": 1, "type": 0}}, [tensor((1, 2), "i64")])
    results, _ = run([[fn, fn], [fn, fn]], [np.array([[1, 2]]), np.array([[3, 4]]),
                                            np.array([[5, 6]]), np.array([[7, 8]])])
    expected = [[[3, 4]], [[3, 4]], [[7, 8]], [[7, 8]]]
    for r, e in zip(results, expected):
        np.testing.assert_array_equal(r, e)


def test_collective_broadcast_dynamic_root_variadic():
    fn = broadcast_fn({"replica_groups": groups([0, 1]), "has_dynamic_root": True},
                      [tensor((1, 2), "i64")] * 2)
    root = np.int32([0, 1])
    results, _ = run([[fn], [fn]], [np.array([[1, 2]]), np.array([[5, 6]]), root,
                                    np.array([[3, 4]]), np.array([[7, 8]]), root], num_inputs=3)
    for r0, r1 in zip(results[::2], results[1::2]):
        np.testing.assert_array_equal(r0, [[1, 2]])
        np.testing.assert_array_equal(r1, [[7, 8]])


def test_collective_broadcast_quantized_zero_is_the_zero_point():
    q = QuantizedType(element_type("i8"), element_type("f32"), (0.5,), (-7,))
    fn = broadcast_fn({"replica_groups": groups([1])}, [TensorType((2,), q)])
    results, _ = run([[fn], [fn]], [np.int8([1, 2]), np.int8([3, 4])])
    np.testing.assert_array_equal(results[0], [-7, -7])
    assert results[0].dtype == np.int8
    np.testing.assert_array_equal(results[1], [3, 4])


# ---------------------------------------------------------------- collective_reduce


def test_collective_reduce_root_gets_the_sum():
    attrs = {"replica_groups": groups([0, 1]), "channel_handle": {"handle": 0, "type": 0}}

    def fn(args, ctx):
        return op("stablehlo.collective_reduce", args, [tensor((4,), "i64")], ctx, attrs,
                  [add_region])

    results, _ = run([[fn], [fn]], [i64(1, 2, 3, 4), i64(5, 6, 7, 8)])
    np.testing.assert_array_equal(results[0], [6, 8, 10, 12])
    np.testing.assert_array_equal(results[1], [0, 0, 0, 0])


def test_collective_reduce_dynamic_root():
    attrs = {"replica_groups": groups([0, 1, 2, 3]), "has_dynamic_root": True}

    def fn(args, ctx):
        return op("stablehlo.collective_reduce", args, [tensor((1, 2), "i64")], ctx, attrs,
                  [add_region])

    root = np.int32([3])
    data = [np.array([[1, 2]]), np.array([[3, 4]]), np.array([[5, 6]]), np.array([[7, 8]])]
    args = [x for d in data for x in (d, root)]
    results, _ = run([[fn]] * 4, args, num_inputs=2)
    for i, r in enumerate(results):
        np.testing.assert_array_equal(r, [[16, 20]] if i == 3 else [[0, 0]])


# ---------------------------------------------------------------- collective_permute


def permute_fn(attrs):
    def collective_permute(args, ctx):
        return [op("stablehlo.collective_permute", args, [tensor((2, 2), "i64")], ctx, attrs)]
    return collective_permute


def test_collective_permute_with_self_loops():
    fn = permute_fn({"source_target_pairs": groups([0, 1], [1, 2], [3, 3], [4, 4]),
                     "channel_handle": {"handle": 0, "type": 0}})
    inputs = [np.arange(4).reshape(2, 2) + 10 * i for i in range(5)]
    results, _ = run([[fn]] * 5, inputs)
    expected = [np.zeros((2, 2)), inputs[0], inputs[1], inputs[3], inputs[4]]
    for r, e in zip(results, expected):
        np.testing.assert_array_equal(r, e)


def test_collective_permute_cross_partition_cycle():
    fn = permute_fn({"source_target_pairs": groups([0, 1], [1, 2], [2, 0]),
                     "channel_handle": {"handle": 1, "type": 0}})
    inputs = [np.full((2, 2), i) for i in range(6)]
    results, _ = run([[fn, fn, fn], [fn, fn, fn]], inputs)
    expected = [2, 0, 1, 5, 3, 4]
    for r, e in zip(results, expected):
        np.testing.assert_array_equal(r, np.full((2, 2), e))


# ---------------------------------------------------------------- send / recv / feeds


def test_send_recv_fifo_on_one_channel():
    handle = {"channel_handle": {"handle": 1, "type": 2}, "is_host_transfer": True}

    def sender(args, ctx):
        t1 = op("stablehlo.send", [args[0], TOKEN], [TokenType()], ctx, handle)
        t2 = op("stablehlo.send", [i64(5, 6), TOKEN], [TokenType()], ctx, handle)
        return [t1, t2]

    def receiver(args, ctx):
        a = op("stablehlo.recv", [TOKEN], [tensor((2,), "i64"), TokenType()], ctx, handle)
        b = op("stablehlo.recv", [TOKEN], [tensor((2,), "i64"), TokenType()], ctx, handle)
        return [*a, *b]

    arity = {"sender": 2, "receiver": 1}.get
    results, _ = run([[sender], [receiver]], [i64(1, 2), TOKEN, TOKEN], num_inputs=arity)
    assert results[0] is TOKEN and results[1] is TOKEN
    np.testing.assert_array_equal(results[2], [1, 2])
    assert results[3] is TOKEN
    np.testing.assert_array_equal(results[4], [5, 6])


def test_send_recv_in_a_single_process_context():
    ctx = ExecContext.single_process()
    handle = {"channel_handle": {"handle": 3, "type": 1}}
    op("stablehlo.send", [i64(7), TOKEN], [TokenType()], ctx, handle)
    value, token = op("stablehlo.recv", [TOKEN], [tensor((1,), "i64"), TokenType()], ctx, handle)
    np.testing.assert_array_equal(value, [7])
    assert token is TOKEN


def test_infeed_evaluates_queued_functions_and_outfeed_records():
    def queue0(args, ctx):
        return [np.array([[1, 2], [3, 4]])]

    def queue1(args, ctx):
        return [np.array([[5, 6], [7, 8]])]

    def main(args, ctx):
        t = [tensor((2, 2), "i64"), TokenType()]
        a = op("stablehlo.infeed", [args[0]], t, ctx)
        b = op("stablehlo.infeed", [args[0]], t, ctx)
        op("stablehlo.outfeed", [a[0], b[0], TOKEN], [TokenType()], ctx)
        return [*a, *b]

    table = {"queue0": queue0, "queue1": queue1, "main": main}
    results, grid = run_parallel([["main"]], [TOKEN], lambda n, a, c: table[n](a, c),
                                 lambda name: 1, infeed=["queue0", "queue1"])
    np.testing.assert_array_equal(results[0], [[1, 2], [3, 4]])
    np.testing.assert_array_equal(results[2], [[5, 6], [7, 8]])
    assert results[1] is TOKEN and results[3] is TOKEN
    assert len(grid.outfeed) == 1 and grid.outfeed[0][0] == (0, 0)
    np.testing.assert_array_equal(grid.outfeed[0][1][1], [[5, 6], [7, 8]])


def test_infeed_of_values_and_empty_infeed():
    ctx = ExecContext.single_process(infeed=[[i64(1, 2)]])
    t = [tensor((2,), "i64"), TokenType()]
    value, _ = op("stablehlo.infeed", [TOKEN], t, ctx)
    np.testing.assert_array_equal(value, [1, 2])
    with pytest.raises(InterpreterError, match="infeed is empty"):
        op("stablehlo.infeed", [TOKEN], t, ctx)


# ---------------------------------------------------------------- failures


def test_rendezvous_timeout_names_the_op():
    attrs = {"replica_groups": groups([0, 1])}

    def reducer(args, ctx):
        return op("stablehlo.all_reduce", args, [tensor((1,), "i64")], ctx, attrs, [add_region])

    def idler(args, ctx):
        return [args[0]]

    start = time.monotonic()
    with pytest.raises(InterpreterError, match="stablehlo.all_reduce.*timed out"):
        run([[reducer], [idler]], [i64(1), i64(2)], timeout=0.3)
    assert time.monotonic() - start < 5


def test_error_in_one_process_aborts_the_others():
    attrs = {"replica_groups": groups([0, 1])}

    def reducer(args, ctx):
        return op("stablehlo.all_reduce", args, [tensor((1,), "i64")], ctx, attrs, [add_region])

    def broken(args, ctx):
        raise ValueError("boom")

    start = time.monotonic()
    with pytest.raises(ValueError, match="boom"):
        run([[reducer], [broken]], [i64(1), i64(2)], timeout=20)
    assert time.monotonic() - start < 5
    assert threading.active_count() < 10


def test_bad_input_count_and_bad_programs():
    with pytest.raises(InterpreterError, match="inputs"):
        run_parallel([["f"]], [1, 2], lambda n, a, c: [], lambda name: 1)
    with pytest.raises(InterpreterError, match="rectangular"):
        run_parallel([["f"], ["f", "f"]], [], lambda n, a, c: [], lambda name: 0)


def test_process_outside_every_group_is_an_error():
    attrs = {"replica_groups": groups([0])}

    def fn(args, ctx):
        return op("stablehlo.all_reduce", args, [tensor((1,), "i64")], ctx, attrs, [add_region])

    with pytest.raises(InterpreterError, match="no process group"):
        run([[fn], [fn]], [i64(1), i64(2)])


def test_run_parallel_shares_the_callers_probes():
    outer = ExecContext.single_process()

    def fn(args, ctx):
        return [op("interpreter.probe", args, [tensor((), "i64")], ctx, {"probe_id": "x"})]

    run([[fn], [fn]], [np.int64(1), np.int64(1)], probes=outer.probes)
    assert outer.probes.count("x") == 2
