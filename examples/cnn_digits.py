"""Classify scikit-learn's bundled 8x8 digits with a small CNN (no download needed).

1,797 images, split 80/20 into training and test sets (stratified, seeded); two blocks of
Conv2d(3x3) + BatchNorm2d + ReLU + MaxPool2d(2), then a linear head; cross-entropy, Adam
with a step-wise learning-rate decay; prints test accuracy.

    python examples/cnn_digits.py --backend numpy
"""

from __future__ import annotations

import time

import digits
from _common import add_amp_flag, distribute, parser, progress, training_step

import xad
import xad.nn as nn


def load(seed: int) -> tuple[xad.Tensor, xad.Tensor, xad.Tensor, xad.Tensor]:
    """digits.py's split, with the pixels as ``(N, 1, 8, 8)`` images."""
    xtr, ytr, xte, yte = digits.load(seed)
    return xtr.reshape(-1, 1, 8, 8), ytr, xte.reshape(-1, 1, 8, 8), yte


def make_model(width: int = 16) -> nn.Module:
    """Two conv blocks (8x8 -> 4x4 -> 2x2) and a linear head over 10 classes (no conv bias:
    the BatchNorm after each convolution has its own)."""
    def block(cin: int, cout: int) -> list[nn.Module]:
        return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                nn.ReLU(), nn.MaxPool2d(2)]
    return nn.Sequential(*block(1, width), *block(width, 2 * width), nn.Flatten(),
                         nn.Dropout(0.2), nn.Linear(8 * width, 10))


def main(argv: list[str] | None = None) -> float:
    """Train; print and return the test accuracy."""
    p = parser(__doc__.splitlines()[0], epochs=15)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    add_amp_flag(p)
    p.add_argument("--ddp", action="store_true", help="data-parallel over MPI, launched "
                   "with `mpiexec -n 2 python examples/cnn_digits.py --ddp`")
    args = p.parse_args(argv)
    xad.set_backend(args.backend)
    xad.manual_seed(args.seed)
    xtr, ytr, xte, yte = load(args.seed)

    model, loader, sampler = distribute(args.ddp, make_model(), xad.data.TensorDataset(xtr, ytr),
                                        args.batch_size, args.seed)
    loss_fn = nn.CrossEntropyLoss()
    opt = xad.optim.Adam(model.parameters(), lr=args.lr)
    sched = xad.optim.lr_scheduler.StepLR(opt, step_size=max(1, args.epochs // 3), gamma=0.3)
    scaler = xad.amp.GradScaler(enabled=args.amp)
    step = training_step(opt, lambda xb, yb: loss_fn(model(xb), yb), args.compile, scaler)

    start = time.perf_counter()
    bar = progress(args.epochs, "epoch", args.quiet)
    for epoch in bar:
        total = 0.0
        if sampler is not None:
            sampler.set_epoch(epoch)
        for xb, yb in loader:
            total = total + step(xb, yb)
        sched.step()
        bar.set_postfix_str(f"loss={(total / len(loader)).item():.4f}")
    bar.close()
    elapsed = time.perf_counter() - start
    train_acc, test_acc = digits.accuracy(model, xtr, ytr), digits.accuracy(model, xte, yte)
    print(f"train accuracy {train_acc:.2%}, test accuracy {test_acc:.2%} "
          f"({len(yte)} test images); {elapsed:.1f}s on {args.backend}")
    return test_acc


if __name__ == "__main__":
    main()
