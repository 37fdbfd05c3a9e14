"""PyTorch's placement and layout calls that scripts make on every line: ``module.to`` in all
its forms (``device=``, ``dtype=``, ``(device, dtype)``, a tensor, ``non_blocking=``,
``memory_format=``), ``module.cpu()``/``cuda()``/``type()``, ``x.cuda()``, ``copy_(src,
non_blocking)``, the memory formats and torch's dtype properties, against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import xad  # noqa: E402
from xad import as_torch  # noqa: E402
from xad.tensor import on_cuda  # noqa: E402

T = as_torch.namespace()["torch"]

TO_FORMS = {  # f(m, lib): one call of module.to in one of PyTorch's forms
    "device=": lambda m, t: m.to(device="cpu"),
    "dtype=": lambda m, t: m.to(dtype=t.float64),
    "(device, dtype)": lambda m, t: m.to("cpu", t.float64),
    "(dtype, non_blocking)": lambda m, t: m.to(t.float64, non_blocking=True),
    "(tensor)": lambda m, t: m.to(t.ones(1, dtype=t.float64)),
    "device=, dtype=": lambda m, t: m.to(device="cpu", dtype=t.float16),
    "memory_format=": lambda m, t: m.to(memory_format=t.channels_last),
    "type(float64)": lambda m, t: m.type(t.float64),
    "cpu()": lambda m, t: m.cpu(),
    "double().float()": lambda m, t: m.double().float(),
}


def _net(t):
    return t.nn.Sequential(t.nn.Conv2d(2, 3, 1), t.nn.BatchNorm2d(3))


@pytest.mark.parametrize("form", TO_FORMS)
def test_module_to_forms_match_torch(xb, form):
    """Each form casts what torch's casts (integer buffers stay, except under ``type``),
    keeps the Parameter objects, and moves their gradients with them."""
    if form == "device=, dtype=" and xb._dtypes.get(xad.float16) is None:
        pytest.skip(f"{xb.name} has no float16")
    res = []
    for t in (T, torch):
        net = _net(t)
        net(t.ones(2, 2, 3, 3)).sum().backward()
        params = list(net.parameters())
        out = TO_FORMS[form](net, t)
        assert out is net and list(net.parameters()) == params and all(
            a is b for a, b in zip(net.parameters(), params))
        res.append({k: (str(v.dtype).split(".")[-1], np.asarray(v.detach().float()
                         .numpy() if v.dtype.is_floating_point else v.numpy()))
                    for k, v in net.state_dict().items()})
        res[-1].update({f"{k}.grad": (str(v.grad.dtype).split(".")[-1], None)
                        for k, v in net.named_parameters()})
        assert all(p.is_leaf and p.requires_grad for p in net.parameters())
    assert {k: v[0] for k, v in res[0].items()} == {k: v[0] for k, v in res[1].items()}


def test_module_to_refuses_integer_dtypes_as_torch(xb):
    for t in (T, torch):
        with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
            _net(t).to(t.int64)


def test_cuda_is_the_tensor_on_a_cuda_backend_and_raises_on_the_host(xb):
    """``x.cuda()``/``module.cuda()``: the tensor itself where the backend is on a CUDA
    device (it raised everywhere), a clear refusal on host memory."""
    x, net = xad.ones(2), xad.nn.Linear(2, 1)
    if on_cuda(xb):
        assert x.cuda() is x and x.cuda(non_blocking=True) is x
        assert net.cuda() is net and net.weight.backend is xb
    else:
        with pytest.raises(NotImplementedError, match="host memory.*backend cupy"):
            x.cuda()
        with pytest.raises(NotImplementedError, match="host memory"):
            net.cuda()


def test_memory_formats_change_no_values(xb):
    """``memory_format=`` in clone/contiguous/to/the ``*_like`` factories: accepted, the
    same values; anything else raises; ``is_contiguous(channels_last)`` refuses."""
    x = T.tensor(np.arange(24.0).reshape(1, 2, 3, 4))
    for fmt in (T.contiguous_format, T.channels_last, T.preserve_format):
        for y in (x.clone(memory_format=fmt), x.contiguous(memory_format=fmt),
                  x.to(memory_format=fmt), x.cuda(memory_format=fmt) if on_cuda(xb) else x):
            np.testing.assert_array_equal(y.numpy(), x.numpy())
        assert T.zeros_like(x, memory_format=fmt).shape == x.shape
        assert T.empty_like(x, memory_format=fmt).shape == x.shape
        assert T.randn_like(x, memory_format=fmt).shape == x.shape
    assert x.is_contiguous(memory_format=T.contiguous_format)
    with pytest.raises(NotImplementedError, match="channels-last"):
        x.is_contiguous(memory_format=T.channels_last)
    with pytest.raises(TypeError, match="clone: memory_format must be"):
        x.clone(memory_format="channels_last")
    assert repr(T.channels_last) == repr(torch.channels_last)


def test_copy_takes_non_blocking(xb):
    """``copy_(src, non_blocking)``: by position or keyword, the same copy."""
    for t in (T, torch):
        a, b = t.zeros(3), t.tensor([1.0, 2.0, 3.0])
        assert a.copy_(b, True).tolist() == [1.0, 2.0, 3.0]
        assert t.zeros(3).copy_(b, non_blocking=True).tolist() == [1.0, 2.0, 3.0]


def test_dtype_properties_match_torch():
    """``is_floating_point``, ``is_signed``, ``is_complex``, ``itemsize`` of every dtype."""
    names = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
             "float32", "float64", "complex64", "complex128"]
    for n in names:
        ours, theirs = getattr(T, n), getattr(torch, n)
        for prop in ("is_floating_point", "is_signed", "is_complex", "itemsize"):
            assert getattr(ours, prop) == getattr(theirs, prop), (n, prop)
