"""Draw the forward graph of a small MLP's loss, and the graph of its backward pass.

The backward pass is itself a graph when the gradient is taken with ``create_graph=True``;
both are written as SVG through Graphviz's ``dot`` (``apt-get install graphviz``), or as
``.dot`` text files when ``dot`` is not installed.

    python examples/graph.py --out graphs
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import _common  # noqa: F401  (puts the repository on the path when run from a checkout)

import xad
from xad import nn


def main(argv: list[str] | None = None) -> list[Path]:
    """Write ``forward`` and ``backward`` drawings into ``--out``; return their paths."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="numpy")
    ap.add_argument("--out", default="graphs", help="output folder (default graphs/)")
    ap.add_argument("--format", default="svg", choices=["svg", "png", "pdf"])
    args = ap.parse_args(argv)
    xad.set_backend(args.backend)
    xad.manual_seed(0)

    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    x = xad.randn(8, 3)
    y = xad.randn(8, 1)
    loss = ((model(x) - y) ** 2).mean()
    names = {f"model.{k}": p for k, p in model.named_parameters()}
    params = list(model.parameters())
    grads = xad.autograd.grad(loss, params, create_graph=True)
    gnames = {**names, **{f"d loss / d {k}": g for (k, _), g in
                          zip(model.named_parameters(), grads)}}
    names["loss"] = loss

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    drawings = {"forward": (loss, names), "backward": (list(grads), gnames)}
    written = []
    for stem, (ys, labels) in drawings.items():
        if shutil.which("dot"):
            path = xad.viz.render(ys, out / f"{stem}.{args.format}", names=labels)
        else:
            path = out / f"{stem}.dot"
            path.write_text(xad.viz.to_dot(ys, names=labels))
        print(f"wrote {path}")
        written.append(path)
    if not shutil.which("dot"):
        print("Graphviz 'dot' is not installed (apt-get install graphviz): wrote DOT text; "
              "render it with  dot -Tsvg forward.dot -o forward.svg")
    return written


if __name__ == "__main__":
    main()
