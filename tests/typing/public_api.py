"""A user's program, checked by mypy (``bash ci/typecheck.sh``), never run by pytest.

Each ``assert_type`` says what an editor infers for a public name of xad, xad.nn and
xad.optim: a tensor stays a ``Tensor`` through functions, methods and operators, layers and
optimisers keep their classes and typed constructors (``nn.Linear(in_features: int, ...)``).
mypy also runs with ``disallow_untyped_calls``: calling a public function that has no
annotations fails the check. A wrong call below would be an error too, so the check
proves the signatures are precise enough to catch one (see the ``type: ignore`` lines).
"""

from __future__ import annotations

from typing import Any, assert_type

import xad
from xad import nn, optim

# tensors, creation, dtypes
x = xad.tensor([[1.0, 2.0]], requires_grad=True)
assert_type(x, xad.Tensor)
assert_type(xad.zeros(2, 3), xad.Tensor)
assert_type(xad.randn(4, 2, dtype=xad.float64), xad.Tensor)
assert_type(xad.rand(3, generator=xad.Generator().manual_seed(1)), xad.Tensor)
assert_type(xad.manual_seed(0), None)
assert_type(xad.float32, xad.DType)
assert_type(x.shape, tuple[int, ...])
assert_type(x.grad, xad.Tensor | None)
assert_type(x.item(), float | int)

# operations: functions (Array API names), methods, operators
assert_type(xad.exp(x), xad.Tensor)
assert_type(xad.sum(x, axis=0), xad.Tensor)
assert_type(xad.floor(x), xad.Tensor)
assert_type(xad.matmul(x, xad.ones(2, 1)), xad.Tensor)
assert_type(xad.reshape(x, (2, 1)), xad.Tensor)
assert_type(x.sum(), xad.Tensor)
assert_type(x + 1, xad.Tensor)
assert_type(x @ xad.ones(2, 1), xad.Tensor)
assert_type(x.detach(), xad.Tensor)
x.sum().backward(retain_graph=False)

# autograd and transforms
with xad.no_grad():
    pass
(g,) = xad.autograd.grad(x.sum(), [x], create_graph=True)
f = xad.grad(lambda t: (t * t).sum())
assert_type(xad.hessian(lambda t: (t * t).sum())(x), Any)

# layers, losses, optimisers, data
model = nn.Sequential(nn.Linear(2, 4, bias=True), nn.ReLU(), nn.Linear(4, 1))
assert_type(model, nn.Sequential)
lin = nn.Linear(in_features=2, out_features=3)
assert_type(lin.weight, nn.Parameter)
loss = nn.functional.mse_loss(model(x), xad.zeros(1, 1))
assert_type(loss, xad.Tensor)
assert_type(nn.MSELoss()(model(x), xad.zeros(1, 1)), Any)
opt = optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999))
assert_type(opt, optim.Adam)
opt.zero_grad()
opt.step()
sched = optim.lr_scheduler.StepLR(opt, step_size=10)
loader = xad.data.DataLoader(xad.data.TensorDataset(x, x), batch_size=1)
for batch in loader:
    assert_type(batch, Any)  # what collate_fn makes (tuples of tensors by default)
state = model.state_dict()
model.load_state_dict(state)

# what the signatures rule out (each line is an error without its ignore)
nn.Linear("2", 3)  # type: ignore[arg-type]
optim.SGD(model.parameters(), lr="fast")  # type: ignore[arg-type]
xad.tensor([1.0], requires_grad="yes")  # type: ignore[arg-type]
