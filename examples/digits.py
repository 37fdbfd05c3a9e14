"""Classify scikit-learn's bundled 8x8 digits with a small MLP (no download needed).

1,797 images of 64 pixels, split 80/20 into training and test sets (stratified, seeded);
an MLP 64-128-64-10 with ReLU and dropout, cross-entropy loss, Adam; prints test accuracy.

    python examples/digits.py --backend numpy
"""

from __future__ import annotations

import time

from _common import distribute, parser, progress, training_step

import xad
import xad.nn as nn


def load(seed: int) -> tuple[xad.Tensor, xad.Tensor, xad.Tensor, xad.Tensor]:
    """Train and test tensors: pixels scaled to [0, 1], integer labels."""
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError as e:
        raise SystemExit("this example needs scikit-learn: pip install scikit-learn") from e
    digits = load_digits()
    x = digits.data.astype("float32") / 16.0
    y = digits.target.astype("int64")
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.2, random_state=seed, stratify=y)
    return xad.tensor(xtr), xad.tensor(ytr), xad.tensor(xte), xad.tensor(yte)


def make_model() -> nn.Module:
    """A 64-128-64-10 MLP with dropout."""
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.1),
                         nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))


def accuracy(model: nn.Module, x: xad.Tensor, y: xad.Tensor) -> float:
    """The fraction of ``x`` that ``model`` labels as ``y`` (eval mode, no graph)."""
    model.eval()
    with xad.no_grad():
        acc = (model(x).argmax(axis=1) == y).astype(xad.float32).mean().item()
    model.train()
    return acc


def main(argv: list[str] | None = None) -> float:
    """Train; print and return the test accuracy."""
    p = parser(__doc__.splitlines()[0], epochs=30)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--ddp", action="store_true", help="data-parallel over MPI, launched "
                   "with `mpiexec -n 4 python examples/digits.py --ddp`")
    args = p.parse_args(argv)
    xad.set_backend(args.backend)
    xad.manual_seed(args.seed)
    xtr, ytr, xte, yte = load(args.seed)

    model = make_model()
    model, loader, sampler = distribute(args.ddp, model, xad.data.TensorDataset(xtr, ytr),
                                        args.batch_size, args.seed)
    loss_fn = nn.CrossEntropyLoss()
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
        bar.set_postfix_str(f"loss={(total / len(loader)).item():.4f}")
    bar.close()
    elapsed = time.perf_counter() - start
    train_acc, test_acc = accuracy(model, xtr, ytr), accuracy(model, xte, yte)
    print(f"train accuracy {train_acc:.2%}, test accuracy {test_acc:.2%} "
          f"({len(yte)} test images); {elapsed:.1f}s on {args.backend}")
    return test_acc


if __name__ == "__main__":
    main()
