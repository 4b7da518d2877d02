"""(issue 18, cpu-speed.md) Combine `axle bench --json` runs: per workload medians over the plain runs (A) and the
--background 1 runs (B); XLA/axle ratios, slowdowns under load, compile ratios, memory."""
import json, math, statistics, sys, glob

def load(pattern):
    runs = [json.load(open(f)) for f in sorted(glob.glob(pattern))]
    by = {}
    for r in runs:
        for w in r["results"]:
            by.setdefault(w["name"], []).append(w)
    return runs, by

def med(xs):
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return statistics.median(xs) if xs else float("nan")

def gm(xs):
    xs = [x for x in xs if x > 0 and not math.isnan(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")

runsA, A = load(sys.argv[1])
runsB, B = load(sys.argv[2])
new = set(sys.argv[3].split(",")) if len(sys.argv) > 3 else set()
print(f"plain runs: {len(runsA)}, --background 1 runs: {len(runsB)}\n")
print("| workload | axle ms | XLA ms | XLA/axle (per run) | axle ms, busy | XLA ms, busy | XLA/axle, busy | axle slowdown | XLA slowdown | compile axle s | compile XLA s | temp axle | temp XLA |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
ratios, ratiosB, comp, worse = [], [], [], []
def fmt_b(n):
    for u in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or u == "GiB":
            return f"{n:.1f} {u}" if u != "B" else f"{int(n)} B"
        n /= 1024
for name in A:
    a, b = A[name], B.get(name, [])
    if any(w.get("error") for w in a):
        print(f"| {name} | error: {a[0]['error']} |"); continue
    am, xm = med([w["axle_ms"] for w in a]), med([w["xla_ms"] for w in a])
    per = ", ".join(f"{w['xla_ms']/w['axle_ms']:.2f}" for w in a)
    abm, xbm = med([w["axle_ms"] for w in b]), med([w["xla_ms"] for w in b])
    sa, sx = abm / am, xbm / xm
    ca, cx = med([w["axle_compile_s"] for w in a]), med([w["xla_compile_s"] for w in a])
    ta, tx = med([w["axle_temp_bytes"] for w in a]), med([w["xla_temp_bytes"] for w in a])
    ratios.append(xm / am); ratiosB.append(xbm / abm); comp.append(cx / ca)
    flag = " *" if sa > 1.25 * sx else ""
    if flag:
        worse.append(name)
    nm = f"{name} (new)" if name in new else name
    print(f"| {nm} | {am:.3f} | {xm:.3f} | {xm/am:.2f} ({per}) | {abm:.3f} | {xbm:.3f} | {xbm/abm:.2f} | {sa:.2f}x{flag} | {sx:.2f}x | {ca:.2f} | {cx:.2f} | {fmt_b(ta)} | {fmt_b(tx)} |")
print()
print(f"geometric mean XLA/axle, plain: {gm(ratios):.2f} over {len(ratios)} (min {min(ratios):.2f}); "
      f"with one busy process: {gm(ratiosB):.2f} (min {min(ratiosB):.2f})")
print(f"geometric mean XLA compile / axle compile: {gm(comp):.2f}")
print(f"workloads whose axle slowdown under load exceeds XLA's by more than 25% (*): {len(worse)}: {', '.join(worse)}")
