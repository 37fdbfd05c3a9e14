"""Fit a ten-layer ReLU network to a piecewise non-linear function with Adam.

1,000 points x uniform in [-1, 1], y = f(x) + N(0, 0.1**2) with f(x) = -3 x**2 - 2 for
x < 0 and exp(1.5 x) sin(10 x) otherwise; ten Linear layers of width 10 with ReLU and He
initialisation; Adam (lr 1e-3) on minibatches of 32 (the second experiment of "Building An
Autodiff Library").

    python examples/fit_nonlinear.py --backend numpy --plot fit.png
"""

from __future__ import annotations

import math
import time

from _common import distribute, parser, progress, training_step

import xad
import xad.nn as nn


def target(x: xad.Tensor) -> xad.Tensor:
    """The true function, elementwise."""
    return xad.where(x < 0, -3 * x * x - 2, xad.exp(1.5 * x) * xad.sin(10 * x))


def make_model(width: int = 10, layers: int = 10) -> nn.Sequential:
    """``layers`` Linear layers of ``width`` with ReLU between; He-initialised weights."""
    mods: list[nn.Module] = []
    sizes = [1] + [width] * (layers - 1) + [1]
    for i in range(layers):
        lin = nn.Linear(sizes[i], sizes[i + 1])
        nn.init.kaiming_normal_(lin.weight, nonlinearity="relu")
        nn.init.zeros_(lin.bias)
        mods.append(lin)
        if i < layers - 1:
            mods.append(nn.ReLU())
    return nn.Sequential(*mods)


def main(argv: list[str] | None = None) -> float:
    """Train; print and return the final training MSE (and save a plot if asked)."""
    p = parser(__doc__.splitlines()[0], epochs=500)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--ddp", action="store_true", help="data-parallel over MPI, launched "
                   "with `mpiexec -n 4 python examples/fit_nonlinear.py --ddp`")
    p.add_argument("--plot", default=None, help="save a plot of data, truth and fit here "
                   "(needs matplotlib)")
    args = p.parse_args(argv)
    xad.set_backend(args.backend)
    xad.manual_seed(args.seed)

    n = 1000
    x = xad.rand(n, 1) * 2 - 1
    y = target(x) + xad.randn(n, 1) * 0.1

    model, loader, sampler = distribute(args.ddp, make_model(), xad.data.TensorDataset(x, y),
                                        args.batch_size, args.seed)
    loss_fn = nn.MSELoss()
    opt = xad.optim.Adam(model.parameters(), lr=args.lr)
    step = training_step(opt, lambda xb, yb: loss_fn(model(xb), yb), args.compile)

    start = time.perf_counter()
    bar = progress(args.epochs, "epoch", args.quiet)
    for epoch in bar:
        total = 0.0
        if sampler is not None:
            sampler.set_epoch(epoch)
        for xb, yb in loader:
            total = total + step(xb, yb)
        if epoch % 10 == 0 or epoch == args.epochs - 1:  # a host read now and then only
            bar.set_postfix_str(f"loss={(total / len(loader)).item():.4f}")
    bar.close()
    with xad.no_grad():
        final = loss_fn(model(x), y).item()
    elapsed = time.perf_counter() - start
    print(f"final training MSE {final:.4f} (noise variance 0.01) after {args.epochs} epochs; "
          f"{elapsed:.1f}s on {args.backend}")

    if args.plot:
        plot(model, x, y, args.plot)
    return final


def plot(model: nn.Module, x: xad.Tensor, y: xad.Tensor, path: str) -> None:
    """Save data, the true function and the fit to ``path``."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)")
        return
    grid = xad.linspace(-1, 1, 400).reshape(-1, 1)
    with xad.no_grad():
        fit = model(grid)
    g = grid.numpy().ravel()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.scatter(x.numpy().ravel(), y.numpy().ravel(), s=6, alpha=0.35, label="data")
    ax.plot(g, target(grid).numpy().ravel(), lw=2, label="true function")
    ax.plot(g, fit.numpy().ravel(), lw=2, label="fit")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title(f"ten-layer ReLU network, xad on {x.backend.name}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"plot saved to {path}")


if __name__ == "__main__":
    assert math.isfinite(main())
