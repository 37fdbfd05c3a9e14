"""What each transform costs, relative to one plain forward + backward (``autograd.grad``).

Two sizes: "small" (overhead-bound: Python per operation dominates) and "large" (array-bound).
For each, a tanh MLP loss over a dict of parameters; the baseline is recording the loss and
one ``xad.autograd.grad`` call. Best of repeated runs.

    python bench/transforms.py [--backend numpy] [--repeat 30]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import xad  # noqa: E402


def timed(fn, repeat: int) -> float:
    fn()  # warm up
    b = xad.get_backend()
    ts = []
    for _ in range(repeat):
        b.synchronize()
        t0 = time.perf_counter()
        fn()
        b.synchronize()
        ts.append(time.perf_counter() - t0)
    return min(ts)  # the least disturbed run: other processes only ever add time


def setup(batch: int, width: int):
    xad.manual_seed(0)
    p = {"W1": xad.randn(width, width) * 0.1, "b1": xad.zeros(width),
         "W2": xad.randn(width, width) * 0.1, "w3": xad.randn(width, 1) * 0.1}
    X = xad.randn(batch, width)

    def loss(q):
        h = xad.tanh(X @ q["W1"] + q["b1"])
        h = xad.tanh(h @ q["W2"])
        return ((h @ q["w3"]) ** 2).mean()

    def block(h, W):
        return xad.tanh(h @ W)

    return p, X, loss, block


def run(size: str, batch: int, width: int, repeat: int) -> list[tuple[str, float, float]]:
    p, X, loss, block = setup(batch, width)
    leaves = {k: v.detach().requires_grad_() for k, v in p.items()}
    v = {k: xad.randn(*t.shape) for k, t in p.items()}

    def baseline():
        xad.autograd.grad(loss(leaves), list(leaves.values()))

    def forward_only():
        with xad.no_grad():
            loss(p)

    def jvp():
        xad.jvp(loss, (p,), (v,))

    def vjp():
        out, fn = xad.vjp(loss, p)
        fn(xad.ones_like(out))

    def grad_of_grad_norm():  # the gradient penalty: grad of |grad|^2
        xad.grad(lambda q: sum((g * g).sum() for g in xad.grad(loss)(q).values()))(p)

    small = {"W": xad.randn(8, 4) * 0.3}
    xs = xad.randn(16, 8)

    def small_loss(q):
        return xad.tanh(xs @ q["W"]).sum()

    def jac_out(q):  # 4 outputs
        return xad.tanh(xs @ q["W"]).sum(axis=0)

    def ck_plain():
        W = p["W2"].detach().requires_grad_()
        h = X @ leaves["W1"]
        for _ in range(8):
            h = block(h, W)
        xad.autograd.grad(h.sum(), [W])

    def ck_ckpt():
        W = p["W2"].detach().requires_grad_()
        h = X @ leaves["W1"]
        for _ in range(8):
            h = xad.checkpoint(block, h, W)
        xad.autograd.grad(h.sum(), [W])

    base = timed(baseline, repeat)
    rows = [("forward only (no_grad)", timed(forward_only, repeat)),
            ("baseline: forward + autograd.grad", base),
            ("grad", timed(lambda: xad.grad(loss)(p), repeat)),
            ("value_and_grad", timed(lambda: xad.value_and_grad(loss)(p), repeat)),
            ("vjp (+ one vjp_fn call)", timed(vjp, repeat)),
            ("jvp (native forward mode)", timed(jvp, repeat)),
            ("hvp (forward over reverse)", timed(lambda: xad.hvp(loss, (p,), (v,)), repeat)),
            ("grad of |grad|^2", timed(grad_of_grad_norm, repeat))]
    out = [(name, t, t / base) for name, t in rows]
    sb = timed(lambda: xad.grad(small_loss)(small), repeat)
    for name, fn in [("jacobian rev, 4 out x 32 in", lambda: xad.jacobian(jac_out)(small)),
                     ("jacobian fwd, 4 out x 32 in",
                      lambda: xad.jacobian(jac_out, mode="fwd")(small)),
                     ("hessian, 32 x 32", lambda: xad.hessian(small_loss)(small))]:
        t = timed(fn, max(3, repeat // 5))
        out.append((f"{name} (vs its grad)", t, t / sb))
    cp = timed(ck_plain, repeat)
    cc = timed(ck_ckpt, repeat)
    out.append(("8-block stack: plain forward+backward", cp, 1.0))
    out.append(("8-block stack: checkpointed (vs plain)", cc, cc / cp))
    print(f"\n{size}: batch {batch}, width {width}, backend {xad.get_backend().label}")
    for name, t, r in out:
        print(f"  {name:45s} {t * 1e3:9.3f} ms   {r:6.2f}x")
    return out


def tanh_chain(repeat: int, layers: int = 20, width: int = 512, batch: int = 64) -> list:
    """JVP / primal time on a ``layers``-deep ``width``-wide tanh chain (issue 28's row; its
    per-example gradient rows are bench/per_example.py)."""
    xad.manual_seed(0)
    ws = [xad.randn(width, width) * width ** -0.5 for _ in range(layers)]
    x, tx = xad.randn(batch, width), xad.randn(batch, width)

    def f(h):
        for w in ws:
            h = xad.tanh(h @ w)
        return h

    primal = timed(lambda: f(x), repeat)
    jvp = timed(lambda: xad.jvp(f, (x,), (tx,)), repeat)
    rows = [(f"{layers}x{width} tanh chain, batch {batch}: primal", primal, 1.0),
            ("  jvp (native forward mode), vs primal", jvp, jvp / primal)]
    for name, t, r in rows:
        print(f"  {name:45s} {t * 1e3:9.3f} ms   {r:6.2f}x")
    return rows


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="numpy")
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args(argv)
    xad.set_backend(args.backend)
    return {"small": run("small", 16, 16, args.repeat),
            "large": run("large", 256, 128, args.repeat),
            "chain": tanh_chain(args.repeat)}


if __name__ == "__main__":
    main()
