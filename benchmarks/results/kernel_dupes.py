"""How much of each `axle bench` workload's LLVM IR is kernels that are the same code on
other buffers (compile.md, round 4): functions compared with their own names, arena offsets
and table slots replaced. Run on the IR before kernel deduplication to see what it can
share (AXLE_FLAGS=--cpu_dedupe_kernels=false), and after to see what is left.

    AXLE_FLAGS=--cpu_dedupe_kernels=false python benchmarks/results/kernel_dupes.py
"""
import jax, re, collections
import axle
from axle.backends.cpu import disk_cache
from axle.tools.bench_workloads import BENCH_WORKLOADS
def norm(f):
    b = re.sub(r'@"?k\d+\.[^"(\s]*"?', '@K', f)
    b = re.sub(r'define [^@]*@"?[^"(]+"?', 'define @F', b, count=1)
    b = re.sub(r'(getelementptr inbounds i8, i8\* %"\.\d+", i64 )\d+', r'\1OFF', b)
    b = re.sub(r'(getelementptr inbounds i8\*, i8\*\* %"\.\d+", i64 )\d+', r'\1SLOT', b)
    return b
for name in BENCH_WORKLOADS:
    fn, args = BENCH_WORKLOADS[name]()
    text = jax.jit(fn).lower(*args).as_text()
    with disk_cache.disabled():
        exe = axle.compile(text, backend="cpu")
    ir = exe.program.llvm_ir
    funcs = [f for f in re.split(r'\n(?=define )', ir) if f.startswith("define")]
    g = collections.defaultdict(list)
    for f in funcs: g[norm(f)].append(f)
    dup = sum(len(x) for v in g.values() for x in v[1:])
    print(f"{name:22s} fns {len(funcs):4d} distinct {len(g):4d} IR {len(ir)//1000:4d} kB dup {dup//1000:4d} kB ({100*dup/len(ir):.0f}%)", flush=True)
