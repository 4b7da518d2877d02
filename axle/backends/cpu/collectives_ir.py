"""The native collectives' runtime as LLVM IR text (built once per process by
collectives_native.py; generated programs call its `axle_coll_*` functions).

A communicator is an array of i64 words (collectives_native.Communicator):

    0 ndev  1 abort  2 transport (0 shared memory, 1 MPI)  3 MPI_Sendrecv's address
    4 MPI comm handle  5 MPI_BYTE handle  6 MPI_STATUS_IGNORE  7 num_partitions  8 MPI_PROC_NULL  9 error
    16 + 8*d: device d's barrier count, its published operand and result pointers

A device thread is bound to (communicator, device id) by `axle_coll_bind` (a table keyed by
pthread_self); an unbound thread is device 0 of a world of one. Groups come as the op's id
lists and a mode: 0 the ids are device ids (use_global_device_ids), 1 partition ids
(cross_partition), 2 replica ids (cross_replica); device = replica * P + partition.

Shared memory: every member publishes its pointers, meets the group at a barrier (a count
per device, stored and read with sequentially consistent atomics; the arriving device wakes
futex waiters on its count; a waiter spins with `pause` about 2000 times, then sleeps on the
futex of the count it waits for, at most 1 ms at a time so that it sees an abort), reads
the others' buffers directly and writes its share, and meets the
group again before anyone may reuse its buffers. all_reduce: member k reduces slice k of
the flattened operand over the group (in member order) and writes it into every member's
result. MPI: pairwise MPI_Sendrecv of raw bytes in the shift order (step s: send to k+s,
receive from k-s), the same slices; no barrier needed. A waiter leaves when the
communicator's abort word is set (a device failed); the runner then raises.
"""
from __future__ import annotations

# reduction kinds: code = 16 * op + type
OPS = ("add", "mul", "max", "min", "and", "or", "xor")
TYPES = ("f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "pred")
_LL = {"f16": "half", "f32": "float", "f64": "double", "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64",
       "u8": "i8", "u16": "i16", "u32": "i32", "u64": "i64", "pred": "i8"}


def _combine(op: str, ty: str) -> str | None:
    """IR computing %r from %a, %b (None: not defined for the type)."""
    t = _LL[ty]
    fl = ty.startswith("f")
    if ty == "pred":
        op = {"add": "or", "mul": "and", "max": "or", "min": "and"}.get(op, op)
    if op in ("add", "mul"):
        return f"%r = {'f' if fl else ''}{op} {t} %a, %b"
    if op in ("and", "or", "xor"):
        return None if fl else f"%r = {op} {t} %a, %b"
    if fl:
        pred = "ogt" if op == "max" else "olt"
        return (f"%c = fcmp {pred} {t} %a, %b\n  %m = select i1 %c, {t} %a, {t} %b\n"
                f"  %u = fcmp uno {t} %a, %a\n  %r = select i1 %u, {t} %a, {t} %m")
    sign = "u" if ty.startswith("u") else "s"
    pred = f"{sign}gt" if op == "max" else f"{sign}lt"
    return f"%c = icmp {pred} {t} %a, %b\n  %r = select i1 %c, {t} %a, {t} %b"


def reduction_code(op: str, ty: str) -> int | None:
    if op not in OPS or ty not in TYPES or _combine(op, ty) is None:
        return None
    return 16 * OPS.index(op) + TYPES.index(ty)


def _reductions() -> str:
    out, cases = [], []
    for op in OPS:
        for ty in TYPES:
            body = _combine(op, ty)
            if body is None:
                continue
            t = _LL[ty]
            name = f"@red_{op}_{ty}"
            out.append(f"""
define internal void {name}(ptr noalias %d, ptr noalias %s, i64 %n) {{
entry:
  %z = icmp eq i64 %n, 0
  br i1 %z, label %done, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %pd = getelementptr inbounds {t}, ptr %d, i64 %i
  %ps = getelementptr inbounds {t}, ptr %s, i64 %i
  %a = load {t}, ptr %pd
  %b = load {t}, ptr %ps
  {body}
  store {t} %r, ptr %pd
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}}""")
            cases.append((reduction_code(op, ty), name))
    sw = " ".join(f"i64 {c}, label %c{c}" for c, _ in cases)
    blocks = "\n".join(f"c{c}:\n  call void {n}(ptr %d, ptr %s, i64 %n)\n  ret void" for c, n in cases)
    out.append(f"""
define internal void @reduce(i64 %code, ptr %d, ptr %s, i64 %n) {{
entry:
  switch i64 %code, label %bad [ {sw} ]
{blocks}
bad:
  ret void
}}""")
    return "\n".join(out)


RUNTIME_IR = r"""
@threads = internal global [256 x [3 x i64]] zeroinitializer, align 64
@solo = internal global [32 x i64] [i64 1, i64 0, i64 0, i64 0, i64 0, i64 0, i64 0, i64 1, i64 0, i64 0, i64 0, i64 0, i64 0, i64 0, i64 0, i64 0, i64 0, i64 0, i64 0, i64 0, i64 0, i64 0, i64 0, i64 0, i64 0, i64 0, i64 0, i64 0, i64 0, i64 0, i64 0, i64 0], align 64

declare i64 @axle_pthread_self()
declare i64 @axle_syscall(i64, ptr, i64, i64, ptr)
declare ptr @axle_malloc(i64)
declare void @axle_free(ptr)
declare void @llvm.x86.sse2.pause()
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
declare void @llvm.memmove.p0.p0.i64(ptr, ptr, i64, i1)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)

define internal ptr @word(ptr %c, i64 %i) {
  %p = getelementptr inbounds i64, ptr %c, i64 %i
  ret ptr %p
}

define internal ptr @dword(ptr %c, i64 %d, i64 %k) {
  %a = mul i64 %d, 8
  %b = add i64 %a, 16
  %i = add i64 %b, %k
  %p = getelementptr inbounds i64, ptr %c, i64 %i
  ret ptr %p
}

; the slot of this thread in @threads, or -1
define internal i64 @slot(i64 %tid) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %next ]
  %p = getelementptr inbounds [256 x [3 x i64]], ptr @threads, i64 0, i64 %i, i64 0
  %t = load atomic i64, ptr %p acquire, align 8
  %hit = icmp eq i64 %t, %tid
  br i1 %hit, label %found, label %next
next:
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, 256
  br i1 %more, label %loop, label %none
found:
  ret i64 %i
none:
  ret i64 -1
}

; returns 0, or 1 when the table is full
define i64 @axle_coll_bind(ptr %comm, i64 %dev) {
entry:
  %tid = call i64 @axle_pthread_self()
  %s = call i64 @slot(i64 %tid)
  %have = icmp sge i64 %s, 0
  br i1 %have, label %set, label %claim
claim:
  %i = phi i64 [ 0, %entry ], [ %i1, %next ]
  %p = getelementptr inbounds [256 x [3 x i64]], ptr @threads, i64 0, i64 %i, i64 0
  %r = cmpxchg ptr %p, i64 0, i64 %tid acq_rel acquire
  %ok = extractvalue { i64, i1 } %r, 1
  br i1 %ok, label %set, label %next
next:
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, 256
  br i1 %more, label %claim, label %full
set:
  %k = phi i64 [ %s, %entry ], [ %i, %claim ]
  %pc = getelementptr inbounds [256 x [3 x i64]], ptr @threads, i64 0, i64 %k, i64 1
  %ci = ptrtoint ptr %comm to i64
  store i64 %ci, ptr %pc
  %pd = getelementptr inbounds [256 x [3 x i64]], ptr @threads, i64 0, i64 %k, i64 2
  store i64 %dev, ptr %pd
  ret i64 0
full:
  ret i64 1
}

define void @axle_coll_unbind() {
entry:
  %tid = call i64 @axle_pthread_self()
  %s = call i64 @slot(i64 %tid)
  %have = icmp sge i64 %s, 0
  br i1 %have, label %clear, label %done
clear:
  %p = getelementptr inbounds [256 x [3 x i64]], ptr @threads, i64 0, i64 %s, i64 0
  store atomic i64 0, ptr %p release, align 8
  br label %done
done:
  ret void
}

; this thread's communicator and device (the solo world when unbound)
define internal ptr @me(ptr %dev) {
entry:
  %tid = call i64 @axle_pthread_self()
  %s = call i64 @slot(i64 %tid)
  %have = icmp sge i64 %s, 0
  br i1 %have, label %bound, label %alone
bound:
  %pc = getelementptr inbounds [256 x [3 x i64]], ptr @threads, i64 0, i64 %s, i64 1
  %ci = load i64, ptr %pc
  %c = inttoptr i64 %ci to ptr
  %pd = getelementptr inbounds [256 x [3 x i64]], ptr @threads, i64 0, i64 %s, i64 2
  %d = load i64, ptr %pd
  store i64 %d, ptr %dev
  ret ptr %c
alone:
  store i64 0, ptr %dev
  ret ptr @solo
}

define i64 @axle_coll_partition_id() {
  %dp = alloca i64
  %c = call ptr @me(ptr %dp)
  %d = load i64, ptr %dp
  %pp = call ptr @word(ptr %c, i64 7)
  %p = load i64, ptr %pp
  %r = urem i64 %d, %p
  ret i64 %r
}

define i64 @axle_coll_replica_id() {
  %dp = alloca i64
  %c = call ptr @me(ptr %dp)
  %d = load i64, ptr %dp
  %pp = call ptr @word(ptr %c, i64 7)
  %p = load i64, ptr %pp
  %r = udiv i64 %d, %p
  ret i64 %r
}

define internal void @fail(ptr %c) {
  %e = call ptr @word(ptr %c, i64 9)
  store i64 1, ptr %e
  %a = call ptr @word(ptr %c, i64 1)
  store atomic i64 1, ptr %a release, align 8
  ret void
}

; the device id of group entry q for device dev (see the module doc)
define internal i64 @member(ptr %c, i64 %mode, i64 %dev, i64 %q) {
entry:
  %pp = call ptr @word(ptr %c, i64 7)
  %p = load i64, ptr %pp
  %r = udiv i64 %dev, %p
  %pa = urem i64 %dev, %p
  %rp = mul i64 %r, %p
  %m1 = add i64 %rp, %q
  %qp = mul i64 %q, %p
  %m2 = add i64 %qp, %pa
  %is1 = icmp eq i64 %mode, 1
  %is2 = icmp eq i64 %mode, 2
  %x = select i1 %is1, i64 %m1, i64 %q
  %y = select i1 %is2, i64 %m2, i64 %x
  ret i64 %y
}

; fills members[len] with dev's group and returns dev's index in it (-1: in no group, or a
; member outside the world: the communicator is failed)
define internal i64 @group(ptr %c, i64 %dev, i64 %mode, ptr %ids, i64 %nrows, i64 %len, ptr %members) {
entry:
  %np = call ptr @word(ptr %c, i64 0)
  %n = load i64, ptr %np
  br label %row
row:
  %ri = phi i64 [ 0, %entry ], [ %ri1, %rownext ]
  %more = icmp ult i64 %ri, %nrows
  br i1 %more, label %col0, label %none
col0:
  %base = mul i64 %ri, %len
  br label %col
col:
  %j = phi i64 [ 0, %col0 ], [ %j1, %colnext ]
  %cm = icmp ult i64 %j, %len
  br i1 %cm, label %colbody, label %rowdone
colbody:
  %idx = add i64 %base, %j
  %pq = getelementptr inbounds i64, ptr %ids, i64 %idx
  %q = load i64, ptr %pq
  %m = call i64 @member(ptr %c, i64 %mode, i64 %dev, i64 %q)
  %pm = getelementptr inbounds i64, ptr %members, i64 %j
  store i64 %m, ptr %pm
  %bad = icmp uge i64 %m, %n
  br i1 %bad, label %none, label %colnext
colnext:
  %j1 = add i64 %j, 1
  br label %col
rowdone:
  br label %find
find:
  %k = phi i64 [ 0, %rowdone ], [ %k1, %findnext ]
  %fm = icmp ult i64 %k, %len
  br i1 %fm, label %findbody, label %rownext
findbody:
  %pk = getelementptr inbounds i64, ptr %members, i64 %k
  %mk = load i64, ptr %pk
  %me = icmp eq i64 %mk, %dev
  br i1 %me, label %found, label %findnext
findnext:
  %k1 = add i64 %k, 1
  br label %find
rownext:
  %ri1 = add i64 %ri, 1
  br label %row
found:
  ret i64 %k
none:
  call void @fail(ptr %c)
  ret i64 -1
}

; meet the group: returns 1, or 0 when the communicator was aborted
define internal i64 @barrier(ptr %c, i64 %dev, ptr %members, i64 %g) {
entry:
  ; a group of one meets nobody (and an unbound thread's solo world is shared by threads)
  %alone = icmp ule i64 %g, 1
  br i1 %alone, label %done, label %start
start:
  %sp = call ptr @dword(ptr %c, i64 %dev, i64 0)
  %s0 = load atomic i64, ptr %sp monotonic, align 8
  %s = add i64 %s0, 1
  store atomic i64 %s, ptr %sp seq_cst, align 8
  %wk = call i64 @axle_syscall(i64 202, ptr %sp, i64 129, i64 2147483647, ptr null)
  %ab = call ptr @word(ptr %c, i64 1)
  %ts = alloca [2 x i64]
  store [2 x i64] [i64 0, i64 1000000], ptr %ts
  br label %each
each:
  %j = phi i64 [ 0, %start ], [ %j1, %arrived ]
  %m = icmp ult i64 %j, %g
  br i1 %m, label %wait0, label %done
wait0:
  %pm = getelementptr inbounds i64, ptr %members, i64 %j
  %mj = load i64, ptr %pm
  %mp = call ptr @dword(ptr %c, i64 %mj, i64 0)
  br label %wait
wait:
  %w = phi i64 [ 0, %wait0 ], [ %w1, %spin ], [ 0, %yield ]
  %v = load atomic i64, ptr %mp seq_cst, align 8
  %there = icmp sge i64 %v, %s
  br i1 %there, label %arrived, label %check
check:
  %a = load atomic i64, ptr %ab acquire, align 8
  %gone = icmp ne i64 %a, 0
  br i1 %gone, label %aborted, label %spin
spin:
  call void @llvm.x86.sse2.pause()
  %w1 = add i64 %w, 1
  %long = icmp ugt i64 %w1, 2000
  br i1 %long, label %yield, label %wait
yield:
  ; sleep until that member's count changes (futex on its low 32 bits), at most 1 ms so
  ; that an abort is seen
  %v32 = trunc i64 %v to i32
  %v64 = zext i32 %v32 to i64
  %y = call i64 @axle_syscall(i64 202, ptr %mp, i64 128, i64 %v64, ptr %ts)
  br label %wait
arrived:
  %j1 = add i64 %j, 1
  br label %each
done:
  ret i64 1
aborted:
  ret i64 0
}

define internal ptr @peer(ptr %c, ptr %members, i64 %j, i64 %k) {
  %pm = getelementptr inbounds i64, ptr %members, i64 %j
  %m = load i64, ptr %pm
  %pp = call ptr @dword(ptr %c, i64 %m, i64 %k)
  %v = load i64, ptr %pp
  %p = inttoptr i64 %v to ptr
  ret ptr %p
}

define internal void @publish(ptr %c, i64 %dev, ptr %in, ptr %out) {
  %pi = call ptr @dword(ptr %c, i64 %dev, i64 1)
  %ii = ptrtoint ptr %in to i64
  store i64 %ii, ptr %pi
  %po = call ptr @dword(ptr %c, i64 %dev, i64 2)
  %oi = ptrtoint ptr %out to i64
  store i64 %oi, ptr %po
  ret void
}

; copy `total` bytes in runs of r: byte e of the piece is at
; base + (e / B) * g * B + blk * B + e % B on each side (B = total, blk = 0: contiguous)
define internal void @runs(ptr %dst, i64 %dB, i64 %dblk, ptr %src, i64 %sB, i64 %sblk, i64 %g, i64 %total, i64 %r) {
entry:
  %r0 = icmp eq i64 %r, 0
  br i1 %r0, label %done, label %start
start:
  %dgb = mul i64 %g, %dB
  %sgb = mul i64 %g, %sB
  %doff = mul i64 %dblk, %dB
  %soff = mul i64 %sblk, %sB
  br label %loop
loop:
  %e = phi i64 [ 0, %start ], [ %e1, %body ]
  %more = icmp ult i64 %e, %total
  br i1 %more, label %body, label %done
body:
  %dq = udiv i64 %e, %dB
  %dr = urem i64 %e, %dB
  %d1 = mul i64 %dq, %dgb
  %d2 = add i64 %d1, %doff
  %d3 = add i64 %d2, %dr
  %sq = udiv i64 %e, %sB
  %sr = urem i64 %e, %sB
  %s1 = mul i64 %sq, %sgb
  %s2 = add i64 %s1, %soff
  %s3 = add i64 %s2, %sr
  %pd = getelementptr inbounds i8, ptr %dst, i64 %d3
  %ps = getelementptr inbounds i8, ptr %src, i64 %s3
  call void @llvm.memmove.p0.p0.i64(ptr %pd, ptr %ps, i64 %r, i1 false)
  %e1 = add i64 %e, %r
  br label %loop
done:
  ret void
}

define internal ptr @at(ptr %p, i64 %off) {
  %q = getelementptr inbounds i8, ptr %p, i64 %off
  ret ptr %q
}

; MPI_Sendrecv of raw bytes (tag 0); a peer of -1 is MPI_PROC_NULL
define internal void @sendrecv(ptr %c, ptr %sbuf, i64 %sn, i64 %dest, ptr %rbuf, i64 %rn, i64 %src) {
entry:
  %fp = call ptr @word(ptr %c, i64 3)
  %fi = load i64, ptr %fp
  %f = inttoptr i64 %fi to ptr
  %cp = call ptr @word(ptr %c, i64 4)
  %cw = load i64, ptr %cp
  %bp = call ptr @word(ptr %c, i64 5)
  %bw = load i64, ptr %bp
  %np = call ptr @word(ptr %c, i64 8)
  %null = load i64, ptr %np
  %dn = icmp slt i64 %dest, 0
  %d = select i1 %dn, i64 %null, i64 %dest
  %sn0 = icmp slt i64 %src, 0
  %s = select i1 %sn0, i64 %null, i64 %src
  %comm = HANDLE_CONV_C
  %byte = HANDLE_CONV_B
  %sn32 = trunc i64 %sn to i32
  %rn32 = trunc i64 %rn to i32
  %d32 = trunc i64 %d to i32
  %s32 = trunc i64 %s to i32
  %stp = call ptr @word(ptr %c, i64 6)
  %stw = load i64, ptr %stp
  %st = inttoptr i64 %stw to ptr
  %rc = call i32 %f(ptr %sbuf, i32 %sn32, HANDLE %byte, i32 %d32, i32 0, ptr %rbuf, i32 %rn32, HANDLE %byte, i32 %s32, i32 0, HANDLE %comm, ptr %st)
  %bad = icmp ne i32 %rc, 0
  br i1 %bad, label %err, label %ok
err:
  call void @fail(ptr %c)
  ret void
ok:
  ret void
}

define internal i64 @is_mpi(ptr %c) {
  %p = call ptr @word(ptr %c, i64 2)
  %v = load i64, ptr %p
  ret i64 %v
}
"""
