"""Pooling against PyTorch in float64: values, first and second derivatives, over a table
of kernels, strides, paddings, dilations and ceil modes (stride larger than the kernel,
size-1 axes, strided inputs, unbatched input), on every backend."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402
from torch_check import check_against_torch  # noqa: E402

import xad  # noqa: E402
import xad.nn.functional as F  # noqa: E402

# name, input shape, keywords, input transposed?
MAX = [
    ("k2", (2, 3, 6, 5), {"kernel_size": 2}, False),
    ("stride_over_kernel", (1, 2, 7, 8), {"kernel_size": 2, "stride": 3}, False),
    ("pad_ceil", (2, 2, 8, 7), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
     False),
    ("dilation", (1, 2, 8, 7), {"kernel_size": (2, 3), "stride": (3, 1), "padding": 1,
                                "dilation": (2, 1)}, False),
    ("size1_axis", (2, 3, 1, 6), {"kernel_size": (1, 2)}, False),
    ("transposed_unbatched", (3, 5, 6), {"kernel_size": 3, "stride": 2}, True),
]


@pytest.mark.parametrize("name,shape,kw,tr", MAX, ids=[c[0] for c in MAX])
def test_max_pool2d_matches_torch(xb, name, shape, kw, tr):
    check_against_torch(lambda x: F.max_pool2d(x, **kw), lambda x: TF.max_pool2d(x, **kw),
                        [shape], f"max_pool2d:{name}", transposed=(tr,))


AVG = [
    ("k2", (2, 3, 6, 5), {"kernel_size": 2}, False),
    ("pad_include", (1, 2, 5, 6), {"kernel_size": 3, "stride": 2, "padding": 1}, False),
    ("pad_exclude_ceil", (2, 2, 8, 7), {"kernel_size": 3, "stride": 2, "padding": 1,
                                        "ceil_mode": True, "count_include_pad": False}, False),
    ("ceil_include", (1, 2, 7, 5), {"kernel_size": 2, "stride": 2, "ceil_mode": True}, True),
    ("stride_over_kernel", (1, 2, 7, 8), {"kernel_size": 2, "stride": 3}, False),
    ("divisor_override", (1, 2, 4, 4), {"kernel_size": 2, "divisor_override": 3}, False),
]


@pytest.mark.parametrize("name,shape,kw,tr", AVG, ids=[c[0] for c in AVG])
def test_avg_pool2d_matches_torch(xb, name, shape, kw, tr):
    check_against_torch(lambda x: F.avg_pool2d(x, **kw), lambda x: TF.avg_pool2d(x, **kw),
                        [shape], f"avg_pool2d:{name}", transposed=(tr,))


ADAPTIVE = [("divisible", (2, 3, 8, 6), (2, 3)), ("uneven", (2, 3, 7, 5), (3, 4)),
            ("keep_axis", (1, 2, 5, 7), (3, None)), ("global_unbatched", (3, 5, 4), 1)]


@pytest.mark.parametrize("name,shape,size", ADAPTIVE, ids=[c[0] for c in ADAPTIVE])
def test_adaptive_avg_pool2d_matches_torch(xb, name, shape, size):
    check_against_torch(lambda x: F.adaptive_avg_pool2d(x, size),
                        lambda x: TF.adaptive_avg_pool2d(x, size), [shape],
                        f"adaptive_avg_pool2d:{name}")


def test_pool_errors_name_the_shapes(xb):
    x = xad.ones((1, 2, 4, 4))
    with pytest.raises(ValueError, match=r"max_pool2d: padding \(2, 2\) must be at most half"):
        F.max_pool2d(x, 3, padding=2)
    with pytest.raises(ValueError, match=r"larger than the padded input 4x4"):
        F.avg_pool2d(x, 5)
    with pytest.raises(ValueError, match=r"expected \(N, C, H, W\) or \(C, H, W\) input"):
        F.max_pool2d(xad.ones((4, 4)), 2)


def test_pool1d_arguments_are_one_int(xb):
    """A 1-d pooling argument is an int or one int: an empty one was a TypeError from deep
    inside (None reached the 2-d pooling), two ints silently pooled with the first."""
    x = xad.ones((1, 2, 6))
    with pytest.raises(ValueError, match=r"max_pool1d: kernel_size must be an int or 1 ints"):
        F.max_pool1d(x, (2, 3))
    with pytest.raises(ValueError, match=r"max_pool1d: kernel_size must be an int or 1 ints"):
        F.max_pool1d(x, ())
    with pytest.raises(ValueError, match=r"avg_pool1d: padding must be an int or 1 ints"):
        F.avg_pool1d(x, 2, padding=())
    assert F.max_pool1d(x, (2,), stride=()).shape == (1, 2, 3)  # (): the kernel's stride


WITH_INDICES = [("max_pool1d_with_indices", 1, (3, 2, 1)), ("max_pool2d_with_indices", 2, (2,)),
                ("max_pool3d_with_indices", 3, (2, 1)),
                ("adaptive_max_pool1d_with_indices", 1, (3,)),
                ("adaptive_max_pool2d_with_indices", 2, ((2, 3),)),
                ("adaptive_max_pool3d_with_indices", 3, (2,))]


@pytest.mark.parametrize("name,d,args", WITH_INDICES, ids=[n for n, _, _ in WITH_INDICES])
def test_pooling_with_indices_is_pytorchs(name, d, args, xb):
    """``F.max_pool2d_with_indices`` and its siblings (AttributeError before): values,
    indices and the gradient, against torch."""
    from xad import as_torch
    T = as_torch.namespace()["torch"]
    a = np.cos(np.arange(2 * 3 * 5 ** d) * 1.7).reshape((2, 3) + (5,) * d)
    out = []
    for L in (T, torch):
        x = L.tensor(a, dtype=L.float64, requires_grad=True)
        v, i = getattr(L.nn.functional, name)(x, *args)
        (v * v).sum().backward()
        out.append([v.detach().numpy(), i.numpy(), x.grad.numpy()])
    for g, w in zip(*out):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=0)
