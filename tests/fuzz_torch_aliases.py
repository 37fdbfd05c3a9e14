"""Fuzz cases for tests/test_torch_subset_fuzz.py: torch-level names that xad computes under
other names (in-place function forms, ``*_copy`` functions, the layers' functions at the top
level with PyTorch's positional signatures and integer codes, tensor methods), each case
``(m, g) -> result`` run on xad's ``torch`` and on PyTorch's."""

from __future__ import annotations

_UNIT = ("abs_ acos_ arccos_ arcsin_ arctan_ arctanh_ asin_ asinh_ atan_ atanh_ ceil_ cos_ "
         "cosh_ deg2rad_ erf_ erfc_ exp2_ exp_ expm1_ fix_ floor_ frac_ i0_ log10_ log1p_ "
         "log2_ log_ logit_ nan_to_num_ neg_ negative_ rad2deg_ reciprocal_ relu_ round_ "
         "rsqrt_ sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ tan_ tanh_ trunc_ zero_ detach_ "
         "conj_physical_ selu_ celu_ rrelu_").split()


def _inplace() -> dict:
    cases = {}
    for n in _UNIT:  # torch.f_(x): x changed, and returned
        cases[f"torch.{n}(x)"] = lambda m, g, n=n: (lambda x: [getattr(m, n)(x), x])(
            g.f(dtype="float64", lo=0.1, hi=0.9))
    cases["torch.acosh_, arccosh_, clamp_, clip_, clamp_min_, clamp_max_, fill_"] = \
        lambda m, g: [m.acosh_(g.f(lo=1.1, hi=3.0)), m.arccosh_(g.f(lo=1.1, hi=3.0)),
                      m.clamp_(g.f(), -0.5, 0.5), m.clip_(g.f(), min=0.0),
                      m.clamp_min_(g.f(), 0.1), m.clamp_max_(g.f(), 0.1), m.fill_(g.f(), 2.5)]
    cases["torch.gcd_, lcm_, ldexp_, xlogy_, addmv_, resize_as_"] = lambda m, g: [
        m.gcd_(g.i(lo=1), g.i(lo=1)), m.lcm_(g.i(lo=1), g.i(lo=1)),
        m.ldexp_(g.f(dtype="float64"), g.i(lo=-2, hi=3)),
        m.xlogy_(g.f(dtype="float64"), g.f(dtype="float64", lo=0.1)),
        m.addmv_(g.f((3,), dtype="float64"), g.f((3, 4), dtype="float64"),
                 g.f((4,), dtype="float64"), beta=0.5, alpha=2),
        (lambda x: m.resize_as_(x, x.clone()))(g.f())]
    cases["torch.selu_, celu_, threshold_, rrelu, dropout_, alpha_dropout_, feature_dropout, "
          "feature_dropout_ (train=False)"] = \
        lambda m, g: [m.selu_(g.f()), m.celu_(g.f(), 0.5), m.threshold_(g.f(), 0.1, -3.0),
                      m.threshold(g.f(), 0.2, 9.0), m.rrelu(g.f()), m.hardshrink(g.f(), 0.7),
                      m.dropout_(g.f(), 0.3, False), m.alpha_dropout(g.f(), 0.3, False),
                      m.alpha_dropout_(g.f(), 0.3, False), m.feature_dropout(g.f(), 0.3, False),
                      m.feature_dropout_(g.f((2, 3, 4)), 0.3, False)]
    cases["torch.detach, conj_physical, resolve_conj, resolve_neg, is_conj, is_neg, "
          "is_inference"] = lambda m, g: [
        m.detach(g.f()), m.conj_physical(g.f()), m.resolve_conj(g.f()), m.resolve_neg(g.f()),
        m.is_conj(g.f()), m.is_neg(g.f()), m.is_inference(g.f())]
    return cases


def _copies() -> dict:
    def x(g):
        return g.f((2, 3, 4), dtype="float64")
    return {
        "view_copy, permute_copy, transpose_copy, expand_copy, diagonal_copy, select_copy":
            lambda m, g: [m.view_copy(x(g), (6, 4)), m.permute_copy(x(g), (2, 0, 1)),
                          m.transpose_copy(x(g), 0, 2), m.expand_copy(g.f((3, 1)), (2, 3, 4)),
                          m.diagonal_copy(x(g), 1, 1, 2), m.select_copy(x(g), 1, -1)],
        "slice_copy, squeeze_copy, unsqueeze_copy, t_copy, unbind_copy, unfold_copy":
            lambda m, g: [m.slice_copy(x(g), 2, 1, None, 2), m.slice_copy(x(g)),
                          m.squeeze_copy(g.f((2, 1, 3)), 1), m.squeeze_copy(g.f((1, 3))),
                          m.unsqueeze_copy(x(g), -1), m.t_copy(g.f((2, 3))),
                          list(m.unbind_copy(x(g), 1)), m.unfold_copy(x(g), 2, 2, 1)],
        "narrow_copy, split_with_sizes_copy, alias_copy, detach_copy, as_strided_copy":
            lambda m, g: [m.narrow_copy(x(g), 1, 1, 2), x(g).narrow_copy(2, 0, 3),
                          list(m.split_with_sizes_copy(x(g), [1, 3], 2)),
                          m.alias_copy(x(g)), m.detach_copy(x(g)),
                          m.as_strided_copy(x(g), (3, 2), (2, 5), 1)],
        "view_as_real_copy, view_as_complex_copy": lambda m, g: [
            m.view_as_real_copy(m.complex(g.f(), g.f())),
            m.view_as_complex_copy(g.f((3, 2), dtype="float64"))],
    }


def _layers() -> dict:
    def f(g, shape):
        return g.f(shape, dtype="float64")
    return {
        "torch.conv3d, conv_transpose1d, conv_transpose3d, convolution, conv_tbc":
            lambda m, g: [m.conv3d(f(g, (1, 2, 3, 4, 4)), f(g, (3, 2, 2, 2, 2)), None, 1, 1),
                          m.conv_transpose1d(f(g, (1, 2, 5)), f(g, (2, 3, 3)), f(g, (3,)), 2),
                          m.conv_transpose3d(f(g, (1, 2, 2, 3, 3)), f(g, (2, 1, 2, 2, 2))),
                          m.convolution(f(g, (1, 2, 5, 5)), f(g, (3, 2, 3, 3)), f(g, (3,)),
                                        [1, 2], [1, 0], [1, 1], False, [0, 0], 1),
                          m.convolution(f(g, (1, 2, 5)), f(g, (2, 3, 2)), None, [2], [1],
                                        [1], True, [1], 1),
                          m.conv_tbc(f(g, (5, 2, 3)), f(g, (3, 3, 4)), f(g, (4,)), 1)],
        "torch.embedding, embedding_renorm_, batch_norm, instance_norm, rms_norm":
            lambda m, g: [m.embedding(f(g, (5, 3)), g.idx((2, 3), 5)),
                          m.embedding(f(g, (5, 3)), g.idx((4,), 5), 1),
                          m.embedding_renorm_(f(g, (5, 3)), g.idx((4,), 5), 0.5, 2.0),
                          m.batch_norm(f(g, (4, 3)), f(g, (3,)), f(g, (3,)), None, None, True,
                                       0.1, 1e-5, False),
                          m.instance_norm(f(g, (2, 3, 5)), None, None, None, None, True, 0.1,
                                          1e-5, False),
                          m.rms_norm(f(g, (2, 4)), [4], f(g, (4,)))],
        "torch.constant_pad_nd, channel_shuffle, max_pool1d_with_indices, max_pool3d":
            lambda m, g: [m.constant_pad_nd(f(g, (2, 3)), [1, 2, 0, 1], 0.5),
                          m.channel_shuffle(f(g, (1, 4, 2)), 2),
                          list(m.max_pool1d_with_indices(f(g, (1, 2, 6)), 2)),
                          m.max_pool3d(f(g, (1, 1, 4, 4, 4)), 2)],
        "torch.affine_grid_generator, grid_sampler, grid_sampler_2d, grid_sampler_3d":
            lambda m, g: [m.affine_grid_generator(f(g, (1, 2, 3)), [1, 1, 3, 4], False),
                          m.grid_sampler(f(g, (1, 2, 3, 4)), f(g, (1, 2, 2, 2)), 0, 1, True),
                          m.grid_sampler_2d(f(g, (1, 1, 3, 3)), f(g, (1, 2, 2, 2)), 1, 0,
                                            False),
                          m.grid_sampler_3d(f(g, (1, 1, 2, 3, 3)), f(g, (1, 2, 2, 2, 3)), 0,
                                            2, False)],
        "torch.binary_cross_entropy_with_logits, cosine_embedding_loss, kl_div, "
        "hinge_embedding_loss, margin_ranking_loss, poisson_nll_loss, triplet_margin_loss":
            lambda m, g: [m.binary_cross_entropy_with_logits(f(g, (3, 2)), g.f((3, 2), dtype="float64", lo=0, hi=1), None, f(g, (2,)), 2),  # noqa: E501
                          m.cosine_embedding_loss(f(g, (3, 4)), f(g, (3, 4)),
                                                  m.tensor([1.0, -1.0, 1.0], dtype=m.float64),
                                                  0.1, 0),
                          m.kl_div(f(g, (3, 4)), f(g, (3, 4)), 1, log_target=True),
                          m.kl_div(f(g, (3, 4)), g.f((3, 4), dtype="float64", lo=0.1), 2),
                          m.hinge_embedding_loss(f(g, (4,)), m.tensor([1.0, -1, -1, 1],
                                                                      dtype=m.float64), 0.5, 2),
                          m.margin_ranking_loss(f(g, (4,)), f(g, (4,)), m.tensor(
                              [1.0, -1, -1, 1], dtype=m.float64), 0.2, 1),
                          m.poisson_nll_loss(f(g, (3,)), g.f((3,), dtype="float64", lo=0),
                                             True, True, 1e-8, 0),
                          m.triplet_margin_loss(f(g, (3, 4)), f(g, (3, 4)), f(g, (3, 4)), 1.0,
                                                2.0, 1e-6, True, 1)],
        "torch.ctc_loss(reduction code)": lambda m, g: [
            m.ctc_loss(m.log_softmax(f(g, (6, 2, 4)), 2), g.idx((2, 3), 3) + 1, [6, 5], [3, 2],
                       0, r) for r in (0, 1, 2)],
        "torch.gru_cell, lstm_cell, rnn_tanh_cell, rnn_relu_cell, norm_except_dim":
            lambda m, g: [m.gru_cell(f(g, (2, 3)), f(g, (2, 4)), f(g, (12, 3)), f(g, (12, 4)),
                                     f(g, (12,)), f(g, (12,))),
                          list(m.lstm_cell(f(g, (2, 3)), [f(g, (2, 4)), f(g, (2, 4))],
                                           f(g, (16, 3)), f(g, (16, 4)))),
                          m.rnn_tanh_cell(f(g, (2, 3)), f(g, (2, 4)), f(g, (4, 3)),
                                          f(g, (4, 4)), f(g, (4,))),
                          m.rnn_relu_cell(f(g, (2, 3)), f(g, (2, 4)), f(g, (4, 3)),
                                          f(g, (4, 4)), None, f(g, (4,))),
                          m.norm_except_dim(f(g, (3, 4, 2)), 2, 1),
                          m.norm_except_dim(f(g, (3, 4)), 3, -1),
                          m.norm_except_dim(f(g, (3, 4)))],
    }


def _more() -> dict:
    return {
        "concatenate, row_stack, rsub, fill, empty_strided, empty_permuted, typename":
            lambda m, g: [m.concatenate([g.f(), g.f()], 1), m.row_stack([g.f((3,)), g.f((3,))]),
                          m.rsub(g.f(), g.f(), alpha=2), m.rsub(g.f(), 1.5),
                          m.rsub(g.i(), g.i(), alpha=3), m.fill(g.f(), 2.0),
                          m.fill(g.i(), m.tensor(3)), m.empty_strided((2, 3), (3, 1)).shape,
                          m.empty_permuted((2, 3, 4), (0, 2, 1)).dtype,
                          m.typename(g.f()), m.typename(g.i()), m.typename(3)],
        "x.squeeze_, unsqueeze_, t_, transpose_, swapaxes_, swapdims_": lambda m, g: [
            (lambda x: [x.squeeze_(), x])(g.f((3, 1)) * 1), g.f((3, 1)).squeeze_(0),
            g.f((1, 3, 1)).squeeze_((0, 2)), g.f((2, 3)).unsqueeze_(1), g.f((2, 3)).t_(),
            g.f((2, 3, 4)).transpose_(0, 2), g.f((2, 3)).swapaxes_(0, 1),
            g.f((2, 3)).swapdims_(1, 0)],
        "x.t_ of 3 dimensions (both refuse)": lambda m, g: g.f((2, 3, 4)).t_(),
        "x.resize to another number of elements (both refuse)": lambda m, g: g.f().resize(4),
        "x.resize, resize_as, new, new_empty_strided, prelu, hardshrink": lambda m, g: [
            g.f((2, 3)).resize(3, 2), g.f((2, 3)).resize_as(g.f((6,))),
            g.f((2, 3)).new(4, 2).shape, g.f((2, 3)).new([1, 2]),
            g.f((2, 3)).new(), (lambda e: [e.shape, e.dtype])(
                g.f((2, 3), dtype="float64").new_empty_strided((2, 2), (2, 1))),
            g.f((2, 3)).prelu(g.f((3,))), g.f().hardshrink(), g.f().hardshrink(0.9)],
        "x.unsafe_chunk, unsafe_split, unsafe_split_with_sizes, as_strided_scatter":
            lambda m, g: [list(m.unsafe_chunk(g.f((4, 3)), 2)), list(g.f((4, 3)).unsafe_chunk(
                3, 1)), list(m.unsafe_split(g.f((5, 2)), 2)), list(g.f((5, 2)).unsafe_split(1, 1)),
                list(m.unsafe_split_with_sizes(g.f((5, 2)), [2, 3])),
                list(g.f((5, 2)).unsafe_split_with_sizes([1, 1], 1)),
                g.f((3, 4)).as_strided_scatter(g.f((2, 2)), (2, 2), (4, 1), 1)],
    }


def cases() -> dict:
    return {**_inplace(), **_copies(), **_layers(), **_more()}
