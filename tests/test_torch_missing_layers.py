"""The PyTorch names added for porting, against torch 2.13 in float64 on every backend:
``conv3d``, ``conv_transpose1d``/``3d`` (and their layers), the 3-d pools, ``grid_sample`` and
``affine_grid``, and the margin losses ``soft_margin_loss``, ``multi_margin_loss`` and
``multilabel_margin_loss``: values, first and second derivatives against torch's
(``check_against_torch``) and first derivatives against central finite differences
(``xad.gradcheck``). tests/test_nn_fuzz_torch.py fuzzes their options."""

from __future__ import annotations

import numpy as np
import pytest

import xad
import xad.nn.functional as F

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402
from torch_check import check_against_torch  # noqa: E402

CONV = [  # (name, input shape, weight shape, keywords)
    ("conv3d", (2, 4, 4, 5, 3), (6, 2, 2, 3, 2), dict(stride=(1, 2, 1), padding=(1, 0, 1),
                                                      dilation=(2, 1, 1), groups=2)),
    ("conv3d", (3, 4, 5, 4), (2, 3, 3, 2, 3), dict(padding="same", dilation=(1, 2, 1))),
    ("conv3d", (1, 2, 3, 4, 4), (2, 2, 1, 2, 2), dict(padding="valid", stride=2)),
    ("conv_transpose1d", (2, 4, 5), (4, 3, 3), dict(stride=2, padding=1, output_padding=1,
                                                    groups=2, dilation=2)),
    ("conv_transpose1d", (3, 4), (3, 2, 2), dict()),
    ("conv_transpose3d", (2, 4, 2, 3, 3), (4, 1, 2, 3, 2),
     dict(stride=(2, 1, 3), padding=(1, 0, 1), output_padding=(1, 0, 2), groups=2,
          dilation=(1, 2, 1))),
    ("conv_transpose3d", (2, 2, 3, 2), (2, 3, 2, 2, 2), dict(stride=2)),
]


@pytest.mark.parametrize("name, xs, ws, kw", CONV, ids=[f"{c[0]}-{i}" for i, c in
                                                        enumerate(CONV)])
def test_convolutions_match_torch(xb, name, xs, ws, kw):
    out = ws[1] * kw.get("groups", 1) if "transpose" in name else ws[0]
    check_against_torch(lambda x, w, b: getattr(F, name)(x, w, b, **kw),
                        lambda x, w, b: getattr(TF, name)(x, w, b, **kw),
                        [xs, ws, (out,)], f"{name} {kw}")


POOLS = {
    "max_pool3d": (lambda M, x: M.max_pool3d(x, (2, 3, 2), (1, 2, 2), (1, 1, 0), (2, 1, 1),
                                             ceil_mode=True), (2, 2, 5, 6, 4)),
    "max_pool3d unbatched": (lambda M, x: M.max_pool3d(x, 2), (2, 4, 4, 5)),
    "avg_pool3d": (lambda M, x: M.avg_pool3d(x, (2, 3, 3), (2, 2, 1), (1, 1, 0), True,
                                             False), (2, 2, 5, 6, 4)),
    "avg_pool3d divisor": (lambda M, x: M.avg_pool3d(x, 2, 1, 1, divisor_override=3),
                           (1, 2, 3, 3, 3)),
    "adaptive_avg_pool3d": (lambda M, x: M.adaptive_avg_pool3d(x, (2, None, 3)),
                            (2, 2, 5, 3, 4)),
    "adaptive_max_pool3d": (lambda M, x: M.adaptive_max_pool3d(x, (2, 2, 3)), (2, 2, 5, 3, 4)),
    "max_unpool3d": (lambda M, x: M.max_unpool3d(*M.max_pool3d(x, 2, return_indices=True), 2),
                     (1, 2, 4, 4, 4)),
}


@pytest.mark.parametrize("name", sorted(POOLS))
def test_3d_pools_match_torch(xb, name):
    f, shape = POOLS[name]
    check_against_torch(lambda x: f(F, x), lambda x: f(TF, x), [shape], name)


def test_3d_pool_indices_match_torch_with_ties(xb):
    a = np.round(np.random.default_rng(0).standard_normal((2, 2, 5, 6, 4)))  # many ties
    for kw in (dict(kernel_size=2), dict(kernel_size=(3, 2, 2), stride=1, padding=1,
                                         ceil_mode=True)):
        y, i = F.max_pool3d(xad.tensor(a), return_indices=True, **kw)
        t, j = TF.max_pool3d(torch.tensor(a), return_indices=True, **kw)
        np.testing.assert_array_equal(y.numpy(), t.numpy())
        np.testing.assert_array_equal(i.numpy(), j.numpy())
    y, i = F.adaptive_max_pool3d(xad.tensor(a), (2, 4, 3), return_indices=True)
    t, j = TF.adaptive_max_pool3d(torch.tensor(a), (2, 4, 3), return_indices=True)
    np.testing.assert_array_equal(i.numpy(), j.numpy())


SAMPLE = [(2, "bilinear", "zeros", False), (2, "bilinear", "border", True),
          (2, "bilinear", "reflection", False), (2, "bilinear", "reflection", True),
          (2, "nearest", "border", False), (3, "bilinear", "zeros", True),
          (3, "bilinear", "reflection", False), (3, "nearest", "zeros", True)]


@pytest.mark.parametrize("nd, mode, pad, align", SAMPLE)
def test_grid_sample_matches_torch(xb, nd, mode, pad, align):
    """Gradients reach the input and the grid (zero for ``nearest``, as PyTorch's); the
    grid reaches past [-1, 1], so every padding mode's clip and reflection is used. The
    fuzzer (tests/test_nn_fuzz_torch.py, family ``grid_sampling``) draws every combination."""
    spatial, out = ((4, 3), (3, 2)) if nd == 2 else ((3, 2, 3), (2, 2, 2))
    kw = dict(mode=mode, padding_mode=pad, align_corners=align)
    # standard normal grids: |g| > 1 for a third of the points
    check_against_torch(lambda x, g: F.grid_sample(x, g, **kw),
                        lambda x, g: TF.grid_sample(x, g, **kw),
                        [(2, 3, *spatial), (2, *out, nd)], f"grid_sample {nd}d {kw}")


@pytest.mark.filterwarnings("ignore:.*affine_grid.*:UserWarning")
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 1, 3), (2, 3, 2, 4, 3)])
@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_matches_torch(xb, size, align):
    nd = len(size) - 2
    check_against_torch(lambda t: F.affine_grid(t, size, align),
                        lambda t: TF.affine_grid(t, size, align), [(2, nd, nd + 1)],
                        f"affine_grid {size} {align}")


def _targets(lib, kind):
    t = {"sign": [[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0]], "class": [2, 0, 3],
         "labels": [[3, 0, -1, 1], [0, 1, 2, 3], [-1, 2, 2, 0]]}[kind]
    return lib.tensor(np.array(t))


LOSSES = {
    "soft_margin": ((2, 3), lambda L, M, x, r: M.soft_margin_loss(x, _targets(L, "sign"),
                                                                  reduction=r)),
    "multi_margin p1": ((3, 4), lambda L, M, x, r: M.multi_margin_loss(
        x, _targets(L, "class"), margin=0.7, reduction=r)),
    "multi_margin p2 weight": ((3, 4), lambda L, M, x, r: M.multi_margin_loss(
        x, _targets(L, "class"), p=2, weight=L.tensor(np.array([0.5, 1.0, 2.0, 0.25])),
        reduction=r)),
    "multilabel_margin": ((3, 4), lambda L, M, x, r: M.multilabel_margin_loss(
        x, _targets(L, "labels"), reduction=r)),
}


def _first_order(xf, tf, shape, name):
    """Values and first derivatives only (PyTorch has no second derivative of the multi-class
    margin losses: ``derivative for aten::multi_margin_loss_backward is not implemented``)."""
    a = np.random.default_rng(3).standard_normal(shape)
    x, t = xad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, u = xf(x), tf(t)
    np.testing.assert_allclose(y.numpy(), u.detach().numpy(), rtol=1e-12, atol=1e-12,
                               err_msg=name)
    y.sum().backward()
    u.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12,
                               err_msg=name)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_margin_losses_match_torch(xb, name):
    """Every reduction on NumPy; elsewhere ``"none"`` (the reductions are shared code)."""
    shape, f = LOSSES[name]
    check = check_against_torch if name == "soft_margin" else _first_order
    for r in ("mean", "sum", "none") if xb.name == "numpy" else ("none",):
        check(lambda x, r=r: f(xad, F, x, r), lambda x, r=r: f(torch, TF, x, r),
              [shape] if name == "soft_margin" else shape, f"{name}:{r}")


def test_margin_loss_layers_and_one_row(xb):
    x = np.random.default_rng(1).standard_normal(4)
    for xm, tm, target in ((xad.nn.MultiMarginLoss(p=2), torch.nn.MultiMarginLoss(p=2), 2),
                           (xad.nn.MultiLabelMarginLoss(), torch.nn.MultiLabelMarginLoss(),
                            [3, 1, -1, 2])):
        y = xm(xad.tensor(x), xad.tensor(np.array(target)))
        t = tm(torch.tensor(x), torch.tensor(np.array(target)))
        np.testing.assert_allclose(y.numpy(), t.numpy(), rtol=1e-12)
    y = xad.nn.SoftMarginLoss(reduction="sum")(xad.tensor(x), xad.tensor(np.sign(x)))
    np.testing.assert_allclose(y.numpy(), TF.soft_margin_loss(
        torch.tensor(x), torch.tensor(np.sign(x)), reduction="sum").numpy(), rtol=1e-12)


def test_soft_margin_loss_is_finite_where_the_exponential_overflows(xb):
    y = F.soft_margin_loss(xad.tensor([-800.0, 800.0], dtype=xad.float64),
                           xad.tensor([1.0, 1.0], dtype=xad.float64), reduction="none")
    np.testing.assert_allclose(y.numpy(), [800.0, 0.0])


def _f64(rng, *shape):
    return xad.tensor(rng.standard_normal(shape), dtype=xad.float64, requires_grad=True)


def test_finite_differences(xb):
    """Each new function's gradient against central differences, on this backend (on JAX
    the first: it compiles each shape)."""
    rng = np.random.default_rng(2)
    cases = [
        (lambda x, w: F.conv3d(x, w, stride=(1, 2, 1), padding=1, groups=2),
         [_f64(rng, 1, 2, 3, 4, 3), _f64(rng, 2, 1, 2, 2, 2)]),
        (lambda x, w: F.conv_transpose3d(x, w, stride=2, output_padding=1),
         [_f64(rng, 1, 2, 2, 2, 2), _f64(rng, 2, 1, 2, 1, 2)]),
        (lambda x, w: F.conv_transpose1d(x, w, stride=2, padding=1),
         [_f64(rng, 2, 2, 4), _f64(rng, 2, 3, 3)]),
        (lambda x: F.max_pool3d(x, 2, 1, 1), [_f64(rng, 1, 2, 3, 3, 3)]),
        (lambda x: F.avg_pool3d(x, 2, 1, 1, count_include_pad=False), [_f64(rng, 1, 1, 3, 3, 3)]),
        (lambda x: F.adaptive_max_pool3d(x, 2), [_f64(rng, 1, 1, 3, 3, 4)]),
        (lambda x, g: F.grid_sample(x, g * 0.8, padding_mode="reflection"),
         [_f64(rng, 1, 2, 3, 4), _f64(rng, 1, 2, 3, 2)]),
        (lambda x, g: F.grid_sample(x, g * 0.8, align_corners=True),
         [_f64(rng, 1, 1, 2, 3, 3), _f64(rng, 1, 2, 1, 2, 3)]),
        (lambda t: F.affine_grid(t, (1, 1, 3, 2)), [_f64(rng, 1, 2, 3)]),
        (lambda x: F.soft_margin_loss(x, xad.sign(x.detach())), [_f64(rng, 2, 3)]),
        (lambda x: F.multi_margin_loss(x, xad.tensor([1, 0]), p=2), [_f64(rng, 2, 3)]),
        (lambda x: F.multilabel_margin_loss(x, xad.tensor([[2, -1, 0]])), [_f64(rng, 1, 3)]),
    ]
    for f, inputs in cases[:1] if xb.name == "jax" else cases:
        assert xad.gradcheck(f, inputs)


def test_errors_name_the_operation(xb):
    with pytest.raises(ValueError, match=r"conv3d: expected a 5-d input"):
        F.conv3d(xad.ones((1, 2, 3, 3)), xad.ones((1, 2, 1, 1)))
    with pytest.raises(ValueError, match=r"conv_transpose3d: output_padding"):
        F.conv_transpose3d(xad.ones((1, 1, 2, 2, 2)), xad.ones((1, 1, 2, 2, 2)),
                           output_padding=1)
    with pytest.raises(ValueError, match=r"grid_sample: expected input"):
        F.grid_sample(xad.ones((1, 1, 3, 3)), xad.ones((1, 2, 2, 3)))
    with pytest.raises(ValueError, match=r"bicubic interpolation only supports 4-d"):
        F.grid_sample(xad.ones((1, 1, 2, 3, 3)), xad.ones((1, 2, 2, 2, 3)), mode="bicubic")
    with pytest.raises(ValueError, match=r"affine_grid: expected theta"):
        F.affine_grid(xad.ones((1, 2, 3)), (1, 1, 2, 2, 2))
    with pytest.raises(ValueError, match=r"multi_margin_loss: only p == 1 and p == 2"):
        F.multi_margin_loss(xad.ones((2, 3)), xad.tensor([0, 1]), p=3)
    with pytest.raises(IndexError, match=r"multilabel_margin_loss"):
        F.multilabel_margin_loss(xad.ones((1, 3)), xad.tensor([[0, 5, -1]]))
        xad.get_backend().synchronize()
    with pytest.raises(ValueError, match=r"max_pool3d: expected \(N, C, D, H, W\)"):
        F.max_pool3d(xad.ones((2, 3, 3)), 2)
