"""PyTorch's process-wide functions under ``xad.as_torch`` (AttributeError before):
``get_rng_state``/``set_rng_state`` replay the draws that followed, ``initial_seed``/``seed``,
``get_num_threads``, ``promote_types`` and ``broadcast_shapes`` against torch, and the dtype
names ``short``, ``cfloat``, ``cdouble``."""

from __future__ import annotations

import itertools
import os

import pytest

import xad
from xad import as_torch

torch = pytest.importorskip("torch")
T = as_torch.namespace()["torch"]


def test_rng_state_replays_the_draws_that_followed(xb):
    T.manual_seed(3)
    assert T.initial_seed() == 3
    state = T.get_rng_state()
    first = [T.randn(4), T.rand(3), T.randint(0, 9, (5,)), T.zeros(3).exponential_()]
    T.set_rng_state(state)
    again = [T.randn(4), T.rand(3), T.randint(0, 9, (5,)), T.zeros(3).exponential_()]
    for a, b in zip(first, again, strict=True):
        assert a.tolist() == b.tolist()
    assert T.randn(4).tolist() != first[0].tolist()  # (the state moved on)
    with pytest.raises(TypeError, match="set_rng_state: expected the dict"):
        T.set_rng_state(torch.get_rng_state())


def test_seed_reseeds_every_backend(xb):
    s = T.seed()
    assert s == T.initial_seed() and 0 <= s < 2 ** 63
    a = T.randn(3)
    T.manual_seed(s)
    assert T.randn(3).tolist() == a.tolist()


def test_num_threads_round_trip():
    n = os.cpu_count() or 1
    T.set_num_threads(n)
    assert T.get_num_threads() == n == xad.get_num_threads()


NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
         "float32", "float64", "complex64", "complex128"]


def test_promote_types_is_pytorchs():
    for a, b in itertools.product(NAMES, NAMES):
        got = T.promote_types(getattr(T, a), getattr(T, b))
        assert got.name == str(torch.promote_types(getattr(torch, a), getattr(torch, b)))[6:]
    assert (T.short, T.cfloat, T.cdouble) == (xad.int16, xad.complex64, xad.complex128)


@pytest.mark.parametrize("shapes", [[(2, 1), (3,)], [(1,), ()], [5, (3, 1)], [(0, 1), (4,)],
                                    [(2, 3), (3, 3)], [(1, 0), (3, 1)], [], [(4,), (4, 1, 1)]])
def test_broadcast_shapes_is_pytorchs(shapes):
    try:
        want = tuple(torch.broadcast_shapes(*shapes))
    except RuntimeError:
        with pytest.raises(RuntimeError, match="broadcast_shapes: shapes"):
            T.broadcast_shapes(*shapes)
        return
    assert T.broadcast_shapes(*shapes) == want
