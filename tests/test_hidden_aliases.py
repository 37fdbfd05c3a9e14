"""Results that shared their input's memory without xad knowing (so an in-place change of
one silently changed the other, uncounted by version checks), and casts that copied where
PyTorch's return the tensor itself: each pinned against torch 2.13's behaviour."""

from __future__ import annotations

import pytest

import xad

F64 = xad.float64


@pytest.mark.parametrize("spec", ["ij->ji", "ij->ij", "ii->i"])
def test_einsum_of_one_operand_without_a_sum_is_a_new_tensor(xb, spec):
    """NumPy's and torch's einsum return a view there; xad's result is not one of its views,
    so it must not share the memory (it did: ``d += 1`` changed ``a`` behind its version)."""
    a = xad.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=F64)
    w = xad.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=F64, requires_grad=True)
    y = (w * a).sum()
    d = xad.einsum(spec, a)
    d += 100.0
    assert a.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    y.backward()
    assert w.grad.tolist() == [[1.0, 2.0], [3.0, 4.0]]


@pytest.mark.parametrize("part", ["real", "imag"])
def test_real_and_imag_of_a_complex_tensor_are_counted_views(xb, part):
    """``xad.real(c)`` shared ``c``'s memory on NumPy, torch and array_api_strict (not on
    JAX), uncounted: ``r += 10`` changed ``c``, and a saved ``c`` gave a wrong gradient. Now
    PyTorch's counted views on every backend: the change reaches ``c``, and a saved part
    of ``c`` changed since raises at backward."""
    c = xad.tensor([1 + 2j, 3 + 4j])
    r = getattr(xad, part)(c)
    r += 10.0
    assert c.tolist() == ([11 + 2j, 13 + 4j] if part == "real" else [1 + 12j, 3 + 14j])
    w = xad.tensor([1.0, 1.0], requires_grad=True)
    y = (w * xad.real(c)).sum()
    getattr(xad, part)(c).add_(1.0)
    with pytest.raises(RuntimeError, match="saved"):
        y.backward()


@pytest.mark.parametrize("part", ["real", "imag"])
def test_contiguous_of_a_complex_tensors_part_is_a_copy(xb, part):
    """A part of a complex tensor takes every other number of its storage, so PyTorch's
    ``z.real.contiguous()`` is a copy: xad returned the view itself, and ``y += 1`` then
    silently changed ``z``. A one-element part is contiguous (PyTorch's rule: axes of
    length one do not count)."""
    z = xad.zeros(2, 3, dtype=xad.complex128)
    y = getattr(z, part).contiguous()
    y += 1.0
    assert z.tolist() == [[0j] * 3] * 2 and y.tolist() == [[1.0] * 3] * 2
    assert getattr(z, part).t().contiguous().view(-1).tolist() == [0.0] * 6
    one = getattr(z[0, :1], part)
    assert one.contiguous() is one


@pytest.mark.parametrize("cast,dtype", [("float", xad.float32), ("double", F64),
                                        ("long", xad.int64), ("int", xad.int32),
                                        ("bool", xad.bool)])
def test_a_cast_to_the_tensors_own_dtype_is_the_tensor(xb, cast, dtype):
    """As PyTorch's ``x.double() is x`` for a float64 ``x``: an in-place change of the
    result is one of ``x`` (it was a copy, so ``x`` silently kept its values)."""
    x = xad.zeros(2, dtype=dtype)
    assert getattr(x, cast)() is x and x.type_as(x) is x
    x64 = xad.tensor([1.0, 2.0], dtype=F64)
    x64.double().add_(1.0)
    assert x64.tolist() == [2.0, 3.0]


def test_view_as_is_a_view_or_raises_as_pytorchs(xb):
    """``view_as`` copied where no view exists (PyTorch raises), so a change of the result
    silently missed the tensor; where a view exists it shares memory."""
    x = xad.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=F64)
    with pytest.raises(ValueError, match="without a copy"):
        x.t().view_as(xad.zeros(4))
    with pytest.raises(ValueError, match="without a copy"):
        x[:1].expand(3, 2).view_as(xad.zeros(6))
    x.view_as(xad.zeros(4)).add_(1.0)
    assert x.tolist() == [[2.0, 3.0], [4.0, 5.0]]


def test_flatten_of_a_tensor_with_no_elements(xb):
    """torch: ``zeros(0, 3, 2).flatten(2)`` has shape (0, 3, 2) (xad raised: -1 with no
    elements is ambiguous)."""
    assert xad.zeros(0, 3, 2).flatten(2).shape == (0, 3, 2)
    assert xad.zeros(0, 3, 2).flatten(1).shape == (0, 6)


@pytest.mark.parametrize("make", ["reshape", "view", "view_as", "squeeze", "expand",
                                  "expand_as", "broadcast_to"])
def test_a_view_method_to_the_same_shape_is_a_new_tensor(xb, make):
    """PyTorch's view methods never return their input; xad's returned ``self`` for the same
    shape, so a hook on the "view" changed the base's whole gradient (torch: x.grad == 2)."""
    x = xad.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=F64, requires_grad=True)
    y = x * 2
    h = {"reshape": lambda: y.reshape(2, 2), "view": lambda: y.view(2, 2),
         "view_as": lambda: y.view_as(y), "squeeze": lambda: y.squeeze(),
         "expand": lambda: y.expand(-1, 2), "expand_as": lambda: y.expand_as(y),
         "broadcast_to": lambda: y.broadcast_to((2, 2))}[make]()
    assert h is not y
    h.register_hook(lambda g: g * 0)
    (y + h).sum().backward()
    assert x.grad.tolist() == [[2.0, 2.0], [2.0, 2.0]]
    h2 = y.reshape(2, 2)
    h2 += 1  # still a view
    assert y.tolist() == [[3.0, 5.0], [7.0, 9.0]]
