"""Operation-level workloads: ``overhead`` (tiny elementwise chain), ``hvp`` (double
backward) and ``matmul-big`` (array-bound), in xad, hand-written NumPy and torch; ``overhead``
and ``hvp`` also in xad compiled (``xad.compile``) and ``jax.jit``."""

from __future__ import annotations

from typing import Any

import numpy as np
from bench_harness import ALL_IMPLS, Workload, compile_replaying, import_jax, must_replay

__all__ = ["WORKLOADS", "N_CHAIN"]

N_CHAIN = 200  # elementwise operations in the overhead chain (a multiple of 4)


# ----- overhead: y <- tanh(y * w + x) * 0.9, four operations a round ---------------------------
def _overhead_data(size: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    n = 8
    x = rng.standard_normal(n).astype(np.float32)
    w = (1 + 0.1 * rng.standard_normal(n)).astype(np.float32)
    return x, w


class XadOverhead:
    def __init__(self, size: str) -> None:
        import xad
        xad.set_backend("numpy")
        self.xad = xad
        x, w = _overhead_data(size)
        self.x = xad.tensor(x, requires_grad=True)
        self.w = xad.tensor(w, requires_grad=True)

    def run(self) -> Any:
        x, w, tanh = self.x, self.w, self.xad.tanh
        x.grad = None
        w.grad = None
        y = x
        for _ in range(N_CHAIN // 4):
            y = tanh(y * w + x) * 0.9
        s = y.sum()
        s.backward()
        return s

    def step(self) -> None:
        self.run()

    def check(self) -> dict:
        s = self.run()
        return {"loss": s.item(), "grad/x": self.x.grad.numpy(), "grad/w": self.w.grad.numpy()}


class _Compiled:
    """Put before an xad runner class: its ``run()`` (as ``_detached``, returning detached
    tensors) in ``xad.compile``, recorded in the constructor and replayed afterwards."""

    def __init__(self, size: str) -> None:
        super().__init__(size)  # type: ignore[call-arg]
        self._run = compile_replaying(self.xad, self._detached, [()])

    def run(self) -> Any:
        return self._run()

    def check(self) -> dict:
        with must_replay(self._run):
            return super().check()  # type: ignore[misc]


class XadCompiledOverhead(_Compiled, XadOverhead):
    """The same forward + backward function, in ``xad.compile``."""

    def _detached(self) -> Any:
        return XadOverhead.run(self).detach()


class JaxOverhead:
    """The same chain in ``jax.numpy``; value and both gradients in one ``jax.jit`` call."""

    def __init__(self, size: str) -> None:
        self.jax = jax = import_jax()
        jnp = jax.numpy
        x, w = _overhead_data(size)
        self.x, self.w = jnp.asarray(x), jnp.asarray(w)

        def chain(x: Any, w: Any) -> Any:
            y = x
            for _ in range(N_CHAIN // 4):
                y = jnp.tanh(y * w + x) * 0.9
            return y.sum()

        self._run = jax.jit(jax.value_and_grad(chain, argnums=(0, 1)))
        self.run()  # compiles: the timing's first call estimates a call's time

    def run(self) -> Any:
        return self.jax.block_until_ready(self._run(self.x, self.w))

    def step(self) -> None:
        self.run()

    def check(self) -> dict:
        s, (gx, gw) = self.run()
        return {"loss": s, "grad/x": gx, "grad/w": gw}


class TorchOverhead:
    def __init__(self, size: str) -> None:
        import torch
        self.torch = torch
        x, w = _overhead_data(size)
        self.x = torch.from_numpy(x).requires_grad_()
        self.w = torch.from_numpy(w).requires_grad_()

    def run(self) -> Any:
        x, w, tanh = self.x, self.w, self.torch.tanh
        x.grad = None
        w.grad = None
        y = x
        for _ in range(N_CHAIN // 4):
            y = tanh(y * w + x) * 0.9
        s = y.sum()
        s.backward()
        return s

    def step(self) -> None:
        self.run()

    def check(self) -> dict:
        s = self.run()
        return {"loss": s.item(), "grad/x": self.x.grad, "grad/w": self.w.grad}


class NumpyOverhead:
    def __init__(self, size: str) -> None:
        self.x, self.w = _overhead_data(size)

    def run(self) -> tuple:
        x, w, tanh = self.x, self.w, np.tanh
        ys, ts = [], []
        y = x
        for _ in range(N_CHAIN // 4):
            ys.append(y)
            t = tanh(y * w + x)
            ts.append(t)
            y = t * np.float32(0.9)
        s = y.sum()
        d = np.ones_like(x)  # d s / d y, carried back through the rounds
        gx, gw = np.zeros_like(x), np.zeros_like(w)
        for y_in, t in zip(reversed(ys), reversed(ts)):
            d *= np.float32(0.9)  # through * 0.9
            d *= 1 - t * t        # through tanh
            gx += d               # through + x
            gw += d * y_in        # through * w (w's gradient)
            d *= w                # into the round's input y
        gx += d                   # the first round's input is x itself
        return s, gx, gw

    def step(self) -> None:
        self.run()

    def check(self) -> dict:
        s, gx, gw = self.run()
        return {"loss": s, "grad/x": gx, "grad/w": gw}


# ----- hvp: H v for f(W) = sum(tanh(W @ x) ** 2), by double backward ------------------------
def _hvp_data(size: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = 16 if size == "tiny" else 512
    rng = np.random.default_rng(2)
    W = (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
    x = rng.standard_normal(n).astype(np.float32)
    V = rng.standard_normal((n, n)).astype(np.float32)
    return W, x, V


class XadHvp:
    def __init__(self, size: str) -> None:
        import xad
        xad.set_backend("numpy")
        self.xad = xad
        W, x, V = _hvp_data(size)
        self.W = xad.tensor(W, requires_grad=True)
        self.x, self.V = xad.tensor(x), xad.tensor(V)

    def run(self) -> tuple:
        xad, W = self.xad, self.W
        f = (xad.tanh(W @ self.x) ** 2).sum()
        (g,) = xad.autograd.grad(f, [W], create_graph=True)
        (hv,) = xad.autograd.grad((g * self.V).sum(), [W])
        return f, g, hv

    def step(self) -> None:
        self.run()

    def check(self) -> dict:
        f, g, hv = self.run()
        return {"loss": f.item(), "grad/W": g.detach().numpy(), "hvp/W": hv.numpy()}


class XadCompiledHvp(_Compiled, XadHvp):
    """The same double backward, in ``xad.compile``."""

    def _detached(self) -> tuple:
        f, g, hv = XadHvp.run(self)
        return f.detach(), g.detach(), hv


class JaxHvp:
    """``jax.grad`` of ``sum(grad(f)(W) * V)`` (reverse over reverse), in one ``jax.jit``."""

    def __init__(self, size: str) -> None:
        self.jax = jax = import_jax()
        jnp = jax.numpy
        W, x, V = _hvp_data(size)
        self.W, self.x, self.V = jnp.asarray(W), jnp.asarray(x), jnp.asarray(V)

        def f(W: Any, x: Any) -> Any:
            return (jnp.tanh(W @ x) ** 2).sum()

        def hvp(W: Any, x: Any, V: Any) -> tuple:
            val, g = jax.value_and_grad(f)(W, x)
            hv = jax.grad(lambda W: (jax.grad(f)(W, x) * V).sum())(W)
            return val, g, hv

        self._run = jax.jit(hvp)
        self.run()  # compiles: the timing's first call estimates a call's time

    def run(self) -> tuple:
        return self.jax.block_until_ready(self._run(self.W, self.x, self.V))

    def step(self) -> None:
        self.run()

    def check(self) -> dict:
        f, g, hv = self.run()
        return {"loss": f, "grad/W": g, "hvp/W": hv}


class TorchHvp:
    def __init__(self, size: str) -> None:
        import torch
        self.torch = torch
        W, x, V = _hvp_data(size)
        self.W = torch.from_numpy(W).requires_grad_()
        self.x, self.V = torch.from_numpy(x), torch.from_numpy(V)

    def run(self) -> tuple:
        torch, W = self.torch, self.W
        f = (torch.tanh(W @ self.x) ** 2).sum()
        (g,) = torch.autograd.grad(f, [W], create_graph=True)
        (hv,) = torch.autograd.grad((g * self.V).sum(), [W])
        return f, g, hv

    def step(self) -> None:
        self.run()

    def check(self) -> dict:
        f, g, hv = self.run()
        return {"loss": f.item(), "grad/W": g, "hvp/W": hv}


class NumpyHvp:
    """Closed form: with t = tanh(W x), grad = (2t(1-t^2)) x^T and
    H v = ((2 - 6t^2)(1 - t^2) (V x)) x^T."""

    def __init__(self, size: str) -> None:
        self.W, self.x, self.V = _hvp_data(size)

    def run(self) -> tuple:
        t = np.tanh(self.W @ self.x)
        t2 = t * t
        f = t2.sum()
        s = (2 - 6 * t2) * (1 - t2) * (self.V @ self.x)
        return f, t2, np.outer(s, self.x)

    def step(self) -> None:
        self.run()

    def check(self) -> dict:
        f, t2, hv = self.run()
        t = np.tanh(self.W @ self.x)
        g = np.outer(2 * t * (1 - t2), self.x)
        return {"loss": f, "grad/W": g, "hvp/W": hv}


# ----- matmul-big: sum((A @ B) ** 2), forward and backward --------------------------------------
def _mm_data(size: str) -> tuple[np.ndarray, np.ndarray]:
    n = 48 if size == "tiny" else 2048
    rng = np.random.default_rng(3)
    A = (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
    B = rng.standard_normal((n, n)).astype(np.float32)
    return A, B


class XadMatmul:
    def __init__(self, size: str) -> None:
        import xad
        xad.set_backend("numpy")
        A, B = _mm_data(size)
        self.A = xad.tensor(A, requires_grad=True)
        self.B = xad.tensor(B, requires_grad=True)

    def run(self) -> Any:
        A, B = self.A, self.B
        A.grad = None
        B.grad = None
        loss = ((A @ B) ** 2).sum()
        loss.backward()
        return loss

    def step(self) -> None:
        self.run()

    def check(self) -> dict:
        loss = self.run()
        return {"loss": loss.item(), "grad/A": self.A.grad.numpy(), "grad/B": self.B.grad.numpy()}


class TorchMatmul:
    def __init__(self, size: str) -> None:
        import torch
        A, B = _mm_data(size)
        self.A = torch.from_numpy(A).requires_grad_()
        self.B = torch.from_numpy(B).requires_grad_()

    def run(self) -> Any:
        A, B = self.A, self.B
        A.grad = None
        B.grad = None
        loss = ((A @ B) ** 2).sum()
        loss.backward()
        return loss

    def step(self) -> None:
        self.run()

    def check(self) -> dict:
        loss = self.run()
        return {"loss": loss.item(), "grad/A": self.A.grad, "grad/B": self.B.grad}


class NumpyMatmul:
    def __init__(self, size: str) -> None:
        self.A, self.B = _mm_data(size)
        self.C = np.empty_like(self.A)
        self.gA, self.gB = np.empty_like(self.A), np.empty_like(self.B)

    def run(self) -> Any:
        A, B, C = self.A, self.B, self.C
        np.matmul(A, B, out=C)
        loss = np.vdot(C, C)
        C *= 2  # d loss / d C
        np.matmul(C, B.T, out=self.gA)
        np.matmul(A.T, C, out=self.gB)
        return loss

    def step(self) -> None:
        self.run()

    def check(self) -> dict:
        loss = self.run()
        return {"loss": loss, "grad/A": self.gA.copy(), "grad/B": self.gB.copy()}


def _builder(impls: dict[str, type]) -> Any:
    def build(impl: str, size: str) -> Any:
        return impls[impl](size)
    return build


WORKLOADS = [
    Workload("overhead", f"{N_CHAIN} elementwise ops on shape (8,), forward + backward",
             "us/op", _builder({"xad": XadOverhead, "numpy": NumpyOverhead,
                                "torch": TorchOverhead, "xad-compiled": XadCompiledOverhead,
                                "jax-jit": JaxOverhead}),
             scale=lambda s: 1e6 / N_CHAIN, impls=ALL_IMPLS,
             target="<= 1.0x torch; compiled <= 0.5 us/op"),
    Workload("hvp", "Hessian-vector product of sum(tanh(W @ x)**2), W 512x512, double backward",
             "ms", _builder({"xad": XadHvp, "numpy": NumpyHvp, "torch": TorchHvp,
                             "xad-compiled": XadCompiledHvp, "jax-jit": JaxHvp}),
             scale=lambda s: 1e3, impls=ALL_IMPLS,
             target="<= 1.0x torch; compiled <= 1.5x numpy"),
    Workload("matmul-big", "sum((A @ B)**2), A, B 2048x2048, forward + backward", "ms",
             _builder({"xad": XadMatmul, "numpy": NumpyMatmul, "torch": TorchMatmul}),
             scale=lambda s: 1e3, target="<= 1.05x numpy", min_time=0.0, reps=5),
]
