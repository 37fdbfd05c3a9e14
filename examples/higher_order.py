"""Higher-order derivatives: one Hessian three ways, and a Hessian-vector product.

Part 1 prints the Hessian of a small function computed by ``xad.hessian``, by
``xad.jacobian(xad.grad(f))`` (forward mode over reverse) and by central finite differences
of the gradient, side by side. Part 2 takes a 1,000-parameter two-layer network and computes
``H v`` with ``xad.hvp`` (never forming ``H``), checks it against finite differences of the
gradient and the symmetry ``u.Hv = v.Hu``, and times it against one gradient.

    python examples/higher_order.py --backend numpy
"""

from __future__ import annotations

import argparse
import time

import _common  # noqa: F401  (puts the repository on the path when run from a checkout)
import numpy as np

import xad

F64 = xad.float64


def f(x: xad.Tensor) -> xad.Tensor:
    """A small non-quadratic function of three variables."""
    return (xad.sin(x) * x ** 2).sum() + x[0] * x[1] * x[2] + xad.exp(x[1] - x[2])


def fd_hessian(g, x: xad.Tensor, eps: float = 1e-5) -> np.ndarray:
    """Central differences of the gradient, one column per coordinate."""
    n = x.size
    basis = xad.eye(n, dtype=F64)
    cols = []
    for j in range(n):
        e = basis[j, :]
        cols.append(((g(x + eps * e) - g(x - eps * e)) / (2 * eps)).numpy())
    return np.stack(cols, axis=1)


def show(title: str, mats: dict[str, np.ndarray]) -> None:
    print(title)
    names = list(mats)
    print("  " + "".join(f"{n:>36s}" for n in names))
    n = next(iter(mats.values())).shape[0]
    for i in range(n):
        print("  " + "".join("".join(f"{v:12.6f}" for v in mats[k][i]) for k in names))


def model_loss(p: dict, X: xad.Tensor, Y: xad.Tensor) -> xad.Tensor:
    h = xad.tanh(X @ p["W1"] + p["b1"])
    return ((h @ p["W2"] - Y) ** 2).mean()


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Run both parts; return the largest disagreements found (for tests)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="numpy")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    xad.set_backend(args.backend)
    xad.manual_seed(args.seed)

    # ----- part 1: one Hessian, three ways ------------------------------------------------
    x = xad.tensor([0.3, -0.8, 1.1], dtype=F64)
    H1 = xad.hessian(f)(x).numpy()
    H2 = xad.jacobian(xad.grad(f), mode="fwd")(x).numpy()
    H3 = fd_hessian(xad.grad(f), x)
    show("Hessian of f at x = [0.3, -0.8, 1.1]",
         {"hessian(f)": H1, "jacobian(grad(f), fwd)": H2, "finite differences": H3})
    d12, d13 = float(np.abs(H1 - H2).max()), float(np.abs(H1 - H3).max())
    print(f"  max |hessian - jacobian(grad)| = {d12:.2e}   "
          f"max |hessian - finite differences| = {d13:.2e}\n")

    # ----- part 2: H v on a 1,000-parameter model ------------------------------------------
    shapes = {"W1": (20, 40), "b1": (40,), "W2": (40, 4)}
    p = {k: xad.randn(*s, dtype=F64) * (0.3 if k != "b1" else 0.1) for k, s in shapes.items()}
    n_params = sum(t.size for t in p.values())
    X = xad.randn(64, 20, dtype=F64)
    Y = xad.randn(64, 4, dtype=F64)
    v = {k: xad.randn(*s, dtype=F64) for k, s in shapes.items()}
    u = {k: xad.randn(*s, dtype=F64) for k, s in shapes.items()}

    def loss(q: dict) -> xad.Tensor:
        return model_loss(q, X, Y)

    grad = xad.grad(loss)
    grad(p)
    xad.hvp(loss, (p,), (v,))  # warm up (JAX compiles each new operation shape once)
    t0 = time.perf_counter()
    for _ in range(5):
        grad(p)
    t_grad = (time.perf_counter() - t0) / 5
    t0 = time.perf_counter()
    for _ in range(5):
        Hv = xad.hvp(loss, (p,), (v,))[0]
    t_hvp = (time.perf_counter() - t0) / 5
    Hu = xad.hvp(loss, (p,), (u,))[0]

    eps = 1e-5
    plus = grad({k: p[k] + eps * v[k] for k in p})
    minus = grad({k: p[k] - eps * v[k] for k in p})
    fd = np.concatenate([((plus[k] - minus[k]) / (2 * eps)).numpy().ravel() for k in p])
    hv = np.concatenate([Hv[k].numpy().ravel() for k in p])
    rel = float(np.abs(hv - fd).max() / np.abs(fd).max())
    uHv = sum(float((u[k] * Hv[k]).sum().item()) for k in p)
    vHu = sum(float((v[k] * Hu[k]).sum().item()) for k in p)
    sym = abs(uHv - vHu) / max(abs(uHv), 1e-300)
    print(f"H v for a two-layer tanh network with {n_params} parameters (64 samples)")
    print(f"  relative error against finite differences of the gradient: {rel:.2e}")
    print(f"  symmetry: u.Hv = {uHv:.10f}, v.Hu = {vHu:.10f} (relative gap {sym:.1e})")
    print(f"  time: gradient {t_grad * 1e3:.2f} ms, hvp {t_hvp * 1e3:.2f} ms "
          f"({t_hvp / t_grad:.1f}x)")
    return {"hessian_vs_jacobian_grad": d12, "hessian_vs_fd": d13, "hvp_vs_fd": rel,
            "hvp_symmetry": sym, "n_params": n_params}


if __name__ == "__main__":
    main()
