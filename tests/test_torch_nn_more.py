"""torch.nn modules and functions that raised AttributeError under xad.as_torch before
(``LPPool3d``, ``FeatureAlphaDropout``, ``CrossMapLRN2d``, ``NLLLoss2d``, ``Container``,
``DataParallel``, ``SyncBatchNorm``, ``F.multi_head_attention_forward``, fractional max
pooling, ``AdaptiveLogSoftmaxWithLoss``) and the legacy ``size_average``/``reduce`` keywords
of the losses, against PyTorch 2.13 in float64 on every backend."""

from __future__ import annotations

import contextlib
import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch_check import check_against_torch  # noqa: E402

import xad  # noqa: E402
import xad.nn as nn  # noqa: E402
import xad.nn.functional as F  # noqa: E402
from xad import as_torch  # noqa: E402

F64 = xad.float64
T = as_torch.namespace()["torch"]


def test_new_names_are_under_torch_nn():
    for name in ("LPPool3d", "FeatureAlphaDropout", "CrossMapLRN2d", "NLLLoss2d",
                 "DataParallel", "SyncBatchNorm", "Container", "AdaptiveLogSoftmaxWithLoss",
                 "FractionalMaxPool2d", "FractionalMaxPool3d"):
        assert getattr(T.nn, name) is not None
    assert T.nn.modules.batchnorm.SyncBatchNorm is T.nn.SyncBatchNorm
    for name in ("lp_pool3d", "feature_alpha_dropout", "multi_head_attention_forward",
                 "fractional_max_pool2d", "fractional_max_pool3d",
                 "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices"):
        assert getattr(T.nn.functional, name) is getattr(F, name)


def test_lp_pool3d_matches_torch(xb):
    for p, k, s, ceil, shape in ((2, 2, None, False, (2, 2, 4, 4, 3)),
                                 (3, (2, 1, 2), (1, 2, 1), True, (1, 2, 3, 3, 3)),
                                 (1.5, 2, 1, False, (2, 3, 3, 2))):
        ours, theirs = nn.LPPool3d(p, k, s, ceil), torch.nn.LPPool3d(p, k, s, ceil)
        assert repr(ours) == repr(theirs)
        fo = lambda x, m=ours: m(x * x + 0.5)  # noqa: E731  (positive: a p-norm of any p)
        ft = lambda x, m=theirs: m(x * x + 0.5)  # noqa: E731
        check_against_torch(fo, ft, [shape], f"LPPool3d {p} {k} {s}")


def test_feature_alpha_dropout_structure_and_eval(xb):
    a = np.random.default_rng(3).standard_normal((400, 50, 3, 2))
    x = xad.tensor(a, dtype=F64, requires_grad=True)
    assert F.feature_alpha_dropout(x, 0.2) is x  # training=False by default, as torch's
    assert nn.FeatureAlphaDropout(0.2).eval()(x) is x
    assert repr(nn.FeatureAlphaDropout(0.2)) == repr(torch.nn.FeatureAlphaDropout(0.2))
    p, alpha = 0.3, 1.7580993408473766
    ca = 1 / math.sqrt((alpha ** 2 * p + 1) * (1 - p))
    y = nn.FeatureAlphaDropout(p)(x)
    y.sum().backward()
    v, g = y.detach().numpy(), x.grad.numpy()
    dropped = g == 0
    assert (dropped == dropped[:, :, :1, :1]).all()  # one draw per (n, c), as torch's
    assert abs(dropped[:, :, 0, 0].mean() - p) < 0.01
    np.testing.assert_allclose(g[~dropped], ca)
    np.testing.assert_allclose(v[~dropped], ca * a[~dropped] + alpha * ca * p)
    np.testing.assert_allclose(v[dropped], -alpha * ca * (1 - p))
    assert F.feature_alpha_dropout(x, 1.0, True).abs().sum().item() == 0.0  # torch: all zero
    with pytest.raises(ValueError, match=r"feature_alpha_dropout: .* \(3,\)"):
        F.feature_alpha_dropout(xad.ones(3), 0.5, True)
    with pytest.raises(ValueError, match="feature_alpha_dropout: p must be in"):
        F.feature_alpha_dropout(x, 1.5, True)


@pytest.mark.parametrize("size,channels", [(1, 3), (2, 4), (3, 6), (5, 3), (4, 1)])
def test_cross_map_lrn2d_forward_matches_torch_gradient_finite_differences(xb, size, channels):
    kw = dict(alpha=0.6, beta=0.7, k=1.3)
    ours, theirs = nn.CrossMapLRN2d(size, **kw), torch.nn.CrossMapLRN2d(size, **kw)
    assert repr(ours) == repr(theirs)
    a = np.random.default_rng(size).standard_normal((2, channels, 3, 2))
    x = xad.tensor(a, dtype=F64, requires_grad=True)
    np.testing.assert_allclose(ours(x).detach().numpy(), theirs(torch.tensor(a)).numpy(),
                               rtol=1e-12, atol=1e-12)
    # torch's hand-written backward is not its forward's derivative (gradcheck fails): ours is
    assert xad.gradcheck(ours, (x,))
    with pytest.raises(ValueError, match=r"CrossMapLRN2d: expected \(N, C, H, W\)"):
        ours(xad.ones(2, 3, 4))


def test_nll_loss_2d_is_nll_loss_with_torchs_warning(xb):
    a = np.random.default_rng(0).standard_normal((2, 3, 2, 2))
    tgt = np.random.default_rng(1).integers(0, 3, (2, 2, 2))
    with pytest.warns(FutureWarning, match="NLLLoss2d` has been deprecated"):
        ours = nn.NLLLoss2d(ignore_index=1, reduction="sum")
    with pytest.warns(FutureWarning):
        theirs = torch.nn.NLLLoss2d(ignore_index=1, reduction="sum")
    assert isinstance(ours, nn.NLLLoss) and ours.ignore_index == theirs.ignore_index
    got = ours(xad.tensor(a, dtype=F64), xad.tensor(tgt)).item()
    assert got == pytest.approx(theirs(torch.tensor(a), torch.tensor(tgt)).item(), rel=1e-12)
    with pytest.warns(FutureWarning), pytest.warns(UserWarning, match="reduction='none'"):
        assert nn.NLLLoss2d(reduce=False).reduction == "none"


def test_container_is_torchs_deprecated_module_of_keywords():
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        ours = T.nn.Container(fc=nn.Linear(2, 1), act=nn.ReLU())
    with pytest.warns(FutureWarning):
        theirs = torch.nn.Container(fc=torch.nn.Linear(2, 1), act=torch.nn.ReLU())
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]


def test_data_parallel_is_the_module_on_one_device(xb):
    inner = nn.Linear(3, 2, dtype=F64)
    dp = T.nn.DataParallel(inner)
    x = xad.ones(4, 3, dtype=F64)
    assert dp.module is inner and (dp(x) - inner(x)).abs().max().item() == 0.0
    ref = torch.nn.DataParallel(torch.nn.Linear(3, 2))
    assert sorted(dp.state_dict()) == sorted(ref.state_dict())
    lin = ref.module.cpu().double()  # (a CUDA torch's DataParallel moved it to the GPU)
    dp.load_state_dict({f"module.{k}": xad.tensor(v.detach().numpy(), dtype=F64)
                        for k, v in lin.state_dict().items()})
    np.testing.assert_allclose(dp(x).detach().numpy(),
                               lin(torch.ones(4, 3, dtype=torch.float64)).detach().numpy(),
                               rtol=1e-12)
    assert T.nn.DataParallel(inner, device_ids=[0]).device_ids == [0]
    with pytest.raises(NotImplementedError, match="xad.distributed.DataParallel"):
        T.nn.DataParallel(inner, device_ids=[0, 1])
    with pytest.raises(TypeError, match="DataParallel wraps an xad.nn.Module"):
        T.nn.DataParallel(lambda v: v)


def test_sync_batch_norm_on_one_process_is_batch_norm(xb):
    a = np.random.default_rng(0).standard_normal((4, 3, 2))
    ours, theirs = T.nn.SyncBatchNorm(3, dtype=F64), torch.nn.SyncBatchNorm(3).double()
    check_against_torch(ours, theirs, [a.shape], "SyncBatchNorm (training)")
    np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(),
                               rtol=1e-12)
    model = T.nn.Sequential(nn.Linear(2, 3), nn.BatchNorm2d(3), nn.BatchNorm3d(3))
    conv = T.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert [type(m).__name__ for m in conv] == ["Linear", "SyncBatchNorm", "SyncBatchNorm"]


# the losses that take size_average/reduce in torch 2.13, with the arguments after input(s)
LEGACY = [
    ("l1_loss", 2, {}), ("mse_loss", 2, {}), ("smooth_l1_loss", 2, {}),
    ("soft_margin_loss", 2, {}), ("kl_div", 2, {}), ("poisson_nll_loss", 2, {}),
    ("binary_cross_entropy_with_logits", 2, {}), ("margin_ranking_loss", 3, {}),
    ("hinge_embedding_loss", 2, {}), ("cosine_embedding_loss", 3, {}),
    ("triplet_margin_loss", 3, {}), ("multilabel_soft_margin_loss", 2, {}),
    ("binary_cross_entropy", 2, {}), ("nll_loss", 2, {"ignore_index": 1}),
    ("cross_entropy", 2, {}), ("multi_margin_loss", 2, {}), ("multilabel_margin_loss", 2, {}),
]


def _legacy_inputs(name, n, lib):
    rng = np.random.default_rng(len(name))
    t = (lambda v: xad.tensor(v, dtype=F64)) if lib == "x" else torch.tensor
    ti = (lambda v: xad.tensor(v)) if lib == "x" else torch.tensor
    a = [rng.standard_normal((4, 3)) for _ in range(n)]
    if name in ("nll_loss", "cross_entropy", "multi_margin_loss"):
        a[1] = ti(rng.integers(0, 3, 4))
        return [t(a[0]), a[1]]
    if name == "multilabel_margin_loss":
        return [t(a[0]), ti(np.array([[2, 0, -1], [1, -1, 0], [0, 1, 2], [-1, 0, 0]]))]
    if name in ("binary_cross_entropy", "multilabel_soft_margin_loss",
                "binary_cross_entropy_with_logits"):
        a[1] = rng.uniform(0.1, 0.9, (4, 3))
        if name == "binary_cross_entropy":
            a[0] = rng.uniform(0.1, 0.9, (4, 3))
    if name in ("hinge_embedding_loss", "margin_ranking_loss", "cosine_embedding_loss"):
        a[-1] = np.sign(a[-1]) if name == "hinge_embedding_loss" else np.sign(a[-1][:, 0])
        if name == "margin_ranking_loss":
            a[0], a[1] = a[0][:, 0], a[1][:, 0]
    return [t(v) for v in a]


@pytest.mark.parametrize("name,n,kw", LEGACY, ids=[c[0] for c in LEGACY])
def test_legacy_size_average_and_reduce_are_torchs(xb, name, n, kw):
    import torch.nn.functional as TF
    ours, theirs = getattr(F, name), getattr(TF, name)
    for sa, red in ((None, False), (False, None), (True, True), (False, False), (None, True)):
        legacy = dict(size_average=sa, reduce=red)
        with warnings.catch_warnings(record=True) as wo:
            warnings.simplefilter("always")
            y = ours(*_legacy_inputs(name, n, "x"), **kw, reduction="sum", **legacy)
        with warnings.catch_warnings(record=True) as wt:
            warnings.simplefilter("always")
            t = theirs(*_legacy_inputs(name, n, "t"), **kw, reduction="sum", **legacy)
        legacy_warnings = [[str(w.message) for w in ws if "size_average" in str(w.message)]
                           for ws in (wo, wt)]
        assert legacy_warnings[0] == legacy_warnings[1] and len(legacy_warnings[0]) == 1
        assert y.shape == tuple(t.shape)
        np.testing.assert_allclose(y.numpy(), t.numpy(), rtol=1e-12, atol=1e-12)
    module = {"l1_loss": "L1Loss", "mse_loss": "MSELoss", "nll_loss": "NLLLoss",
              "kl_div": "KLDivLoss", "soft_margin_loss": "SoftMarginLoss"}.get(name)
    if module:
        with pytest.warns(UserWarning, match="reduction='sum'"):
            m = getattr(T.nn, module)(size_average=False)
        assert m.reduction == "sum" == getattr(torch.nn, module)(size_average=False).reduction


def test_legacy_keywords_only_where_torch_takes_them():
    for name in ("huber_loss", "gaussian_nll_loss", "triplet_margin_with_distance_loss",
                 "ctc_loss"):
        with pytest.raises(TypeError):
            getattr(F, name)(size_average=False)
    for name in ("HuberLoss", "GaussianNLLLoss", "TripletMarginWithDistanceLoss", "CTCLoss"):
        with pytest.raises(TypeError):
            getattr(nn, name)(reduce=False)
    # positionally the arguments are xad's (reduction third): torch's size_average there fails
    x = xad.tensor([1.0, 2.0])
    assert F.l1_loss(x, xad.zeros(2), "sum").item() == 3.0
    with pytest.raises(ValueError, match="reduction must be one of"):
        F.l1_loss(x, xad.zeros(2), False)
    assert not hasattr(T.nn.functional, "accepting_legacy_reduction")


# ---- F.multi_head_attention_forward: torch's arguments, numbers and gradients ----

E, H, L, S, N = 6, 2, 3, 4, 2
MHA_CASES = {  # name: (options, self-attention)
    "packed": ({}, False),
    "self_attention": ({}, True),
    "separate_weights": ({"separate": True, "kdim": 5, "vdim": 3}, False),
    "no_bias_average_off": ({"bias": False, "average_attn_weights": False}, False),
    "bias_kv_zero_attn_masks": ({"bias_kv": True, "add_zero_attn": True, "attn_mask": "bool",
                                 "key_padding_mask": "bool"}, False),
    "float_masks_3d": ({"attn_mask": "float3d", "key_padding_mask": "float"}, False),
    "no_weights_masked": ({"need_weights": False, "attn_mask": "bool"}, False),
    "no_weights": ({"need_weights": False}, True),
    "static_kv_zero_attn": ({"static": True, "add_zero_attn": True}, True),
    "unbatched": ({"unbatched": True, "key_padding_mask": "bool"}, False),
    "causal": ({"attn_mask": "causal", "is_causal": True, "need_weights": False}, True),
}


def _mha_masks(lib, o):
    rng = np.random.default_rng(5)
    t = (lambda v: xad.tensor(v, dtype=F64)) if lib == "x" else torch.tensor
    tb = (lambda v: xad.tensor(v)) if lib == "x" else torch.tensor
    n = () if o.get("unbatched") else (N,)
    masks = {}
    kind = o.get("attn_mask")
    if kind == "bool":
        m = rng.uniform(size=(L, S)) > 0.6
        m[:, 0] = False  # every query keeps a key
        masks["attn_mask"] = tb(m)
    elif kind == "float3d":
        masks["attn_mask"] = t(rng.standard_normal((N * H, L, S)))
    elif kind == "causal":
        masks["attn_mask"] = tb(np.triu(np.ones((L, L), bool), 1))
    kind = o.get("key_padding_mask")
    if kind == "bool":
        m = rng.uniform(size=n + (S,)) > 0.6
        m[..., 0] = False
        masks["key_padding_mask"] = tb(m)
    elif kind == "float":
        masks["key_padding_mask"] = t(rng.standard_normal((N, S)))
    return masks


def _math_sdpa(lib):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel(SDPBackend.MATH) if lib == "t" else contextlib.nullcontext()


def _mha(lib, o, self_attention):
    M = F if lib == "x" else torch.nn.functional
    kd, vd = o.get("kdim", E), o.get("vdim", E)
    lead = () if o.get("unbatched") else (N,)
    s = L if self_attention else S
    shapes = [(L, *lead, E)] + ([] if self_attention else [(s, *lead, kd), (s, *lead, vd)])
    shapes += [(E, E), (E,)] + ([(3 * E, E)] if not o.get("separate") else
                                [(E, E), (E, kd), (E, vd)])
    shapes += [(3 * E,)] if o.get("bias", True) else []
    shapes += [(1, 1, E), (1, 1, E)] if o.get("bias_kv") else []
    shapes += [(N * H, s, E // H)] * 2 if o.get("static") else []

    def f(*a):
        a = list(a)
        q = a.pop(0)
        k, v = (q, q) if self_attention else (a.pop(0), a.pop(0))
        out_w, out_b = a.pop(0), a.pop(0)
        proj = [a.pop(0)] if not o.get("separate") else [a.pop(0), a.pop(0), a.pop(0)]
        in_b = a.pop(0) if o.get("bias", True) else None
        bk, bv = (a.pop(0), a.pop(0)) if o.get("bias_kv") else (None, None)
        sk, sv = (a.pop(0), a.pop(0)) if o.get("static") else (None, None)
        sep = dict(use_separate_proj_weight=True, q_proj_weight=proj[0],
                   k_proj_weight=proj[1], v_proj_weight=proj[2]) if len(proj) == 3 else {}
        with _math_sdpa(lib):  # (torch's fused kernels have no second derivative)
            out, w = M.multi_head_attention_forward(
                    q, k, v, E, H, None if sep else proj[0], in_b, bk, bv,
                o.get("add_zero_attn", False),
                0.0, out_w, out_b, training=True, need_weights=o.get("need_weights", True),
                average_attn_weights=o.get("average_attn_weights", True), static_k=sk,
                static_v=sv, is_causal=o.get("is_causal", False), **sep, **_mha_masks(lib, o))
        assert (w is None) == (not o.get("need_weights", True))
        return out if w is None else out.sum() * 0 + out * w.sum()  # both, one output
    return f, shapes


@pytest.mark.parametrize("case", list(MHA_CASES))
def test_multi_head_attention_forward_matches_torch(xb, case):
    o, self_attention = MHA_CASES[case]
    ours, shapes = _mha("x", o, self_attention)
    theirs, _ = _mha("t", o, self_attention)
    check_against_torch(ours, theirs, shapes, f"multi_head_attention_forward {case}")


def test_multi_head_attention_forward_is_the_modules(xb):
    mha = nn.MultiheadAttention(E, H, add_bias_kv=True, add_zero_attn=True, dtype=F64)
    x = xad.randn(L, N, E, dtype=F64)
    out, w = mha(x, x, x, need_weights=True)
    fout, fw = T.nn.functional.multi_head_attention_forward(
        x, x, x, E, H, mha.in_proj_weight, mha.in_proj_bias, mha.bias_k, mha.bias_v, True, 0.5,
        mha.out_proj.weight, mha.out_proj.bias, training=False)
    np.testing.assert_allclose(out.detach().numpy(), fout.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.detach().numpy(), fw.detach().numpy(), rtol=1e-12)


def test_multi_head_attention_forward_errors():
    x, w = xad.ones(3, 2, 4), xad.ones(12, 4)
    args = (x, x, x, 4, 2, w, None, None, None, False, 0.0, xad.eye(4), None)
    with pytest.raises(ValueError, match=r"query's last axis \(4\) is not embed_dim_to_check"):
        F.multi_head_attention_forward(x, x, x, 5, *args[4:])
    with pytest.raises(ValueError, match="in_proj_weight is None"):
        F.multi_head_attention_forward(*args[:5], None, *args[6:])
    with pytest.raises(ValueError, match="needs q_proj_weight, k_proj_weight and v_proj"):
        F.multi_head_attention_forward(*args, use_separate_proj_weight=True)
    with pytest.raises(ValueError, match=r"static_k must have shape .* \(4, S, 2\)"):
        F.multi_head_attention_forward(*args, static_k=xad.ones(2, 3, 2))
    with pytest.raises(ValueError, match="bias_k and bias_v cannot be added to static"):
        F.multi_head_attention_forward(*args[:7], xad.ones(1, 1, 4), xad.ones(1, 1, 4),
                                       *args[9:], static_k=xad.ones(4, 3, 2))
    with pytest.raises(ValueError, match="is_causal=True is a hint"):
        F.multi_head_attention_forward(*args, is_causal=True)


# ---- fractional max pooling: PyTorch's windows, values, indices and gradients ----

FRACTIONAL = [  # (d, input shape, kernel_size, output_size, output_ratio)
    (2, (2, 3, 7, 9), 2, (4, 5), None),
    (2, (2, 3, 7, 9), (3, 2), (3, 6), None),
    (2, (3, 7, 9), 2, None, (0.7, 0.5)),
    (2, (1, 2, 30, 9), 2, (29, 3), None),
    (3, (2, 2, 6, 7, 8), 2, (3, 4, 5), None),
    (3, (2, 6, 6, 7), (2, 3, 1), None, 0.6),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", range(len(FRACTIONAL)))
def test_fractional_max_pool_with_samples_is_torchs(xb, case, dtype):
    d, shape, k, out, ratio = FRACTIONAL[case]
    rng = np.random.default_rng(case)
    a = rng.standard_normal(shape)
    n = shape[0] if len(shape) == d + 2 else 1
    s = rng.uniform(size=(n, shape[-d - 1], d))
    xd, td = getattr(xad, dtype), getattr(torch, dtype)
    name = f"fractional_max_pool{d}d"
    y, i = getattr(F, name + "_with_indices")(xad.tensor(a, dtype=xd), k, out, ratio,
                                                _random_samples=xad.tensor(s, dtype=xd))
    ty, ti = getattr(torch.nn.functional, name)(torch.tensor(a, dtype=td), k, out, ratio,
                                                True, torch.tensor(s, dtype=td))
    np.testing.assert_array_equal(y.numpy(), ty.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    assert i.dtype == xad.int64
    if dtype == "float64":
        mod = f"FractionalMaxPool{d}d"
        ours = getattr(T.nn, mod)(k, out, ratio, _random_samples=xad.tensor(s, dtype=xd))
        theirs = getattr(torch.nn, mod)(k, out, ratio, _random_samples=torch.tensor(s))
        check_against_torch(ours, theirs, [shape], f"{mod} {case}")
        assert list(ours.state_dict()) == list(theirs.state_dict()) == ["_random_samples"]


def test_fractional_max_pool_draws_from_xads_generator(xb):
    x = xad.tensor(np.random.default_rng(0).standard_normal((2, 3, 9, 8)), dtype=F64)
    m = nn.FractionalMaxPool2d(2, output_ratio=0.5, return_indices=True)
    xad.manual_seed(5)
    y1, i1 = m(x)
    y2, _ = m(x)
    xad.manual_seed(5)
    y3, i3 = m(x)
    assert y1.shape == (2, 3, 4, 4) and (y1 - y3).abs().max().item() == 0.0
    assert (i1 == i3).all().item() and (y1 - y2).abs().max().item() > 0  # a draw per call
    flat = x.reshape((2, 3, -1))
    got = xad.take_along_axis(flat, i1.reshape((2, 3, -1)), axis=-1).reshape(y1.shape)
    assert (got == y1).all().item()  # each value is the input's at its index
    rows, cols = (i1 // 8).numpy(), (i1 % 8).numpy()
    assert (np.diff(rows, axis=2) > 0).all() and (np.diff(cols, axis=3) > 0).all()


def test_fractional_max_pool_errors_are_torchs():
    x = xad.ones(1, 1, 4, 4)
    with pytest.raises(ValueError, match="requires specifying either an output size"):
        T.nn.FractionalMaxPool2d(2)
    with pytest.raises(ValueError, match="only one of output_size and output_ratio"):
        T.nn.FractionalMaxPool2d(2, 3, 0.5)
    with pytest.raises(ValueError, match=r"output_ratio must be between 0 and 1 \(got 1.0\)"):
        T.nn.FractionalMaxPool3d(2, output_ratio=1.0)
    with pytest.raises(ValueError, match="give output_size or output_ratio"):
        F.fractional_max_pool2d(x, 2)
    with pytest.raises(ValueError, match=r"4 windows of 2 along H do not fit the input's 4"):
        F.fractional_max_pool2d(x, 2, (4, 3))
    assert F.fractional_max_pool2d(x, 2, (3, 3)).shape == (1, 1, 3, 3)
    with pytest.raises(ValueError, match="3 windows of 2 along D do not fit"):
        F.fractional_max_pool3d(xad.ones(1, 1, 4, 4, 4), 2, 3)  # torch refuses it too
    with pytest.raises(ValueError, match=r"_random_samples must have shape \(1, 1, 2\)"):
        F.fractional_max_pool2d(x, 2, 2, _random_samples=xad.zeros(1, 1, 3))
    with pytest.raises(ValueError, match=r"fractional_max_pool2d: expected floating"):
        F.fractional_max_pool2d(xad.ones(4, 4), 2, 2)


# ---- AdaptiveLogSoftmaxWithLoss with torch's weights ----

ASM = [([4, 7], 4.0, False), ([2], 2.0, True), ([3, 5, 8], 1.5, True)]


def _asm_pair(cutoffs, div, head_bias):
    torch.manual_seed(len(cutoffs))
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(12, 10, cutoffs, div_value=div,
                                                 head_bias=head_bias).double()
    ours = T.nn.AdaptiveLogSoftmaxWithLoss(12, 10, cutoffs, div_value=div, head_bias=head_bias,
                                           dtype=F64)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    ours.load_state_dict({k: xad.tensor(v.numpy(), dtype=F64)
                          for k, v in theirs.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize("cutoffs,div,head_bias", ASM)
def test_adaptive_log_softmax_matches_torch(xb, cutoffs, div, head_bias):
    ours, theirs = _asm_pair(cutoffs, div, head_bias)
    assert (ours.shortlist_size, ours.n_clusters, ours.head_size, ours.cutoffs) == \
        (theirs.shortlist_size, theirs.n_clusters, theirs.head_size, theirs.cutoffs)
    target = np.array([0, 3, 4, 6, 7, 9, 2, 9])
    check_against_torch(lambda x: ours(x, xad.tensor(target)).output,
                        lambda x: theirs(x, torch.tensor(target)).output, [(8, 12)],
                        f"AdaptiveLogSoftmaxWithLoss {cutoffs}")
    check_against_torch(ours.log_prob, theirs.log_prob, [(5, 12)], "log_prob")
    a = np.random.default_rng(1).standard_normal((8, 12))
    out, loss = ours(xad.tensor(a, dtype=F64), xad.tensor(target))
    tout, tloss = theirs(torch.tensor(a), torch.tensor(target))
    assert type(out).__name__ == "Tensor" and loss.shape == ()
    assert loss.item() == pytest.approx(tloss.item(), rel=1e-12)
    loss.backward()
    tloss.backward()
    for (name, p), (tname, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert name == tname
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-10, atol=1e-12)
    for scale in (1.0, 6.0):  # rows predicted in the shortlist, and in clusters
        np.testing.assert_array_equal(ours.predict(xad.tensor(a * scale, dtype=F64)).numpy(),
                                      theirs.predict(torch.tensor(a * scale)).numpy())
    one, one_loss = ours(xad.tensor(a[0], dtype=F64), xad.tensor(target[0]))
    assert one.shape == () and one.item() == pytest.approx(out[0].item(), rel=1e-12)
    assert one_loss.item() == pytest.approx(-out[0].item(), rel=1e-12)


def test_adaptive_log_softmax_errors():
    for cutoffs in ([], [3, 2], [0, 4], [4, 10], [3, 3], [2.5]):
        with pytest.raises(ValueError, match="cutoffs should be a sequence"):
            nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs)
        with pytest.raises(ValueError):
            torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs)
    asm = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4])
    with pytest.raises(IndexError, match="target 10 is out of bounds"):
        asm(xad.ones(2, 8), xad.tensor([1, 10]))
    with pytest.raises(ValueError, match=r"got input \(3, 8\) and target \(2,\)"):
        asm(xad.ones(3, 8), xad.tensor([1, 2]))


def test_fractional_max_pool_nan_is_torchs(xb):
    a = np.random.default_rng(0).standard_normal((1, 2, 7, 9))
    a[0, 0, 2, 3] = a[0, 1, 5, 5] = np.nan  # one NaN in a window: it wins, as in torch
    s = np.random.default_rng(1).uniform(size=(1, 2, 2))
    y, i = F.fractional_max_pool2d(xad.tensor(a, dtype=F64), 2, (4, 5), return_indices=True,
                                   _random_samples=xad.tensor(s, dtype=F64))
    ty, ti = torch.nn.functional.fractional_max_pool2d(
        torch.tensor(a), 2, (4, 5), return_indices=True, _random_samples=torch.tensor(s))
    np.testing.assert_array_equal(y.numpy(), ty.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
