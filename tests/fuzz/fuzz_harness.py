"""axle's fuzz harness: campaigns run in worker subprocesses, findings minimized and kept.

    python tests/fuzz/harness.py                        # every campaign, a short run
    python tests/fuzz/harness.py --cases 2000 --campaigns parse,diff --out build/fuzz
    python tests/fuzz/harness.py --seconds 3600         # a long run (make fuzz)
    python tests/fuzz/harness.py --replay tests/fuzz/corpus   # every past finding

Campaigns (cases made by gen.py, run by worker.py):
  parse    mutations of the conformance programs: ParseError/VerificationError or a module
           that prints and parses back equal;
  diff     random programs on adversarial inputs (NaN/inf, signed zeros, subnormals,
           extreme integers, out-of-range indices, empty and large tensors): CPU backend vs
           interpreter;
  badargs  wrong arguments: ArgumentError, never a crash;
  cache    damaged disk-cache entries (truncated, flipped, FIFO, symlink to /dev/zero, ...):
           recompiled, right answer;
  threads  threads calling one executable and compiling others at once;
  fork     os.fork() while threads compile (fork_stress.py, its own processes).

Each case runs in a worker process; a worker that dies (a crash: a signal) or does not
answer within --timeout (a hang) is counted against its case and replaced. A finding is
minimized (delta debugging over the lines, then characters, of its program while it
still fails the same way) and written to --out as a JSON case that --replay runs again;
findings worth keeping go to tests/fuzz/corpus/, which tests/fuzz/test_fuzz.py replays.
Prints one summary line per campaign and exits 1 when anything was found.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import random
import select
import subprocess
import sys
import time
from typing import Callable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
CONFORMANCE = os.path.join(ROOT, "..", "shared", "conformance")
STARTUP_SECONDS = 300.0  # importing axle on a loaded machine


class Worker:
    """A worker.py subprocess; run(case) -> (outcome, detail), outcome in ok / finding /
    crash / hang."""

    def __init__(self, timeout: float):
        self.timeout = timeout
        self.proc: Optional[subprocess.Popen] = None

    def _start(self) -> None:
        env = dict(os.environ)
        env.setdefault("AXLE_CACHE_DIR", "off")
        # keep a runaway case from taking the machine: 4 GiB of address space per worker
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "worker.py")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                                     preexec_fn=_limit_memory)
        # the worker says when its imports are done, so they never count against a case
        ready, _, _ = select.select([self.proc.stdout], [], [], max(self.timeout, STARTUP_SECONDS))
        if not ready or not self.proc.stdout.readline():
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("the fuzz worker did not start")

    def run(self, case: dict) -> tuple[str, str]:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        p = self.proc
        try:
            p.stdin.write(json.dumps(case) + "\n")
            p.stdin.flush()
        except (BrokenPipeError, OSError):
            return self._died()
        ready, _, _ = select.select([p.stdout], [], [], self.timeout)
        if not ready:
            p.kill()
            p.wait()
            self.proc = None
            return "hang", f"no answer within {self.timeout:g} s"
        line = p.stdout.readline()
        if not line:
            return self._died()
        r = json.loads(line)
        return r["outcome"], r.get("detail", "")

    def _died(self) -> tuple[str, str]:
        p = self.proc
        code = p.wait()
        self.proc = None
        return "crash", f"worker died with status {code}" + (f" (signal {-code})" if code < 0 else "")

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _limit_memory() -> None:
    try:
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    except (ImportError, ValueError, OSError):
        pass


# ----------------------------------------------------------------- minimization (ddmin)


def ddmin(items: list, failing: Callable[[list], bool]) -> list:
    """Zeller's delta debugging: a 1-minimal sublist of `items` for which failing() holds
    (failing(items) must hold)."""
    n = 2
    while len(items) >= 2:
        chunk = max(1, len(items) // n)
        parts = [items[k:k + chunk] for k in range(0, len(items), chunk)]
        reduced = False
        for k in range(len(parts)):
            rest = [x for j, p in enumerate(parts) if j != k for x in p]
            if rest and failing(rest):
                items, n, reduced = rest, max(n - 1, 2), True
                break
        if not reduced:
            if n >= len(items):
                break
            n = min(len(items), n * 2)
    return items


def minimize(worker: Worker, case: dict, outcome: str, detail: str, budget: int = 200) -> dict:
    """The case with its program text reduced while it still fails the same way (the same
    outcome and the same first word of the detail)."""
    if "text" not in case:
        if case.get("kind") == "diff":  # materialize the generated program to reduce it
            case = dict(case, **gen.random_program(case["seed"]))
        else:
            return case
    key = (outcome, detail.split(":")[0].split(" ")[0])
    tries = [0]

    def failing_text(text: str) -> bool:
        if tries[0] >= budget:
            return False
        tries[0] += 1
        o, d = worker.run(dict(case, text=text))
        return (o, d.split(":")[0].split(" ")[0]) == key

    lines = case["text"].split("\n")
    lines = ddmin(lines, lambda ls: failing_text("\n".join(ls)))
    text = "\n".join(lines)
    if len(text) < 2000:
        text = "".join(ddmin(list(text), lambda cs: failing_text("".join(cs))))
    return dict(case, text=text, minimized_from=len(case["text"]))


# ----------------------------------------------------------------- campaigns


def conformance_texts(limit: int = 400) -> list[str]:
    files = sorted(glob.glob(os.path.join(CONFORMANCE, "**", "*.mlir"), recursive=True))
    rng = random.Random(1)
    rng.shuffle(files)
    out = []
    for f in files[:limit]:
        try:
            t = open(f, encoding="utf-8").read()
        except OSError:
            continue
        if len(t) < 20000:
            out.append(t.split("// -----")[0])
    if not out:  # no conformance tree beside the checkout: the bundled examples
        ex = os.path.join(ROOT, "axle", "examples")
        out = [open(os.path.join(ex, f)).read() for f in sorted(os.listdir(ex)) if f.endswith(".mlir")]
    return out


def make_cases(campaign: str, n: int, seed: int):
    rng = random.Random(seed)
    if campaign == "parse":
        texts = conformance_texts()
        lines = [ln for t in texts[:50] for ln in t.split("\n") if ln.strip()]
        for k in range(n):
            yield {"kind": "parse", "text": gen.mutate_text(rng.choice(texts), rng, lines), "seed": seed + k}
    else:
        for k in range(n):
            yield {"kind": campaign, "seed": seed * 100003 + k}


def run_campaign(campaign: str, n: int, seed: int, timeout: float, deadline: float, out: Optional[str],
                 do_minimize: bool) -> dict:
    if campaign == "fork":
        r = subprocess.run([sys.executable, os.path.join(HERE, "fork_stress.py"), "--forks", str(n),
                            "--threads", "2", "--seed", str(seed)], capture_output=True, text=True,
                           timeout=max(60, n * 90))
        last = (r.stdout.strip().splitlines() or [""])[-1]
        stats = dict(kv.split("=") for kv in last.split() if "=" in kv)
        hung, failed = int(stats.get("hung", -1)), int(stats.get("failed", -1))
        return {"campaign": "fork", "cases": n, "ok": n - max(hung, 0) - max(failed, 0), "finding": max(failed, 0),
                "crash": 0, "hang": max(hung, 0), "findings": [] if r.returncode == 0 else [{"detail": last}]}
    worker = Worker(timeout)
    counts = {"ok": 0, "finding": 0, "crash": 0, "hang": 0}
    findings = []
    done = 0
    try:
        for case in make_cases(campaign, n, seed):
            if time.monotonic() > deadline:
                break
            outcome, detail = worker.run(case)
            counts[outcome] += 1
            done += 1
            if outcome != "ok":
                small = minimize(worker, case, outcome, detail) if do_minimize else case
                rec = {"outcome": outcome, "detail": detail, "case": small}
                findings.append(rec)
                if out:
                    os.makedirs(out, exist_ok=True)
                    path = os.path.join(out, f"{campaign}-{case.get('seed', done)}.json")
                    with open(path, "w") as fh:
                        json.dump(rec, fh, indent=1)
    finally:
        worker.close()
    return {"campaign": campaign, "cases": done, **counts, "findings": findings}


def replay(paths: list[str], timeout: float) -> list[dict]:
    """Run every case of a corpus (JSON files: a case, or {"case": case}); each must be ok."""
    files = []
    for p in paths:
        files += sorted(glob.glob(os.path.join(p, "*.json"))) if os.path.isdir(p) else [p]
    worker = Worker(timeout)
    results = []
    try:
        for f in files:
            rec = json.load(open(f))
            case = rec.get("case", rec)
            outcome, detail = worker.run(case)
            results.append({"file": os.path.basename(f), "outcome": outcome, "detail": detail})
    finally:
        worker.close()
    return results


CAMPAIGNS = ["parse", "diff", "badargs", "cache", "threads", "fork"]
DEFAULT_CASES = {"parse": 200, "diff": 60, "badargs": 40, "cache": 12, "threads": 6, "fork": 4}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--campaigns", default=",".join(CAMPAIGNS))
    ap.add_argument("--cases", type=int, default=None, help="cases per campaign (default: a short run)")
    ap.add_argument("--seconds", type=float, default=None, help="run campaigns round-robin for this long")
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds one case may take")
    ap.add_argument("--out", default=None, help="folder for findings (JSON cases, minimized)")
    ap.add_argument("--no-minimize", action="store_true")
    ap.add_argument("--replay", nargs="*", default=None, help="corpus folders or files to run again")
    ap.add_argument("--json", default=None, help="write the summary as JSON here")
    a = ap.parse_args(argv)
    if a.replay is not None:
        results = replay(a.replay or [os.path.join(HERE, "corpus")], a.timeout)
        bad = [r for r in results if r["outcome"] != "ok"]
        for r in bad:
            print(f"{r['file']}: {r['outcome']}: {r['detail'][:300]}")
        print(f"replay: {len(results)} cases, {len(results) - len(bad)} ok, {len(bad)} failed")
        return 1 if bad else 0
    campaigns = [c for c in a.campaigns.split(",") if c]
    start = time.monotonic()
    end = start + a.seconds if a.seconds else float("inf")
    totals = {c: {"campaign": c, "cases": 0, "ok": 0, "finding": 0, "crash": 0, "hang": 0, "findings": []}
              for c in campaigns}
    seed = a.seed
    while True:
        for c in campaigns:
            n = a.cases or DEFAULT_CASES.get(c, 20)
            if a.seconds:
                n = max(1, n // 4)  # round-robin in slices
            r = run_campaign(c, n, seed, a.timeout, end, a.out, not a.no_minimize)
            t = totals[c]
            for k in ("cases", "ok", "finding", "crash", "hang"):
                t[k] += r[k]
            t["findings"] += r["findings"]
            seed += 1
            if time.monotonic() > end:
                break
        if not a.seconds or time.monotonic() > end:
            break
    found = 0
    for c in campaigns:
        t = totals[c]
        bad = t["finding"] + t["crash"] + t["hang"]
        found += bad
        print(f"{c:8s} cases={t['cases']} ok={t['ok']} findings={t['finding']} crashes={t['crash']} hangs={t['hang']}")
        for f in t["findings"][:5]:
            print(f"    {f.get('outcome', '')}: {f.get('detail', '')[:300]}")
    print(f"fuzz: {sum(totals[c]['cases'] for c in campaigns)} cases in {time.monotonic() - start:.0f} s, "
          f"{found} findings (seed {a.seed})")
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as fh:
            json.dump({"seed": a.seed, "seconds": time.monotonic() - start, "campaigns": list(totals.values())}, fh,
                      indent=1)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
