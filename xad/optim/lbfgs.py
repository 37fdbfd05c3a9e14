"""``LBFGS``, as ``torch.optim.LBFGS`` (names, defaults, state keys, and its iteration step
for step: the two-loop recursion, the first step's scaling, the strong Wolfe line search
ported from ``torch/optim/lbfgs.py``).

The parameters are handled as one flat vector (a :class:`~xad.Tensor` on their backend);
the scalars of the method (``ys``, ``rho``, step length ``t``, losses) are Python numbers,
read back from the device with ``.item()`` where the method branches on them, as PyTorch's
does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .. import autograd as _ag
from ..factories import zeros
from ..ops.complex_parts import view_as_real
from ..ops.shape import concat
from ..tensor import Tensor
from .optimizer import Optimizer, ParamsT, _check, _is_number

__all__ = ["LBFGS"]


def _copied(v: Any) -> Any:
    """``v`` with its tensors (also inside lists) cloned."""
    if isinstance(v, Tensor):
        return v.detach().clone()
    if isinstance(v, list):
        return [_copied(x) for x in v]
    return v


def _real_view(p: Tensor) -> Tensor:
    return view_as_real(p) if p.dtype.is_complex else p


def _dot(a: Tensor, b: Tensor) -> float:
    return (a * b).sum().item()


def _amax(a: Tensor) -> float:
    return a.abs().max().item()


class LBFGS(Optimizer):
    r"""Limited-memory BFGS, as ``torch.optim.LBFGS``: ``step(closure)`` runs up to
    ``max_iter`` iterations (``max_eval`` closure calls), each along the direction of the
    two-loop recursion over the last ``history_size`` steps, with a fixed step ``lr`` or
    the strong Wolfe line search (``line_search_fn="strong_wolfe"``). One parameter group;
    the whole method's state is kept under the first parameter (as PyTorch's).

    Example:
        >>> import xad
        >>> w = xad.tensor([3.0, -2.0], dtype=xad.float64, requires_grad=True)
        >>> opt = xad.optim.LBFGS([w], line_search_fn="strong_wolfe")
        >>> def closure():
        ...     opt.zero_grad(); loss = ((w - 1.0) ** 2).sum(); loss.backward(); return loss
        >>> _ = opt.step(closure); [round(v, 6) for v in w.tolist()]
        [1.0, 1.0]
    """

    _complex_params = True

    def __init__(self, params: ParamsT, lr: float = 1, max_iter: int = 20,
                 max_eval: int | None = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _validate(self, group: dict[str, Any]) -> None:
        lr, ls = group["lr"], group["line_search_fn"]
        _check(_is_number(lr) and lr >= 0, f"Invalid learning rate: {lr}")
        _check(ls in (None, "strong_wolfe"), f"LBFGS: line_search_fn must be None or "
                                             f"'strong_wolfe', got {ls!r}")

    def load_state_dict(self, state_dict: Any) -> None:
        """Restore a state from :meth:`state_dict` (the method's vectors and history are
        copied, not shared with the saved dict).

        Example:
            >>> import xad
            >>> w = xad.ones(2, requires_grad=True); opt = xad.optim.LBFGS([w])
            >>> opt.load_state_dict(opt.state_dict()); opt.param_groups[0]["max_eval"]
            25
        """
        saved = dict(state_dict["state"])
        super().load_state_dict({**state_dict, "state": {}})
        if saved:
            st = next(iter(saved.values()))
            self.state[self._params[0]] = {k: _copied(v) for k, v in st.items()}

    # ----- the flat vector --------------------------------------------------------------------
    def _flat_grad(self) -> Tensor:
        """The gradients as one real vector (a complex one's as its real and imaginary
        parts in turn, ``view_as_real``: PyTorch's)."""
        views = [_real_view(p.grad if p.grad is not None else
                            zeros(p.shape, dtype=p.dtype, device=p.device)).reshape(-1)
                 for p in self._params]
        return concat(views) if len(views) > 1 else views[0].clone()

    def _add_grad(self, t: float, d: Tensor) -> None:
        offset = 0
        for p in map(_real_view, self._params):
            n = p.numel()
            p.copy_(p + d[offset:offset + n].reshape(p.shape) * t)
            offset += n

    def _evaluate(self, closure: Callable[[], Any], x: list[Tensor], t: float,
                  d: Tensor) -> tuple[float, Tensor]:
        """Loss and flat gradient at ``x + t d``; the parameters are put back to ``x``."""
        self._add_grad(t, d)
        loss = float(self._closure(closure))
        g = self._flat_grad()
        for p, saved in zip(self._params, x):
            p.copy_(saved)
        return loss, g

    # ----- the method -------------------------------------------------------------------------
    @_ag.no_grad()
    def step(self, closure: Callable[[], Any]) -> Any:
        """Run up to ``max_iter`` iterations; ``closure`` re-evaluates the model and returns
        the loss (gradients computed); returns the first loss."""
        if closure is None:
            raise RuntimeError("LBFGS.step needs a closure that re-evaluates the model and "
                               "returns the loss")
        group = self.param_groups[0]
        state = self._state(self._params[0])
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = self._closure(closure)
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if _amax(flat_grad) <= group["tolerance_grad"]:
            return orig_loss
        _Run(self, group, state, closure).iterate(float(orig_loss), flat_grad)
        return orig_loss


class _Run:
    """One ``LBFGS.step``: the iterations, on the state kept under the first parameter."""

    def __init__(self, opt: LBFGS, group: dict[str, Any], state: dict[str, Any],
                 closure: Callable[[], Any]) -> None:
        self.opt, self.group, self.state = opt, group, state
        self.closure = closure
        self.evals = 1

    def iterate(self, loss: float, flat_grad: Tensor) -> None:
        g, st = self.group, self.state
        for key, empty in (("old_dirs", []), ("old_stps", []), ("ro", []), ("H_diag", 1)):
            st.setdefault(key, empty)
        n_iter = 0
        while n_iter < g["max_iter"]:
            n_iter += 1
            st["n_iter"] += 1
            d = self._direction(flat_grad)
            st["prev_flat_grad"], st["prev_loss"] = flat_grad.clone(), loss
            t = min(1.0, 1.0 / flat_grad.abs().sum().item()) * g["lr"] \
                if st["n_iter"] == 1 else g["lr"]
            gtd = _dot(flat_grad, d)
            if gtd > -g["tolerance_change"]:
                st["d"], st["t"] = d, t
                break
            loss, flat_grad, t, evals = self._move(loss, flat_grad, t, d, gtd,
                                                   n_iter != g["max_iter"])
            st["d"], st["t"] = d, t
            self.evals += evals
            st["func_evals"] += evals
            if n_iter == g["max_iter"] or self.evals >= g["max_eval"]:
                break
            if _amax(flat_grad) <= g["tolerance_grad"]:
                break
            if _amax(d * t) <= g["tolerance_change"] \
                    or abs(loss - st["prev_loss"]) < g["tolerance_change"]:
                break

    def _direction(self, flat_grad: Tensor) -> Tensor:
        """The L-BFGS direction: ``-H g`` by the two-loop recursion, after adding the last
        step to the memory (where its curvature ``y.s`` is positive)."""
        st, hist = self.state, self.group["history_size"]
        if st["n_iter"] == 1:
            st.update(old_dirs=[], old_stps=[], ro=[], H_diag=1)
            return -flat_grad
        y = flat_grad - st["prev_flat_grad"]
        s = st["d"] * st["t"]
        ys = _dot(y, s)
        if ys > 1e-10:
            if len(st["old_dirs"]) == hist:
                for key in ("old_dirs", "old_stps", "ro"):
                    st[key].pop(0)
            st["old_dirs"].append(y)
            st["old_stps"].append(s)
            st["ro"].append(1.0 / ys)
            st["H_diag"] = ys / _dot(y, y)
        dirs, stps, ro = st["old_dirs"], st["old_stps"], st["ro"]
        al = st.setdefault("al", [None] * hist)
        q = -flat_grad
        for i in range(len(dirs) - 1, -1, -1):
            al[i] = _dot(stps[i], q) * ro[i]
            q = q + dirs[i] * (-al[i])
        r = q * st["H_diag"]
        for i in range(len(dirs)):
            be_i = _dot(dirs[i], r) * ro[i]
            r = r + stps[i] * (al[i] - be_i)
        return r

    def _move(self, loss: float, flat_grad: Tensor, t: float, d: Tensor, gtd: float,
              reevaluate: bool) -> tuple[float, Tensor, float, int]:
        """Step along ``d``: by the line search, or by ``t`` (re-evaluating the loss unless
        this is the last iteration). Returns the new loss, gradient, step and evaluations."""
        opt = self.opt
        if self.group["line_search_fn"] == "strong_wolfe":
            x = [p.clone() for p in opt._params]
            loss, flat_grad, t, evals = _strong_wolfe(
                lambda x_, t_, d_: opt._evaluate(self.closure, x_, t_, d_), x, t, d, loss,
                flat_grad, gtd, max_ls=self.group["max_eval"] - self.evals)
            opt._add_grad(t, d)
            return loss, flat_grad, t, evals
        opt._add_grad(t, d)
        if not reevaluate:
            return loss, flat_grad, t, 0
        loss = float(opt._closure(self.closure))
        return loss, opt._flat_grad(), t, 1


def _cubic_interpolate(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
                       bounds: tuple[float, float] | None = None) -> float:
    """The minimiser of the cubic through two points with values and slopes, within
    ``bounds`` (the bisection where the cubic has none)."""
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (lo + hi) / 2.0
    d2 = math.sqrt(d2_square)
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, lo), hi)


class _Bracket:
    """The line search's bracket: steps ``t``, losses ``f``, gradients ``g``, slopes
    ``gtd`` (lists of one or two)."""

    def __init__(self, t: list, f: list, g: list, gtd: list) -> None:
        self.t, self.f, self.g, self.gtd = t, f, g, gtd

    def set(self, i: int, t: float, f: float, g: Tensor, gtd: float) -> None:
        self.t[i], self.f[i], self.g[i], self.gtd[i] = t, f, g, gtd


def _strong_wolfe(obj_func: Callable, x: list[Tensor], t: float, d: Tensor, f: float,
                  g: Tensor, gtd: float, c1: float = 1e-4, c2: float = 0.9,
                  tolerance_change: float = 1e-9,
                  max_ls: int = 25) -> tuple[float, Tensor, float, int]:
    """A step ``t`` along ``d`` meeting the strong Wolfe conditions (bracketing, then
    zooming by cubic interpolation), as PyTorch's ``_strong_wolfe``."""
    d_norm = _amax(d)
    f_new, g_new = obj_func(x, t, d)
    evals, gtd_new = 1, _dot(g_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done, ls_iter, br = False, 0, None
    while ls_iter < max_ls:
        if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev):
            br = _Bracket([t_prev, t], [f_prev, f_new], [g_prev, g_new], [gtd_prev, gtd_new])
            break
        if abs(gtd_new) <= -c2 * gtd:
            br, done = _Bracket([t], [f_new], [g_new], [gtd_new]), True
            break
        if gtd_new >= 0:
            br = _Bracket([t_prev, t], [f_prev, f_new], [g_prev, g_new], [gtd_prev, gtd_new])
            break
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(t + 0.01 * (t - t_prev), t * 10))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new, gtd_new
        f_new, g_new = obj_func(x, t, d)
        evals, gtd_new, ls_iter = evals + 1, _dot(g_new, d), ls_iter + 1
    if ls_iter == max_ls:
        br = _Bracket([0, t], [f, f_new], [g, g_new], [gtd, gtd_new])
    assert br is not None
    low = 0 if br.f[0] <= br.f[-1] else 1
    if not done:
        more, low = _zoom(obj_func, x, d, f, gtd, br, ls_iter, max_ls, d_norm, c1, c2,
                          tolerance_change)
        evals += more
    return br.f[low], br.g[low], br.t[low], evals


def _zoom(obj_func: Callable, x: list[Tensor], d: Tensor, f: float, gtd: float,
          br: _Bracket, ls_iter: int, max_ls: int, d_norm: float, c1: float, c2: float,
          tolerance_change: float) -> tuple[int, int]:
    """Shrink ``br`` (in place) onto a point meeting the strong Wolfe conditions; returns
    the evaluations made and the index of the bracket's low point."""
    insuf_progress, evals = False, 0
    low, high = (0, 1) if br.f[0] <= br.f[-1] else (1, 0)
    while ls_iter < max_ls:
        if abs(br.t[1] - br.t[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(br.t[0], br.f[0], br.gtd[0], br.t[1], br.f[1], br.gtd[1])
        hi_t, lo_t = max(br.t), min(br.t)
        eps = 0.1 * (hi_t - lo_t)
        if min(hi_t - t, t - lo_t) < eps:
            if insuf_progress or t >= hi_t or t <= lo_t:
                t = hi_t - eps if abs(t - hi_t) < abs(t - lo_t) else lo_t + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        evals, ls_iter = evals + 1, ls_iter + 1
        gtd_new = _dot(g_new, d)
        if f_new > f + c1 * t * gtd or f_new >= br.f[low]:
            br.set(high, t, f_new, g_new, gtd_new)
            low, high = (0, 1) if br.f[0] <= br.f[1] else (1, 0)
            continue
        if abs(gtd_new) <= -c2 * gtd:
            br.set(low, t, f_new, g_new, gtd_new)
            break
        if gtd_new * (br.t[high] - br.t[low]) >= 0:
            br.set(high, br.t[low], br.f[low], br.g[low], br.gtd[low])
        br.set(low, t, f_new, g_new, gtd_new)
    return evals, low
