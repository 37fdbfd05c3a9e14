"""``torch.autograd.forward_ad`` (dual_level, make_dual, unpack_dual, enter/exit_dual_level)
under ``xad.as_torch``, against torch 2.13 in float64 on every backend: primals and tangents
through ordinary ops, reductions, matmul, ``nn.functional``, views, in-place changes,
``detach``, custom ``Function`` ``jvp`` rules, reverse mode over forward mode, and the
errors (it was missing: a PyTorch program using it stopped at an AttributeError)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from torch_compare import T, norm, same, torch
from torch_reference import skip_if_lacking

rng = np.random.default_rng(7)
DATA = {"x": rng.standard_normal((3, 4)), "tx": rng.standard_normal((3, 4)),
        "w": rng.standard_normal((4, 5)), "tw": rng.standard_normal((4, 5)),
        "v": rng.standard_normal(4), "tv": rng.standard_normal(4),
        "c": rng.standard_normal((3, 4)),
        "img": rng.standard_normal((2, 3, 5, 5)), "timg": rng.standard_normal((2, 3, 5, 5)),
        "k": rng.standard_normal((4, 3, 3, 3)), "tk": rng.standard_normal((4, 3, 3, 3))}
TOLS = {"float64": 1e-10}

# each case: statements (``out = ...``) run inside a dual level on the duals x (3, 4),
# w (4, 5), v (4,), img (2, 3, 5, 5), k (4, 3, 3, 3), the plain c (3, 4) and tx (x's tangent),
# with ``fw`` the forward_ad module; every tensor of ``out`` is unpacked (primal, tangent)
CASES = {
    # ordinary ops
    "elementwise": "out = x.sin() * x.exp() + x ** 2 / (1 + x.abs()) - t.tanh(x) * c",
    "more-elementwise": "out = (x.sigmoid().log1p(), x.clamp(-0.5, 0.5), x.relu(),"
                        " (x * x + 1).sqrt().reciprocal(), t.atan2(x, c), x.pow(3), 2 ** x)",
    "where-maximum": "out = (t.where(x > 0, x, c * x), t.maximum(x, c), x.abs().log())",
    "broadcast": "out = x * v - v.exp() / (x ** 2 + 1)",
    "integer-results": "out = (x.argmax(1), x > 0, x.sort(1))",
    "indexing": "out = (x.gather(1, t.tensor([[0, 1], [2, 3], [1, 1]])), x.masked_fill(c > 0, 2.0),"
                " x.index_select(1, t.tensor([3, 0])), t.zeros(3, 6, dtype=t.float64)"
                ".scatter_add(1, t.tensor([[0, 1, 1, 5]] * 3), x))",
    "orderings": "out = (x.cumprod(1), x.sort(1).values, x.topk(2, 1).values, x.flip(0),"
                 " x.roll(1, 1))",
    "numbers": "out = (t.where(x > 0, x, 0.0), x.clamp(min=0.1), x.lerp(c, 0.3), t.lerp(x, c, v),"
               " t.std_mean(x, 1), t.var_mean(x, 0), x.aminmax())",
    "complex": "z = t.complex(x, c)\nout = (z.abs(), (z * z).real, z.angle())",
    "reductions": "out = (x.sum(1), x.mean(), x.var(0), x.std(1), x.prod(1), x.norm(),"
                  " x.logsumexp(1), x.cumsum(1), x.amax(0))",
    "max-min-dim": "out = (x.max(1), x.min(0), x.median(1).values)",
    # matmul
    "matmul": "out = (x @ w, t.matmul(x, v), t.mm(x, w), t.einsum('ij,jk->ik', x, w),"
              " x @ x.T)",
    "contractions": "out = (t.einsum('ij,ij->i', x, c), t.outer(v, v),"
                    " t.kron(x[:2, :2], c[:2, :2]),"
                    " t.einsum('bchw,ochw->bo', img[:, :, :3, :3], k))",
    "decompositions": "a = x[:, :3] @ x[:, :3].T + 3 * t.eye(3, dtype=t.float64)\n"
                      "out = (t.linalg.cholesky(a), t.linalg.eigh(a).eigenvalues,"
                      " t.linalg.slogdet(a).logabsdet, t.linalg.matrix_norm(x),"
                      " t.linalg.svdvals(x), t.linalg.qr(x.T).R.abs())",
    "linalg": "a = x[:, :3] + 3 * t.eye(3, dtype=t.float64)\n"
              "out = (t.linalg.inv(a), t.linalg.det(a), t.linalg.solve(a, x))",
    # nn.functional
    "softmax": "out = (F.softmax(x, 1), F.log_softmax(x, 0), F.gelu(x), F.silu(x))",
    "layer-norm": "out = F.layer_norm(x, (4,), v, v.cos())",
    "linear": "out = F.linear(x, w.T, w[0])",
    "conv2d": "out = F.conv2d(img, k, padding=1, stride=2)",
    "conv1d": "out = F.conv1d(x.unsqueeze(0), w.T.reshape(5, 1, 4)[:, :, :3].expand(5, 3, 3))",
    "activations": "out = (F.elu(x), F.leaky_relu(x, 0.1), F.softplus(x), F.hardtanh(x), F.mish(x),"
                   " F.glu(x, 1), F.logsigmoid(x))",
    "more-losses": "out = (F.binary_cross_entropy_with_logits(x, c.sigmoid()),"
                   " F.smooth_l1_loss(x, c),"
                   " F.kl_div(x.log_softmax(1), c.softmax(1), reduction='batchmean'))",
    "attention": "q = x.reshape(1, 3, 4)\nout = F.scaled_dot_product_attention(q, q * 2, q.sin())",
    "embedding-pad": "out = (F.embedding(t.tensor([[0, 2], [3, 3]]), w), F.pad(x, (1, 2)),"
                     " F.interpolate(img, scale_factor=2, mode='bilinear'), F.normalize(x, dim=1))",
    "conv-transpose": "out = F.conv_transpose2d(img, k[:3], stride=2)",
    "module": "lin = t.nn.Linear(4, 5).double()\n"
              "out = t.func.functional_call(lin, {'weight': w.T, 'bias': w[0]}, (x,))",
    "pooling": "out = (F.max_pool2d(img, 2), F.avg_pool2d(img, 3, stride=1))",
    "cross-entropy": "out = (F.cross_entropy(x, t.tensor([0, 3, 1])),"
                     " F.cross_entropy(x, x.softmax(1)), F.mse_loss(x, c),"
                     " F.nll_loss(x.log_softmax(1), t.tensor([2, 0, 1]), reduction='sum'))",
    "batch-norm": "out = F.batch_norm(img, None, None, v[:3], v[1:], training=True)",
    # views: the tangent of a view is the view of the tangent
    "views": "out = (x[1:, ::2], x.T, x.reshape(2, 6), x.view(-1), x.unsqueeze(0).expand(2, 3, 4),"
             " x.transpose(0, 1), x.narrow(1, 1, 2), x.diagonal(), x[[0, 2]], x[x > 0])",
    "split-unbind": "out = (*x.split(3, 1), *x.unbind(0), t.cat([x, c]), t.stack([x, c], 2))",
    # in-place changes of a dual, and of a plain tensor receiving a dual
    "copy-into-plain": "q = t.zeros(3, 4, dtype=t.float64); q.copy_(x); out = q",
    "add-into-plain": "q = c.clone(); q.add_(x); out = q",
    "mul-into-plain": "q = c.clone(); q.mul_(x).sub_(v); out = q",
    "setitem-plain": "q = c.clone(); q[1] = x[0] * 2; q[:, 3] = 0; out = q",
    "view-of-plain": "q = c.clone(); q[:, 1:].mul_(0).add_(x[:, :3] * 3); out = q",
    "index-writes": "q = c.clone(); q[t.tensor([0, 2])] = x[1:]; q[c > 1] = 5.0; q[1].fill_(2.0)\n"
                    "r = x.clone(); r[:, 0] = v[:3]; r[2].zero_(); out = (q, r)",
    "dual-in-place": "y = x.clone(); y.mul_(2).sin_(); y[0] += v; out = y",
    "view-of-dual": "y = x.clone(); row = y[1]; row.mul_(v); out = (y, row)",
    "dual-of-plain-view": "y = c.clone(); y[1:].copy_(x[:2]); row = y[2]; row.exp_(); out = y",
    # a dual and its base (or a primal and its dual) keep their tangents apart
    "base-of-dual": "b = c.clone(); y = fw.make_dual(b, tx); b.add_(1); r = b[1]; r.mul_(v)\n"
                    "b.add_(x); out = (y, b)",
    "dual-of-a-view": "b = c.clone(); y = fw.make_dual(b[1:], tx[1:]); y.mul_(3); y[0].exp_()\n"
                      "out = (y, b, y.exp())",
    "primal-in-place": "y = x.clone(); p = fw.unpack_dual(y).primal; p.mul_(2); p[1].add_(v)\n"
                       "out = (y, p, y * p)",
    "dual-in-place-row": "y = fw.make_dual(c.clone(), tx); y[0].mul_(2); y[:, 1] = v[:3]\n"
                         "out = (y, y.sum(0))",
    # no tangent: detach, a plain tensor, a factory
    "detach": "d = x.detach(); out = (d, d * x, x.detach().sin(), x.data, x.data * x)",
    "not-dual": "out = (c, c * 2, t.ones(2, dtype=t.float64))",
    # torch.no_grad does not stop forward AD
    "no-grad": "with t.no_grad():\n    out = x * v",
}


def _duals(t, fw):
    """The tensors of DATA in ``t``'s module, made dual where they have a tangent."""
    env = {k: t.tensor(a, dtype=t.float64) for k, a in DATA.items()}
    for k in ("x", "w", "v", "img", "k"):
        env[k] = fw.make_dual(env[k], env["t" + k])
    return env


def _tensors(r):
    if isinstance(r, (tuple, list)):
        return [u for e in r for u in _tensors(e)]
    return [r] if isinstance(r, (T.Tensor, torch.Tensor)) else []


def _run(t, body):
    fw = t.autograd.forward_ad
    with fw.dual_level():
        env = {"t": t, "F": t.nn.functional, "fw": fw, **_duals(t, fw)}
        exec(body, env)
        return norm([tuple(fw.unpack_dual(o)) for o in _tensors(env["out"])])


@pytest.mark.parametrize("name", list(CASES))
def test_forward_ad_matches_torch(xb, name):
    ours = _run(T, CASES[name])
    try:
        theirs = _run(torch, CASES[name])
    except NotImplementedError as e:  # (an older torch: aminmax's forward AD)
        skip_if_lacking(e)
    assert same(ours, theirs, TOLS), (ours, theirs)


def _grads(t):
    """Reverse mode over forward mode: gradients of a tangent and of a primal."""
    fw = t.autograd.forward_ad
    x = t.tensor(DATA["x"], dtype=t.float64, requires_grad=True)
    tx = t.tensor(DATA["tx"], dtype=t.float64, requires_grad=True)
    w = t.tensor(DATA["w"], dtype=t.float64, requires_grad=True)
    with fw.dual_level():
        d = fw.make_dual(x, tx)
        out = (d.sin() @ w).tanh() * d.exp().sum(1, keepdim=True)
        primal, tangent = fw.unpack_dual(out)
        first = t.autograd.grad((tangent * primal).sum(), (x, tx, w), retain_graph=True)
        again = t.autograd.grad(tangent.pow(2).sum(), (x, tx, w), create_graph=True)
        (second,) = t.autograd.grad(again[0].sum(), tx)
        primal.sum().backward()
    return [fw.unpack_dual(g).primal.detach() for g in (*first, *again, second, w.grad)]


def test_reverse_over_forward_matches_torch(xb):
    assert same(norm(_grads(T)), norm(_grads(torch)), TOLS)


def _functions(t):
    class Mul(t.autograd.Function):  # two outputs, a number argument, save_for_forward
        @staticmethod
        def forward(ctx, a, b, k):
            ctx.save_for_backward(a, b)
            ctx.save_for_forward(a, b)
            ctx.k = k
            return a * b * k, a + b.exp()

        @staticmethod
        def jvp(ctx, ta, tb, tk):
            a, b = ctx.saved_tensors
            return (ta * b + a * tb) * ctx.k, ta + b.exp() * tb

        @staticmethod
        def backward(ctx, g, h):
            a, b = ctx.saved_tensors
            return g * b * ctx.k + h, g * a * ctx.k + h * b.exp(), None

    class Straight(t.autograd.Function):  # a jvp that is not forward's derivative
        @staticmethod
        def forward(ctx, a):
            return a.round()

        @staticmethod
        def jvp(ctx, ta):
            return ta * 1.5

        @staticmethod
        def backward(ctx, g):
            return g * 1.5
    return Mul, Straight


def _custom(t):
    fw = t.autograd.forward_ad
    Mul, Straight = _functions(t)
    x0 = t.tensor(DATA["x"], dtype=t.float64, requires_grad=True)
    c = t.tensor(DATA["c"], dtype=t.float64)
    with fw.dual_level():
        x = fw.make_dual(x0, t.tensor(DATA["tx"], dtype=t.float64))
        outs = (*Mul.apply(x, c, 2.0), *Mul.apply(c, x.sin(), 0.5), Straight.apply(x * 3))
        res = [tuple(fw.unpack_dual(o)) for o in outs]
        (g,) = t.autograd.grad(res[-1][1].sum() + res[0][1].sum(), x0)
    return norm([res, g.detach()])


def test_custom_function_jvp_matches_torch(xb):
    assert same(_custom(T), _custom(torch), TOLS)


def test_custom_function_without_jvp_is_differentiated_through_forward(xb):
    """PyTorch refuses a custom Function without ``jvp`` in forward AD; xad differentiates
    its ``forward`` (written in xad operations), as ``xad.jvp`` does (docs/PORTING.md)."""
    tangents = {}
    for t in (T, torch):
        class Cube(t.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a ** 3

            @staticmethod
            def backward(ctx, g):
                return g * 3
        fw = t.autograd.forward_ad
        with fw.dual_level():
            x = fw.make_dual(t.tensor([2.0], dtype=t.float64), t.tensor([1.0], dtype=t.float64))
            try:
                tangents[t] = fw.unpack_dual(Cube.apply(x)).tangent.tolist()
            except NotImplementedError as e:
                tangents[t] = str(e)
    assert tangents[T] == [12.0]
    assert "You must implement the jvp function" in tangents[torch]


def _leave(t):
    fw = t.autograd.forward_ad
    x = t.tensor(DATA["x"], dtype=t.float64)
    level = fw.enter_dual_level()
    y = fw.make_dual(x, t.tensor(DATA["tx"], dtype=t.float64)).exp()
    inside = fw.unpack_dual(y).tangent
    fw.exit_dual_level(level=level)
    after = fw.unpack_dual(y)

    @fw.dual_level()
    def again():  # a new level: the old dual has no tangent there
        return fw.unpack_dual(y).tangent, fw.unpack_dual(fw.make_dual(x, x) * 2).tangent
    return norm([level, inside, after.primal is y, after.tangent, *again()])


def test_leaving_the_level_drops_the_tangents(xb):
    assert same(_leave(T), _leave(torch), TOLS)


def _f64(t, *shape):
    return t.ones(*shape, dtype=t.float64)


# (what it does, whether torch's message is in ours; None: neither raises)
ERRORS = [
    ("fw.make_dual(_f64(t, 3), _f64(t, 3))", True),  # outside a level
    ("fw.exit_dual_level()", True),
    ("with fw.dual_level():\n    fw.make_dual(_f64(t, 3), _f64(t, 4))", True),
    ("with fw.dual_level():\n    fw.make_dual(_f64(t, 3, 2), _f64(t, 2))", True),
    ("with fw.dual_level():\n    fw.make_dual(t.ones(2, dtype=t.int64), _f64(t, 2))", False),
    ("with fw.dual_level():\n    fw.make_dual(_f64(t, 2), t.ones(2, dtype=t.int64))", False),
    ("with fw.dual_level():\n    d = fw.make_dual(_f64(t, 2), _f64(t, 2))\n"
     "    fw.make_dual(d, _f64(t, 2))", True),
    ("with fw.dual_level():\n    d = fw.make_dual(_f64(t, 2), _f64(t, 2))\n"
     "    fw.make_dual(_f64(t, 2), d)", False),  # (torch's says "level0")
    ("with fw.dual_level():\n    fw.make_dual(_f64(t, 2), _f64(t, 2), level=1)", False),
    ("with fw.dual_level():\n    fw.unpack_dual(fw.make_dual(_f64(t, 2), _f64(t, 2)), level=2)",
     False),
    ("with fw.dual_level():\n    fw.unpack_dual(_f64(t, 2), level=2)", None),
    ("fw.unpack_dual(_f64(t, 2), level=0)", None),
    ("with fw.dual_level():\n    fw.unpack_dual(3.0)", False),
    ("with fw.dual_level():\n    with fw.dual_level():\n        pass", True),  # nested
    ("with fw.dual_level():\n    fw.enter_dual_level()", True),
    ("with fw.dual_level():\n    fw.exit_dual_level(level=3)", True),
]


def _error(t, body):
    try:
        exec(body, {"t": t, "fw": t.autograd.forward_ad, "_f64": _f64})
    except Exception as e:
        return type(e), re.sub(r"\s", "", str(e))
    return None, ""


@pytest.mark.parametrize("body,worded", ERRORS)
def test_errors_match_torch(xb, body, worded):
    (ours, said), (theirs, meant) = _error(T, body), _error(torch, body)
    assert ours is theirs and (ours is None) == (worded is None), (said, meant)
    assert not worded or meant in said, (said, meant)


def test_a_tangent_of_another_dtype_raises(xb):
    """PyTorch keeps a float32 tangent of a float64 primal, and its ops then give float32
    or float64 tangents, or refuse (``dot``), op by op; xad refuses it at ``make_dual``
    (docs/PORTING.md)."""
    fw = T.autograd.forward_ad
    with fw.dual_level():
        with pytest.raises(ValueError, match=r"make_dual: the tangent \(xad.float32 on .*\) must "
                                             r"have the primal's dtype and device"):
            fw.make_dual(_f64(T, 3), T.ones(3, dtype=T.float32))


def test_import_under_install():
    """``import torch.autograd.forward_ad as fwAD`` in a script run on xad."""
    from xad import as_torch
    as_torch.install()
    try:
        exec("import torch.autograd.forward_ad as fwAD\nfrom torch.autograd import forward_ad",
             ns := {})
    finally:
        as_torch.uninstall()
    fw = ns["fwAD"]
    assert fw is ns["forward_ad"] and fw.make_dual is T.autograd.forward_ad.make_dual


def _func_jvp(t):
    """torch.func.jvp of a Function with its own ``jvp`` (PyTorch 2's form, as torch.func
    requires): the rule is used, not forward's derivative (round has none)."""
    class Straight(t.autograd.Function):
        @staticmethod
        def forward(a, k):
            return a.round() * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_forward(inputs[0])
            ctx.k = inputs[1]

        @staticmethod
        def jvp(ctx, ta, tk):
            (a,) = ctx.saved_tensors
            return ta * ctx.k * a.cos()

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None
    x = t.tensor(DATA["v"], dtype=t.float64)
    out = t.func.jvp(lambda a: Straight.apply(a.exp(), 1.5).sin(), (x,),
                     (t.tensor(DATA["tv"], dtype=t.float64),))
    return norm(out)


def test_torch_func_jvp_uses_a_function_jvp(xb):
    """The rule was ignored: xad.jvp differentiated forward, and refused this one (round
    has no tangent); ``ctx.save_for_forward`` was missing."""
    assert same(_func_jvp(T), _func_jvp(torch), TOLS)


def _softmax_twice(t):
    """A gradient of a softmax's tangent, as torch.func computes it."""
    x = t.tensor(DATA["x"], dtype=t.float64)

    def tangent_norm(a, ta):
        _, tan = t.func.jvp(lambda z: t.nn.functional.softmax(z.sin(), 1), (a,), (ta,))
        return tan.pow(2).sum()
    if t is torch:
        return norm(t.func.grad(tangent_norm, argnums=(0, 1))(x, x.cos()))
    fw, x.requires_grad = t.autograd.forward_ad, True
    tx = x.detach().cos().requires_grad_()
    with fw.dual_level():
        tan = fw.unpack_dual(t.nn.functional.softmax(fw.make_dual(x, tx).sin(), 1)).tangent
        return norm(t.autograd.grad(tan.pow(2).sum(), (x, tx)))


def test_reverse_over_forward_through_softmax(xb):
    """torch 2.13's forward_ad raises here (its softmax tangent is changed in place: "one
    of the variables needed for gradient computation has been modified by an inplace
    operation"); xad gives torch.func's numbers."""
    assert same(_softmax_twice(T), _softmax_twice(torch), TOLS)


def test_custom_function_returning_its_input(xb):
    """torch 2.13 refuses a ``jvp`` whose Function returns an input as is ("the jvp is not
    returning a view"); xad gives the output the rule's tangent and the input keeps its
    own (docs/PORTING.md)."""
    class Same(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a

        @staticmethod
        def jvp(ctx, ta):
            return ta * 3
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(_f64(T, 2), _f64(T, 2))
        y = Same.apply(x)
        got = [fw.unpack_dual(u).tangent.tolist() for u in (y, x, y * 2)]
    assert got == [[3.0, 3.0], [1.0, 1.0], [6.0, 6.0]]


def _nested(t):
    """Tangents of tangents: ``torch.func.jvp`` inside a dual level (xad), or nested in
    another ``torch.func.jvp`` (torch 2.13 refuses the first: "Nested forward mode AD")."""
    x, tx, v = (t.tensor(DATA[k], dtype=t.float64) for k in ("x", "tx", "c"))

    def f(a):
        return t.func.jvp(lambda z: z.sin() * z.exp().sum(0), (a,), (v,))
    if t is torch:
        return norm(t.func.jvp(f, (x,), (tx,)))
    fw = t.autograd.forward_ad
    with fw.dual_level():
        outs = f(fw.make_dual(x, tx))
        return norm(tuple(tuple(fw.unpack_dual(o)[i] for o in outs) for i in (0, 1)))


def test_torch_func_jvp_inside_a_dual_level(xb):
    assert same(_nested(T), _nested(torch), TOLS)
