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


def test_readme_training_snippet(xb):
    from xad import nn, optim

    xad.manual_seed(0)
    x = xad.randn(256, 3)
    y = x @ xad.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    model = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = optim.Adam(model.parameters(), lr=1e-2)
    first = None
    for _ in range(300):
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
    assert loss.item() < 0.02 < first
