"""Per-example gradients with ``xad.vmap(xad.grad(...))``: a differentially private SGD step
(per-example gradient clipping plus Gaussian noise) on the bundled 8x8 digits.

The per-example gradients are checked against a Python loop of ``xad.grad`` (and against
``torch.func`` when torch is installed) before training.

    python examples/per_example_gradients.py --epochs 5
"""

from __future__ import annotations

import time

import _common
import digits

import xad
from xad import nn


def make_model() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 10))


def per_example_grads(model: nn.Module, params: dict, x: xad.Tensor, onehot: xad.Tensor):
    """One gradient per example: ``{name: (N, *shape)}``."""
    def loss(p, xi, yi):
        logits = nn.functional_call(model, p, (xi,))
        return -(xad.log_softmax(logits, axis=-1) * yi).sum()
    return xad.vmap(xad.grad(loss), in_axes=(None, 0, 0))(params, x, onehot), loss


def dp_step(params: dict, grads: dict, clip: float, noise: float, lr: float) -> dict:
    """Clip each example's gradient to norm ``clip``, sum, add N(0, (noise * clip)^2), average."""
    n = next(iter(grads.values())).shape[0]
    sq = sum((g.reshape(n, -1) ** 2).sum(axis=1) for g in grads.values())
    scale = xad.minimum(clip / (xad.sqrt(sq) + 1e-12), 1.0)
    new = {}
    for k, g in grads.items():
        clipped = (g * scale.reshape((n,) + (1,) * (g.ndim - 1))).sum(axis=0)
        noisy = clipped + xad.randn(*clipped.shape) * (noise * clip)
        new[k] = params[k] - lr * noisy / n
    return new


def check_against_loop(model: nn.Module, params: dict, x: xad.Tensor, onehot: xad.Tensor
                       ) -> float:
    """The largest difference between vmap's per-example gradients and a loop's."""
    per, loss = per_example_grads(model, params, x, onehot)
    worst = 0.0
    for i in range(x.shape[0]):
        gi = xad.grad(loss)(params, x[i], onehot[i])
        worst = max(worst, *(float(xad.abs(per[k][i] - gi[k]).max().item()) for k in params))
    return worst


def check_against_torch_func(model: nn.Module, params: dict, x: xad.Tensor,
                             onehot: xad.Tensor) -> float | None:
    """The largest difference between vmap's per-example gradients and
    ``torch.func.vmap(torch.func.grad(...))``'s on the same weights (``None``: no torch)."""
    try:
        import torch
    except ImportError:
        return None
    per, _ = per_example_grads(model, params, x, onehot)
    tmodel = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Tanh(),
                                 torch.nn.Linear(64, 10))
    tp = {k: torch.tensor(v.numpy()) for k, v in params.items()}

    def loss(p, xi, yi):
        logits = torch.func.functional_call(tmodel, p, (xi,))
        return -(torch.log_softmax(logits, dim=-1) * yi).sum()
    ref = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(
        tp, torch.tensor(x.numpy()), torch.tensor(onehot.numpy()))
    return max(float(abs(per[k].numpy() - ref[k].numpy()).max()) for k in params)


def main(argv: list[str] | None = None) -> float:
    p = _common.parser(__doc__.splitlines()[0], epochs=5)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--noise", type=float, default=0.5)
    args = p.parse_args(argv)
    xad.set_backend(args.backend)
    xad.manual_seed(args.seed)
    xtr, ytr, xte, yte = digits.load(args.seed)
    eye = xad.eye(10)
    model = make_model()
    params = {k: v.detach() for k, v in model.named_parameters()}
    diff = check_against_loop(model, params, xtr[:16], eye[ytr[:16]])
    print(f"per-example gradients: vmap against a loop, largest difference {diff:.2e}")
    tdiff = check_against_torch_func(model, params, xtr[:16], eye[ytr[:16]])
    if tdiff is not None:
        print(f"per-example gradients: vmap against torch.func, largest difference "
              f"{tdiff:.2e}")
    t0 = time.perf_counter()
    for _ in range(args.epochs):
        perm = xad.randperm(xtr.shape[0])
        for s in range(0, xtr.shape[0] - args.batch_size + 1, args.batch_size):
            idx = perm[s:s + args.batch_size]
            grads, _ = per_example_grads(model, params, xtr[idx], eye[ytr[idx]])
            params = dp_step(params, grads, args.clip, args.noise, args.lr)
    with xad.no_grad():
        logits = nn.functional_call(model, params, (xte,))
        acc = float((xad.argmax(logits, axis=1) == yte).astype(xad.float32).mean().item())
    print(f"DP-SGD, {args.epochs} epochs in {time.perf_counter() - t0:.1f} s: "
          f"test accuracy {acc:.3f}")
    return acc


if __name__ == "__main__":
    main()
