"""Per-step time of the bridge's test models: axle (torch.compile(backend="axle")) vs eager vs
torch.compile (inductor), inference and one training step (forward, backward, SGD), plus the
first-call (compile) time of each. Rounds are interleaved across the three engines in one
process; medians and spread are reported.

    AXLE_CACHE_DIR=off .venv/bin/python benchmarks/torch_bridge.py [--rounds 7] [--out FILE] [--threads 1]

--threads sets both torch's intra-op threads and axle's pool (AXLE_NUM_THREADS): with two
pools in one process, one pool's threads waiting for work slowed the other's by 100x and
more (eager ResNet inference 0.4 ms in one round, 700 ms in the next).
"""
import argparse
import copy
import os
import statistics
import sys
import tempfile
import time
import warnings

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor-"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "torch"))

_threads = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv else "1"
os.environ["AXLE_NUM_THREADS"] = _threads

import torch  # noqa: E402

torch.set_num_threads(int(_threads))

from models import NAMES, make  # noqa: E402

torch._inductor.config.fx_graph_cache = False  # first-call times include inductor's compile


def engines(model):
    torch._dynamo.reset()
    return {"eager": model,
            "inductor": torch.compile(copy.deepcopy(model)),
            "axle": torch.compile(copy.deepcopy(model), backend="axle")}


def timed(fn, n):
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n


def bench(name, rounds, mode):
    model, x, loss_fn = make(name)
    model.train(mode == "train")
    runs = engines(model)
    steps = {}
    for eng, m in runs.items():
        if mode == "train":
            opt = torch.optim.SGD(m.parameters(), lr=0.01)

            def step(m=m, opt=opt):
                opt.zero_grad()
                loss_fn(m(x)).backward()
                opt.step()
        else:
            def step(m=m):
                with torch.no_grad():
                    m(x)
        steps[eng] = step
    first = {}
    for eng, step in list(steps.items()):
        t = time.perf_counter()
        try:
            step()
        except Exception as e:  # inductor's LSTM training step fails on torch 2.13 (mkldnn_rnn_layer)
            print(f"{name} {mode}: {eng} failed: {type(e).__name__}: {str(e)[:200]}", flush=True)
            del steps[eng]
            continue
        first[eng] = time.perf_counter() - t
    n = max(1, int(0.05 / max(timed(steps["eager"], 1), 1e-5)))
    times = {e: [] for e in steps}
    steps = dict(steps)
    for _ in range(rounds):
        for eng, step in steps.items():
            times[eng].append(timed(step, n))
    return first, times


def fmt(ts):
    if not ts:
        return "failed"
    med = statistics.median(ts)
    return f"{med * 1e3:.3f} ({min(ts) * 1e3:.3f}-{max(ts) * 1e3:.3f})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out")
    ap.add_argument("--only", help="models, comma separated (default: all)")
    ap.add_argument("--modes", default="infer,train")
    ap.add_argument("--threads", default="1", help="torch intra-op threads and AXLE_NUM_THREADS")
    args = ap.parse_args()
    lines = ["| model | mode | eager ms | inductor ms | axle ms | eager/axle | inductor/axle | first call: inductor s | first call: axle s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    with torch._dynamo.config.patch(allow_rnn=True), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in (args.only.split(",") if args.only else NAMES):
            for mode in (args.modes.split(",")):
                first, times = bench(name, args.rounds, mode)
                med = {e: statistics.median(t) for e, t in times.items()}
                ratio = lambda e: f"{med[e] / med['axle']:.2f}" if e in med else "-"  # noqa: E731
                first_s = lambda e: f"{first[e]:.1f}" if e in first else "failed"  # noqa: E731
                lines.append(f"| {name} | {mode} | {fmt(times.get('eager'))} | {fmt(times.get('inductor'))} | "
                             f"{fmt(times.get('axle'))} | {ratio('eager')} | {ratio('inductor')} | "
                             f"{first_s('inductor')} | {first_s('axle')} |")
                print(lines[-1], flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
