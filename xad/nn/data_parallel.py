"""``DataParallel``: PyTorch's single-process wrapper, on the one device xad computes on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .module import Module

__all__ = ["DataParallel"]


class DataParallel(Module):
    """``module`` under PyTorch's ``nn.DataParallel`` name: the forward is the module's
    (PyTorch's on one device, or none), and the ``state_dict`` keys start with ``module.``
    as PyTorch's. Only ``device_ids`` of one device are taken: for several processes or
    GPUs, use :class:`xad.distributed.DataParallel` (PyTorch's ``DistributedDataParallel``).

    Example:
        >>> import xad
        >>> dp = xad.nn.DataParallel(xad.nn.Linear(2, 1))
        >>> dp(xad.ones(3, 2)).shape, sorted(dp.state_dict())
        ((3, 1), ['module.bias', 'module.weight'])
    """

    def __init__(self, module: Module, device_ids: Sequence[Any] | None = None,
                 output_device: Any = None, dim: int = 0) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel wraps an xad.nn.Module, got {type(module).__name__}")
        if device_ids is not None and len(device_ids) > 1:
            raise NotImplementedError(
                f"DataParallel(device_ids={list(device_ids)}): xad computes on one device "
                f"per process; run one process per GPU with xad.distributed.DataParallel")
        self.module, self.dim = module, dim
        self.device_ids = [] if device_ids is None else list(device_ids)
        self.output_device = output_device

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)
