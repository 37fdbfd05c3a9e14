"""Fit a linear model to noisy linear data with momentum SGD and compare the coefficients.

10,000 points with 5 features uniform in [-1, 1], true coefficients from N(-1, 1), noise
N(0, 0.1**2) (the first experiment of "Building An Autodiff Library").

    python examples/linear_regression.py --backend numpy --epochs 20
"""

from __future__ import annotations

import time

from _common import parser, progress, training_step

import xad
import xad.nn as nn


def main(argv: list[str] | None = None) -> float:
    """Train, print true against learned coefficients; return the final training MSE."""
    p = parser(__doc__.splitlines()[0], epochs=20)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    args = p.parse_args(argv)
    xad.set_backend(args.backend)
    xad.manual_seed(args.seed)

    n, m = 10_000, 5
    X = xad.rand(n, m) * 2 - 1
    beta = xad.randn(m, 1) - 1.0
    y = X @ beta + xad.randn(n, 1) * 0.1

    model = nn.Linear(m, 1, bias=False)
    loss_fn = nn.MSELoss()
    opt = xad.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    # anneal the step size so the last epochs average out the minibatch noise
    sched = xad.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs)
    loader = xad.data.DataLoader(xad.data.TensorDataset(X, y), batch_size=args.batch_size,
                                 shuffle=True, seed=args.seed)
    step = training_step(opt, lambda xb, yb: loss_fn(model(xb), yb), args.compile)

    start = time.perf_counter()
    bar = progress(args.epochs, "epoch", args.quiet)
    for _ in bar:
        total = 0.0
        for xb, yb in loader:
            total = total + step(xb, yb)
        sched.step()
        bar.set_postfix_str(f"loss={(total / len(loader)).item():.5f}")
    bar.close()
    with xad.no_grad():
        final = loss_fn(model(X), y).item()
    elapsed = time.perf_counter() - start

    print("true coefficient   learned coefficient")
    for t, w in zip(beta.reshape(-1).tolist(), model.weight.reshape(-1).tolist()):
        print(f"{t:16.4f}   {w:19.4f}")
    err = (model.weight.reshape(-1) - beta.reshape(-1)).abs().max().item()
    print(f"largest coefficient error {err:.2e}; final training MSE {final:.5f} "
          f"(noise variance 0.01); {elapsed:.1f}s on {args.backend}")
    return final


if __name__ == "__main__":
    main()
