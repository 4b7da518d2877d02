"""(issue 18, cpu-speed.md) Compare two `axle bench --json` runs taken back to back on the same
machine: a branch and its base (main). Per workload: XLA/axle in each run (each run times axle
and XLA interleaved in one process), axle's time branch / base, temporaries.

    python benchmarks/results/cpu-speed-compare.py BRANCH.json MAIN.json
"""
import json
import math
import sys


def load(path):
    return {w["name"]: w for w in json.load(open(path))["results"]}


def gm(xs):
    xs = [x for x in xs if x > 0 and not math.isnan(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def fmt_b(n):
    for u in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or u == "GiB":
            return f"{n:.1f} {u}" if u != "B" else f"{int(n)} B"
        n /= 1024


new, old = load(sys.argv[1]), load(sys.argv[2])
print("| workload | XLA/axle, branch | XLA/axle, main | branch / main (XLA/axle) | axle ms branch | axle ms main "
      "| compile XLA/axle branch | compile XLA/axle main | temp axle branch | temp axle main | temp XLA |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
rb, rm, cb, cm = [], [], [], []
for name, w in new.items():
    o = old.get(name)
    if o is None or w.get("error") or o.get("error"):
        print(f"| {name} | error |")
        continue
    a, b = w["xla_ms"] / w["axle_ms"], o["xla_ms"] / o["axle_ms"]
    ca, cb_ = w["xla_compile_s"] / w["axle_compile_s"], o["xla_compile_s"] / o["axle_compile_s"]
    rb.append(a), rm.append(b), cb.append(ca), cm.append(cb_)
    print(f"| {name} | {a:.2f} | {b:.2f} | {a / b:.2f} | {w['axle_ms']:.3f} | {o['axle_ms']:.3f} | {ca:.2f} | {cb_:.2f} "
          f"| {fmt_b(w['axle_temp_bytes'])} | {fmt_b(o['axle_temp_bytes'])} | {fmt_b(w['xla_temp_bytes'])} |")
print()
print(f"geometric mean XLA/axle: branch {gm(rb):.2f} (min {min(rb):.2f}), main {gm(rm):.2f} (min {min(rm):.2f}); "
      f"compile: branch {gm(cb):.2f}, main {gm(cm):.2f}")
print(f"below 0.8: branch {sum(x < 0.8 for x in rb)}, main {sum(x < 0.8 for x in rm)}")
