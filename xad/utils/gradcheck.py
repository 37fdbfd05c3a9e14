"""Compare analytic gradients with central finite differences (in float64)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from .. import autograd as _ag
from .. import dtypes as _dt
from ..factories import zeros
from ..ops import abs as _abs
from ..ops import stack
from ..tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(AssertionError, RuntimeError):
    """Analytic and numerical gradients disagree; the message shows where (a
    ``RuntimeError`` too, as PyTorch's)."""


def _outputs(f: Callable, inputs: Sequence[Tensor]) -> list[Tensor]:
    out = f(*inputs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [o for o in outs if isinstance(o, Tensor)]


def _some_outputs(name: str, f: Callable, inputs: Sequence[Tensor]) -> list[Tensor]:
    """``f``'s tensor outputs, or a ValueError naming it where there are none (PyTorch's
    checks fail on ``float.requires_grad``)."""
    outs = _outputs(f, inputs)
    if not outs:
        raise ValueError(f"{name}: {getattr(f, '__name__', f)!s} returned no tensor; return "
                         f"the tensor(s) whose derivatives to check")
    return outs


def _dot(outs: list[Tensor], vs: list[Tensor]) -> Tensor | None:
    """``sum(o * v)`` over the floating outputs (``None``: there are none)."""
    total = None
    for o, v in zip(outs, vs):
        s = (o * v).sum() if o.dtype.is_floating else None
        if s is not None:
            total = s if total is None else total + s
    return total


def _host(t: Tensor) -> Any:
    return t._backend.to_numpy(t._array).astype("float64")


def gradcheck(f: Callable, inputs: Sequence[Tensor] | Tensor, eps: float = 1e-6,
              atol: float = 1e-5, rtol: float = 1e-3, n_directions: int = 2,
              seed: int = 0) -> bool:
    """Check ``f``'s gradients against central finite differences; ``True`` or raise.

    First a fast check along pseudo-random directions (``v^T J u`` by both methods); if it fails,
    the whole Jacobian is compared element by element and the error names the input, the
    output and the entries that differ. Inputs should be float64 (a warning otherwise).

    Example:
        >>> import xad
        >>> x = xad.tensor([0.3, -1.2], dtype=xad.float64, requires_grad=True)
        >>> xad.gradcheck(lambda t: xad.tanh(t) * t, [x])
        True
    """
    ins = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    diff = [i for i, t in enumerate(ins) if isinstance(t, Tensor) and t.requires_grad]
    if not diff:
        raise ValueError("gradcheck: no input requires grad")
    for i in diff:
        if ins[i].dtype is not _dt.float64:
            warnings.warn(f"gradcheck: input {i} is {ins[i].dtype}; finite differences need "
                          f"float64 to be reliable", stacklevel=2)
    outs = _some_outputs("gradcheck", f, ins)
    b = outs[0]._backend
    salt = 1000 * seed
    for _ in range(n_directions):
        vs = [_direction(o.shape, o.dtype, b, salt + k) for k, o in enumerate(outs)]
        salt += len(outs)
        us = [_direction(ins[i].shape, ins[i].dtype, b, salt + k) for k, i in enumerate(diff)]
        salt += len(diff)
        analytic = _analytic_dir(f, ins, diff, vs, us)
        numeric = _numeric_dir(f, ins, diff, vs, us, eps)
        if not math.isclose(analytic, numeric, rel_tol=rtol, abs_tol=atol * max(
                1.0, *(float(math.sqrt(_host(u * u).sum())) for u in us))):
            _full_check(f, ins, diff, eps, atol, rtol)
            raise GradcheckError(
                f"gradcheck: directional derivative differs (analytic {analytic:.6g}, "
                f"numerical {numeric:.6g}) though no single entry exceeded the tolerance")
    return True


def _direction(shape: tuple, dtype: Any, b: Any, salt: int) -> Tensor:
    """A fixed pseudo-random direction with entries in [-1, 1), made with standard functions
    only: no generator state is touched, and no per-shape random kernel is compiled."""
    xp = b.xp
    native = b.dtype(dtype) if isinstance(dtype, _dt.DType) else dtype
    if not b.xad_dtype(native).is_floating:  # outputs that carry no gradient
        return Tensor._make(b.zeros(tuple(shape), native), b)
    with b.on_device():
        i = xp.arange(math.prod(shape), dtype=native, device=b.device)
        v = xp.sin(i * 12.9898 + (salt * 78.233) % 6283.0) * 43758.5453
        v = (v - xp.floor(v)) * 2 - 1
    return Tensor._make(xp.reshape(v, tuple(shape)), b)


def _analytic_dir(f, ins, diff, vs, us) -> float:
    with _ag.enable_grad():
        outs = _outputs(f, ins)
        s = _dot(outs, vs)
        if s is None or not s.requires_grad:
            return 0.0
        gs = _ag.grad(s, [ins[i] for i in diff], allow_unused=True)
    return sum(float(_host(g * u).sum()) for g, u in zip(gs, us) if g is not None)


def _with_array(x: Tensor, data: Any) -> Tensor:
    t = Tensor._make(data, x._backend)
    t.requires_grad = x.requires_grad  # so that an f which differentiates inside still can
    return t


def _shifted(f, ins, i, delta) -> list[Tensor]:
    with _ag.no_grad(), ins[i]._backend.on_device():
        args = list(ins)
        args[i] = _with_array(ins[i], ins[i]._array + delta._array)
        return _outputs(f, args)


def _numeric_dir(f, ins, diff, vs, us, eps) -> float:
    with _ag.no_grad():
        plus = list(ins)
        minus = list(ins)
        for i, u in zip(diff, us):
            with ins[i]._backend.on_device():
                plus[i] = _with_array(ins[i], ins[i]._array + eps * u._array)
                minus[i] = _with_array(ins[i], ins[i]._array - eps * u._array)
        fp, fm = _dot(_outputs(f, plus), vs), _dot(_outputs(f, minus), vs)
    if fp is None or fm is None:  # no floating output: no derivative, as _analytic_dir
        return 0.0
    return float(_host(fp - fm).sum()) / (2 * eps)


def _unit(k: int, shape: tuple, dtype: Any, b: Any, scale: float = 1.0) -> Tensor:
    e = zeros(math.prod(shape), dtype=dtype, backend=b)
    e[k] = scale
    return e.reshape(shape)


def _full_check(f, ins, diff, eps, atol, rtol) -> None:
    """Compare the whole Jacobian and raise naming the entries that differ."""
    outs = _outputs(f, ins)
    b = outs[0]._backend
    for oi, o in enumerate(outs):
        if not o.dtype.is_floating:
            continue
        for i in diff:
            x = ins[i]
            cols = []
            for k in range(x.size):
                d = _unit(k, x.shape, x.dtype, b, eps)
                fp, fm = _shifted(f, ins, i, d)[oi], _shifted(f, ins, i, -d)[oi]
                cols.append(((fp - fm) * (1 / (2 * eps))).reshape(-1))
            num = stack(cols, axis=1)
            rows = []
            for r in range(o.size):
                v = _unit(r, o.shape, o.dtype, b)
                with _ag.enable_grad():
                    out = _outputs(f, ins)[oi]
                    g, = _ag.grad((out * v).sum(), [x], allow_unused=True)
                rows.append(g.detach().reshape(-1) if g is not None else x.reshape(-1) * 0)
            ana = stack(rows, axis=0).astype(num.dtype)
            bad = (_abs(ana - num) > _abs(num) * rtol + atol).tolist()
            a_host, n_host = ana.tolist(), num.tolist()
            wrong = [(r, c) for r, row in enumerate(bad) for c, w in enumerate(row) if w]
            if wrong:
                shown = "\n".join(
                    f"  d out{oi}[flat {r}] / d in{i}[flat {c}]: analytic {a_host[r][c]:.8g},"
                    f" numerical {n_host[r][c]:.8g}" for r, c in wrong[:8])
                raise GradcheckError(f"gradcheck: Jacobian of output {oi} (shape {o.shape}) "
                                     f"with respect to input {i} (shape {x.shape}) differs in "
                                     f"{len(wrong)} of {o.size * x.size} entries (atol={atol}, "
                                     f"rtol={rtol}):\n{shown}")


def gradgradcheck(f: Callable, inputs: Sequence[Tensor] | Tensor, eps: float = 1e-6,
                  atol: float = 1e-5, rtol: float = 1e-3, seed: int = 0) -> bool:
    """Check second derivatives: gradcheck of ``x -> grad(<f(x), v>)`` for a fixed ``v``.

    Example:
        >>> import xad
        >>> x = xad.tensor([0.3, -1.2], dtype=xad.float64, requires_grad=True)
        >>> xad.gradgradcheck(lambda t: xad.sin(t) * t, [x])
        True
    """
    ins = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    diff = [i for i, t in enumerate(ins) if isinstance(t, Tensor) and t.requires_grad]
    outs = _some_outputs("gradgradcheck", f, ins)
    if not any(o.dtype.is_floating for o in outs):
        # PyTorch's gradgradcheck fails here too (a TypeError from inside its wrapper)
        got = ", ".join(f"{o.dtype.name} {tuple(o.shape)}" for o in outs)
        raise ValueError(
            f"gradgradcheck: {getattr(f, '__name__', f)!s} has no floating-point output "
            f"(it returned {got}), so it has no first derivative to differentiate again; "
            f"check a function with a floating output (gradcheck passes this one trivially)")
    b = outs[0]._backend
    vs = [_direction(o.shape, o.dtype, b, 1000 * seed + 500 + k) for k, o in enumerate(outs)]

    def first(*xs: Tensor) -> tuple:
        with _ag.enable_grad():
            s = _dot(_outputs(f, list(xs)), vs)
            gs = _ag.grad(s, [xs[i] for i in diff], create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first, ins, eps=eps, atol=atol, rtol=rtol, seed=seed)
