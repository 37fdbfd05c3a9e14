"""Make the docs site's example gallery: run each example briefly, keep what it prints and
the figures it draws, and draw a training curve and the benchmark chart (matplotlib).

    python ci/docs_gallery.py            # writes docs/gallery/ (about 20-30 s of CPU)

Everything under docs/gallery/ is generated (git ignores it); ``ci/docs.sh`` runs this
before ``mkdocs build``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "gallery"
# name -> arguments (shortened runs: the gallery shows what each prints, not a full training)
EXAMPLES: dict[str, list[str]] = {
    "fit_nonlinear": ["--epochs", "200", "--quiet", "--plot", str(OUT / "fit.png")],
    "linear_regression": ["--epochs", "5", "--quiet"],
    "digits": ["--epochs", "5", "--quiet"],
    "cnn_digits": ["--epochs", "1", "--quiet"],
    "transformer_addition": ["--epochs", "1", "--quiet"],
    "higher_order": [],
    "graph": ["--out", str(OUT)],
    "array_api_generic": ["--steps", "100", "--quiet"],
}


def run_example(name: str, args: list[str]) -> None:
    """Run ``examples/NAME.py ARGS``; save its command and output to ``NAME.txt``."""
    cmd = [sys.executable, f"examples/{name}.py", *args]
    env = {**os.environ, "MPLBACKEND": "Agg"}
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, check=False)
    if res.returncode:
        raise SystemExit(f"docs gallery: {name} failed:\n{res.stdout}{res.stderr}")
    shown = " ".join(["python", f"examples/{name}.py", *args])
    text = f"$ {shown}\n{res.stdout}".replace(str(ROOT) + "/", "")
    (OUT / f"{name}.txt").write_text(text)
    print(f"docs gallery: {name} ok")


def training_curve(epochs: int = 100) -> None:
    """The fit_nonlinear model's training MSE per epoch, eager and under ``xad.compile``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    for compiled in (False, True):
        ax.plot(range(1, epochs + 1), _fit_losses(epochs, compiled),
                ls="--" if compiled else "-", lw=2 if not compiled else 1.2,
                label="xad.compile" if compiled else "eager")
    ax.set_yscale("log")
    ax.set_xlabel("epoch")
    ax.set_ylabel("training MSE (mean over minibatches)")
    ax.set_title("examples/fit_nonlinear.py: ten-layer ReLU network, Adam, numpy backend")
    ax.legend()
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(OUT / f"training_curve.{ext}", dpi=110,
                    metadata={"Date": None} if ext == "svg" else None)
    plt.close(fig)
    print("docs gallery: training curve ok")


def _fit_losses(epochs: int, compiled: bool) -> list[float]:
    sys.path.insert(0, str(ROOT / "examples"))
    import fit_nonlinear as fit

    import xad
    xad.set_backend("numpy")
    xad.manual_seed(0)
    x = xad.rand(1000, 1) * 2 - 1
    y = fit.target(x) + xad.randn(1000, 1) * 0.1
    model, loss_fn = fit.make_model(), xad.nn.MSELoss()
    opt = xad.optim.Adam(model.parameters(), lr=1e-3)
    loader = xad.data.DataLoader(xad.data.TensorDataset(x, y), batch_size=32, shuffle=True)

    def step(xb, yb):
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss.detach()

    step = xad.compile(step) if compiled else step
    losses = []
    for _ in range(epochs):
        total = sum(step(xb, yb) for xb, yb in loader)
        losses.append(total.item() / len(loader))
    return losses


def bench_chart() -> None:
    """The benchmark chart from the committed ``bench/run.sh --json`` output (the chart is
    committed too, for the README: the same data gives the same file)."""
    src = ROOT / "docs" / "benchmarks" / "cpu-quick.json"
    subprocess.run([sys.executable, str(ROOT / "bench" / "chart.py"), str(src),
                    "-o", str(src.with_suffix(".svg"))], check=True)


def no_graphviz() -> None:
    """Without Graphviz's ``dot`` the graph example cannot draw: say so in its place."""
    msg = "graphviz's dot is not installed here (apt-get install graphviz): no drawing"
    for stem in ("forward", "backward"):
        (OUT / f"{stem}.svg").write_text(
            '<svg xmlns="http://www.w3.org/2000/svg" width="640" height="40">'
            f'<text x="10" y="25" font-family="sans-serif" font-size="14">{msg}</text></svg>\n')
    (OUT / "graph.txt").write_text(f"$ python examples/graph.py\n({msg})\n")
    print("docs gallery: graph skipped:", msg)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, args in EXAMPLES.items():
        if name == "graph" and shutil.which("dot") is None:
            no_graphviz()
            continue
        run_example(name, args)
    training_curve()
    bench_chart()


if __name__ == "__main__":
    main()
