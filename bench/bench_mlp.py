"""Training-step workloads: ``mlp``, ``mlp-small`` and ``seed-deep``, in xad (eager and
compiled), NumPy, torch and ``jax.jit``.

Every implementation starts from the same float32 weights (``Linear`` layout: weight
``(out, in)``, bias ``(out,)``) and sees the same minibatches in the same order. One call of
``step()`` runs ``len(spec.batches)`` training steps: zero the gradients, forward, loss,
backward, Adam (lr 1e-3, betas 0.9/0.999, eps 1e-8, PyTorch's update rule).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from bench_harness import (
    ALL_IMPLS,
    Workload,
    adam_first_step_error,
    compile_replaying,
    import_jax,
    must_replay,
    rel_err,
    to_np,
)

__all__ = ["MLPSpec", "mlp_spec", "build_mlp", "xad_api", "WORKLOADS"]

B1, B2, EPS = 0.9, 0.999, 1e-8


@dataclass
class MLPSpec:
    """Layer sizes, loss (``"ce"`` or ``"mse"``), initial weights and the minibatches."""

    sizes: tuple[int, ...]
    loss: str
    params: list[np.ndarray]                      # W0, b0, W1, b1, ... (float32)
    batches: list[tuple[np.ndarray, np.ndarray]]  # (x, y), run in order by one step()
    lr: float = 1e-3


def _init(sizes: tuple[int, ...], rng: np.random.Generator, zero_bias: bool) -> list[np.ndarray]:
    """He (Kaiming normal, fan-in) weights; biases zero or PyTorch's default uniform."""
    out = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        out.append((rng.standard_normal((fan_out, fan_in)) * math.sqrt(2.0 / fan_in))
                   .astype(np.float32))
        bound = 1.0 / math.sqrt(fan_in)
        out.append(np.zeros(fan_out, np.float32) if zero_bias
                   else rng.uniform(-bound, bound, fan_out).astype(np.float32))
    return out


def seed_curve(x: np.ndarray) -> np.ndarray:
    """The second seed text's target: -3x^2 - 2 for x < 0, exp(1.5x) sin(10x) otherwise."""
    return np.where(x < 0, -3 * x ** 2 - 2, np.exp(1.5 * x) * np.sin(10 * x))


def mlp_spec(name: str, size: str) -> MLPSpec:
    """The data and weights of workload ``name`` at ``size`` (full, quick or tiny)."""
    rng = np.random.default_rng(0)
    if name in ("mlp", "mlp-small"):
        if size == "tiny":
            sizes, batch = ((12, 16, 16, 5), 8) if name == "mlp" else ((12, 8, 8, 5), 4)
        else:
            sizes, batch = ((784, 512, 512, 10), 256) if name == "mlp" else \
                ((784, 64, 64, 10), 16)
        params = _init(sizes, rng, zero_bias=False)
        x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
        y = rng.integers(0, sizes[-1], batch).astype(np.int64)
        return MLPSpec(sizes, "ce", params, [(x, y)])
    if name == "seed-deep":
        n, batch, epochs = {"full": (1000, 32, 100), "quick": (1000, 32, 10),
                            "tiny": (40, 8, 2)}[size]
        sizes = (1,) + (10,) * 9 + (1,)  # ten Linear layers of width 10
        params = _init(sizes, rng, zero_bias=True)
        x = rng.uniform(-1, 1, (n, 1))
        y = seed_curve(x) + rng.normal(0, 0.1, (n, 1))
        x, y = x.astype(np.float32), y.astype(np.float32)
        batches = []
        for _ in range(epochs):
            perm = rng.permutation(n)
            batches += [(x[perm[i:i + batch]], y[perm[i:i + batch]]) for i in range(0, n, batch)]
        return MLPSpec(sizes, "mse", params, batches)
    raise ValueError(f"no MLP workload named {name!r}")


def xad_api() -> tuple[Any, Any] | None:
    """``(xad.nn, xad.optim)`` when the layers, losses and Adam exist, else ``None``."""
    try:
        from xad import nn, optim
        for name in ("Linear", "Sequential", "ReLU", "CrossEntropyLoss", "MSELoss"):
            getattr(nn, name)
        optim.Adam  # noqa: B018
    except (ImportError, AttributeError):
        return None
    return nn, optim


def _check_result(loss: Any, grads: list, before: list, after: list, lr: float) -> dict:
    out: dict[str, Any] = {"loss": to_np(loss)}
    names = [f"{'W' if i % 2 == 0 else 'b'}{i // 2}" for i in range(len(grads))]
    for n, g in zip(names, grads):
        out[f"grad/{n}"] = to_np(g)
    out["self/adam"] = max(adam_first_step_error(b, a, to_np(g), lr)
                           for b, a, g in zip(before, after, grads))
    return out


# ----- xad -----------------------------------------------------------------------------------
class XadMLP:
    """xad on the numpy backend: ``xad.nn`` + ``xad.optim.Adam``, or local stand-ins."""

    def __init__(self, spec: MLPSpec) -> None:
        import xad
        xad.set_backend("numpy")
        self.xad, self.spec = xad, spec
        self.batches = [(xad.tensor(x), xad.tensor(y)) for x, y in spec.batches]
        api = xad_api()
        self.uses_api = api is not None
        if api is not None:
            nn, optim = api
            layers: list[Any] = []
            for i, (a, b) in enumerate(zip(spec.sizes[:-1], spec.sizes[1:])):
                layers.append(nn.Linear(a, b))
                if i < len(spec.sizes) - 2:
                    layers.append(nn.ReLU())
            self.model = nn.Sequential(*layers)
            lins = [m for m in layers if isinstance(m, nn.Linear)]
            self.params = [p for lin in lins for p in (lin.weight, lin.bias)]
            for p, a in zip(self.params, spec.params):
                p._set_data(xad.tensor(a)._array)
            self.loss_fn = nn.CrossEntropyLoss() if spec.loss == "ce" else nn.MSELoss()
            self.opt = optim.Adam(self.model.parameters(), lr=spec.lr)
            self._zero = self.opt.zero_grad
            self._update = self.opt.step
        else:
            self.params = [xad.tensor(a, requires_grad=True) for a in spec.params]
            self.model = self._local_model
            self.loss_fn = self._local_loss
            self._m = [xad.zeros_like(p) for p in self.params]
            self._v = [xad.zeros_like(p) for p in self.params]
            self._t = 0
            self._zero = self._local_zero
            self._update = self._local_adam

    # local stand-ins, used only while xad.nn / xad.optim are missing
    def _local_model(self, x: Any) -> Any:
        p, n = self.params, len(self.params) // 2
        for i in range(n):
            x = x @ p[2 * i].mT + p[2 * i + 1]
            if i < n - 1:
                x = self.xad.relu(x)
        return x

    def _local_loss(self, z: Any, y: Any) -> Any:
        if self.spec.loss == "mse":
            return ((z - y) ** 2).mean()
        xad = self.xad
        return -xad.log_softmax(z, axis=-1)[xad.arange(z.shape[0], dtype=xad.int64), y].mean()

    def _local_zero(self) -> None:
        for p in self.params:
            p.grad = None

    def _local_adam(self) -> None:
        xad, lr = self.xad, self.spec.lr
        self._t += 1
        bc1, bc2 = 1 - B1 ** self._t, 1 - B2 ** self._t
        with xad.no_grad():
            for p, m, v in zip(self.params, self._m, self._v):
                g = p.grad
                m *= B1
                m += (1 - B1) * g
                v *= B2
                v += (1 - B2) * (g * g)
                p -= (lr / bc1) * m / (xad.sqrt(v) / math.sqrt(bc2) + EPS)

    def step(self) -> None:
        model, loss_fn, zero, update = self.model, self.loss_fn, self._zero, self._update
        for x, y in self.batches:
            zero()
            loss = loss_fn(model(x), y)
            loss.backward()
            update()

    def check(self) -> dict:
        x, y = self.batches[0]
        self._zero()
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        grads = [p.grad.numpy().copy() for p in self.params]
        before = [p.numpy().copy() for p in self.params]
        self._update()
        after = [p.numpy().copy() for p in self.params]
        return _check_result(loss.item(), grads, before, after, self.spec.lr)


class XadCompiledMLP(XadMLP):
    """``XadMLP`` with the whole step (zero_grad, forward, loss, backward, Adam) in
    ``xad.compile``: recorded once per batch shape, replayed afterwards."""

    def __init__(self, spec: MLPSpec) -> None:
        super().__init__(spec)
        if not self.uses_api:
            raise RuntimeError("xad-compiled needs xad.nn and xad.optim.Adam")
        shapes = {tuple(x.shape): (x, y) for x, y in self.batches}
        self._step = compile_replaying(self.xad, self._train_step, list(shapes.values()))

    def _train_step(self, x: Any, y: Any) -> Any:
        self._zero()
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        self._update()
        return loss.detach()

    def step(self) -> None:
        run = self._step
        for x, y in self.batches:
            run(x, y)

    def _first_step(self, fn: Any) -> tuple:
        """From the initial weights and a fresh Adam state (reset in place: the program reads
        these tensors), one step of ``fn``: loss, gradients, weights before and after."""
        xad = self.xad
        with xad.no_grad():
            for p, a in zip(self.params, self.spec.params):
                p.copy_(xad.tensor(a))
            for st in self.opt.state.values():
                st["step"] = 0
                st["exp_avg"].zero_()
                st["exp_avg_sq"].zero_()
        before = [p.numpy().copy() for p in self.params]
        loss = fn(*self.batches[0])
        return (loss.item(), [p.grad.numpy().copy() for p in self.params], before,
                [p.numpy().copy() for p in self.params])

    def check(self) -> dict:
        eager = self._first_step(self._train_step)
        with must_replay(self._step):
            loss, grads, before, after = replayed = self._first_step(self._step)
        out = _check_result(loss, grads, before, after, self.spec.lr)
        pairs = [(np.float64(replayed[0]), np.float64(eager[0]))]
        pairs += [(a, b) for i in (1, 3) for a, b in zip(replayed[i], eager[i])]
        out["self/replay-vs-eager"] = max(rel_err(to_np(a), to_np(b)) for a, b in pairs)
        return out


# ----- hand-written NumPy ----------------------------------------------------------------------
class NumpyMLP:
    """Forward, backward and Adam by hand, with buffers reused across steps (the floor)."""

    def __init__(self, spec: MLPSpec) -> None:
        self.spec = spec
        self.W = [a.copy() for a in spec.params[0::2]]
        self.b = [a.copy() for a in spec.params[1::2]]
        self.params = [p for pair in zip(self.W, self.b) for p in pair]
        self.grads = [np.zeros_like(p) for p in self.params]
        self.m = [np.zeros_like(p) for p in self.params]
        self.v = [np.zeros_like(p) for p in self.params]
        self.tmp = [np.empty_like(p) for p in self.params]
        self.t = 0
        self._bufs: dict[int, tuple[list, list]] = {}
        self.batches = spec.batches

    def _buffers(self, n: int) -> tuple[list, list]:
        if n not in self._bufs:
            outs = [np.empty((n, k), np.float32) for k in self.spec.sizes[1:]]
            deltas = [np.empty((n, k), np.float32) for k in self.spec.sizes[1:]]
            self._bufs[n] = (outs, deltas)
        return self._bufs[n]

    def forward_backward(self, x: np.ndarray, y: np.ndarray) -> np.float32:
        n, L = x.shape[0], len(self.W)
        outs, deltas = self._buffers(n)
        hs = [x]
        for i in range(L):
            a = outs[i]
            np.matmul(hs[-1], self.W[i].T, out=a)
            a += self.b[i]
            if i < L - 1:
                np.maximum(a, 0, out=a)
            hs.append(a)
        z, d = hs[-1], deltas[-1]
        if self.spec.loss == "ce":
            zmax = z.max(axis=1, keepdims=True)
            np.subtract(z, zmax, out=d)
            np.exp(d, out=d)
            s = d.sum(axis=1, keepdims=True)
            rows = np.arange(n)
            loss = np.mean(np.log(s[:, 0]) + zmax[:, 0] - z[rows, y])
            d /= s
            d[rows, y] -= 1
            d *= np.float32(1.0 / n)
        else:
            np.subtract(z, y, out=d)
            loss = np.mean(d * d)
            d *= np.float32(2.0 / d.size)
        for i in range(L - 1, -1, -1):
            np.matmul(d.T, hs[i], out=self.grads[2 * i])
            np.sum(d, axis=0, out=self.grads[2 * i + 1])
            if i > 0:
                prev = deltas[i - 1]
                np.matmul(d, self.W[i], out=prev)
                np.multiply(prev, hs[i] > 0, out=prev)  # ReLU'; 13x faster than prev[m] = 0
                d = prev
        return loss

    def update(self) -> None:
        self.t += 1
        lr = self.spec.lr
        # lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps) = step * m / (sqrt(v) + eps * sqrt(bc2))
        root_bc2 = math.sqrt(1 - B2 ** self.t)
        step = np.float32(lr * root_bc2 / (1 - B1 ** self.t))
        eps = np.float32(EPS * root_bc2)
        for p, g, m, v, tmp in zip(self.params, self.grads, self.m, self.v, self.tmp):
            m *= B1
            np.multiply(g, 1 - B1, out=tmp)
            m += tmp
            v *= B2
            np.multiply(g, g, out=tmp)
            tmp *= 1 - B2
            v += tmp
            np.sqrt(v, out=tmp)
            tmp += eps
            np.divide(m, tmp, out=tmp)
            tmp *= step
            p -= tmp

    def step(self) -> None:
        for x, y in self.batches:
            self.forward_backward(x, y)
            self.update()

    def check(self) -> dict:
        loss = self.forward_backward(*self.batches[0])
        grads = [g.copy() for g in self.grads]
        before = [p.copy() for p in self.params]
        self.update()
        return _check_result(loss, grads, before, [p.copy() for p in self.params],
                             self.spec.lr)


# ----- PyTorch eager ---------------------------------------------------------------------------
class TorchMLP:
    """``torch.nn.Sequential`` + ``torch.optim.Adam`` with their defaults (eager, CPU)."""

    def __init__(self, spec: MLPSpec) -> None:
        import torch
        self.spec = spec
        layers: list[Any] = []
        for i, (a, b) in enumerate(zip(spec.sizes[:-1], spec.sizes[1:])):
            layers.append(torch.nn.Linear(a, b))
            if i < len(spec.sizes) - 2:
                layers.append(torch.nn.ReLU())
        self.model = torch.nn.Sequential(*layers)
        lins = [m for m in layers if isinstance(m, torch.nn.Linear)]
        self.params = [p for lin in lins for p in (lin.weight, lin.bias)]
        with torch.no_grad():
            for p, a in zip(self.params, spec.params):
                p.copy_(torch.from_numpy(a))
        self.loss_fn = torch.nn.CrossEntropyLoss() if spec.loss == "ce" else torch.nn.MSELoss()
        self.opt = torch.optim.Adam(self.model.parameters(), lr=spec.lr)
        self.batches = [(torch.from_numpy(x.copy()), torch.from_numpy(y.copy()))
                        for x, y in spec.batches]

    def step(self) -> None:
        model, loss_fn, opt = self.model, self.loss_fn, self.opt
        for x, y in self.batches:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()

    def check(self) -> dict:
        x, y = self.batches[0]
        self.opt.zero_grad()
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        grads = [p.grad.detach().numpy().copy() for p in self.params]
        before = [p.detach().numpy().copy() for p in self.params]
        self.opt.step()
        after = [p.detach().numpy().copy() for p in self.params]
        return _check_result(loss.item(), grads, before, after, self.spec.lr)


# ----- jax.jit ----------------------------------------------------------------------------------
class JaxMLP:
    """The same math in ``jax.numpy``: one ``jax.jit`` call per step (loss and gradients by
    ``jax.value_and_grad``, Adam written out); weights and moments donated, then rebound."""

    def __init__(self, spec: MLPSpec) -> None:
        self.jax = jax = import_jax()
        jnp = self.jnp = jax.numpy
        self.spec = spec
        self.params = [jnp.asarray(a) for a in spec.params]
        self.m = [jnp.zeros_like(p) for p in self.params]
        self.v = [jnp.zeros_like(p) for p in self.params]
        self.t = 0
        self.batches = [(jnp.asarray(x), jnp.asarray(y)) for x, y in spec.batches]
        self._step = jax.jit(self._math, donate_argnums=(0, 1, 2),
                             static_argnames="with_grads")
        for x, y in {tuple(x.shape): (x, y) for x, y in self.batches}.values():
            # compile for each batch shape, on copies (donated): the state stays initial
            copies = [[jnp.array(a) for a in arrays] for arrays in (self.params, self.m, self.v)]
            jax.block_until_ready(self._step(*copies, 1.0, x, y, with_grads=False))

    def _loss(self, params: list, x: Any, y: Any) -> Any:
        jnp, n = self.jnp, len(params) // 2
        for i in range(n):
            x = x @ params[2 * i].T + params[2 * i + 1]
            if i < n - 1:
                x = jnp.maximum(x, 0)
        if self.spec.loss == "mse":
            return jnp.mean((x - y) ** 2)
        logp = self.jax.nn.log_softmax(x, axis=-1)
        return -jnp.take_along_axis(logp, y[:, None], axis=1).mean()

    def _math(self, params: list, m: list, v: list, t: Any, x: Any, y: Any,
              with_grads: bool = False) -> tuple:
        jnp, lr = self.jnp, self.spec.lr
        loss, grads = self.jax.value_and_grad(self._loss)(params, x, y)
        bc1, root_bc2 = 1 - B1 ** t, jnp.sqrt(1 - B2 ** t)
        m = [B1 * mi + (1 - B1) * g for mi, g in zip(m, grads)]
        v = [B2 * vi + (1 - B2) * (g * g) for vi, g in zip(v, grads)]
        params = [p - (lr / bc1) * mi / (jnp.sqrt(vi) / root_bc2 + EPS)
                  for p, mi, vi in zip(params, m, v)]
        return loss, params, m, v, (grads if with_grads else None)

    def _run(self, x: Any, y: Any, with_grads: bool = False) -> tuple:
        self.t += 1
        loss, self.params, self.m, self.v, grads = self._step(
            self.params, self.m, self.v, float(self.t), x, y, with_grads=with_grads)
        return loss, grads

    def step(self) -> None:
        for x, y in self.batches:
            loss, _ = self._run(x, y)
        self.jax.block_until_ready((loss, self.params))

    def check(self) -> dict:
        before = [np.array(p) for p in self.params]  # copies: the step donates these buffers
        loss, grads = self._run(*self.batches[0], with_grads=True)
        return _check_result(np.array(loss), [np.array(g) for g in grads], before,
                             [np.array(p) for p in self.params], self.spec.lr)


_IMPLS = {"xad": XadMLP, "numpy": NumpyMLP, "torch": TorchMLP, "xad-compiled": XadCompiledMLP,
          "jax-jit": JaxMLP}


def build_mlp(name: str) -> Any:
    """The ``build(impl, size)`` function of MLP workload ``name``."""
    def build(impl: str, size: str) -> Any:
        return _IMPLS[impl](mlp_spec(name, size))
    return build


def _seed_scale(size: str) -> float:
    return 10.0 if size == "quick" else 1.0  # quick runs 10 of the 100 epochs


WORKLOADS = [
    Workload("mlp", "MLP 784-512-512-10, ReLU, cross-entropy, batch 256: one Adam step",
             "ms/step", build_mlp("mlp"), scale=lambda s: 1e3,
             impls=ALL_IMPLS, target="<= 1.0x torch, <= 1.1x numpy; compiled <= 1.05x numpy, "
             "<= jax-jit"),
    Workload("mlp-small", "MLP 784-64-64-10, batch 16: one Adam step (overhead-bound)",
             "us/step", build_mlp("mlp-small"), scale=lambda s: 1e6, impls=ALL_IMPLS,
             target="<= 1.0x torch; compiled <= 1.2x numpy"),
    Workload("seed-deep", "10 Linear(10) + ReLU, He init, Adam 1e-3, batch 32, 1000 points, "
             "100 epochs (whole run)", "s/run", build_mlp("seed-deep"), scale=_seed_scale,
             impls=ALL_IMPLS, target="<= 1.0x torch; compiled <= 1.2x numpy", min_time=0.0,
             reps=5, max_time=90.0),
]
