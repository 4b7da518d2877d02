"""`axle viz`: the layered layout, the SVG and the HTML page, on real modules."""
import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

import axle
from axle.tools import viz
from axle.tools.cli import main as cli_main
from axle.tools.graph_layout import Edge, Node, layout

EXAMPLES = os.path.join(os.path.dirname(axle.__file__), "examples")
GPT2 = os.path.join(EXAMPLES, "gpt2_block.mlir")
SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "conformance")
CONFORMANCE_FILE = os.path.join(SHARED, "testdata", "random_categorical_float32_8.mlir")  # has a while loop
WHILE_FILE = os.path.join(SHARED, "interpret", "while.mlir")
SVG = "{http://www.w3.org/2000/svg}"


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _need(path):
    if not os.path.exists(path):
        pytest.skip(f"{path} is not there")
    return path


@pytest.fixture(scope="module")
def transformer_text():
    pytest.importorskip("jax")
    from axle.tools.workloads import stablehlo_text
    return stablehlo_text("transformer_block")


# ---------------------------------------------------------------- the layout


def test_layout_layers_order_and_spacing():
    nodes = {k: Node(60, 20) for k in "abcdef"}
    nodes["f"].pin = "last"
    edges = [Edge("a", "b", (40, 10)), Edge("a", "c"), Edge("b", "d"), Edge("c", "d", (30, 10)),
             Edge("e", "f"), Edge("d", "f")]
    lay = layout(nodes, edges, hgap=20)
    ly = {k: n.layer for k, n in nodes.items()}
    assert ly["b"] == ly["a"] + 2, "a labelled edge spans two layers (its label sits between)"
    assert ly["c"] == ly["a"] + 1
    assert ly["d"] == max(ly["b"] + 1, ly["c"] + 2)
    assert ly["f"] == max(ly.values()), "pinned last"
    assert ly["e"] == ly["f"] - 1, "a source sits just above its reader"
    by_layer = {}
    for k, n in nodes.items():
        by_layer.setdefault(n.layer, []).append(n)
    for row in by_layer.values():
        row.sort(key=lambda n: n.x)
        for a, b in zip(row, row[1:]):
            assert b.left >= a.left + a.w + 19.9, "nodes of a layer do not overlap"
    for e in lay.edges:
        assert e.points[0][1] <= e.points[-1][1], "edges run downwards"
        assert abs(e.points[0][0] - nodes[e.src].x) < 1e-6 and abs(e.points[-1][0] - nodes[e.dst].x) < 1e-6
        assert (e.label_at is not None) == bool(e.label)
    assert 0 < lay.width and 0 < lay.height
    for n in nodes.values():
        assert 0 <= n.left and n.x + n.w / 2 <= lay.width and 0 <= n.top and n.bottom <= lay.height


def test_layout_breaks_cycles_and_keeps_a_fixed_first_layer():
    nodes = {k: Node(30, 10) for k in "xyz"}
    lay = layout(nodes, [Edge("x", "y"), Edge("y", "z"), Edge("z", "x")])
    assert len({n.layer for n in nodes.values()}) == 3 and all(e.points for e in lay.edges)
    ports = {f"p{i}": Node(8, 8, pin="first") for i in range(4)}
    ops = {f"o{i}": Node(40, 20) for i in range(4)}
    edges = [Edge(f"p{i}", f"o{3 - i}") for i in range(4)]
    layout({**ports, **ops}, edges, first_order={f"p{i}": -i for i in range(4)})
    xs = [ports[f"p{i}"].x for i in range(4)]
    assert xs == sorted(xs, reverse=True), "the first layer keeps the order it is given"


# ---------------------------------------------------------------- the picture


def _check_svg(path, pic):
    root = ET.parse(path).getroot()
    assert root.tag == SVG + "svg"
    groups = {g.get("id"): g for g in root.iter(SVG + "g") if g.get("class", "").startswith("kernel")}
    texts = "\n".join(t.text or "" for t in root.iter(SVG + "text"))
    assert len(pic.kernels) > 0
    for k in pic.kernels:
        g = groups.get(f"k{k.index}")
        assert g is not None, f"kernel k{k.index} is not drawn"
        assert f"k{k.index} {k.op.opname}" in texts, f"kernel k{k.index} is not named"
        assert ("lib" in g.get("class").split()) == bool(k.library), "library calls are marked"
        ops = [t.text for t in g.iter(SVG + "text")]
        for o in [k.op] + list(k.fused):
            assert viz.op_label(o, k)[0] in ops, f"{o.name} is not drawn inside k{k.index}"
    n_args = len(pic.function.body.arguments)
    assert sum(1 for g in root.iter(SVG + "g") if g.get("class") == "arg") >= n_args
    assert re.search(r"\b[a-z0-9]+\[[0-9,]*\]", texts), "edges are labelled with shapes"
    return root, groups


@pytest.mark.parametrize("which", ["example", "conformance", "transformer"])
def test_svg_names_every_kernel(which, tmp_path, request):
    if which == "example":
        name, text = GPT2, _read(GPT2)
    elif which == "conformance":
        name, text = CONFORMANCE_FILE, _read(_need(CONFORMANCE_FILE))
    else:
        name, text = "transformer_block", request.getfixturevalue("transformer_text")
    out = str(tmp_path / "graph.svg")
    pic = viz.visualize(text, out, name)
    root, groups = _check_svg(out, pic)
    if which != "conformance":
        assert any(k.library for k in pic.kernels), "the gemms call BLAS"
        assert any("lib" in g.get("class").split() for g in groups.values())
    else:
        assert any(k.depth > 0 for k in pic.kernels) and len(pic.panels) >= 3, "while: cond and body panels"


def test_nested_bodies_get_panels(tmp_path):
    out = str(tmp_path / "while.svg")
    pic = viz.visualize(_read(_need(WHILE_FILE)), out, "while.mlir")
    titles = [p.title for p in pic.panels]
    assert titles[0].startswith("@") and any("cond" in t for t in titles) and any("body" in t for t in titles)
    root, _ = _check_svg(out, pic)
    texts = [t.text for t in root.iter(SVG + "text")]
    assert any(t and "k0 while: body" in t for t in texts)


def _kernels_json(page):
    m = re.search(r"const KERNELS = (.*?);\n", page)
    return json.loads(m.group(1).replace("<\\/", "</"))


def test_html_has_every_kernel_with_ops_and_ir(tmp_path, transformer_text):
    out = str(tmp_path / "graph.html")
    pic = viz.visualize(transformer_text, out, "transformer_block")
    page = _read(out)
    assert page.startswith("<!DOCTYPE html>") and "addEventListener('wheel'" in page
    assert "<script src" not in page and "<link" not in page, "self-contained"
    svg = page[page.index("<svg"):page.index("</svg>") + 6]
    ET.fromstring(svg)  # the embedded SVG is well formed
    data = _kernels_json(page)
    assert set(data) == {f"k{k.index}" for k in pic.kernels}
    for k in pic.kernels:
        d = data[f"k{k.index}"]
        assert d["op"] == k.op.name and d["bytes"] == k.bytes_moved() and d["flops"] == k.flops()
        assert d["library"] == k.library and d["fused"] == len(k.fused)
        assert k.op.name in d["ops"], "the kernel's ops, printed"
        if k.depth == 0:
            assert d["llvm"].startswith(f'define internal void @"k{k.index}.'), "its LLVM function"
            assert d["llvm"].rstrip().endswith("}")
            defines = re.findall(r'^define [^@]*@"(k\d+)\.', d["llvm"], re.M)
            assert defines and set(defines) == {f"k{k.index}"}, "its functions and no other kernel's"
        assert f'id="k{k.index}"' in svg


def test_html_script_runs(tmp_path):
    """The page's script, run by node against a stub DOM: overview, a click, a wheel zoom."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    out = str(tmp_path / "g.html")
    viz.visualize(_read(GPT2), out, "gpt2_block.mlir")
    script = re.search(r"<script>(.*?)</script>", _read(out), re.S).group(1)
    (tmp_path / "page.js").write_text(script)
    harness = r"""
const fs = require('fs');
function el(id) {
  return { id, dataset: { width: '900', height: '4000', x: '10', y: '20', w: '100', h: '50', kernel: 'k3', k: 'k3' },
    classList: { add() {}, remove() {} }, setAttribute(a, b) { this[a] = b; },
    addEventListener(t, f) { (this.h = this.h || {})[t] = f; },
    getBoundingClientRect() { return { left: 0, top: 0, width: 800, height: 600 }; }, innerHTML: '' };
}
const els = {};
global.document = { getElementById(id) { return els[id] || (els[id] = el(id)); },
                    querySelectorAll(sel) { return []; } };
global.window = { addEventListener() {} };
eval(fs.readFileSync(process.argv[2], 'utf8'));
if (!els.info.innerHTML.includes('Fusion summary')) throw new Error('no overview');
els.canvas.h.click({ target: { closest: () => el('k3') } });
if (!els.info.innerHTML.includes('k3') || !els.info.innerHTML.includes('LLVM IR')) throw new Error('no details');
els.canvas.h.wheel({ preventDefault() {}, clientX: 100, clientY: 100, deltaY: 120, deltaMode: 0 });
if (!/scale\(/.test(els.viewport.transform)) throw new Error('no zoom');
console.log('ok');
"""
    (tmp_path / "harness.js").write_text(harness)
    r = subprocess.run([node, str(tmp_path / "harness.js"), str(tmp_path / "page.js")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


def test_viz_command(tmp_path, capsys):
    svg, page = str(tmp_path / "g.svg"), str(tmp_path / "g.html")
    assert cli_main(["viz", GPT2, "-o", svg]) == 0
    assert cli_main(["viz", GPT2, "-o", page]) == 0
    out = capsys.readouterr().out
    assert f"wrote {page}" in out and re.search(r"\d+ kernels \(\d+ library calls\)", out)
    ET.parse(svg)
    assert cli_main(["viz", str(tmp_path / "missing.mlir"), "-o", svg]) == 1
