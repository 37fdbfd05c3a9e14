"""Pictures of the graph behind a tensor: Graphviz DOT text, and files drawn by ``dot``.

``to_dot`` needs nothing beyond xad. ``render`` runs the Graphviz ``dot`` program (Debian and
Ubuntu: ``apt-get install graphviz``). The drawing shows data flowing from the leaves (boxes;
blue when they require grad) through the recorded operations (ellipses, with their output's
shape and dtype) to the outputs (green). A gradient computed with ``create_graph=True`` has
a graph of its own, the backward pass, and draws the same way.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import autograd as _ag
from .graph import walk
from .tensor import Tensor

__all__ = ["to_dot", "render"]

_FORMATS = ("svg", "png", "pdf")


def _q(s: str) -> str:
    """A DOT string literal."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _meta(shape: Any, dtype: Any) -> str:
    shp = "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")" \
        if shape is not None else "?"
    return f"{shp} {dtype}" if dtype is not None else shp


def _walk(roots: list[_ag.Node]) -> list[_ag.Node]:
    """Every node behind ``roots``, producers first (creation order is topological)."""
    return sorted(walk(roots), key=lambda n: n.seq)


def _out_dtype(n: _ag.Node, known: dict) -> Any:
    """The dtype of a node's first output: stored where it was saved, inferred otherwise."""
    b = n.backend
    try:
        if n.out_meta is not None:
            return b.xad_dtype(n.out_meta[0][1])
        if n.out is not None:
            return b.xad_dtype((n.out[0] if n.n_out > 1 else n.out).dtype)
        if n.params and "dtype" in n.params:
            return b.xad_dtype(n.params["dtype"])
    except Exception:
        pass
    cands = []
    for k, e in enumerate(n.edges):
        if type(e) is tuple:
            cands.append(known.get(e[0]))
        elif isinstance(e, Tensor):
            cands.append(e.dtype)
        elif n.saved and k < len(n.saved) and isinstance(n.saved[k], Tensor):
            cands.append(n.saved[k].dtype)
    floats = [d for d in cands if d is not None and d.is_floating]
    return floats[0] if floats else next((d for d in cands if d is not None), None)


def to_dot(y: Tensor | Sequence[Tensor], names: dict[str, Tensor] | None = None) -> str:
    """Graphviz DOT text of the graph behind ``y`` (a tensor or a sequence of them).

    ``names`` maps labels to tensors (e.g. ``dict(model.named_parameters())``) to name
    leaves and outputs in the drawing.

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0, 2.0], requires_grad=True)
        >>> text = xad.viz.to_dot((xad.tanh(w) * 2).sum())
        >>> "tanh" in text and "requires_grad" in text
        True
    """
    outs = [y] if isinstance(y, Tensor) else list(y)
    for i, t in enumerate(outs):
        if not isinstance(t, Tensor):
            raise TypeError(f"to_dot: expected tensors, got {type(t).__name__} at {i}")
    label_of = {id(t): k for k, t in (names or {}).items()}
    ids: dict[int, str] = {}

    def nid(obj: Any) -> str:
        return ids.setdefault(id(obj), f"n{len(ids)}")

    roots: list[_ag.Node] = []
    for t in outs:
        if t._node is not None and t._node not in roots:
            roots.append(t._node)
    order = _walk(roots)
    shapes: dict[tuple, tuple] = {}
    for n in order:
        for e, s in zip(n.edges, n.in_shapes):
            if type(e) is tuple:
                shapes[(e[0], e[1])] = s
    for t in outs:
        if t._node is not None:
            shapes[(t._node, t._idx)] = t.shape
    dtypes: dict[_ag.Node, Any] = {}
    lines = ["digraph xad {", "  rankdir=TB;",
             '  node [fontname="Helvetica", fontsize=10];',
             '  edge [fontname="Helvetica", fontsize=9];']
    leaves: dict[int, Tensor] = {}
    for n in order:
        dtypes[n] = _out_dtype(n, dtypes)
        if n.n_out > 1 and n.out_meta is not None:
            parts = [f"[{i}] {_meta(s, n.backend.xad_dtype(d))}"
                     for i, (s, d) in enumerate(n.out_meta)]
        else:
            parts = [_meta(shapes.get((n, 0)), dtypes[n])]
        extra = "\n(saved values freed)" if n.saved is None else ""
        lines.append(f"  {nid(n)} [label={_q(n.name + chr(10) + chr(10).join(parts) + extra)}"
                     f", shape=ellipse];")
        for e in n.edges:
            if e is None:
                continue
            if type(e) is tuple:
                attr = f" [label={_q(str(e[1]))}]" if e[0].n_out > 1 else ""
                lines.append(f"  {nid(e[0])} -> {nid(n)}{attr};")
            else:
                leaves[id(e)] = e
                lines.append(f"  {nid(e)} -> {nid(n)};")
    for t in outs:
        if t._node is None:
            leaves[id(t)] = t
    for t in leaves.values():
        name = label_of.get(id(t), "leaf")
        flag = "\nrequires_grad" if t.requires_grad else ""
        color = "lightblue" if t.requires_grad else "lightgrey"
        lines.append(f"  {nid(t)} [label={_q(f'{name}{chr(10)}{_meta(t.shape, t.dtype)}{flag}')}"
                     f", shape=box, style=filled, fillcolor={color}];")
    for i, t in enumerate(outs):
        name = label_of.get(id(t), "output" if len(outs) == 1 else f"output {i}")
        o = f"out{i}"
        lines.append(f"  {o} [label={_q(f'{name}{chr(10)}{_meta(t.shape, t.dtype)}')}, "
                     f"shape=box, style=filled, fillcolor=palegreen];")
        src = nid(t._node) if t._node is not None else nid(t)
        attr = f" [label={_q(str(t._idx))}]" if t._node is not None and t._node.n_out > 1 \
            else ""
        lines.append(f"  {src} -> {o}{attr};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(y: Tensor | Sequence[Tensor] | str, path: str | Path, format: str | None = None,
           names: dict[str, Tensor] | None = None) -> Path:
    """Draw the graph behind ``y`` (or DOT text) to ``path`` with Graphviz's ``dot``.

    The format comes from the suffix (``.svg``, ``.png``, ``.pdf``) unless given. Needs the
    ``dot`` program (Debian/Ubuntu ``apt-get install graphviz``, macOS ``brew install
    graphviz``, conda ``conda install graphviz``).

    Example:
        >>> import xad, tempfile, os, shutil
        >>> w = xad.tensor([1.0], requires_grad=True)
        >>> if shutil.which("dot"):
        ...     p = xad.viz.render(w * 2, os.path.join(tempfile.mkdtemp(), "g.svg"))
    """
    path = Path(path)
    fmt = (format or path.suffix.lstrip(".")).lower()
    if fmt not in _FORMATS:
        raise ValueError(f"render: cannot tell the format of {str(path)!r}; use a path ending "
                         f"in {', '.join('.' + f for f in _FORMATS)} or pass format=")
    text = y if isinstance(y, str) else to_dot(y, names)
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError(
            "render: the Graphviz 'dot' program was not found on PATH. Install Graphviz "
            "(Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz; conda: "
            "conda install graphviz), or write xad.viz.to_dot(y) to a .dot file and render it "
            "elsewhere.")
    r = subprocess.run([dot, f"-T{fmt}", "-o", str(path)], input=text.encode(),
                       capture_output=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"render: dot failed ({r.returncode}): "
                           f"{r.stderr.decode(errors='replace').strip()}")
    return path
