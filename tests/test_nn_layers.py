"""Layers of xad.nn: gradients on every backend (float64), values against PyTorch (NumPy
backend), train/eval behaviour, and dtype preservation."""

from __future__ import annotations

import numpy as np
import pytest

import xad
import xad.nn as nn
import xad.nn.functional as F

f64 = xad.float64


def _x(*shape, requires_grad=True):
    return xad.randn(*shape, dtype=f64, requires_grad=requires_grad)


def test_linear_gradients(xb):
    x, w, b = _x(3, 4), _x(2, 4), _x(2)
    assert xad.gradcheck(F.linear, [x, w, b])
    assert xad.gradgradcheck(lambda x, w: xad.tanh(F.linear(x, w)), [x, w])


@pytest.mark.parametrize("layer", [nn.ReLU(), nn.Tanh(), nn.Sigmoid(), nn.GELU(),
                                   nn.GELU("tanh"), nn.Softplus(), nn.Softmax(dim=-1),
                                   nn.LogSoftmax(dim=1), nn.Identity(), nn.Flatten()],
                         ids=lambda m: repr(m))
def test_activation_gradients(xb, layer):
    x = _x(3, 2, 2)
    assert xad.gradcheck(layer, [x])


def test_second_order_through_mlp(xb):
    net = nn.Sequential(nn.Linear(3, 4, dtype=f64), nn.Tanh(), nn.LayerNorm(4, dtype=f64),
                        nn.GELU(), nn.Linear(4, 1, dtype=f64))
    x = _x(5, 3)
    assert xad.gradgradcheck(lambda x: net(x), [x])


def test_layer_norm_gradients(xb):
    x, w, b = _x(3, 2, 4), _x(2, 4), _x(2, 4)
    assert xad.gradcheck(lambda x, w, b: F.layer_norm(x, (2, 4), w, b), [x, w, b])
    assert xad.gradgradcheck(lambda x: F.layer_norm(x, 4), [x])


def test_batch_norm_gradients(xb):
    x, w, b = _x(5, 3), _x(3), _x(3)
    assert xad.gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                         [x, w, b])
    x3 = _x(4, 3, 2)
    assert xad.gradgradcheck(lambda x: F.batch_norm(x, None, None, training=True), [x3])
    rm, rv = xad.zeros(3, dtype=f64) + 0.5, xad.ones(3, dtype=f64) * 2
    assert xad.gradcheck(lambda x, w: F.batch_norm(x, rm, rv, w, None), [x, w])


def test_dropout_gradients_with_fixed_mask(xb):
    x = _x(4, 5)

    def f(x):
        xb.manual_seed(7)  # the same mask at every evaluation
        return F.dropout(x, 0.3, training=True)
    assert xad.gradcheck(f, [x])


def test_dropout_train_eval(xb):
    d = nn.Dropout(0.25)
    x = xad.ones(4000)
    y = d(x).numpy()
    assert np.all((y == 0) | np.isclose(y, 1 / 0.75))
    assert 0.2 < (y == 0).mean() < 0.3
    xad.manual_seed(3)
    a = d(x).numpy()
    xad.manual_seed(3)
    assert (d(x).numpy() == a).all()
    d.eval()
    assert d(x) is x
    assert (nn.Dropout(0.0)(x).numpy() == 1).all()
    assert (nn.Dropout(1.0)(x).numpy() == 0).all()
    with pytest.raises(ValueError, match="p must be in"):
        nn.Dropout(1.5)


def test_dropout_stays_float32(xb):
    y = nn.Dropout(0.5)(xad.ones(10, dtype=xad.float32))
    assert y.dtype == xad.float32


def test_embedding_repeated_indices(xb):
    emb = nn.Embedding(5, 3, dtype=f64)
    idx = xad.tensor([[0, 2, 2], [2, 4, 0]])
    out = emb(idx)
    assert out.shape == (2, 3, 3)
    out.sum().backward()
    counts = emb.weight.grad.numpy()[:, 0]
    assert counts.tolist() == [2.0, 0.0, 3.0, 0.0, 1.0]
    assert xad.gradcheck(lambda w: F.embedding(idx, w) ** 2, [_x(5, 3)])
    assert xad.gradgradcheck(lambda w: F.embedding(idx, w) ** 3, [_x(5, 3)])


def test_embedding_padding_idx(xb):
    emb = nn.Embedding(4, 2, padding_idx=1, dtype=f64)
    assert (emb.weight.numpy()[1] == 0).all()
    idx = xad.tensor([1, 1, 3])
    emb(idx).sum().backward()
    g = emb.weight.grad.numpy()
    assert (g[1] == 0).all() and (g[3] == 1).all()
    with pytest.raises(TypeError, match="integer"):
        emb(xad.tensor([0.0]))


def test_batchnorm_train_eval_modes(xb):
    bn = nn.BatchNorm1d(3, dtype=f64)
    x = _x(6, 3, requires_grad=False) * 3 + 1
    y = bn(x).numpy()
    assert np.allclose(y.mean(0), 0, atol=1e-8) and np.allclose(y.var(0), 1, atol=1e-3)
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    rm, rv = bn.running_mean.numpy(), bn.running_var.numpy()
    ye = bn(x).numpy()
    assert np.allclose(ye, (x.numpy() - rm) / np.sqrt(rv + 1e-5))
    assert bn.num_batches_tracked.item() == 1  # eval does not count batches
    with pytest.raises(ValueError, match=r"\(N, 3\)"):
        bn(xad.zeros(2, 4, dtype=f64))


def test_batchnorm_cumulative_average(xb):
    bn = nn.BatchNorm1d(2, momentum=None, dtype=f64)
    xs = [_x(4, 2, requires_grad=False) for _ in range(3)]
    for x in xs:
        bn(x)
    mean = np.mean([x.numpy().mean(0) for x in xs], axis=0)
    assert np.allclose(bn.running_mean.numpy(), mean)


def test_float32_model_stays_float32(xb):
    net = nn.Sequential(nn.Linear(3, 8), nn.GELU(), nn.LayerNorm(8), nn.BatchNorm1d(8),
                        nn.Dropout(0.1), nn.Linear(8, 2))
    x = xad.randn(4, 3)
    out = net(x)
    loss = F.cross_entropy(out, xad.tensor([0, 1, 1, 0])) + F.mse_loss(out, xad.zeros(4, 2))
    assert out.dtype == xad.float32 and loss.dtype == xad.float32
    loss.backward()
    for name, p in net.named_parameters():
        assert p.dtype == xad.float32 and p.grad.dtype == xad.float32, name
    for name, b in net.named_buffers():
        assert b.dtype in (xad.float32, xad.int64), name


def test_linear_shape_error(xb):
    with pytest.raises(ValueError, match=r"in_features"):
        nn.Linear(3, 2)(xad.ones(2, 4))


# ----- against PyTorch (NumPy backend) ---------------------------------------------------

@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy()


def test_layers_match_torch(torch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6))
    tx = torch.tensor(x)
    lin = nn.Linear(6, 3, dtype=f64)
    tl = torch.nn.Linear(6, 3).double()
    tl.load_state_dict({k: torch.tensor(v.numpy()) for k, v in lin.state_dict().items()})
    X = xad.tensor(x)
    assert np.allclose(lin(X).numpy(), _np(tl(tx)))
    pairs = [(nn.GELU(), torch.nn.GELU()), (nn.GELU("tanh"), torch.nn.GELU("tanh")),
             (nn.Softmax(dim=0), torch.nn.Softmax(dim=0)),
             (nn.LogSoftmax(dim=1), torch.nn.LogSoftmax(dim=1)),
             (nn.Sigmoid(), torch.nn.Sigmoid()), (nn.Softplus(), torch.nn.Softplus()),
             (nn.LayerNorm(6, dtype=f64), torch.nn.LayerNorm(6).double())]
    for ours, theirs in pairs:
        assert np.allclose(ours(X).numpy(), _np(theirs(tx)), atol=1e-10), repr(ours)
    x3 = rng.standard_normal((2, 3, 4, 5))
    assert nn.Flatten()(xad.tensor(x3)).shape == tuple(torch.nn.Flatten()(
        torch.tensor(x3)).shape)
    assert nn.Flatten(0, 2)(xad.tensor(x3)).shape == tuple(torch.nn.Flatten(0, 2)(
        torch.tensor(x3)).shape)


@pytest.mark.parametrize("shape", [(8, 3), (5, 3, 4)])
def test_batchnorm_running_stats_match_torch(torch, shape):
    rng = np.random.default_rng(1)
    bn = nn.BatchNorm1d(3, momentum=0.2, dtype=f64)
    tbn = torch.nn.BatchNorm1d(3, momentum=0.2).double()
    for _ in range(4):
        x = rng.standard_normal(shape) * 2 + 1
        assert np.allclose(bn(xad.tensor(x)).numpy(), _np(tbn(torch.tensor(x))))
    for k, v in tbn.state_dict().items():
        assert np.allclose(bn.state_dict()[k].numpy(), v.numpy()), k
    bn.eval(), tbn.eval()
    x = rng.standard_normal(shape)
    assert np.allclose(bn(xad.tensor(x)).numpy(), _np(tbn(torch.tensor(x))))


def test_linear_gradients_match_torch(torch):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 5))
    net = nn.Sequential(nn.Linear(5, 4, dtype=f64), nn.Tanh(), nn.Linear(4, 2, dtype=f64))
    tnet = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(),
                               torch.nn.Linear(4, 2)).double()
    tnet.load_state_dict({k: torch.tensor(v.numpy()) for k, v in net.state_dict().items()})
    (net(xad.tensor(x)) ** 2).sum().backward()
    (tnet(torch.tensor(x)) ** 2).sum().backward()
    tp = dict(tnet.named_parameters())
    for name, p in net.named_parameters():
        assert np.allclose(p.grad.numpy(), tp[name].grad.numpy()), name
