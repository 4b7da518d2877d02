"""`axle explain`: a roofline report of a compiled program on this machine.

Measures what this machine can do (once per process):
  memory bandwidth   numpy copies (2 x 64 MB) and adds (3 x 64 MB): bytes read plus
                     bytes written per second
  cache bandwidth    the same on arrays that fit in L2 (3 x 128 KB, many times over)
  peak FLOP/s        float32 512x512 and 1024x1024 matmuls through numpy's BLAS (with
                     the threads BLAS uses; axle's own loops run on one core)
each the best of many short runs (on a machine busy with other work they can still come
out low: the summary then names the kernels that beat the roofline). It then profiles the program (`axle profile`: native per-kernel times, median of the calls)
and, for each top-level kernel, compares what it reached with the roofline bound
  time >= max(flops / peak, bytes / bandwidth)
where bandwidth is the cache bandwidth for kernels moving at most 1 MiB (their data
stays in cache between kernels) and the memory bandwidth otherwise. A kernel is
memory-bound when its arithmetic intensity (flops per byte) is below the ridge point
(peak / bandwidth), compute-bound above it. "% of roofline" is bound / measured time.

Writes an HTML report (kernel table, machine numbers, the roofline plot embedded) and
the plot as a PNG beside it (matplotlib, Agg; arithmetic intensity on x, GFLOP/s on y,
log-log, one labelled dot per kernel that does arithmetic), and prints a short summary.
"""
from __future__ import annotations

import argparse
import base64
import html
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Optional

import numpy as np

from axle.tools.profile import ProfileResult, KernelStat, load_module, run_profile, si

EPILOG = """examples:
  axle explain model.mlir -o report.html          (also writes report.png)
  axle explain jax:transformer_block -o tb.html --repeat 50
  axle explain model.mlir --peak 200 --bandwidth 20   (GFLOP/s and GB/s instead of measuring)"""

CACHE_RESIDENT_BYTES = 1 << 20  # kernels moving at most this much are held to the cache bandwidth


@dataclass
class Machine:
    """What this machine reaches: bytes/s from memory and from cache, flop/s."""
    memory_bandwidth: float
    cache_bandwidth: float
    peak_flops: float
    details: dict = field(default_factory=dict)

    def bandwidth_for(self, nbytes: int) -> float:
        return self.cache_bandwidth if nbytes <= CACHE_RESIDENT_BYTES else self.memory_bandwidth

    def ridge(self, bandwidth: float) -> float:
        """Arithmetic intensity (flop/byte) where the bandwidth roof meets the compute roof."""
        return self.peak_flops / bandwidth


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _bandwidth(n: int, inner: int, repeat: int) -> float:
    a = np.full(n, 1.0, np.float32)
    b = np.full(n, 2.0, np.float32)
    c = np.zeros(n, np.float32)  # touched: no page faults in the timed runs

    def add():
        for _ in range(inner):
            np.add(a, b, out=c)

    def copy():
        for _ in range(inner):
            np.copyto(c, a)
    add_bw = 3 * a.nbytes * inner / _best(add, repeat)
    copy_bw = 2 * a.nbytes * inner / _best(copy, repeat)
    return max(add_bw, copy_bw)


@lru_cache(maxsize=None)
def measure_machine() -> Machine:
    """Measure bandwidths and peak FLOP/s (about a second, once per process). Each figure is
    the best of many short runs, so that a machine shared with other work is caught in a
    quiet moment at least once."""
    t0 = time.perf_counter()
    mem = _bandwidth(16 << 20, 1, 8)  # 64 MB per array: 256 MB moved by a copy and an add
    cache = _bandwidth(32 << 10, 64, 10)  # 128 KB per array
    peak = 0.0
    rng = np.random.default_rng(0)
    for n, runs in ((512, 30), (1024, 5)):
        x = rng.standard_normal((n, n)).astype(np.float32)
        y = x.T.copy()
        _best(lambda: x @ y, 2)  # wake BLAS's threads
        peak = max(peak, 2.0 * n ** 3 / _best(lambda: x @ y, runs))
    return Machine(mem, cache, peak, {
        "cpu": _cpu_name(), "cores": os.cpu_count(), "python": platform.python_version(),
        "numpy": np.__version__, "measured in": f"{time.perf_counter() - t0:.2f} s",
        "memory bandwidth": "best of numpy copy (2 x 64 MB) and add (3 x 64 MB), 8 runs",
        "cache bandwidth": "best of numpy copy and add on 128 KB arrays, 64 x 10 runs",
        "peak": "numpy float32 matmul (BLAS, its own threads), best of 30 at 512x512 and 5 at 1024x1024"})


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@dataclass
class KernelBound:
    """A kernel measured against the roofline."""
    stat: KernelStat
    bandwidth: float  # the roof that applies (bytes/s)
    bound_seconds: float  # the roofline's lower bound on its time
    memory_bound: bool

    @property
    def percent(self) -> float:
        return 100.0 * self.bound_seconds / self.stat.median if self.stat.median > 0 else 0.0

    @property
    def kind(self) -> str:
        return "memory" if self.memory_bound else "compute"

    @property
    def roof_gflops(self) -> float:
        """The roofline's attainable GFLOP/s at this kernel's intensity."""
        return self.stat.flops / self.bound_seconds / 1e9 if self.bound_seconds > 0 else 0.0


def bound(stat: KernelStat, m: Machine) -> KernelBound:
    bw = m.bandwidth_for(stat.bytes)
    t_mem = stat.bytes / bw
    t_cmp = stat.flops / m.peak_flops
    return KernelBound(stat, bw, max(t_mem, t_cmp), t_mem >= t_cmp)


@dataclass
class Report:
    result: ProfileResult
    machine: Machine
    kernels: list  # KernelBound per top-level kernel
    html_path: Optional[str] = None
    png_path: Optional[str] = None

    def summary(self, top: int = 5, paths: bool = True) -> str:
        m, res = self.machine, self.result
        lines = [f"machine: memory {m.memory_bandwidth / 1e9:.1f} GB/s, cache {m.cache_bandwidth / 1e9:.1f} GB/s, "
                 f"peak {m.peak_flops / 1e9:.1f} GFLOP/s (ridge {m.ridge(m.memory_bandwidth):.1f} flop/byte "
                 f"from memory, {m.ridge(m.cache_bandwidth):.1f} from cache)"]
        total = res.kernel_total or 1.0
        bound_total = sum(k.bound_seconds for k in self.kernels)
        lines.append(f"{res.name}: {len(self.kernels)} kernels, {res.kernel_total * 1e6:.1f} us per call; "
                     f"the roofline allows {bound_total * 1e6:.2f} us "
                     f"({100 * bound_total / total:.1f}% of the time measured)")
        over = [k.stat.label for k in self.kernels if k.percent > 105]
        if over:
            lines.append(f"note: {', '.join(over)} beat the roofline: their data may sit in L1, or the machine "
                         f"was busier while measured (re-run, or give --peak / --bandwidth)")
        lines.append("slowest kernels:")
        for k in sorted(self.kernels, key=lambda k: -k.stat.median)[:top]:
            s = k.stat
            lines.append(f"  {s.label:<20} {s.median * 1e6:>9.2f} us {100 * s.median / total:>5.1f}%  "
                         f"{k.kind}-bound, {k.percent:.1f}% of roofline  ({s.gflops:.2f} GFLOP/s, "
                         f"{s.gbps:.2f} GB/s, {len(s.info.fused)} fused, {s.info.library or 'loop'})")
        for p in (self.html_path, self.png_path):
            if p and paths:
                lines.append(f"wrote {p}")
        return "\n".join(lines)


def analyze(result: ProfileResult, machine: Optional[Machine] = None) -> Report:
    machine = machine or measure_machine()
    return Report(result, machine, [bound(k, machine) for k in result.kernels])


# -- the plot
def roofline_png(report: Report, path: str, title: Optional[str] = None) -> str:
    """Draw the roofline plot into a PNG file; returns the path."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    m = report.machine
    pts = [k for k in report.kernels if k.stat.flops > 0 and k.stat.bytes > 0 and k.stat.median > 0]
    ais = [k.stat.intensity for k in pts] or [1.0]
    ys = [k.stat.gflops for k in pts] or [1.0]
    x_lo = min(min(ais) / 4, 0.01)
    x_hi = max(max(ais) * 4, m.ridge(m.memory_bandwidth) * 4)
    xs = np.logspace(np.log10(x_lo), np.log10(x_hi), 200)
    peak = m.peak_flops / 1e9
    fig, ax = plt.subplots(figsize=(8, 5), dpi=100)
    ax.loglog(xs, np.minimum(peak, m.memory_bandwidth * xs / 1e9), color="black", lw=2,
              label=f"memory roof {m.memory_bandwidth / 1e9:.1f} GB/s, peak {peak:.0f} GFLOP/s")
    ax.loglog(xs, np.minimum(peak, m.cache_bandwidth * xs / 1e9), color="gray", lw=1.2, ls="--",
              label=f"cache roof {m.cache_bandwidth / 1e9:.1f} GB/s (kernels moving <= 1 MiB)")
    total = report.result.kernel_total or 1.0
    for kind, color in (("memory", "tab:blue"), ("compute", "tab:red")):
        sel = [k for k in pts if k.kind == kind]
        if not sel:
            continue
        ax.scatter([k.stat.intensity for k in sel], [k.stat.gflops for k in sel],
                   s=[20 + 400 * k.stat.median / total for k in sel], color=color, alpha=0.75,
                   edgecolors="black", linewidths=0.5, zorder=3, label=f"{kind}-bound kernel (area ~ time)")
    near: dict = {}  # labels of points that (nearly) coincide are stacked, not drawn over each other
    for k in pts:
        x, y = np.log10(k.stat.intensity), np.log10(max(k.stat.gflops, 1e-9))
        spot = (round(20 * float(x)), round(20 * float(y)))
        n = near[spot] = near.get(spot, -1) + 1
        ax.annotate(k.stat.label.split(" ")[0], (k.stat.intensity, k.stat.gflops), textcoords="offset points",
                    xytext=(4, 4 + 8 * n), fontsize=7)
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(max(min(ys) / 4, 1e-4), peak * 3)
    ax.set_xlabel("arithmetic intensity (flop / byte moved)")
    ax.set_ylabel("GFLOP/s")
    skipped = len(report.kernels) - len(pts)
    sub = f"; {skipped} kernel(s) without arithmetic not shown" if skipped else ""
    ax.set_title(title or f"roofline: {report.result.name}{sub}", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, format="png")
    plt.close(fig)
    return path


# -- the HTML page
_CSS = """body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #ccc;padding:3px 6px}
th{background:#f0f0f0}td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.memory td.kind{color:#1f77b4}tr.compute td.kind{color:#d62728}code{font-size:12px}"""


def _bar(pct: float) -> str:
    w = max(0.0, min(pct, 100.0))
    return (f'<div style="background:#eee;width:80px;display:inline-block"><div style="background:#4a4;'
            f'width:{w:.0f}%;height:8px"></div></div> {pct:.1f}%')


def render_html(report: Report, png_bytes: Optional[bytes]) -> str:
    from axle.backends.cpu.profiling import fused_summary, location
    res, m = report.result, report.machine
    e = html.escape
    total = res.kernel_total or 1.0
    rows = []
    for k in report.kernels:
        s = k.stat
        fused = fused_summary(s.info)
        fused_note = f"<br><small>fused: {e(fused)}</small>" if fused else ""
        rows.append(
            f'<tr class="{k.kind}"><td>{e(s.label)}</td><td><code>{e(s.info.name)}</code>{fused_note}</td>'
            f'<td>{e(str(s.info.shape))}</td><td title="{e(fused)}" class="n">{len(s.info.fused)}</td>'
            f'<td>{e(s.info.library or "-")}</td><td class="n">{s.median * 1e6:.2f}</td>'
            f'<td class="n">{100 * s.median / total:.1f}%</td><td class="n">{si(s.bytes)}</td>'
            f'<td class="n">{si(s.flops)}</td><td class="n">{s.intensity:.3g}</td>'
            f'<td class="n">{s.gbps:.2f}</td><td class="n">{s.gflops:.2f}</td>'
            f'<td class="n">{k.roof_gflops:.2f}</td><td class="n">{k.bound_seconds * 1e6:.3f}</td>'
            f'<td>{_bar(k.percent)}</td><td class="kind">{k.kind}</td><td><code>{e(location(s.info))}</code></td></tr>')
    head = ("<tr><th>kernel</th><th>op</th><th>shape</th><th>fused ops</th><th>library</th><th>time us</th>"
            "<th>% time</th><th>bytes</th><th>flops</th><th>flop/byte</th><th>GB/s</th><th>GFLOP/s</th>"
            "<th>roof GFLOP/s</th><th>bound us</th><th>% of roofline</th><th>bound</th><th>location</th></tr>")
    mrows = [("memory bandwidth", f"{m.memory_bandwidth / 1e9:.2f} GB/s"),
             ("cache bandwidth", f"{m.cache_bandwidth / 1e9:.2f} GB/s (for kernels moving at most "
                                 f"{CACHE_RESIDENT_BYTES >> 20} MiB)"),
             ("peak", f"{m.peak_flops / 1e9:.2f} GFLOP/s"),
             ("ridge point", f"{m.ridge(m.memory_bandwidth):.2f} flop/byte (memory), "
                             f"{m.ridge(m.cache_bandwidth):.2f} (cache)")]
    mrows += [(k, str(v)) for k, v in m.details.items()]
    machine = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in mrows)
    img = ""
    if png_bytes:
        img = (f'<p><img alt="roofline plot" src="data:image/png;base64,{base64.b64encode(png_bytes).decode()}">'
               f"</p>")
    summary = e(report.summary(paths=False))
    n = len(res.call_seconds)
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>axle explain: {e(res.name)}</title><style>{_CSS}</style></head>
<body><h1>axle explain: {e(res.name)}</h1>
<p>{len(report.kernels)} top-level kernels, timed natively over {n} call{'s' * (n != 1)} (medians):
{res.kernel_total * 1e6:.2f} us of kernels per call; a call takes {res.call_median * 1e6:.2f} us from Python.
Bytes count each input and result buffer of a kernel once; flops count one per element per
elementwise op and 2&middot;M&middot;N&middot;K per contraction. The bound is
max(flops / peak, bytes / bandwidth); "% of roofline" is the bound over the time measured.</p>
<pre>{summary}</pre>
{img}
<h2>Kernels</h2><table>{head}{''.join(rows)}</table>
<h2>Machine</h2><table>{machine}</table>
</body></html>
"""


def explain(result: ProfileResult, html_path: str, png_path: Optional[str] = None,
            machine: Optional[Machine] = None) -> Report:
    """Write the HTML report (and the PNG beside it, or at `png_path`); returns the Report."""
    report = analyze(result, machine)
    if png_path is None:
        png_path = os.path.splitext(html_path)[0] + ".png"
    png = None
    try:
        roofline_png(report, png_path)
        with open(png_path, "rb") as fh:
            png = fh.read()
        report.png_path = png_path
    except ImportError:
        print("axle explain: matplotlib is not installed (pip install 'axle[tools]'): no plot",
              file=sys.stderr)
    report.html_path = html_path
    os.makedirs(os.path.dirname(os.path.abspath(html_path)), exist_ok=True)
    with open(html_path, "w", encoding="utf-8") as fh:
        fh.write(render_html(report, png))
    return report


def build_parser(prog: str = "axle explain") -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__, epilog=EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("module", metavar="MODULE", help=".mlir file, '-' for stdin, or jax:NAME (a workload)")
    ap.add_argument("-o", "--output", default="report.html", help="HTML report to write (default report.html)")
    ap.add_argument("--png", help="where the roofline PNG goes (default: beside the report, same name)")
    ap.add_argument("--trace", help="also write the Chrome trace of the profiled run here")
    ap.add_argument("--repeat", type=int, default=20, help="timed calls (default 20)")
    ap.add_argument("--inputs", help=".npz file whose arrays (in order) are the arguments")
    ap.add_argument("--function", help="function to compile (default: @main)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random arguments")
    ap.add_argument("--peak", type=float, help="peak GFLOP/s to use instead of measuring")
    ap.add_argument("--bandwidth", type=float, help="memory (and cache) GB/s to use instead of measuring")
    return ap


def _fail(e: Exception) -> int:
    from axle.tools.profile import _user_error
    msg = _user_error(e)
    if msg is None:
        raise e
    print(f"axle explain: error: {msg}", file=sys.stderr)
    return 1


def main(argv: Optional[list] = None) -> int:
    a = build_parser().parse_args(argv)
    try:
        name, text, args = load_module(a.module, a.function, a.inputs, a.seed)
    except Exception as e:
        return _fail(e)
    # measure first: BLAS threads that just ran the program's gemms can still be spinning
    measured = measure_machine() if not (a.peak and a.bandwidth) else None
    machine = measured
    if a.peak or a.bandwidth:
        bw = a.bandwidth * 1e9 if a.bandwidth else None
        machine = Machine(bw or measured.memory_bandwidth, bw or measured.cache_bandwidth,
                          a.peak * 1e9 if a.peak else measured.peak_flops, {"given": "on the command line"})
    try:
        res = run_profile(text, args, name, a.function, a.repeat, 1, a.trace, a.seed)
    except Exception as e:
        return _fail(e)
    report = explain(res, a.output, a.png, machine)
    print(report.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
