"""Function transforms, as in JAX: grad, value_and_grad, vjp, jvp, jacobian, hessian, hvp.

Each transform takes a function of tensors and returns derivatives as new tensors; nothing
is stored in any ``.grad``. The differentiated arguments may be tensors or nested
lists/tuples/dicts of tensors (a model's parameters); gradients come back with the same
structure.

How it works: the arguments are re-made as fresh leaves (sharing their arrays) that
require grad, ``f`` is recorded, and :func:`xad.autograd.grad` returns the gradients. When an
argument already requires grad and recording is on (``grad(grad(f))``, or a user graph
around the call) it is passed through a recorded ``alias`` node instead, so the result stays
connected to the outer graph while the inner derivative is still taken with respect to this
call's argument only (no "perturbation confusion": ``grad(lambda x: x * grad(lambda y: x *
y)(x))`` sees ``x`` and ``y`` as different variables). The backward pass is then recorded
(``create_graph=True``) exactly when something outside this call can still differentiate the
result: an aliased argument, or a closed-over tensor that requires grad. Otherwise the
gradients are plain values and the graph of ``f`` is freed at once.

Forward mode (:func:`jvp`, :func:`linearize`, :func:`jacfwd`) is native: one pass of ``f``
carrying tangents through each primitive's JVP rule (:mod:`xad.forward_mode`), no graph.
:func:`hessian` is ``jacfwd(jacrev(f))`` and :func:`hvp` ``jvp(grad(f))``: forward over
reverse. docs/TRANSFORMS.md has how the modes and ``vmap`` compose, and their costs.

Memory: these transforms are the leak-free path to higher order. ``y.backward(
create_graph=True)`` stores a gradient whose graph references the leaf that stores it
(``x.grad -> node -> x``): a reference cycle that only the cyclic garbage collector frees.
The transforms hand gradients back instead, so no such cycle is made and every graph is
freed by reference counting as soon as its results are dropped.

Example:
    >>> import xad
    >>> d3 = xad.grad(xad.grad(xad.grad(lambda x: x ** 3)))
    >>> d3(xad.tensor(2.0)).item()
    6.0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from . import autograd as _ag
from .context import context
from .factories import eye, zeros, zeros_like
from .forward_mode import _batch_chain, forward_pass, unviewed
from .graph import record
from .ops import reshape, stack
from .tensor import Tensor

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "linearize", "jacobian", "jacrev", "jacfwd",
           "hessian", "hvp"]


# ----- nested structures (a minimal pytree) --------------------------------------------------
def _flatten(tree: Any, where: str, leaves: list | None = None) -> tuple[list, Any]:
    """Tensors of ``tree`` in order, and a spec to rebuild it; ``None`` is an empty node."""
    leaves = [] if leaves is None else leaves
    if isinstance(tree, Tensor):
        leaves.append(tree)
        return leaves, "T"
    if tree is None:
        return leaves, None
    if isinstance(tree, dict):
        keys = list(tree)
        return leaves, ("dict", type(tree), keys,
                        [_flatten(tree[k], f"{where}[{k!r}]", leaves)[1] for k in keys])
    if isinstance(tree, (list, tuple)):
        return leaves, (type(tree), None, None,
                        [_flatten(v, f"{where}[{i}]", leaves)[1] for i, v in enumerate(tree)])
    raise TypeError(f"{where} is a {type(tree).__name__}; differentiated arguments, outputs "
                    f"and tangents must be tensors or lists/tuples/dicts of tensors (pass "
                    f"other values as arguments outside argnums, or close over them)")


def _unflatten(spec: Any, leaves: Any) -> Any:
    return _build(spec, iter(leaves))


def _build(s: Any, it: Any) -> Any:
    # module-level recursion: a nested recursive closure would be a reference cycle
    if s == "T":
        return next(it)
    if s is None:
        return None
    kind, cls, keys, subs = s
    if kind == "dict":
        return cls(zip(keys, [_build(c, it) for c in subs]))
    vals = [_build(c, it) for c in subs]
    if kind is list:
        return vals
    return kind(*vals) if hasattr(kind, "_fields") else kind(vals)


# ----- argument handling ------------------------------------------------------------------
class _AliasOp:
    """The rule of an ``alias`` node: identity. (A plain node, not a ``Function``: a
    Function's node and context refer to each other, a cycle that would outlive the call.)"""

    name = "alias"
    save_inputs = False
    save_output = False
    user_rule = False

    @staticmethod
    def backward(node: _ag.Node, g: Tensor) -> Tensor:
        return g


def _alias_input(x: Tensor) -> Tensor:
    """``x`` behind a recorded identity node: a distinct input tied to ``x``'s graph."""
    return record(_AliasOp, (x,), x._array, x._backend)


def _argnums(fname: str, argnums: Any, n_args: int) -> tuple[tuple[int, ...], bool]:
    single = isinstance(argnums, int) and not isinstance(argnums, bool)
    nums = (argnums,) if single else argnums
    if not isinstance(nums, (tuple, list)) or not nums or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in nums):
        raise TypeError(f"{fname}: argnums must be an int or a non-empty tuple of ints, "
                        f"got {argnums!r}")
    out = []
    for i in nums:
        if not -n_args <= i < n_args:
            raise ValueError(f"{fname}: argnums={argnums!r} refers to positional argument "
                             f"{i}, but the function was called with {n_args} positional "
                             f"argument(s); valid argnums are 0..{n_args - 1} (or negative)")
        out.append(i % n_args)
    if len(set(out)) != len(out):
        raise ValueError(f"{fname}: argnums={argnums!r} names an argument twice")
    return tuple(out), single


class _Inputs:
    """The differentiated arguments, re-made as fresh leaves (or aliases when nested)."""

    def __init__(self, fname: str, args: Sequence, nums: Sequence[int], record: bool) -> None:
        self.args = list(args)
        self.specs: list = []
        self.flat: list[Tensor] = []   # the tensors f sees, in order
        self.counts: list[int] = []    # how many tensors per differentiated argument
        self.aliased = False
        level = _batch_level()
        for i in nums:
            leaves, spec = _flatten(args[i], f"{fname}: argument {i}")
            new = []
            for t in leaves:
                if not t.dtype.is_floating:
                    raise TypeError(f"{fname}: argument {i} holds a tensor of dtype {t.dtype} "
                                    f"(shape {t.shape}); only floating tensors can be "
                                    f"differentiated: convert with .astype(xad.float32)")
                if level is not None:
                    w, tied = _per_example(level, t)
                    self.aliased = self.aliased or tied
                elif record and t.requires_grad:
                    w = _alias_input(t)
                    self.aliased = True
                else:
                    w = Tensor._make(t._array, t._backend, t)
                    w.requires_grad = True
                if type(w) is Tensor and type(t) is not Tensor:  # batched (a vmap outside a
                    w.__class__ = type(t)                          # jvp): its logical shape
                new.append(w)
            self.args[i] = _unflatten(spec, new)
            self.specs.append(spec)
            self.flat.extend(new)
            self.counts.append(len(new))
        self.leaf_ids = {id(w) for w in self.flat if w._node is None}

    def split(self, flat: Sequence[Tensor]) -> list:
        """Per-argument structures from a flat list of per-input results."""
        return _split(self.specs, self.counts, flat)


def _carrying_tangents() -> bool:
    """Whether a ``jvp`` is in progress: a reverse pass must then be recorded, so that its
    operations (not in-place accumulation) carry the tangents."""
    lvl = context.transform
    while lvl is not None:
        if not hasattr(lvl, "per_example"):
            return True
        lvl = lvl.parent
    return False


def _batch_level() -> Any:
    """The innermost transform when it is a ``vmap`` level, else ``None``."""
    lvl = context.transform
    return lvl if hasattr(lvl, "per_example") else None


def _per_example(level: Any, t: Tensor) -> tuple[Tensor, bool]:
    """Inside ``vmap``: an input holding one copy of ``t`` per example of every ``vmap``
    level in progress (batched at each), so that its gradient is per example and the
    reverse pass runs below them, on whole arrays; and whether it is tied to ``t``'s graph
    (``t`` requires grad: a gradient through ``vmap``, as ``grad`` of a ``vmap(grad(f))``),
    else a fresh leaf."""
    chain = _batch_chain()
    full = t
    try:
        for lvl in chain:  # innermost first: each level's batch axis goes in front
            context.transform = lvl.parent
            full = lvl.per_example(full)
        tied = t.requires_grad and _ag.is_grad_enabled()
        if tied:
            w = _alias_input(full)
        else:
            w = Tensor._make(full._array, t._backend)
            w.requires_grad = True
    finally:
        context.transform = level
    for lvl in chain:
        lvl.mark(w)
    return w, tied


def _split(specs: Sequence, counts: Sequence[int], flat: Sequence) -> list:
    """Rebuild one structure per argument (``specs``) from a flat list, ``counts`` each."""
    out, k = [], 0
    for spec, n in zip(specs, counts):
        out.append(_unflatten(spec, flat[k:k + n]))
        k += n
    return out


def _connected(outs: Sequence[Tensor], ins: _Inputs) -> bool:
    """Whether anything outside this call (an alias, a closed-over leaf) can differentiate
    ``outs``: then the backward pass must be recorded."""
    if ins.aliased:
        return True
    stack_: list = []
    seen: set = set()
    for o in outs:
        if o._node is not None and o._node not in seen:
            seen.add(o._node)
            stack_.append(o._node)
        elif o._node is None and o.requires_grad and id(o) not in ins.leaf_ids:
            return True
    while stack_:
        n = stack_.pop()
        for e in n.edges:
            if e is None:
                continue
            if type(e) is tuple:
                if e[0] not in seen:
                    seen.add(e[0])
                    stack_.append(e[0])
            elif id(e) not in ins.leaf_ids:
                return True
    return False


def _run(fname: str, f: Callable, args: Sequence, nums: Sequence[int], kwargs: dict,
         has_aux: bool) -> tuple[_Inputs, Any, Any, bool]:
    if not callable(f):
        raise TypeError(f"{fname}: expected a function, got {type(f).__name__}")
    record = _ag.is_grad_enabled()
    ins = _Inputs(fname, args, nums, record)
    with _ag.enable_grad():
        res = f(*ins.args, **kwargs)
    if has_aux:
        if not (isinstance(res, (tuple, list)) and len(res) == 2):
            raise TypeError(f"{fname}: with has_aux=True the function must return a pair "
                            f"(output, aux), got {type(res).__name__}")
        res, aux = res
    else:
        aux = None
    return ins, res, aux, record


def _detach_tree(tree: Any) -> Any:
    if isinstance(tree, Tensor):
        return tree.detach()
    if isinstance(tree, dict):
        return type(tree)((k, _detach_tree(v)) for k, v in tree.items())
    if isinstance(tree, (list, tuple)) and not hasattr(tree, "_fields"):
        return type(tree)(_detach_tree(v) for v in tree)
    return tree


def _grads(outs: list[Tensor], gouts: list[Tensor], ins: Sequence[Tensor], create: bool,
           retain: bool) -> list[Tensor]:
    """Gradients of ``outs`` (weighted by ``gouts``) for ``ins``; zeros where unused."""
    pairs = [(o, g) for o, g in zip(outs, gouts) if o.requires_grad]
    level, chain = context.transform, _batch_chain()
    if pairs:
        try:  # inside vmap the recorded graph is below every vmap level: run it there
            for lvl in chain:
                context.transform = lvl.parent
                pairs = [_batched_pair(lvl, o, g) for o, g in pairs]
            gs = _ag.grad([o for o, _ in pairs], list(ins), [g for _, g in pairs],
                          retain_graph=retain, create_graph=create, allow_unused=True)
            if chain:
                gs = tuple(None if g is None else unviewed(g) for g in gs)
        finally:
            context.transform = level
        for lvl in chain:
            gs = tuple(None if g is None else lvl.mark(g) for g in gs)
    else:
        gs = (None,) * len(ins)
    return [zeros_like(w) if g is None else g for g, w in zip(gs, ins)]


def _batched_pair(level: Any, o: Tensor, g: Tensor) -> tuple[Tensor, Tensor]:
    """An output and its cotangent inside ``vmap``, one level down: both per example when
    either is (an unbatched cotangent of a batched output is the same for every example)."""
    if level.has(o) and not level.has(g):
        return o, level.per_example(g)
    if level.has(g) and not level.has(o):
        return level.per_example(o), g
    return o, g


def _scalar(fname: str, out: Any) -> Tensor:
    if not isinstance(out, Tensor):
        raise TypeError(f"{fname}: the function must return a scalar tensor, got "
                        f"{type(out).__name__}")
    if out.size != 1:
        raise ValueError(f"{fname}: the function must return a scalar (one element), but its "
                         f"output has shape {out.shape}; reduce it first (e.g. .sum()) or use "
                         f"xad.vjp / xad.jacobian for non-scalar outputs")
    if not out.dtype.is_floating:
        raise TypeError(f"{fname}: the function's output has dtype {out.dtype}; only floating "
                        f"outputs can be differentiated")
    return out


def _check_like(fname: str, what: str, given: list[Tensor], spec: Any, ref: list[Tensor],
                ref_spec: Any) -> None:
    if spec != ref_spec or len(given) != len(ref):
        raise ValueError(f"{fname}: {what} must have the same structure as the "
                         f"{'outputs' if what == 'cotangents' else 'primals'} "
                         f"({len(ref)} tensors, structure {_show(ref_spec)}), got "
                         f"{len(given)} tensors with structure {_show(spec)}")
    for k, (g, r) in enumerate(zip(given, ref)):
        if g.shape != r.shape:
            raise ValueError(f"{fname}: {what} tensor {k} has shape {g.shape} but the "
                             f"matching {'output' if what == 'cotangents' else 'primal'} "
                             f"has shape {r.shape}; they must match")
        if g.dtype is not r.dtype:
            raise TypeError(f"{fname}: {what} tensor {k} has dtype {g.dtype} but the "
                            f"matching tensor has dtype {r.dtype}; cast it with .astype()")
        if g._backend is not r._backend:
            raise ValueError(f"{fname}: {what} tensor {k} is on {g._backend.label} but the "
                             f"matching tensor is on {r._backend.label}; move it with .to()")


def _show(spec: Any) -> str:
    if spec == "T":
        return "T"
    if spec is None:
        return "None"
    kind, _, keys, subs = spec
    if kind == "dict":
        return "{" + ", ".join(f"{k!r}: {_show(s)}" for k, s in zip(keys, subs)) + "}"
    inner = ", ".join(_show(s) for s in subs)
    return f"[{inner}]" if kind is list else f"({inner}{',' if len(subs) == 1 else ''})"


# ----- reverse mode -------------------------------------------------------------------------
def value_and_grad(f: Callable, argnums: int | Sequence[int] = 0,
                   has_aux: bool = False) -> Callable:
    """A function returning ``(f(*args), grad)`` (``((value, aux), grad)`` with ``has_aux``).

    Example:
        >>> import xad
        >>> v, g = xad.value_and_grad(lambda x: (x * x).sum())(xad.tensor([1.0, 2.0]))
        >>> v.item(), g.tolist()
        (5.0, [2.0, 4.0])
    """
    return _value_and_grad(f, argnums, has_aux, "value_and_grad")


def _value_and_grad(f: Callable, argnums: int | Sequence[int], has_aux: bool,
                    fname: str) -> Callable:
    """``value_and_grad``, naming ``fname`` in its errors."""
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        nums, single = _argnums(fname, argnums, len(args))
        ins, out, aux, record = _run(fname, f, args, nums, kwargs, has_aux)
        out = _scalar(fname, out)
        create = (record and _connected([out], ins)) or _carrying_tangents()
        one = Tensor._constant(out._backend.full(tuple(out.shape), 1, out._array.dtype),
                               out._backend)
        gs = ins.split(_grads([out], [one], ins.flat, create, retain=create))
        g = gs[0] if single else tuple(gs)
        if not create:
            out, aux = out.detach(), _detach_tree(aux)
        return ((out, aux) if has_aux else out), g
    return wrapped


def grad(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """The gradient of a scalar function, as a function (``(grad, aux)`` with ``has_aux``).

    ``argnums`` picks the differentiated positional arguments (an int, or a tuple giving a
    tuple of gradients); each may be a tensor or a nested list/tuple/dict of tensors, and
    its gradient has the same structure. Compose freely: ``grad(grad(f))``.

    Example:
        >>> import xad
        >>> xad.grad(lambda x: xad.sin(x))(xad.tensor(0.0)).item()
        1.0
        >>> g = xad.grad(lambda p: (p["w"] * p["b"]).sum())(
        ...     {"w": xad.tensor([2.0]), "b": xad.tensor([3.0])})
        >>> g["w"].tolist(), g["b"].tolist()
        ([3.0], [2.0])
    """
    vg = _value_and_grad(f, argnums, has_aux, "grad")

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapped


def vjp(f: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(f(*primals), vjp_fn)``; ``vjp_fn(cotangent)`` returns a tuple, one per primal.

    The cotangent has the structure and shapes of ``f``'s output. The graph of ``f`` is kept
    while ``vjp_fn`` lives, so ``vjp_fn`` may be called many times. With ``has_aux``,
    ``(out, vjp_fn, aux)``.

    Example:
        >>> import xad
        >>> y, vjp_fn = xad.vjp(lambda x: x * 3, xad.tensor([1.0, 2.0]))
        >>> vjp_fn(xad.tensor([1.0, 10.0]))[0].tolist()
        [3.0, 30.0]
    """
    ins, out, aux, record = _run("vjp", f, primals, range(len(primals)), {}, has_aux)
    outs, out_spec = _flatten(out, "vjp: the function's output")
    nested = (record and _connected(outs, ins)) or _carrying_tangents()

    def vjp_fn(cotangent: Any) -> tuple:
        cts, spec = _flatten(cotangent, "vjp_fn: the cotangent")
        _check_like("vjp_fn", "cotangents", cts, spec, outs, out_spec)
        create = nested or _carrying_tangents() or (
            _ag.is_grad_enabled() and any(c.requires_grad for c in cts))
        with _ag.enable_grad():
            gs = _grads(outs, cts, ins.flat, create, retain=True)
        return tuple(ins.split(gs))

    if not nested:
        out, aux = _detach_tree(out), _detach_tree(aux)
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


# ----- forward mode (native: one pass carrying tangents) -----------------------------------
def _forward(fname: str, f: Callable, primals: Sequence, flat_tangents: Sequence
             ) -> tuple[Any, Any, list[Tensor], list[Tensor]]:
    """Run ``f(*primals)`` once with ``flat_tangents`` (one per input tensor, ``None``:
    zero): the output, its spec, its flat tensors and their tangents."""
    if not callable(f):
        raise TypeError(f"{fname}: expected a function, got {type(f).__name__}")
    specs, counts, flat = [], [], []
    for i, p in enumerate(primals):
        leaves, spec = _flatten(p, f"{fname}: primal {i}")
        specs.append(spec)
        counts.append(len(leaves))
        flat.extend(leaves)
    out, tangent = forward_pass(fname, f, flat, flat_tangents,
                                lambda ins: _split(specs, counts, ins))
    outs, out_spec = _flatten(out, f"{fname}: the function's output")
    tans = []
    for o in outs:
        t = tangent(o)
        tans.append(zeros_like(o) if t is None else t)
    return out, out_spec, outs, tans


def _tangents(fname: str, primals: Sequence, tangents: Any) -> list[Tensor]:
    if not isinstance(tangents, (tuple, list)) or len(tangents) != len(primals):
        raise ValueError(f"{fname}: tangents must be a tuple with one entry per primal "
                         f"({len(primals)}), got "
                         f"{type(tangents).__name__}"
                         f"{f' of length {len(tangents)}' if isinstance(tangents, (tuple, list)) else ''}")  # noqa: E501
    flat: list[Tensor] = []
    for i, (p, t) in enumerate(zip(primals, tangents)):
        pl, ps = _flatten(p, f"{fname}: primal {i}")
        tl, ts = _flatten(t, f"{fname}: tangent {i}")
        _check_like(fname, f"tangents (argument {i})", tl, ts, pl, ps)
        flat.extend(tl)
    return flat


def _as_tuple(fname: str, primals: Any) -> tuple[tuple, bool]:
    if isinstance(primals, Tensor):
        return (primals,), True
    if isinstance(primals, (tuple, list)):
        return tuple(primals), False
    raise TypeError(f"{fname}: primals must be a tuple of arguments (or one tensor), got "
                    f"{type(primals).__name__}")


def jvp(f: Callable, primals: Sequence | Tensor, tangents: Sequence | Tensor) -> tuple:
    """``(f(*primals), J @ tangents)``: forward mode, one pass of ``f`` carrying tangents.

    ``primals`` is a tuple of arguments and ``tangents`` a tuple of the same structure and
    shapes (a lone tensor is taken as a 1-tuple). Every primitive ``f`` reaches must have a
    JVP rule; one without raises ``MissingRuleError`` naming it. Costs about one primal
    pass more per primitive (its tangent), and keeps no graph.

    Example:
        >>> import xad
        >>> y, t = xad.jvp(xad.sin, (xad.tensor(0.0),), (xad.tensor(2.0),))
        >>> y.item(), t.item()
        (0.0, 2.0)
    """
    primals, _ = _as_tuple("jvp", primals)
    tangents, _ = _as_tuple("jvp", tangents)
    flat = _tangents("jvp", primals, tangents)
    out, out_spec, _, tans = _forward("jvp", f, primals, flat)
    return out, _unflatten(out_spec, tans)


def linearize(f: Callable, *primals: Any) -> tuple:
    """``(f(*primals), jvp_fn)`` with ``jvp_fn(*tangents)`` the JVP at ``primals``.

    Each call of ``jvp_fn`` runs one forward pass with tangents (xad does not partially
    evaluate ``f``, so the primal is recomputed; JAX's ``linearize`` stores it instead).

    Example:
        >>> import xad
        >>> y, f_jvp = xad.linearize(lambda x: x * x, xad.tensor(3.0))
        >>> y.item(), f_jvp(xad.tensor(1.0)).item()
        (9.0, 6.0)
    """
    out = f(*primals)

    def jvp_fn(*tangents: Any) -> Any:
        return jvp(f, primals, tangents)[1]
    return out, jvp_fn


def _identity_rows(t: Tensor) -> Tensor:
    """The rows of an identity matrix of size ``t.size``, in ``t``'s dtype and backend."""
    return eye(t.size, dtype=t.dtype, backend=t._backend)


def jacobian(f: Callable, argnums: int | Sequence[int] = 0, mode: str = "rev",
             has_aux: bool = False) -> Callable:
    """The Jacobian of ``f`` as a function: each entry has shape ``out.shape + in.shape``.

    ``mode="rev"`` builds it from one VJP per output element (best for few outputs);
    ``mode="fwd"`` from one forward pass with tangents per input element (best for few
    inputs). The result has the output's structure, each leaf holding the input's structure
    (a tuple over ``argnums`` when that is a tuple), as in JAX's ``jacrev``/``jacfwd``.

    Example:
        >>> import xad
        >>> J = xad.jacobian(lambda x: x * x)(xad.tensor([1.0, 2.0]))
        >>> J.tolist()
        [[2.0, 0.0], [0.0, 4.0]]
    """
    if mode not in ("rev", "fwd"):
        raise ValueError(f"jacobian: mode must be 'rev' or 'fwd', got {mode!r}")

    def jac(*args: Any, **kwargs: Any) -> Any:
        nums, single = _argnums("jacobian", argnums, len(args))

        def g(*diff: Any) -> Any:
            full = list(args)
            for i, d in zip(nums, diff):
                full[i] = d
            return f(*full, **kwargs)

        primals = [args[i] for i in nums]
        build = _jac_rev if mode == "rev" else _jac_fwd
        blocks, out_spec, aux = build(g, primals, has_aux)
        per_out = []
        specs = [_flatten(a, "")[1] for a in primals]
        counts = [len(_flatten(a, "")[0]) for a in primals]
        for cols in blocks:
            parts = _split(specs, counts, cols)
            per_out.append(parts[0] if single else tuple(parts))
        result = _unflatten(out_spec, per_out)
        return (result, aux) if has_aux else result
    return jac


def jacrev(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable:
    """``jacobian(f, argnums, mode="rev")``, as JAX's ``jacrev``.

    ``chunk_size`` (``torch.func``'s) is accepted and checked: xad builds the Jacobian one
    row at a time already, so every chunk size gives the same numbers and memory.

    Example:
        >>> import xad
        >>> xad.jacrev(lambda x: x * 3)(xad.tensor([1.0])).tolist()
        [[3.0]]
    """
    _chunk("jacrev", chunk_size)
    return jacobian(f, argnums, mode="rev", has_aux=has_aux)


def _chunk(fname: str, chunk_size: Any) -> None:
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"{fname}: chunk_size must be a positive int or None, got "
                         f"{chunk_size!r}")


def jacfwd(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable:
    """``jacobian(f, argnums, mode="fwd")``, as JAX's ``jacfwd``: native forward mode.

    ``chunk_size`` is accepted and checked, as :func:`jacrev`'s (one column at a time).

    Example:
        >>> import xad
        >>> xad.jacfwd(lambda x: x * 3)(xad.tensor([1.0])).tolist()
        [[3.0]]
    """
    _chunk("jacfwd", chunk_size)
    return jacobian(f, argnums, mode="fwd", has_aux=has_aux)


def _jac_rev(g: Callable, primals: list, has_aux: bool) -> tuple[list, Any, Any]:
    """Jacobian blocks ``[output][input]`` from one VJP per output element."""
    res = vjp(g, *primals, has_aux=has_aux)
    out, vjp_fn = res[0], res[1]
    aux = res[2] if has_aux else None
    outs, out_spec = _flatten(out, "jacobian: the function's output")
    in_flat = _flatten(primals, "jacobian: the arguments")[0]
    blocks = []
    for k, o in enumerate(outs):
        rows: list[list[Tensor]] = []
        if o.size:
            basis = _identity_rows(o)
            for j in range(o.size):
                ct = [reshape(basis[j, :], o.shape) if m == k else zeros_like(p)
                      for m, p in enumerate(outs)]
                per = vjp_fn(_unflatten(out_spec, ct))
                rows.append(_flatten(list(per), "")[0])
        blocks.append([_assemble(o, x, [r[n] for r in rows], rows_first=True)
                       for n, x in enumerate(in_flat)])
    return blocks, out_spec, aux


def _jac_fwd(g: Callable, primals: list, has_aux: bool) -> tuple[list, Any, Any]:
    """Jacobian blocks ``[output][input]`` from one forward pass per input element."""
    box: list = []

    def main(*a: Any) -> Any:
        res = g(*a)
        if not has_aux:
            return res
        if not (isinstance(res, (tuple, list)) and len(res) == 2):
            raise TypeError(f"jacobian: with has_aux=True the function must return a pair "
                            f"(output, aux), got {type(res).__name__}")
        box[:] = [res[1]]
        return res[0]

    in_flat = _flatten(primals, "jacobian: the arguments")[0]
    for n, x in enumerate(in_flat):
        if x.dtype.is_complex:  # a real unit tangent gives d/dRe only: not f's Jacobian
            raise NotImplementedError(
                f"jacfwd (jacobian mode='fwd'): argument {n} is complex ({x.dtype}, shape "
                f"{x.shape}); forward-mode Jacobians take real inputs only (torch.func.jacfwd "
                f"and JAX's refuse them too): pass its real and imaginary parts as two real "
                f"arguments, or use xad.jvp with complex tangents")
    cols: list[list[list[Tensor]]] = [[] for _ in in_flat]
    out_spec = outs = None
    for n, x in enumerate(in_flat):
        if x.size:
            basis = _identity_rows(x)
        for j in range(x.size):
            t: list = [None] * len(in_flat)
            t[n] = reshape(basis[j, :], x.shape)
            _, out_spec, outs, tans = _forward("jacobian", main, primals, t)
            cols[n].append(tans)
    if outs is None:  # no input elements: one plain pass for the output's shapes
        _, out_spec, outs, _ = _forward("jacobian", main, primals, [None] * len(in_flat))
    blocks = [[_assemble(o, x, [c[k] for c in cols[n]], rows_first=False)
               for n, x in enumerate(in_flat)] for k, o in enumerate(outs)]
    return blocks, out_spec, (box[0] if box else None)


def _assemble(o: Tensor, x: Tensor, parts: list[Tensor], rows_first: bool) -> Tensor:
    """Stack per-element derivatives into one ``o.shape + x.shape`` tensor."""
    shape = tuple(o.shape) + tuple(x.shape)
    if not parts:  # an empty output or input: nothing to stack
        return zeros(shape, dtype=x.dtype, backend=x._backend)
    if rows_first:  # parts[j]: d o_j / d x, shape x.shape
        return reshape(stack(parts, axis=0), shape)
    # parts[j]: d o / d x_j, shape o.shape
    return reshape(stack(parts, axis=-1), shape)


def hessian(f: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """The Hessian of ``f`` as a function: ``jacfwd(jacrev(f))``, forward over reverse.

    For a scalar ``f`` of ``x`` the result has shape ``x.shape + x.shape``; with a tuple of
    ``argnums`` it is nested, ``H[i][j]`` for arguments ``i`` and ``j``. One forward pass
    with tangents through the recorded gradient per input element.

    Example:
        >>> import xad
        >>> xad.hessian(lambda x: (x ** 3).sum())(xad.tensor([1.0, 2.0])).tolist()
        [[6.0, 0.0], [0.0, 12.0]]
    """
    return jacfwd(jacrev(f, argnums), argnums)


def hvp(f: Callable, primals: Sequence | Tensor, tangents: Sequence | Tensor) -> Any:
    """The Hessian-vector product ``H v`` of a scalar ``f``, with the structure of ``primals``.

    Forward over reverse, as JAX's: the JVP of ``grad(f)`` along ``v``, one forward pass
    with tangents through the gradient's computation; it never forms ``H``.

    ``primals`` is a tuple of arguments (a lone tensor is taken as one argument and the
    result is then a tensor); ``tangents`` matches it in structure and shapes.

    Example:
        >>> import xad
        >>> xad.hvp(lambda x: (x ** 3).sum(), xad.tensor([1.0, 2.0]),
        ...         xad.tensor([1.0, 1.0])).tolist()
        [6.0, 12.0]
    """
    primals, lone = _as_tuple("hvp", primals)
    tangents, _ = _as_tuple("hvp", tangents)
    nums = tuple(range(len(primals)))
    _, res = jvp(grad(f, argnums=nums), primals, tangents)
    return res[0] if lone else tuple(res)
