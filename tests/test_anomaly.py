"""xad.detect_anomaly: the first operation making NaN/Inf, forward or backward, is named
together with the line of user code that created it."""

import inspect
import warnings

import pytest

import xad

F64 = xad.float64


def here():
    """The line number of the caller."""
    return inspect.currentframe().f_back.f_lineno


@pytest.fixture(autouse=True)
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's own invalid-value warning
        yield


def test_forward_nan_names_op_and_line(xb):
    x = xad.tensor([1.0, -1.0], dtype=F64, requires_grad=True)
    with xad.detect_anomaly():
        y = xad.exp(x)  # fine
        with pytest.raises(xad.AnomalyError) as info:
            line = here(); xad.log(x - 0.5)  # noqa: E702
    msg = str(info.value)
    assert "log" in msg and "forward" in msg
    assert f"test_anomaly.py:{line}" in msg
    assert y.shape == (2,)


def test_backward_nan_from_a_custom_function(xb):
    class Bad(xad.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return xad.full_like(g, float("nan"))  # made without an operation

    x = xad.tensor([1.0], dtype=F64, requires_grad=True)
    with xad.detect_anomaly():
        line = here(); y = Bad.apply(x)  # noqa: E702
        with pytest.raises(xad.AnomalyError) as info:
            (y * 3).sum().backward()
    msg = str(info.value)
    assert "backward of Bad" in msg and "input 0" in msg
    # Function.apply does not record the creating line yet (reported): then this holds too
    if "unknown" not in msg:
        assert f"test_anomaly.py:{line}" in msg


def test_backward_inf_names_op_and_creation_line(xb):
    x = xad.tensor([0.0, 4.0], dtype=F64, requires_grad=True)
    with xad.detect_anomaly():
        line = here(); y = xad.sqrt(x)  # noqa: E702
        z = (y * 3).sum()
        with pytest.raises(xad.AnomalyError) as info:
            z.backward()
    msg = str(info.value)
    assert "backward of sqrt" in msg and "divide" in msg
    assert f"test_anomaly.py:{line}" in msg


def test_backward_nan_from_a_finite_forward(xb):
    # forward is finite everywhere; 0 * inf in the gradient of x * sqrt(x) at 0 is NaN
    x = xad.tensor([0.0], dtype=F64, requires_grad=True)
    with xad.detect_anomaly():
        y = (x * xad.sqrt(x)).sum()
        with pytest.raises(xad.AnomalyError, match="backward of (sqrt|multiply)"):
            xad.autograd.grad(y, [x])


def test_off_by_default_and_restored(xb):
    x = xad.tensor([-1.0], dtype=F64, requires_grad=True)
    y = xad.log(x)  # NaN, but no detection
    assert y.shape == (1,)
    with xad.detect_anomaly():
        with xad.detect_anomaly(enabled=False):
            xad.log(x)  # disabled inside
        with pytest.raises(xad.AnomalyError):
            xad.log(x)
    xad.log(x)  # restored to off
    xad.sqrt(xad.zeros(1, dtype=F64, requires_grad=True)).sum().backward()


def test_integer_and_finite_results_pass(xb):
    with xad.detect_anomaly():
        a = xad.arange(5)
        b = (a * 2).sum()
        x = xad.tensor([0.5, 2.0], dtype=F64, requires_grad=True)
        (xad.log(x) * xad.tanh(x)).sum().backward()
    assert b.item() == 20 and x.grad is not None


def test_pytorch_anomaly_modes_under_as_torch(xb):
    """``torch.autograd.detect_anomaly``/``set_detect_anomaly`` (they were missing under
    as_torch): as torch 2.13's, a forward ``-inf`` (an attention mask) and an infinite
    gradient pass; a NaN gradient raises with the operation's line, or not with
    ``check_nan=False``; ``set_detect_anomaly`` turns the mode on until it is turned off."""
    from xad import as_torch
    t = as_torch.namespace()["torch"]
    x = t.tensor([-1.0, 4.0, 0.0], dtype=t.float64, requires_grad=True)
    with t.autograd.detect_anomaly():
        t.where(x > 0, x, -float("inf")).exp().sum().backward()
        assert x.grad.tolist()[0] == 0.0
        (1 / x).sum().backward()  # an infinite gradient: PyTorch checks NaN only
        line = here() + 1
        y = x.sqrt() * 0
        with pytest.raises(RuntimeError, match=rf"Function 'sqrtBackward' returned nan values "
                                               rf"in its 0th output.*:{line} in"):
            y.sum().backward()
    x.grad = None
    with t.autograd.detect_anomaly(check_nan=False):
        x.sqrt().sum().backward()
    assert t.isnan(x.grad).tolist() == [True, False, False]
    t.autograd.set_detect_anomaly(True)
    try:
        assert t.is_anomaly_enabled() and t.is_anomaly_check_nan_enabled()
        with pytest.raises(RuntimeError, match="returned nan values"):
            (x.sqrt() * 0).sum().backward()
    finally:
        t.autograd.set_detect_anomaly(False)
    assert not t.is_anomaly_enabled() and not xad.context.anomaly
