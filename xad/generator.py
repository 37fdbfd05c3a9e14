"""Generator: a private random stream (PyTorch's ``torch.Generator``), independent of the
global seed (``xad.manual_seed``).

A generator keeps one state per backend it has drawn on. Drawing from it swaps that state
into the backend's own generator for the draw and takes it back afterwards (the same state
objects the backend saves and restores), so no backend needs a second kind of generator.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .backend import Backend
from .context import context
from .tracing import host_call

__all__ = ["Generator", "drawing"]


class Generator:
    """A seeded random stream: ``g = xad.Generator().manual_seed(42)``; pass it as
    ``generator=g`` to ``rand``, ``randn``, ``randint``, ``randperm``, ``multinomial``,
    ``uniform_``/``normal_``, ``nn.init`` functions, ``DataLoader`` and ``random_split``.

    Example:
        >>> import xad
        >>> a = xad.randn(3, generator=xad.Generator().manual_seed(1))
        >>> xad.manual_seed(5); b = xad.randn(3, generator=xad.Generator().manual_seed(1))
        >>> a.tolist() == b.tolist()
        True
    """

    def __init__(self, device: Any = None) -> None:
        self._seed = 67280421310721  # PyTorch's default seed for a new generator
        self._states: dict[str, Any] = {}
        self.device = device

    @host_call
    def manual_seed(self, seed: int) -> Generator:
        """Restart the stream from ``seed``; returns the generator (as PyTorch's does)."""
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"Generator.manual_seed: the seed must be an int, got {seed!r}")
        self._seed = seed
        self._states.clear()
        return self

    def initial_seed(self) -> int:
        """The seed the stream started from."""
        return self._seed

    def _state(self, b: Backend) -> Any:
        st = self._states.get(b.label)
        if st is None:
            saved = b.get_rng_state()
            try:
                b.manual_seed(self._seed % 2 ** 63)
                st = b.get_rng_state()
            finally:
                b.set_rng_state(saved)
        return st


@contextmanager
def drawing(generator: Generator | None, b: Backend) -> Iterator[Backend]:
    """Within the block, ``b``'s random functions draw from ``generator`` (``None``: from
    the backend's global stream); the global stream is left as it was."""
    rec = context.recorder
    if rec is not None and not rec.paused:  # a draw xad.compile could not replay
        rec.unsupported("a random draw outside xad's random factories (rand, randn, ...)")
    if context.transform is not None:  # not through factories.batched_draw: vmap decides
        context.transform.unbatched_draw()
    if generator is None:
        yield b
        return
    if not isinstance(generator, Generator):
        raise TypeError(f"generator= must be an xad.Generator, got {type(generator).__name__}")
    saved = b.get_rng_state()
    b.set_rng_state(generator._state(b))
    try:
        yield b
    finally:
        generator._states[b.label] = b.get_rng_state()
        b.set_rng_state(saved)
