"""The ranks agree on each collective before it runs: one small all-gather of a descriptor.

Before a collective, every rank contributes twelve integers saying what it is about to do
(the call, ``op``, dtype, root, shape); if they differ, every rank raises the same error,
naming the call and what each rank holds, instead of reducing float32 against float64 into
garbage, aborting with MPI's "Message truncated" or hanging. A rank whose program ends (or
that calls ``sys.exit``) takes part with the descriptor "leaving", so the others learn that
it is gone instead of waiting for it. As PyTorch's ``TORCH_DISTRIBUTED_DEBUG=DETAIL``
fingerprints, but on by default; ``init(check=False)`` skips it (the fast mode).
"""

from __future__ import annotations

import array
import zlib
from typing import Any

from .. import dtypes

__all__ = ["Descriptor", "Disagreement", "agree", "describe", "layout_code", "mismatch"]

KINDS = ("all_reduce", "broadcast", "all_gather", "reduce_scatter", "barrier",
         "DataParallel backward", "DataParallel construction", "leaving")
_OPS = ("", "sum", "mean", "max")
_DIMS = 6
_DTYPES = {zlib.crc32(d.name.encode()): d.name for d in vars(dtypes).values()
           if isinstance(d, dtypes.DType)}

Descriptor = tuple[int, ...]


class Disagreement(RuntimeError):
    """The ranks' descriptors differ (``every``: rank by rank); raised on every rank."""

    def __init__(self, text: str, every: list[Descriptor]) -> None:
        super().__init__(text)
        self.every = every

    def all_in(self, kind: str) -> bool:
        """Whether every rank is in a call of ``kind`` (so they may exchange more)."""
        return all(KINDS[d[0]] == kind for d in self.every)


def layout_code(items: list | tuple) -> int:
    """A checksum of ``items`` that is the same in every process (``hash`` of a string is
    not: Python salts it per process)."""
    return zlib.crc32(repr(items).encode())


def describe(kind: str, t: Any = None, op: str = "", root: int = -1, count: int = 0,
             code: int = 0) -> Descriptor:
    """The descriptor of a call: its kind, ``op``, ``t``'s dtype and shape (or ``count``
    and ``code`` for DataParallel's calls), ``root``."""
    if t is None:
        return (KINDS.index(kind), _OPS.index(op), 0, root, -1, count, code) + (0,) * (_DIMS - 1)
    shape = tuple(t.shape)
    dims = shape + (0,) * (_DIMS - len(shape)) if len(shape) <= _DIMS else \
        shape[:_DIMS - 1] + (layout_code(shape),)
    return (KINDS.index(kind), _OPS.index(op), zlib.crc32(t.dtype.name.encode()), root,
            len(shape), t.size, *dims)


def _text(d: Descriptor) -> str:
    kind, op, dtype, root, ndim, size, *dims = d
    name = KINDS[kind]
    if name == "leaving":
        return "leaving (its program ended or it called sys.exit)"
    if name == "barrier":
        return "barrier"
    if ndim < 0:
        return {"broadcast": f"broadcast of {size} tensors from rank {root}",
                "DataParallel backward": f"{name} of {size} gradient elements"}.get(
                    name, f"{name} of a model with {size} parameters and buffers")
    shape = tuple(dims[:ndim]) if ndim <= _DIMS else f"<{ndim}-d, {size} elements>"
    text = f"{name} of a {_DTYPES.get(dtype, '?')} tensor of shape {shape}"
    text += f", op={_OPS[op]!r}" if op else ""
    return text + (f", root={root}" if root >= 0 else "")


def _ranks(ranks: list[int]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks))


def mismatch(what: str, every: list[Descriptor]) -> str:
    """The error text when the ranks' descriptors ``every`` differ."""
    groups: dict[Descriptor, list[int]] = {}
    for r, d in enumerate(every):
        groups.setdefault(d, []).append(r)
    held = "; ".join(f"{_ranks(rs)}: {_text(d)}" for d, rs in groups.items())
    kinds = {KINDS[d[0]] for d in every}
    if "leaving" in kinds:
        hint = ("a rank left while others still wait in a collective: every rank must make "
                "the same calls (with uneven inputs, one rank ran more steps: give every rank "
                "the same number of batches, e.g. DistributedSampler, drop_last=True)")
    elif len(kinds) > 1:
        hint = ("the ranks are out of step (one skipped or added a collective, or ran a "
                "different number of backward passes): every rank must make the same "
                "collective calls in the same order")
    else:
        hint = ("every rank must pass a tensor of the same dtype and shape, with the same op "
                "and root")
    return f"xad.distributed.{what}: the ranks disagree: {held}. {hint}"


def agree(c: Any, what: str, mine: Descriptor) -> None:
    """All-gather ``mine`` over ``c`` (blocking, with ``c``'s timeout); raise on every rank
    when the ranks' descriptors differ."""
    buf = array.array("q", mine)
    flat = c.exchange(buf, what)
    n = len(mine)
    every = [tuple(flat[r * n:(r + 1) * n]) for r in range(c.size)]
    if any(d != every[0] for d in every):
        raise Disagreement(mismatch(what, every), every)
