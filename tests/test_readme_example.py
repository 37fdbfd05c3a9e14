import xad


def test_issue_example(xb):
    w = xad.randn(3, 4, requires_grad=True)
    x = xad.tensor([[1.0, 2.0, 3.0]])
    y = xad.tanh(x @ w).sum()
    y.backward()
    assert w.grad.shape == (3, 4)
    g, = xad.autograd.grad(xad.tanh(x @ w).sum(), [w], create_graph=True)
    h, = xad.autograd.grad((g * g).sum(), [w])
    assert h.shape == (3, 4) and h.dtype == xad.float32
