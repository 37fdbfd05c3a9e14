"""Fit a Gaussian process's hyperparameters through a likelihood written only against the
Python Array API standard.

``neg_log_marginal_likelihood`` knows nothing of xad: it reaches every function through
``log_params.__array_namespace__()`` (``exp``, ``eye``, ``linalg.cholesky``, ``linalg.solve``,
``linalg.diagonal``, ``vecdot``), so it runs unchanged on NumPy or JAX arrays, and on xad
tensors it is differentiable. The data are noisy samples of a GP with known hyperparameters
(a squared-exponential kernel); Adam fits the log lengthscale, log signal variance and log
noise variance, then ``xad.hessian`` of the same function (second derivatives through the
Cholesky factorisation) gives each one's Laplace standard error.

    python examples/array_api_generic.py --backend numpy
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

import _common  # noqa: F401  (puts the repository on the path when run from a checkout)
import numpy as np
from _common import progress

import xad

NAMES = ("lengthscale", "signal variance", "noise variance")
TRUTH = (0.7, 1.5, 0.05)
START = (2.0, 0.5, 0.5)


def neg_log_marginal_likelihood(log_params: Any, x: Any, y: Any) -> Any:
    """``-log p(y | x)`` of a zero-mean GP with kernel ``s exp(-(x - x')^2 / 2l^2)`` plus
    noise variance ``n`` on the diagonal, where ``(l, s, n) = exp(log_params)``; any Array API
    arrays (one namespace)."""
    xp = log_params.__array_namespace__()
    ell, sf2, sn2 = xp.unstack(xp.exp(log_params))
    d = (x[:, None] - x[None, :]) / ell
    k = sf2 * xp.exp(-0.5 * d * d) + sn2 * xp.eye(x.shape[0], dtype=x.dtype)
    chol = xp.linalg.cholesky(k)
    z = xp.linalg.solve(chol, y)  # L z = y: the standard has no triangular solve
    logdet = 2.0 * xp.sum(xp.log(xp.linalg.diagonal(chol)))
    return 0.5 * (xp.vecdot(z, z) + logdet + y.shape[0] * math.log(2 * math.pi))


def dataset(n: int, seed: int) -> tuple[xad.Tensor, xad.Tensor]:
    """``n`` inputs uniform on [-4, 4] and a draw of the GP with ``TRUTH`` at them."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-4.0, 4.0, n))
    ell, sf2, sn2 = TRUTH
    k = sf2 * np.exp(-0.5 * ((x[:, None] - x[None, :]) / ell) ** 2) + sn2 * np.eye(n)
    y = np.linalg.cholesky(k) @ rng.standard_normal(n)
    return xad.tensor(x), xad.tensor(y)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Fit; print and return the start and final NLL, the fit and its standard errors."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="numpy",
                    help="numpy (default), cupy, torch, jax, array_api_strict")
    ap.add_argument("--steps", type=int, default=200, help="Adam steps (default 200)")
    ap.add_argument("--seed", type=int, default=0, help="random seed of the data (default 0)")
    ap.add_argument("--n", type=int, default=80, help="data points (default 80)")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    xad.set_backend(args.backend)
    x, y = dataset(args.n, args.seed)
    log_params = xad.tensor([math.log(v) for v in START], dtype=xad.float64,
                            requires_grad=True)
    opt = xad.optim.Adam([log_params], lr=args.lr)

    start, t0 = None, time.perf_counter()
    bar = progress(args.steps, "step", args.quiet)
    for _ in bar:
        opt.zero_grad()
        nll = neg_log_marginal_likelihood(log_params, x, y)
        nll.backward()
        opt.step()
        start = nll.item() if start is None else start
        bar.set_postfix_str(f"nll={nll.item():.4f}")
    bar.close()
    elapsed = time.perf_counter() - t0
    p = log_params.detach()
    final = neg_log_marginal_likelihood(p, x, y).item()
    hess = xad.hessian(lambda q: neg_log_marginal_likelihood(q, x, y))(p)
    se = np.sqrt(np.diag(np.linalg.inv(hess.numpy())))  # of the log hyperparameters
    fitted = np.exp(p.numpy())
    print(f"negative log marginal likelihood {start:.4f} -> {final:.4f} "
          f"({args.steps} steps, {elapsed:.1f}s on {args.backend}, {args.n} points)")
    for name, v, s, t in zip(NAMES, fitted, se, TRUTH):
        print(f"  {name:16s} {v:8.4f}  (x/ {math.exp(s):.2f}, Laplace)   truth {t:.4f}")
    return {"nll_start": start, "nll_final": final, "fitted": dict(zip(NAMES, fitted)),
            "log_se": dict(zip(NAMES, se)), "truth": dict(zip(NAMES, TRUTH))}


if __name__ == "__main__":
    main()
