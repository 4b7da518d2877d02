"""Moving a value from one sharding to another inside the per-device program.

`Resharder.reshard(value, shape, src, dst, consumer, why)` appends to the block the ops that
turn the local block of `value` (sharded as `src`) into the local block of `dst`, in order:
1. pending sums: `reduce_scatter` for an axis that `dst` shards a dimension over next (the
   sum lands already split), `all_reduce` for the rest;
2. axes to remove from a dimension: `all_to_all` when the one axis moves to another
   dimension, else `all_gather` (minor axes of a dimension first);
3. axes to add: a local `dynamic_slice` at an offset read from a table by `partition_id`.
Every collective is recorded as a `Collective` (kind, where, why, group, bytes).

Bytes are per device, sent, by the ring model: all_gather (g-1)*S of a shard S, all_reduce
2(g-1)/g*S, reduce_scatter and all_to_all (g-1)/g*S of the operand S.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from axle.ir.attributes import (DenseElementsAttr, IntegerAttr, StructAttr, UnitAttr,
                                dense_array)
from axle.ir.core import Block, Operation, Region
from axle.ir.types import TensorType, element_type
from axle.sharding.mesh import NamedSharding, ShardingError

I64 = element_type("i64")
I32 = element_type("i32")


@dataclass
class Collective:
    kind: str
    consumer: str  # op name @ location that needed it
    value: str  # the value moved, as its type
    why: str
    axes: tuple
    group_size: int
    bytes_per_device: int
    num_devices: int

    @property
    def total_bytes(self) -> int:
        return self.bytes_per_device * self.num_devices

    def line(self) -> str:
        return (f"{self.kind:<17} {self.consumer}: {self.value} over {list(self.axes)} "
                f"(groups of {self.group_size}); {self.bytes_per_device} B/device, "
                f"{self.total_bytes} B total; why: {self.why}")


def _nbytes(shape, et) -> int:
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(et.dtype).itemsize


class Resharder:
    def __init__(self, block: Block, mesh, first_channel: int = 0):
        self.block = block
        self.mesh = mesh
        self.collectives: list[Collective] = []
        self._channel = first_channel
        self._pid = None

    # -- op builders

    def _emit(self, name, operands, result_type, attrs=None, regions=()):
        op = Operation(name, operands, [result_type], attrs or {}, regions)
        self.block.append(op)
        return op.result

    def _groups_attr(self, axes):
        groups = self.mesh.groups(list(axes))
        arr = np.array(groups, dtype=np.int64)
        return DenseElementsAttr(TensorType(arr.shape, I64), arr), len(groups[0])

    def _channel_attrs(self, axes, global_ids=True):
        self._channel += 1
        groups, g = self._groups_attr(axes)
        attrs = {"replica_groups": groups,
                 "channel_handle": StructAttr("stablehlo.channel_handle",
                                              (("handle", IntegerAttr(self._channel)), ("type", IntegerAttr(1))))}
        if global_ids:
            attrs["use_global_device_ids"] = UnitAttr()
        return attrs, g

    @staticmethod
    def _add_region(et):
        scalar = TensorType((), et)
        b = Block([scalar, scalar])
        add = Operation("stablehlo.add", list(b.arguments), [scalar])
        b.append(add)
        b.append(Operation("stablehlo.return", [add.result]))
        return Region([b])

    def _record(self, kind, consumer, value_type, why, axes, g, nbytes):
        self.collectives.append(Collective(kind, consumer, str(value_type), why, tuple(axes), g,
                                           int(nbytes), self.mesh.size))

    def _partition_index(self):
        if self._pid is None:
            pid = self._emit("stablehlo.partition_id", [], TensorType((), element_type("ui32")))
            self._pid = self._emit("stablehlo.convert", [pid], TensorType((), I32))
        return self._pid

    def _offset(self, table):
        """A scalar i32: table[partition_id]."""
        arr = np.array(table, dtype=np.int32)
        t = TensorType((len(table),), I32)
        const = self._emit("stablehlo.constant", [], t, {"value": DenseElementsAttr(t, arr)})
        one = self._emit("stablehlo.dynamic_slice", [const, self._partition_index()], TensorType((1,), I32),
                         {"slice_sizes": dense_array([1])})
        return self._emit("stablehlo.reshape", [one], TensorType((), I32))

    def _zero(self):
        t = TensorType((), I32)
        return self._emit("stablehlo.constant", [], t, {"value": DenseElementsAttr(t, np.array(0, np.int32))})

    def mirror(self, value, axes, consumer: str, why: str):
        """collective_permute: the device at coordinate c of each of `axes` takes the block of
        the device at size-1-c (the blocks of a reversed dim swap ends)."""
        pairs = []
        for dev in self.mesh.device_ids:
            c = self.mesh.coords(dev)
            for a in axes:
                c[a] = self.mesh.axis_size(a) - 1 - c[a]
            pos = 0
            for n, size in self.mesh.axes:
                pos = pos * size + c[n]
            pairs.append((dev, self.mesh.device_ids[pos]))
        arr = np.array(pairs, dtype=np.int64)
        self._channel += 1
        attrs = {"source_target_pairs": DenseElementsAttr(TensorType(arr.shape, I64), arr),
                 "channel_handle": StructAttr("stablehlo.channel_handle",
                                              (("handle", IntegerAttr(self._channel)), ("type", IntegerAttr(1))))}
        out = self._emit("stablehlo.collective_permute", [value], value.type, attrs)
        moved = sum(1 for s, t in pairs if s != t)
        g = int(np.prod([self.mesh.axis_size(a) for a in axes]))
        self._record("collective_permute", consumer, value.type, f"{why}: blocks mirrored over {list(axes)}",
                     axes, g, _nbytes(value.type.shape, value.type.element_type) * moved // max(self.mesh.size, 1))
        return out

    # -- the steps

    def reshard(self, value, global_shape, src: NamedSharding, dst: NamedSharding, consumer: str, why: str):
        rank = len(global_shape)
        if src.same_as(dst, rank):
            return value
        et = value.type.element_type
        cur = [list(d) for d in src.dims(rank)]
        want = [list(d) for d in dst.dims(rank)]
        partial = [a for a in src.partial if a not in dst.partial]
        if set(dst.partial) - set(src.partial):
            raise ShardingError(f"{consumer}: cannot make a pending sum over {sorted(set(dst.partial) - set(src.partial))}")
        local = list(value.type.shape)
        # 1. pending sums
        for a in list(partial):
            for d in range(rank):
                g = self.mesh.axis_size(a)
                if want[d][:len(cur[d]) + 1] == cur[d] + [a] and local[d] % g == 0:
                    attrs, g = self._channel_attrs([a])
                    attrs["scatter_dimension"] = IntegerAttr(d, I64)
                    nbytes = _nbytes(local, et) * (g - 1) // g
                    out = list(local)
                    out[d] //= g
                    value = self._emit("stablehlo.reduce_scatter", [value], TensorType(tuple(out), et), attrs,
                                       [self._add_region(et)])
                    self._record("reduce_scatter", consumer, TensorType(tuple(local), et),
                                 f"{why}: pending sum over {[a]} wanted split on dim {d}", [a], g, nbytes)
                    local, cur[d] = out, cur[d] + [a]
                    partial.remove(a)
                    break
        if partial:
            attrs, g = self._channel_attrs(partial)
            value = self._emit("stablehlo.all_reduce", [value], TensorType(tuple(local), et), attrs,
                               [self._add_region(et)])
            self._record("all_reduce", consumer, TensorType(tuple(local), et),
                         f"{why}: pending sum over {partial} needed whole", partial, g,
                         2 * (g - 1) * _nbytes(local, et) // g)
        # 2. remove axes
        for d in range(rank):
            k = 0
            while k < min(len(cur[d]), len(want[d])) and cur[d][k] == want[d][k]:
                k += 1
            extra = cur[d][k:]
            if not extra:
                continue
            if k == 0:  # every axis of the dim leaves it: all_to_all if they all go to one other dim
                g = int(np.prod([self.mesh.axis_size(a) for a in extra]))
                target = next((e for e in range(rank) if e != d and local[e] % g == 0
                               and want[e][:len(cur[e]) + len(extra)] == cur[e] + extra), None)
                if target is not None:
                    attrs, g = self._channel_attrs(extra, global_ids=False)
                    attrs.update(split_dimension=IntegerAttr(target, I64), concat_dimension=IntegerAttr(d, I64),
                                 split_count=IntegerAttr(g, I64))
                    out = list(local)
                    out[target] //= g
                    out[d] *= g
                    value = self._emit("stablehlo.all_to_all", [value], TensorType(tuple(out), et), attrs)
                    self._record("all_to_all", consumer, TensorType(tuple(local), et),
                                 f"{why}: {extra} move from dim {d} to dim {target}", extra, g,
                                 _nbytes(local, et) * (g - 1) // g)
                    local, cur[d], cur[target] = out, [], cur[target] + extra
                    continue
            attrs, g = self._channel_attrs(extra)
            attrs["all_gather_dim"] = IntegerAttr(d, I64)
            out = list(local)
            out[d] *= g
            value = self._emit("stablehlo.all_gather", [value], TensorType(tuple(out), et), attrs)
            self._record("all_gather", consumer, TensorType(tuple(local), et),
                         f"{why}: dim {d} split over {extra}, wanted {want[d] or 'whole'}", extra, g,
                         _nbytes(local, et) * (g - 1))
            local, cur[d] = out, cur[d][:k]
        # 3. add axes: local slices
        offsets = []
        sliced = False
        for d in range(rank):
            if cur[d] != want[d][:len(cur[d])]:
                raise ShardingError(f"{consumer}: internal: dim {d} is {cur[d]}, wanted {want[d]}")
            added = want[d][len(cur[d]):]
            if not added:
                offsets.append(None)
                continue
            g = int(np.prod([self.mesh.axis_size(a) for a in added]))
            if local[d] % g:
                raise ShardingError(f"{consumer}: dim {d} of local size {local[d]} does not split {g} ways")
            size = local[d] // g
            table = []
            for dev in range(self.mesh.size):
                c = self.mesh.coords(dev)
                i = 0
                for a in added:
                    i = i * self.mesh.axis_size(a) + c[a]
                table.append(i * size)
            offsets.append(table)
            local[d] = size
            sliced = True
        if sliced:
            zero = None
            idx = []
            for table in offsets:
                if table is None:
                    zero = zero or self._zero()
                    idx.append(zero)
                else:
                    idx.append(self._offset(table))
            value = self._emit("stablehlo.dynamic_slice", [value] + idx, TensorType(tuple(local), et),
                               {"slice_sizes": dense_array(local)})
        return value
