"""Convolutions, ``unfold`` and ``pad`` against PyTorch in float64: values, first and second
derivatives, over a table of shapes, strides, paddings, dilations and groups (stride larger
than the kernel, padding past half the kernel, size-1 spatial axes, strided inputs), on
every backend."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402
from torch_check import check_against_torch  # noqa: E402

import xad  # noqa: E402
import xad.nn.functional as F  # noqa: E402

# name, input shape, weight shape, keywords, bias?, input transposed?
CONV2D = [
    ("plain", (2, 3, 6, 5), (4, 3, 3, 3), {}, True, False),
    ("stride2_pad1", (2, 3, 7, 6), (4, 3, 3, 3), {"stride": 2, "padding": 1}, True, False),
    ("stride_over_kernel", (1, 2, 7, 7), (3, 2, 2, 2), {"stride": 3}, True, False),
    ("pad_over_half", (1, 2, 4, 5), (2, 2, 3, 3), {"padding": 2}, False, False),
    ("dilation", (1, 2, 7, 6), (3, 2, 3, 2), {"dilation": (2, 3), "padding": (1, 2)}, True,
     False),
    ("groups", (2, 4, 5, 5), (6, 2, 3, 3), {"groups": 2, "stride": (2, 1)}, True, False),
    ("depthwise", (1, 3, 5, 4), (3, 1, 3, 3), {"groups": 3, "padding": 1}, False, False),
    ("same_dilated", (1, 2, 5, 6), (3, 2, 4, 3), {"padding": "same", "dilation": 2}, True,
     False),
    ("valid_1x1", (2, 3, 1, 1), (4, 3, 1, 1), {"padding": "valid"}, True, False),
    ("size1_axis", (2, 2, 1, 5), (3, 2, 3, 3), {"padding": 1}, True, False),
    ("transposed_input", (2, 3, 5, 6), (4, 3, 2, 3), {"stride": (1, 2), "padding": 1}, True,
     True),
]


@pytest.mark.parametrize("name,xs,ws,kw,bias,tr", CONV2D, ids=[c[0] for c in CONV2D])
def test_conv2d_matches_torch(xb, name, xs, ws, kw, bias, tr):
    shapes = [xs, ws] + ([(ws[0],)] if bias else [])
    check_against_torch(lambda *a: F.conv2d(*a, **kw), lambda *a: TF.conv2d(*a, **kw),
                        shapes, f"conv2d:{name}", transposed=(tr,))


CONV1D = [
    ("stride_pad_dilation", (2, 3, 9), (4, 3, 3), {"stride": 2, "padding": 2, "dilation": 2}),
    ("groups", (2, 4, 6), (6, 2, 2), {"groups": 2, "padding": 1}),
    ("same", (1, 2, 7), (3, 2, 4), {"padding": "same"}),
]


@pytest.mark.parametrize("name,xs,ws,kw", CONV1D, ids=[c[0] for c in CONV1D])
def test_conv1d_matches_torch(xb, name, xs, ws, kw):
    check_against_torch(lambda *a: F.conv1d(*a, **kw), lambda *a: TF.conv1d(*a, **kw),
                        [xs, ws, (ws[0],)], f"conv1d:{name}")


CONVT = [
    ("stride2_outpad", (2, 4, 3, 4), (4, 3, 3, 2),
     {"stride": 2, "padding": 1, "output_padding": 1}),
    ("groups_dilation", (1, 4, 3, 3), (4, 2, 2, 3), {"groups": 2, "dilation": (2, 1)}),
    ("stride_over_kernel", (1, 2, 3, 2), (2, 3, 2, 2), {"stride": 3}),
    ("outpad_over_pad", (1, 2, 3, 3), (2, 3, 2, 3),
     {"stride": 3, "padding": (0, 1), "output_padding": (2, 1), "dilation": 2}),
    ("size1_axis", (2, 3, 1, 4), (3, 2, 3, 3), {"padding": 1}),
]


@pytest.mark.parametrize("name,xs,ws,kw", CONVT, ids=[c[0] for c in CONVT])
def test_conv_transpose2d_matches_torch(xb, name, xs, ws, kw):
    groups = kw.get("groups", 1)
    check_against_torch(lambda *a: F.conv_transpose2d(*a, **kw),
                        lambda *a: TF.conv_transpose2d(*a, **kw),
                        [xs, ws, (ws[1] * groups,)], f"conv_transpose2d:{name}")


def test_unfold_matches_torch(xb):
    kw = {"kernel_size": (2, 3), "dilation": (1, 2), "padding": 1, "stride": 2}
    check_against_torch(lambda x: F.unfold(x, **kw), lambda x: TF.unfold(x, **kw),
                        [(2, 3, 5, 6)], "unfold", transposed=(True,))


PADS = [
    ("constant", (1, 2, 2, 0), "constant", (2, 3, 4, 5)),
    ("constant_crop", (-1, 2, 0, -2), "constant", (2, 3, 4, 5)),
    ("reflect", (1, 3, 2, 2), "reflect", (2, 3, 4, 5)),
    ("reflect_1d", (2, 1), "reflect", (2, 3, 4)),
    ("replicate", (2, 0, 1, 3), "replicate", (1, 2, 3, 1)),
]


@pytest.mark.parametrize("name,pad,mode,shape", PADS, ids=[c[0] for c in PADS])
def test_pad_matches_torch(xb, name, pad, mode, shape):
    value = {"value": 0.5} if mode == "constant" else {}
    check_against_torch(lambda x: F.pad(x, pad, mode=mode, **value),
                        lambda x: TF.pad(x, pad, mode=mode, **value), [shape], f"pad:{name}")


def test_conv_errors_name_the_shapes(xb):
    x, w = xad.ones((1, 3, 4, 4)), xad.ones((2, 4, 3, 3))
    with pytest.raises(ValueError, match=r"conv2d: the input has 3 channels.*expects 4"):
        F.conv2d(x, w)
    with pytest.raises(ValueError, match=r"groups=2 must divide the input channels \(3\)"):
        F.conv2d(x, xad.ones((2, 1, 3, 3)), groups=2)
    with pytest.raises(ValueError, match=r"larger than the padded input 4x4"):
        F.conv2d(x, xad.ones((2, 3, 5, 5)))
    with pytest.raises(ValueError, match="padding='same' needs stride 1"):
        F.conv2d(x, xad.ones((2, 3, 3, 3)), padding="same", stride=2)
    with pytest.raises(ValueError, match="reflect padding of 4 must be smaller"):
        F.pad(x, (4, 0), mode="reflect")


# kernel, stride, dilation, pads, value; input layout: "nchw", "batch_last" (a
# convolution's output) or "other" (a strided view)
WINDOWS = [
    ("pad", (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 0.0, "nchw"),
    ("tiles", (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), 0.0, "batch_last"),
    ("strided_dilated", (2, 3), (2, 1), (1, 2), (1, 0, 2, 1), -float("inf"), "batch_last"),
    ("stride_over_kernel", (2, 2), (3, 3), (1, 1), (0, 1, 0, 0), 0.0, "other"),
    ("no_pad_nchw", (3, 2), (1, 1), (1, 1), (0, 0, 0, 0), 0.0, "nchw"),
    ("one_by_one", (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 0.0, "batch_last"),
]


def _layout(a, layout):
    import numpy as np
    if layout == "batch_last":
        return np.ascontiguousarray(np.transpose(a, (1, 2, 3, 0))).transpose(3, 0, 1, 2)
    if layout == "other":
        return np.ascontiguousarray(np.transpose(a, (2, 3, 0, 1))).transpose(2, 3, 0, 1)
    return a


@pytest.mark.parametrize("case", WINDOWS, ids=[c[0] for c in WINDOWS])
def test_im2col_col2im_fast_path_matches_reference(xb, monkeypatch, case):
    """A backend's native ``im2col``/``col2im`` (a strided view + one copy in NumPy and
    torch) gives the reference path's numbers, both ways, for every input layout, in a new
    array (never a view of the input); where the backend has one, the test checks it ran."""
    import numpy as np

    from xad.ops.convolution import col2im, im2col
    _, kernel, stride, dilation, pads, value, layout = case
    rng = np.random.default_rng(0)
    x_np = _layout(rng.standard_normal((3, 2, 7, 6)), layout)
    shape = x_np.shape

    def run():
        x = xad.tensor(x_np)
        cols = im2col(x, kernel, stride, dilation, pads, value)
        g = xad.tensor(rng.standard_normal(cols.shape))
        return cols.numpy(), col2im(g, shape, kernel, stride, dilation, pads).numpy()

    raw = xad.tensor(x_np)._array
    own = xb.im2col(raw, kernel, stride, dilation, pads, value)
    if own is not None:
        before = xb.to_numpy(raw)
        xb.set_at(own, ..., 7.0)
        np.testing.assert_array_equal(xb.to_numpy(raw), before)
    rng = np.random.default_rng(1)
    fast = run()
    monkeypatch.setattr(xb, "im2col", lambda *a: None)
    monkeypatch.setattr(xb, "col2im", lambda *a: None)
    rng = np.random.default_rng(1)
    ref = run()
    np.testing.assert_array_equal(fast[0], ref[0])
    np.testing.assert_allclose(fast[1], ref[1], rtol=1e-12, atol=1e-12)
    assert (own is not None) == (xb.name in ("numpy", "torch", "cupy", "cupy-sim"))
