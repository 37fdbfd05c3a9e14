"""Mixed precision: :class:`autocast` (which operations compute in float16/bfloat16) and
:class:`GradScaler` (loss scaling, so small float16 gradients do not flush to zero).

Example:
    >>> import xad
    >>> model = xad.nn.Linear(3, 1)
    >>> opt = xad.optim.SGD(model.parameters(), lr=0.1)
    >>> scaler = xad.amp.GradScaler(init_scale=1024.0)
    >>> with xad.amp.autocast(xad.float16):
    ...     loss = model(xad.ones(4, 3)).mean()
    >>> scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
    >>> model.weight.grad.dtype     # parameters and their gradients stay float32
    xad.float32
"""

from .autocast import autocast, get_autocast_dtype, is_autocast_enabled
from .grad_scaler import GradScaler

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "GradScaler"]
