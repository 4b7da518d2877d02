"""The collectives' entry points (LLVM IR text; the helpers they call: collectives_ir.py).

Every entry takes the op's group ids (mode, ids, rows, row length: collectives_ir's module
doc), its operand and result pointers, and constants of the op's layout; it branches once on
the communicator's transport (shared memory or MPI).

    all_reduce(code, es, n, ...)            n elements; member k owns slice [n*k/g, n*(k+1)/g)
    all_gather(outer, inner, ...)           inner bytes per row: out[o, j, :] = in_j[o, :]
    reduce_scatter(code, es, outer, inner, ...)  in[o, j, :] rows of inner elements
    all_to_all(Bs, Bc, piece, r, ...)       piece k of in_j (in viewed [A, g, Bs] bytes) goes to
                                            block j of out_k (viewed [C, g, Bc]), in runs of r
    collective_permute(nbytes, mode, pairs, npairs, in, out)
"""
from __future__ import annotations

import re


def _labels(text: str) -> str:
    """`$name:` in a loop body became `%loop.name:`: a label definition has no `%`."""
    return re.sub(r"^%([\w.]+):", r"\1:", text, flags=re.M)

_PROLOGUE = r"""
entry:
  %dp = alloca i64
  %c = call ptr @me(ptr %dp)
  %dev = load i64, ptr %dp
  %members = alloca i64, i64 %len
  %k = call i64 @group(ptr %c, i64 %dev, i64 %mode, ptr %ids, i64 %nrows, i64 %len, ptr %members)
  %g = add i64 %len, 0
  %nok = icmp slt i64 %k, 0
  br i1 %nok, label %end, label %go
go:
  %mpiw = call i64 @is_mpi(ptr %c)
  %ism = icmp ne i64 %mpiw, 0
  br i1 %ism, label %mpi0, label %shm0
"""

# a loop over s in [1, g): the shift partners di = (k+s)%g, si = (k-s+g)%g and their devices
def _shift_loop(name: str, body: str, after: str) -> str:
    return f"""
  br label %{name}
{name}:
  %{name}.s = phi i64 [ 1, %{name}.pre ], [ %{name}.s1, %{name}.latch ]
  %{name}.more = icmp ult i64 %{name}.s, %g
  br i1 %{name}.more, label %{name}.body0, label %{after}
{name}.body0:
  %{name}.a = add i64 %k, %{name}.s
  %di = urem i64 %{name}.a, %g
  %{name}.b = add i64 %k, %g
  %{name}.c = sub i64 %{name}.b, %{name}.s
  %si = urem i64 %{name}.c, %g
  %dd = call i64 @mem(ptr %members, i64 %di)
  %sd = call i64 @mem(ptr %members, i64 %si)
  br label %{name}.body
{name}.body:
{body}
  br label %{name}.latch
{name}.latch:
  %{name}.s1 = add i64 %{name}.s, 1
  br label %{name}
""".replace("%di", f"%{name}.di").replace("%si", f"%{name}.si").replace("%dd", f"%{name}.dd").replace(
        "%sd", f"%{name}.sd").replace("$", f"%{name}.")  # noqa: E501


# a loop over member index j in [0, g)
def _member_loop(name: str, body: str, after: str) -> str:
    return f"""
  br label %{name}
{name}:
  %{name}.j = phi i64 [ 0, %{name}.pre ], [ %{name}.j1, %{name}.latch ]
  %{name}.more = icmp ult i64 %{name}.j, %g
  br i1 %{name}.more, label %{name}.body0, label %{after}
{name}.body0:
  %{name}.self = icmp eq i64 %{name}.j, %k
  %{name}.peer = call ptr @peer(ptr %c, ptr %members, i64 %{name}.j, i64 1)
  %{name}.src = select i1 %{name}.self, ptr %in, ptr %{name}.peer
  br label %{name}.body
{name}.body:
{body}
  br label %{name}.latch
{name}.latch:
  %{name}.j1 = add i64 %{name}.j, 1
  br label %{name}
""".replace("$", f"%{name}.")


# the shared-memory path of a collective over a group of %g members: publish this member's
# buffers, wait for the group (a failed barrier ends the collective), ... , wait again
_SHM_OPEN = """shm:
  call void @publish(ptr %c, i64 %dev, ptr %in, ptr %out)
  %ok1 = call i64 @barrier(ptr %c, i64 %dev, ptr %members, i64 %g)
  %ab1 = icmp eq i64 %ok1, 0
  br i1 %ab1, label %end, label %past1
past1:"""
_SHM_CLOSE = """shmend:
  %ok2 = call i64 @barrier(ptr %c, i64 %dev, ptr %members, i64 %g)
  br label %end"""


def _pre(name: str) -> str:
    return f"  br label %{name}.pre\n{name}.pre:"


_GROUP_ARGS = "i64 %mode, ptr %ids, i64 %nrows, i64 %len, ptr %in, ptr %out"

ALL_REDUCE = f"""
define void @axle_coll_all_reduce(i64 %code, i64 %es, i64 %n, {_GROUP_ARGS}) {{
{_PROLOGUE}
shm0:
  %lo0 = mul i64 %n, %k
  %lo = udiv i64 %lo0, %g
  %k1 = add i64 %k, 1
  %hi0 = mul i64 %n, %k1
  %hi = udiv i64 %hi0, %g
  %cnt = sub i64 %hi, %lo
  %lob = mul i64 %lo, %es
  %cb = mul i64 %cnt, %es
  %mine = call ptr @at(ptr %out, i64 %lob)
  %myin = call ptr @at(ptr %in, i64 %lob)
  br i1 %ism, label %mpi, label %shm
{_SHM_OPEN}
  call void @llvm.memmove.p0.p0.i64(ptr %mine, ptr %myin, i64 %cb, i1 false)
{_pre("red")}
{_member_loop("red", '''  br i1 $self, label $skip, label $do
$do:
  $p = call ptr @at(ptr $peer, i64 %lob)
  call void @reduce(i64 %code, ptr %mine, ptr $p, i64 %cnt)
  br label $skip
$skip:''', "copy.pre0")}
copy.pre0:
{_pre("copy")}
{_member_loop("copy", '''  br i1 $self, label $skip, label $do
$do:
  $o = call ptr @peer(ptr %c, ptr %members, i64 $j, i64 2)
  $p = call ptr @at(ptr $o, i64 %lob)
  call void @llvm.memcpy.p0.p0.i64(ptr $p, ptr %mine, i64 %cb, i1 false)
  br label $skip
$skip:''', "shmend")}
{_SHM_CLOSE}
mpi0:
  br label %shm0
mpi:
  %tb0 = mul i64 %cb, %g
  %tb = add i64 %tb0, 16
  %tmp = call ptr @axle_malloc(i64 %tb)
{_pre("x")}
{_shift_loop("x", '''  $dlo0 = mul i64 %n, $di
  $dlo = udiv i64 $dlo0, %g
  $di1 = add i64 $di, 1
  $dhi0 = mul i64 %n, $di1
  $dhi = udiv i64 $dhi0, %g
  $dn = sub i64 $dhi, $dlo
  $dnb = mul i64 $dn, %es
  $dlob = mul i64 $dlo, %es
  $sp = call ptr @at(ptr %in, i64 $dlob)
  $toff = mul i64 $s, %cb
  $rp = call ptr @at(ptr %tmp, i64 $toff)
  call void @sendrecv(ptr %c, ptr $sp, i64 $dnb, i64 $dd, ptr $rp, i64 %cb, i64 $sd)''', "r.pre0")}
r.pre0:
  call void @llvm.memmove.p0.p0.i64(ptr %mine, ptr %myin, i64 %cb, i1 false)
{_pre("r")}
{_shift_loop("r", '''  $toff = mul i64 $s, %cb
  $rp = call ptr @at(ptr %tmp, i64 $toff)
  call void @reduce(i64 %code, ptr %mine, ptr $rp, i64 %cnt)''', "y.pre0")}
y.pre0:
{_pre("y")}
{_shift_loop("y", '''  $slo0 = mul i64 %n, $si
  $slo = udiv i64 $slo0, %g
  $si1 = add i64 $si, 1
  $shi0 = mul i64 %n, $si1
  $shi = udiv i64 $shi0, %g
  $sn = sub i64 $shi, $slo
  $snb = mul i64 $sn, %es
  $slob = mul i64 $slo, %es
  $rp = call ptr @at(ptr %out, i64 $slob)
  call void @sendrecv(ptr %c, ptr %mine, i64 %cb, i64 $dd, ptr $rp, i64 $snb, i64 $sd)''', "mpiend")}
mpiend:
  call void @axle_free(ptr %tmp)
  br label %end
end:
  ret void
}}
"""

ALL_GATHER = f"""
define void @axle_coll_all_gather(i64 %outer, i64 %inner, {_GROUP_ARGS}) {{
{_PROLOGUE}
shm0:
  %total = mul i64 %outer, %inner
  br label %shm
{_SHM_OPEN}
{_pre("cp")}
{_member_loop("cp", '''  call void @runs(ptr %out, i64 %inner, i64 $j, ptr $src, i64 %total, i64 0, i64 %g, i64 %total, i64 %inner)''',
              "shmend")}
{_SHM_CLOSE}
mpi0:
  %mtotal = mul i64 %outer, %inner
  call void @runs(ptr %out, i64 %inner, i64 %k, ptr %in, i64 %mtotal, i64 0, i64 %g, i64 %mtotal, i64 %inner)
  %tb = add i64 %mtotal, 16
  %tmp = call ptr @axle_malloc(i64 %tb)
{_pre("x")}
{_shift_loop("x", '''  call void @sendrecv(ptr %c, ptr %in, i64 %mtotal, i64 $dd, ptr %tmp, i64 %mtotal, i64 $sd)
  call void @runs(ptr %out, i64 %inner, i64 $si, ptr %tmp, i64 %mtotal, i64 0, i64 %g, i64 %mtotal, i64 %inner)''',
              "mpiend")}
mpiend:
  call void @axle_free(ptr %tmp)
  br label %end
end:
  ret void
}}
"""

REDUCE_SCATTER = f"""
define void @axle_coll_reduce_scatter(i64 %code, i64 %es, i64 %outer, i64 %inner, {_GROUP_ARGS}) {{
{_PROLOGUE}
shm0:
  %rowb = mul i64 %inner, %es
  %total = mul i64 %outer, %rowb
  br label %shm
{_SHM_OPEN}
  call void @runs(ptr %out, i64 %total, i64 0, ptr %in, i64 %rowb, i64 %k, i64 %g, i64 %total, i64 %rowb)
{_pre("red")}
{_member_loop("red", '''  br i1 $self, label $skip, label $do
$do:
  call void @reduce_rows(i64 %code, ptr %out, ptr $peer, i64 %outer, i64 %inner, i64 %rowb, i64 %g, i64 %k)
  br label $skip
$skip:''', "shmend")}
{_SHM_CLOSE}
mpi0:
  %mrowb = mul i64 %inner, %es
  %mtotal = mul i64 %outer, %mrowb
  call void @runs(ptr %out, i64 %mtotal, i64 0, ptr %in, i64 %mrowb, i64 %k, i64 %g, i64 %mtotal, i64 %mrowb)
  %sb = add i64 %mtotal, 16
  %stmp = call ptr @axle_malloc(i64 %sb)
  %rtmp = call ptr @axle_malloc(i64 %sb)
  %cnt = mul i64 %outer, %inner
{_pre("x")}
{_shift_loop("x", '''  call void @runs(ptr %stmp, i64 %mtotal, i64 0, ptr %in, i64 %mrowb, i64 $di, i64 %g, i64 %mtotal, i64 %mrowb)
  call void @sendrecv(ptr %c, ptr %stmp, i64 %mtotal, i64 $dd, ptr %rtmp, i64 %mtotal, i64 $sd)
  call void @reduce(i64 %code, ptr %out, ptr %rtmp, i64 %cnt)''', "mpiend")}
mpiend:
  call void @axle_free(ptr %stmp)
  call void @axle_free(ptr %rtmp)
  br label %end
end:
  ret void
}}

define internal void @reduce_rows(i64 %code, ptr %out, ptr %src, i64 %outer, i64 %inner, i64 %rowb, i64 %g, i64 %k) {{
entry:
  br label %loop
loop:
  %o = phi i64 [ 0, %entry ], [ %o1, %body ]
  %more = icmp ult i64 %o, %outer
  br i1 %more, label %body, label %done
body:
  %doff = mul i64 %o, %rowb
  %og = mul i64 %o, %g
  %ogk = add i64 %og, %k
  %soff = mul i64 %ogk, %rowb
  %d = call ptr @at(ptr %out, i64 %doff)
  %s = call ptr @at(ptr %src, i64 %soff)
  call void @reduce(i64 %code, ptr %d, ptr %s, i64 %inner)
  %o1 = add i64 %o, 1
  br label %loop
done:
  ret void
}}
"""

ALL_TO_ALL = f"""
define void @axle_coll_all_to_all(i64 %bs, i64 %bc, i64 %piece, i64 %r, {_GROUP_ARGS}) {{
{_PROLOGUE}
shm0:
  br label %shm
{_SHM_OPEN}
{_pre("cp")}
{_member_loop("cp", '''  call void @runs(ptr %out, i64 %bc, i64 $j, ptr $src, i64 %bs, i64 %k, i64 %g, i64 %piece, i64 %r)''',
              "shmend")}
{_SHM_CLOSE}
mpi0:
  call void @runs(ptr %out, i64 %bc, i64 %k, ptr %in, i64 %bs, i64 %k, i64 %g, i64 %piece, i64 %r)
  %sb = add i64 %piece, 16
  %stmp = call ptr @axle_malloc(i64 %sb)
  %rtmp = call ptr @axle_malloc(i64 %sb)
{_pre("x")}
{_shift_loop("x", '''  call void @runs(ptr %stmp, i64 %piece, i64 0, ptr %in, i64 %bs, i64 $di, i64 %g, i64 %piece, i64 %r)
  call void @sendrecv(ptr %c, ptr %stmp, i64 %piece, i64 $dd, ptr %rtmp, i64 %piece, i64 $sd)
  call void @runs(ptr %out, i64 %bc, i64 $si, ptr %rtmp, i64 %piece, i64 0, i64 %g, i64 %piece, i64 %r)''',
              "mpiend")}
mpiend:
  call void @axle_free(ptr %stmp)
  call void @axle_free(ptr %rtmp)
  br label %end
end:
  ret void
}}
"""

PERMUTE = r"""
define void @axle_coll_collective_permute(i64 %nbytes, i64 %mode, ptr %pairs, i64 %npairs, ptr %in, ptr %out) {
entry:
  %dp = alloca i64
  %c = call ptr @me(ptr %dp)
  %dev = load i64, ptr %dp
  %np = call ptr @word(ptr %c, i64 0)
  %n = load i64, ptr %np
  %members = alloca i64, i64 %n
  br label %fill
fill:
  %f = phi i64 [ 0, %entry ], [ %f1, %fillb ]
  %fm = icmp ult i64 %f, %n
  br i1 %fm, label %fillb, label %scan
fillb:
  %pf = getelementptr inbounds i64, ptr %members, i64 %f
  store i64 %f, ptr %pf
  %f1 = add i64 %f, 1
  br label %fill
scan:
  %i = phi i64 [ 0, %fill ], [ %i1, %scanb ]
  %src = phi i64 [ -1, %fill ], [ %src1, %scanb ]
  %dst = phi i64 [ -1, %fill ], [ %dst1, %scanb ]
  %im = icmp ult i64 %i, %npairs
  br i1 %im, label %scanb, label %found
scanb:
  %i2 = mul i64 %i, 2
  %ps = getelementptr inbounds i64, ptr %pairs, i64 %i2
  %qs = load i64, ptr %ps
  %i21 = add i64 %i2, 1
  %pt = getelementptr inbounds i64, ptr %pairs, i64 %i21
  %qt = load i64, ptr %pt
  %ms = call i64 @member(ptr %c, i64 %mode, i64 %dev, i64 %qs)
  %mt = call i64 @member(ptr %c, i64 %mode, i64 %dev, i64 %qt)
  %tme = icmp eq i64 %mt, %dev
  %sme = icmp eq i64 %ms, %dev
  %src1 = select i1 %tme, i64 %ms, i64 %src
  %dst1 = select i1 %sme, i64 %mt, i64 %dst
  %i1 = add i64 %i, 1
  br label %scan
found:
  %bads = icmp uge i64 %src, %n
  %nos = icmp eq i64 %src, -1
  %badsrc = xor i1 %nos, true
  %bs = and i1 %bads, %badsrc
  %badd = icmp uge i64 %dst, %n
  %nod = icmp eq i64 %dst, -1
  %baddst = xor i1 %nod, true
  %bd = and i1 %badd, %baddst
  %bad = or i1 %bs, %bd
  br i1 %bad, label %fail, label %go
fail:
  call void @fail(ptr %c)
  ret void
go:
  %mpiw = call i64 @is_mpi(ptr %c)
  %ism = icmp ne i64 %mpiw, 0
  br i1 %ism, label %mpi, label %shm
shm:
  call void @publish(ptr %c, i64 %dev, ptr %in, ptr %out)
  %ok1 = call i64 @barrier(ptr %c, i64 %dev, ptr %members, i64 %n)
  %ab1 = icmp eq i64 %ok1, 0
  br i1 %ab1, label %end, label %past1
past1:
  br i1 %nos, label %zero, label %copy
copy:
  %pp = call ptr @peer(ptr %c, ptr %members, i64 %src, i64 1)
  %selfsrc = icmp eq i64 %src, %dev
  %p = select i1 %selfsrc, ptr %in, ptr %pp
  call void @llvm.memmove.p0.p0.i64(ptr %out, ptr %p, i64 %nbytes, i1 false)
  br label %shmend
zero:
  call void @llvm.memset.p0.i64(ptr %out, i8 0, i64 %nbytes, i1 false)
  br label %shmend
shmend:
  %ok2 = call i64 @barrier(ptr %c, i64 %dev, ptr %members, i64 %n)
  ret void
end:
  ret void
mpi:
  %selfs = icmp eq i64 %src, %dev
  br i1 %selfs, label %local, label %net
local:
  call void @llvm.memmove.p0.p0.i64(ptr %out, ptr %in, i64 %nbytes, i1 false)
  %ds = icmp eq i64 %dst, %dev
  %dd = select i1 %ds, i64 -1, i64 %dst
  call void @sendrecv(ptr %c, ptr %in, i64 %nbytes, i64 %dd, ptr %out, i64 0, i64 -1)
  ret void
net:
  call void @sendrecv(ptr %c, ptr %in, i64 %nbytes, i64 %dst, ptr %out, i64 %nbytes, i64 %src)
  br i1 %nos, label %mzero, label %mdone
mzero:
  call void @llvm.memset.p0.i64(ptr %out, i8 0, i64 %nbytes, i1 false)
  ret void
mdone:
  ret void
}

define internal i64 @mem(ptr %members, i64 %j) {
  %p = getelementptr inbounds i64, ptr %members, i64 %j
  %m = load i64, ptr %p
  ret i64 %m
}
"""

ENTRIES = _labels(ALL_REDUCE + ALL_GATHER + REDUCE_SCATTER + ALL_TO_ALL + PERMUTE)
