"""Variable-length sequences for recurrent layers (``xad.nn.utils.rnn``, PyTorch's
``torch.nn.utils.rnn``): ``PackedSequence``, ``pad_sequence``, ``pack_padded_sequence``,
``pad_packed_sequence``, ``pack_sequence``, ``unpad_sequence``, ``unpack_sequence``.

A ``PackedSequence`` holds, as PyTorch's, the valid time steps of a batch sorted by length
(longest first), step after step: ``data`` ``(sum(lengths), *)``, ``batch_sizes`` (how many
sequences are still running at each step; a host tensor, as PyTorch's CPU one) and the
sort order. Packing and unpacking are one gather each (indices made on the host from the
lengths, which are host values in PyTorch too), so gradients flow through both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from .. import dtypes as _dt
from .. import ops as _ops
from ..backend import resolve_backend
from ..factories import full, tensor
from ..tensor import Tensor

__all__ = ["PackedSequence", "pad_sequence", "pack_padded_sequence", "pad_packed_sequence",
           "pack_sequence", "unpad_sequence", "unpack_sequence"]


class PackedSequence(NamedTuple):
    """The valid steps of a batch of sequences, longest first, step after step (see the
    module's docstring); made by :func:`pack_padded_sequence` or :func:`pack_sequence`."""

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def host_batch_sizes(self) -> list[int]:
        """``batch_sizes`` as Python ints (a host tensor: no device read)."""
        return [int(n) for n in self.batch_sizes.tolist()]


def _host() -> Any:
    """The host backend (PyTorch keeps batch sizes and lengths on the CPU)."""
    return resolve_backend("numpy")


def _ints(values: Any) -> list[int]:
    """Host ints from a list or a tensor (an explicit read, as PyTorch's CPU lengths)."""
    if isinstance(values, Tensor):
        values = values.tolist()
    return [int(v) for v in values]


def _batch_sizes(lengths: list[int]) -> list[int]:
    """How many of the sorted sequences are still running at each step."""
    return [sum(n > t for n in lengths) for t in range(max(lengths))]


def _packed_rows(batch_sizes: list[int], width: int) -> list[int]:
    """The rows of a ``(T * width, *)`` padded array that packing keeps, in packed order."""
    return [t * width + j for t, n in enumerate(batch_sizes) for j in range(n)]


def _padded_rows(batch_sizes: list[int], width: int) -> list[int]:
    """For each row of the padded ``(T * width, *)`` array, its packed row (``sum`` of the
    batch sizes, one past the last, for padding)."""
    total, rows, offset = sum(batch_sizes), [], 0
    for n in batch_sizes:
        rows += [offset + j if j < n else total for j in range(width)]
        offset += n
    return rows


def _index(rows: list[int], like: Tensor) -> Tensor:
    return tensor(rows, dtype=_dt.int64, backend=like._backend)


def pack_rows(padded: Tensor, batch_sizes: list[int]) -> Tensor:
    """The packed ``data`` of a ``(T, B, *)`` tensor already in sorted batch order."""
    flat = padded.reshape((-1,) + tuple(padded.shape[2:]))
    return _ops.take(flat, _index(_packed_rows(batch_sizes, padded.shape[1]), padded), axis=0)


def unpack_rows(data: Tensor, batch_sizes: list[int], padding_value: float = 0.0
                ) -> Tensor:
    """The ``(T, B, *)`` padded tensor, in sorted batch order, of packed ``data``."""
    rest = tuple(data.shape[1:])
    pad = full((1,) + rest, padding_value, dtype=data.dtype, backend=data._backend)
    rows = _padded_rows(batch_sizes, batch_sizes[0])
    out = _ops.take(_ops.concat([data, pad], axis=0), _index(rows, data), axis=0)
    return out.reshape((len(batch_sizes), batch_sizes[0]) + rest)


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) of sequences
    of ``lengths`` (host ints: a list or tensor). With ``enforce_sorted`` the lengths must
    be decreasing; otherwise the batch is sorted and the order kept for unpacking.

    Example:
        >>> import xad
        >>> from xad.nn.utils.rnn import pack_padded_sequence
        >>> p = pack_padded_sequence(xad.ones(3, 2, 4), [3, 1])
        >>> p.data.shape, p.batch_sizes.tolist()
        ((4, 4), [2, 1, 1])
    """
    lens = _ints(lengths)
    x = input.permute_dims((1, 0, *range(2, input.ndim))) if batch_first else input
    if x.ndim < 2 or len(lens) != x.shape[1]:
        raise ValueError(f"pack_padded_sequence: {len(lens)} lengths for an input of shape "
                         f"{tuple(input.shape)} (batch_first={batch_first}); pass one length "
                         f"per sequence")
    if min(lens) <= 0 or max(lens) > x.shape[0]:
        raise ValueError(f"pack_padded_sequence: lengths must be in 1..{x.shape[0]} (the "
                         f"padded length), got {lens}")
    sorted_idx = unsorted_idx = None
    order = sorted(range(len(lens)), key=lambda i: -lens[i])
    if enforce_sorted:
        if any(a < b for a, b in zip(lens, lens[1:])):
            raise RuntimeError(f"pack_padded_sequence: lengths {lens} are not sorted in "
                               f"decreasing order; sort the batch or pass "
                               f"enforce_sorted=False")
        order = list(range(len(lens)))
    else:
        inverse = [0] * len(order)
        for pos, i in enumerate(order):
            inverse[i] = pos
        sorted_idx, unsorted_idx = _index(order, x), _index(inverse, x)
        x = _ops.take(x, sorted_idx, axis=1)
    sizes = _batch_sizes([lens[i] for i in order])
    return PackedSequence(pack_rows(x[:len(sizes)], sizes),
                          tensor(sizes, dtype=_dt.int64, backend=_host()),
                          sorted_idx, unsorted_idx)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None
                        ) -> tuple[Tensor, Tensor]:
    """The padded batch and the lengths (a host int64 tensor) of a ``PackedSequence``, in
    the batch's original order; ``total_length`` pads the time axis to that length.

    Example:
        >>> import xad
        >>> from xad.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
        >>> x, lengths = pad_packed_sequence(pack_padded_sequence(xad.ones(3, 2, 1), [3, 1]))
        >>> x[:, 1, 0].tolist(), lengths.tolist()
        ([1.0, 0.0, 0.0], [3, 1])
    """
    sizes = sequence.host_batch_sizes()
    out = unpack_rows(sequence.data, sizes, padding_value)
    lens = [sum(n > j for n in sizes) for j in range(sizes[0])]
    if total_length is not None:
        if total_length < len(sizes):
            raise ValueError(f"pad_packed_sequence: total_length {total_length} is shorter "
                             f"than the longest sequence ({len(sizes)} steps)")
        extra = full((total_length - len(sizes),) + tuple(out.shape[1:]), padding_value,
                     dtype=out.dtype, backend=out._backend)
        out = _ops.concat([out, extra], axis=0)
    if sequence.unsorted_indices is not None:
        out = _ops.take(out, sequence.unsorted_indices, axis=1)
        lens = [lens[i] for i in _ints(sequence.unsorted_indices)]  # sorted slot of each
    if batch_first:
        out = out.permute_dims((1, 0, *range(2, out.ndim)))
    return out, tensor(lens, dtype=_dt.int64, backend=_host())


def pad_sequence(sequences: Sequence[Tensor] | Tensor, batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Stack tensors ``(L_i, *)`` into ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``),
    padded with ``padding_value`` on the ``padding_side`` to the longest length.

    Example:
        >>> import xad
        >>> from xad.nn.utils.rnn import pad_sequence
        >>> pad_sequence([xad.ones(2), xad.ones(1)], batch_first=True).tolist()
        [[1.0, 1.0], [1.0, 0.0]]
    """
    if isinstance(sequences, Tensor):  # (B, L, *): its rows, as PyTorch iterates it
        sequences = list(_ops.unbind(sequences, 0))
    if not sequences:
        raise ValueError("pad_sequence: no sequences given")
    if padding_side not in ("right", "left"):
        raise ValueError(f"pad_sequence: padding_side must be 'right' or 'left', got "
                         f"{padding_side!r}")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        if s.shape[0] < longest:
            fill = full((longest - s.shape[0],) + tuple(s.shape[1:]), padding_value,
                        dtype=s.dtype, backend=s._backend)
            s = _ops.concat([s, fill] if padding_side == "right" else [fill, s], axis=0)
        padded.append(s)
    return _ops.stack(padded, axis=0 if batch_first else 1)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True
                  ) -> PackedSequence:
    """Pack a list of tensors ``(L_i, *)`` (longest first, unless not ``enforce_sorted``).

    Example:
        >>> import xad
        >>> from xad.nn.utils.rnn import pack_sequence
        >>> pack_sequence([xad.ones(3), xad.ones(2)]).batch_sizes.tolist()
        [2, 2, 1]
    """
    return pack_padded_sequence(pad_sequence(sequences), [s.shape[0] for s in sequences],
                                enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths: Any, batch_first: bool = False
                   ) -> list[Tensor]:
    """The inverse of :func:`pad_sequence`: a list of tensors ``(L_i, *)``.

    Example:
        >>> import xad
        >>> from xad.nn.utils.rnn import unpad_sequence
        >>> [t.shape for t in unpad_sequence(xad.zeros(3, 2), [3, 1])]
        [(3,), (1,)]
    """
    x = padded_sequences
    if not batch_first:
        x = x.permute_dims((1, 0, *range(2, x.ndim)))
    return [x[i, :n] for i, n in enumerate(_ints(lengths))]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The inverse of :func:`pack_sequence`: a list of tensors ``(L_i, *)``.

    Example:
        >>> import xad
        >>> from xad.nn.utils.rnn import pack_sequence, unpack_sequence
        >>> [t.shape for t in unpack_sequence(pack_sequence([xad.ones(3), xad.ones(2)]))]
        [(3,), (2,)]
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
