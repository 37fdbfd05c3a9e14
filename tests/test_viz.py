"""xad.viz: DOT text of forward and backward graphs, and rendering through Graphviz."""

import re
import shutil
import subprocess

import pytest

import xad
from xad import viz

F64 = xad.float64
HAVE_DOT = shutil.which("dot") is not None


def mlp():
    xad.manual_seed(0)
    w1 = xad.randn(3, 4, dtype=F64, requires_grad=True)
    w2 = xad.randn(4, 1, dtype=F64, requires_grad=True)
    x = xad.randn(5, 3, dtype=F64)
    return w1, w2, (xad.tanh(x @ w1) @ w2).sum()


def edges(text):
    return re.findall(r"^\s*(\w+) -> (\w+)", text, flags=re.M)


def test_to_dot_forward_graph(xb):
    w1, w2, y = mlp()
    text = viz.to_dot(y, names={"w1": w1, "w2": w2})
    assert text.startswith("digraph") and text.rstrip().endswith("}")
    for op in ("matmul", "tanh", "sum"):
        assert f'"{op}\\n' in text
    assert '"w1\\n(3, 4) xad.float64\\nrequires_grad"' in text
    assert '"w2\\n(4, 1) xad.float64\\nrequires_grad"' in text
    assert "(5, 4) xad.float64" in text  # tanh's output
    assert "output\\n() xad.float64" in text
    assert len(edges(text)) == 6  # w1->mm, mm->tanh, tanh->mm, w2->mm, mm->sum, sum->out
    assert text.count("lightblue") == 2  # the two leaves that require grad


def test_to_dot_backward_graph_with_create_graph(xb):
    w1, w2, y = mlp()
    g1, g2 = xad.autograd.grad(y, [w1, w2], create_graph=True)
    text = viz.to_dot([g1, g2], names={"dL/dw1": g1, "w1": w1, "w2": w2})
    assert "dL/dw1" in text and "output 1" in text
    assert "matmul" in text and "tanh_grad" in text  # tanh' = 1 - t^2 recorded as a graph
    assert '"w2\\n(4, 1) xad.float64\\nrequires_grad"' in text


def test_to_dot_details(xb):
    a = xad.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    parts = xad.split(a * 2, 2)
    y = parts[0] * parts[1]
    text = viz.to_dot([y, a], names={'a "quoted"': a})
    assert 'a \\"quoted\\"' in text  # escaped
    assert text.count("palegreen") == 2  # both outputs, one of them a leaf
    z = (a * a).sum()
    z.backward()
    assert "saved values freed" in viz.to_dot(z)
    with pytest.raises(TypeError, match="tensors"):
        viz.to_dot([y, 3])


def test_deep_graph_is_walked_without_recursion(xb):
    x = xad.ones(2, dtype=F64, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0
    text = viz.to_dot(y.sum())
    assert text.count("multiply") == 3000


@pytest.mark.skipif(not HAVE_DOT, reason="Graphviz 'dot' is not installed")
def test_dot_text_is_valid_graphviz():
    _, _, y = mlp()
    r = subprocess.run(["dot", "-Tcanon"], input=viz.to_dot(y).encode(), capture_output=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.skipif(not HAVE_DOT, reason="Graphviz 'dot' is not installed")
def test_render_svg_and_png(tmp_path):
    w1, _, y = mlp()
    svg = viz.render(y, tmp_path / "g.svg")
    assert svg.read_text().lstrip().startswith("<?xml") and "<svg" in svg.read_text()
    png = viz.render(xad.autograd.grad(y, [w1], create_graph=True)[0], tmp_path / "b.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = viz.render("digraph { a -> b }", tmp_path / "t.svg")
    assert "<svg" in out.read_text()


def test_render_errors(tmp_path, monkeypatch):
    _, _, y = mlp()
    with pytest.raises(ValueError, match=r"\.svg"):
        viz.render(y, tmp_path / "g.jpeg2000")
    monkeypatch.setattr(viz.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="apt-get install graphviz"):
        viz.render(y, tmp_path / "g.svg")


def test_graph_example_writes_both_drawings(tmp_path):
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))
    import graph
    paths = graph.main(["--out", str(tmp_path)])
    assert [p.stem for p in paths] == ["forward", "backward"]
    assert all(p.stat().st_size > 200 for p in paths)
