"""Einstein summation written with Array API standard functions only.

Used by backends whose library has no native ``einsum`` (array_api_strict, say). Supports
explicit and implicit output, ``...``, repeated indices within one operand (diagonals),
indices summed in one operand, size-1 broadcasting and any number of operands, which are
contracted pairwise from the left with ``matmul``.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["einsum_generic"]

_ELL = "\x00"  # prefix of the labels that stand for the dimensions under "..."


def einsum_generic(xp: Any, subscripts: str, *operands: Any) -> Any:
    """``einsum`` for the standard namespace ``xp``.

    Example:
        >>> import array_api_strict as xp
        >>> a = xp.reshape(xp.arange(4.0), (2, 2))
        >>> einsum_generic(xp, "ii->", a)
        Array(3., dtype=array_api_strict.float64)
    """
    terms, out = _parse(subscripts, [tuple(op.shape) for op in operands])
    ops = [_diagonal(xp, op, t) for op, t in zip(operands, terms)]
    terms = [_unique(t) for t in terms]
    while len(ops) > 1:
        a, b = ops.pop(0), ops.pop(0)
        ta, tb = terms.pop(0), terms.pop(0)
        keep = set(out).union(*terms)
        a, ta = _sum_out(xp, a, ta, keep | set(tb))
        b, tb = _sum_out(xp, b, tb, keep | set(ta))
        r, tr = _contract(xp, a, ta, b, tb, keep)
        ops.insert(0, r)
        terms.insert(0, tr)
    r, tr = _sum_out(xp, ops[0], terms[0], set(out))
    if tr != out:
        r = xp.permute_dims(r, tuple(tr.index(c) for c in out))
    return r


def _parse(subscripts: str, shapes: list[tuple[int, ...]]) -> tuple[list[list[str]], list[str]]:
    """Label lists for each operand and for the output; ``...`` becomes numbered labels."""
    s = subscripts.replace(" ", "")
    lhs, arrow, rhs = s.partition("->")
    raw = lhs.split(",")
    if len(raw) != len(shapes):
        raise ValueError(f"einsum: {len(raw)} operand terms in {subscripts!r} but "
                         f"{len(shapes)} operands")
    terms: list[list[str]] = []
    n_ell = 0
    for term, shape in zip(raw, shapes):
        head, dots, tail = term.partition("...")
        if not _letters(head + tail):
            raise ValueError(f"einsum: bad term {term!r} in {subscripts!r}")
        k = len(shape) - len(head) - len(tail)
        if (k != 0 and not dots) or k < 0:
            raise ValueError(f"einsum: term {term!r} has {len(head) + len(tail)} indices but "
                             f"the operand has {len(shape)} dimensions")
        n_ell = max(n_ell, k)
        terms.append(list(head) + [f"{_ELL}{i}" for i in range(-k, 0)] + list(tail))
    ell = [f"{_ELL}{i}" for i in range(-n_ell, 0)]
    if arrow:
        head, dots, tail = rhs.partition("...")
        if not _letters(head + tail):
            raise ValueError(f"einsum: bad output term {rhs!r}")
        out = list(head) + (ell if dots else []) + list(tail)
        seen = set().union(*terms) if terms else set()
        for c in head + tail:
            if c not in seen:
                raise ValueError(f"einsum: output index {c!r} does not occur in the inputs")
        if len(set(out)) != len(out):
            raise ValueError(f"einsum: repeated index in output {rhs!r}")
    else:
        counts: dict[str, int] = {}
        for t in terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + sorted(c for c, n in counts.items() if n == 1 and not c.startswith(_ELL))
    return terms, out


def _letters(s: str) -> bool:
    return all(c.isascii() and c.isalpha() for c in s)


def _unique(term: list[str]) -> list[str]:
    return list(dict.fromkeys(term))


def _diagonal(xp: Any, x: Any, term: list[str]) -> Any:
    """Take the diagonal over each index that repeats within one term ('ii->i')."""
    labels = _unique(term)
    if len(labels) == len(term):
        return x
    order = [i for c in labels for i, d in enumerate(term) if d == c]
    x = xp.permute_dims(x, tuple(order))
    shape = list(x.shape)
    # after the permutation equal labels are adjacent; collapse each run with a strided take
    pos = 0
    for c in labels:
        r = term.count(c)
        n = shape[pos]
        if any(shape[pos + j] != n for j in range(r)):
            raise ValueError(f"einsum: index {c!r} repeated with different sizes")
        if r > 1:
            lead, rest = shape[:pos], shape[pos + r:]
            x = xp.reshape(x, (*lead, n ** r, *rest))
            step = sum(n ** j for j in range(r))
            idx = xp.arange(0, n ** r, step, dtype=xp.int64, device=x.device)
            x = xp.take(x, idx, axis=pos)
            shape = lead + [n] + rest
        pos += 1
    return x


def _sum_out(xp: Any, x: Any, term: list[str], keep: set[str]) -> tuple[Any, list[str]]:
    """Sum the indices of ``term`` that are not in ``keep``."""
    axes = tuple(i for i, c in enumerate(term) if c not in keep)
    if not axes:
        return x, term
    dtype = None if x.dtype == xp.bool else x.dtype  # keep int32 as int32, like NumPy
    return xp.sum(x, axis=axes, dtype=dtype), [c for c in term if c in keep]


def _contract(xp: Any, a: Any, ta: list[str], b: Any, tb: list[str],
              keep: set[str]) -> tuple[Any, list[str]]:
    """Contract two operands: shared indices in ``keep`` are batch, other shared are summed."""
    shared = [c for c in ta if c in tb]
    batch = [c for c in shared if c in keep]
    summed = [c for c in shared if c not in keep]
    a_only = [c for c in ta if c not in tb]
    b_only = [c for c in tb if c not in ta]
    size_a = dict(zip(ta, a.shape))
    size_b = dict(zip(tb, b.shape))
    for c in summed:  # a size-1 summed index broadcasts against the other operand
        if size_a[c] != size_b[c]:
            if 1 not in (size_a[c], size_b[c]):
                raise ValueError(f"einsum: index {c!r} has sizes {size_a[c]} and {size_b[c]}")
            n = max(size_a[c], size_b[c])
            if size_a[c] == 1:
                a = xp.broadcast_to(a, tuple(n if t == c else s for t, s in zip(ta, a.shape)))
                size_a[c] = n
            else:
                b = xp.broadcast_to(b, tuple(n if t == c else s for t, s in zip(tb, b.shape)))
                size_b[c] = n
    a = xp.permute_dims(a, tuple(ta.index(c) for c in batch + a_only + summed))
    b = xp.permute_dims(b, tuple(tb.index(c) for c in batch + summed + b_only))
    na = math.prod(size_a[c] for c in a_only)
    nb = math.prod(size_b[c] for c in b_only)
    ns = math.prod(size_a[c] for c in summed)
    bsa = tuple(size_a[c] for c in batch)
    bsb = tuple(size_b[c] for c in batch)
    a = xp.reshape(a, (*bsa, na, ns))
    b = xp.reshape(b, (*bsb, ns, nb))
    r = xp.matmul(a, b)
    bs = tuple(max(p, q) for p, q in zip(bsa, bsb))
    shape = bs + tuple(size_a[c] for c in a_only) + tuple(size_b[c] for c in b_only)
    return xp.reshape(r, shape), batch + a_only + b_only

