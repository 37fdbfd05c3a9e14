"""The activations beyond ReLU/Tanh/Sigmoid/GELU against PyTorch in float64 on every
backend: values, first and second derivatives (``torch_check``), the gradients at the kinks
(PyTorch's conventions), the modules' defaults and PReLU's per-channel weight."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402
from torch_check import check_against_torch  # noqa: E402

import xad  # noqa: E402
import xad.nn as nn  # noqa: E402
import xad.nn.functional as F  # noqa: E402

f64 = xad.float64

# name, xad function, torch function; inputs ~ N(0, 1) scaled by 3 (both sides of every kink)
CASES = [
    ("leaky_relu", lambda x: F.leaky_relu(x * 3, 0.2), lambda x: TF.leaky_relu(x * 3, 0.2)),
    ("elu", lambda x: F.elu(x * 3, 0.7), lambda x: TF.elu(x * 3, 0.7)),
    ("selu", lambda x: F.selu(x * 3), lambda x: TF.selu(x * 3)),
    ("celu", lambda x: F.celu(x * 3, 1.5), lambda x: TF.celu(x * 3, 1.5)),
    ("silu", lambda x: F.silu(x * 3), lambda x: TF.silu(x * 3)),
    ("mish", lambda x: F.mish(x * 3), lambda x: TF.mish(x * 3)),
    ("hardtanh", lambda x: F.hardtanh(x * 3, -2.0, 1.5), lambda x: TF.hardtanh(x * 3, -2.0, 1.5)),
    ("relu6", lambda x: F.relu6(x * 5), lambda x: TF.relu6(x * 5)),
    ("hardswish", lambda x: F.hardswish(x * 3), lambda x: TF.hardswish(x * 3)),
    ("logsigmoid", lambda x: F.logsigmoid(x * 3), lambda x: TF.logsigmoid(x * 3)),
    ("softsign", lambda x: F.softsign(x * 3), lambda x: TF.softsign(x * 3)),
    ("tanhshrink", lambda x: F.tanhshrink(x * 3), lambda x: TF.tanhshrink(x * 3)),
    ("glu", lambda x: F.glu(x, 1), lambda x: TF.glu(x, 1)),
    ("softplus(beta, threshold)", lambda x: F.softplus(x * 3, 2.0, 4.0),
     lambda x: TF.softplus(x * 3, 2.0, 4.0)),
    ("rrelu (evaluation)", lambda x: F.rrelu(x * 3, 0.1, 0.4), lambda x: TF.rrelu(x * 3, 0.1, 0.4)),
    ("softmax(dtype)", lambda x: F.softmax(x.float(), dim=1, dtype=f64) * x,
     lambda x: TF.softmax(x.float(), dim=1, dtype=torch.float64) * x),
    ("log_softmax(dtype)", lambda x: x.float().log_softmax(0, f64) * x,
     lambda x: x.float().log_softmax(0, torch.float64) * x),
]


@pytest.mark.parametrize("name,xf,tf", CASES, ids=[c[0] for c in CASES])
def test_activation_matches_torch(xb, name, xf, tf):
    check_against_torch(xf, tf, [(3, 4, 2)], name)


def test_hardsigmoid_matches_torch(xb):
    """PyTorch's has no second derivative, and its gradient multiplies by a float32 1/6."""
    a = np.random.default_rng(1).standard_normal((3, 4)) * 4
    x = xad.tensor(a, dtype=f64, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    y, ty = F.hardsigmoid(x), TF.hardsigmoid(t)
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-7, atol=0)
    assert xad.gradgradcheck(F.hardsigmoid, [xad.tensor(a, dtype=f64, requires_grad=True)])


def test_prelu_matches_torch(xb):
    check_against_torch(F.prelu, TF.prelu, [(2, 3, 4), (3,)], "prelu:channels")
    check_against_torch(F.prelu, TF.prelu, [(5, 2), (1,)], "prelu:one")


KINKS = [("leaky_relu", {}), ("elu", {}), ("celu", {}), ("hardtanh", {}), ("relu6", {}),
         ("hardsigmoid", {}), ("hardswish", {}), ("softsign", {})]


@pytest.mark.parametrize("name,kw", KINKS, ids=[k[0] for k in KINKS])
def test_gradient_at_the_kinks_is_torchs(xb, name, kw):
    pts = [-6.0, -3.0, -1.0, 0.0, 1.0, 3.0, 6.0]
    x = xad.tensor(pts, dtype=f64, requires_grad=True)
    t = torch.tensor(pts, dtype=torch.float64, requires_grad=True)
    getattr(F, name)(x, **kw).sum().backward()
    getattr(TF, name)(t, **kw).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-7, atol=0)


MODULES = [("LeakyReLU", ()), ("ELU", (0.5,)), ("CELU", ()), ("SELU", ()), ("SiLU", ()),
           ("Mish", ()), ("Hardtanh", (-0.5, 2.0)), ("ReLU6", ()), ("Hardsigmoid", ()),
           ("Hardswish", ()), ("LogSigmoid", ()), ("Softsign", ()), ("Tanhshrink", ()),
           ("GLU", (0,)), ("PReLU", (3,)), ("Softplus", (2.0, 3.0))]


@pytest.mark.parametrize("name,args", MODULES, ids=[m[0] for m in MODULES])
def test_modules_match_torch(xb, name, args):
    tm = getattr(torch.nn, name)(*args).double()
    xm = getattr(nn, name)(*args, **({"dtype": f64} if name == "PReLU" else {}))
    assert repr(xm) == repr(tm)
    assert list(xm.state_dict()) == list(tm.state_dict())
    a = np.random.default_rng(0).standard_normal((4, 3, 2)) * 3
    np.testing.assert_allclose(xm(xad.tensor(a, dtype=f64)).numpy(),
                               tm(torch.tensor(a)).detach().numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["int64", "int8", "uint8"])
def test_hardtanh_and_relu6_of_integers_keep_the_dtype(xb, dtype):
    """PyTorch's keep an integer tensor's dtype, the bounds cast to it (xad's gave float32
    tensors of the same numbers)."""
    a = np.array([0, 2, 9, 5, 7], dtype=dtype)
    if dtype != "uint8":
        a = a - 3
    x, t = xad.tensor(a), torch.tensor(a)
    lo = 1.5 if dtype == "uint8" else -1.5  # (a bound outside the dtype raises in xad)
    for got, want in ((F.hardtanh(x, lo, 5.5), TF.hardtanh(t, lo, 5.5)),
                      (F.relu6(x), TF.relu6(t)),
                      (nn.Hardtanh(0, 4)(x), torch.nn.Hardtanh(0, 4)(t))):
        assert got.dtype.name == str(want.dtype).removeprefix("torch.")
        assert got.tolist() == want.tolist()


def test_errors(xb):
    with pytest.raises(ValueError, match="odd size 3"):
        F.glu(xad.zeros(2, 3))
    with pytest.raises(ValueError, match="3 weights for an input with 2 channels"):
        F.prelu(xad.zeros(4, 2), xad.zeros(3))
    with pytest.raises(ValueError, match="min_val 2 is greater"):
        F.hardtanh(xad.zeros(2), 2, 1)


def test_float32_stays_float32(xb):
    x = xad.randn(3, 4)
    for name, _ in MODULES:
        assert getattr(nn, name)()(x).dtype == xad.float32, name
