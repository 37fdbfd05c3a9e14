"""``skip_init``: a module made without its initial values mattering, and the weight
memory-format conversions, which have nothing to do on xad's layouts (as
``torch.nn.utils.init`` and ``torch.nn.utils.memory_format``)."""

from __future__ import annotations

from typing import Any

from .module import Module

__all__ = ["skip_init", "convert_conv2d_weight_memory_format",
           "convert_conv3d_weight_memory_format"]


def skip_init(module_cls: type, *args: Any, **kwargs: Any) -> Module:
    """``module_cls(*args, **kwargs)`` for a caller that will set every value itself
    (``torch.nn.utils.skip_init``). PyTorch leaves the memory uninitialised; xad draws the
    usual initial values (it has no uninitialised memory to offer), so the generator moves
    on as for a plain construction. ``device`` is accepted: ``"cpu"`` or ``None`` stays,
    anything else moves the module with ``.to(device)``.

    Example:
        >>> import xad
        >>> xad.nn.utils.skip_init(xad.nn.Linear, 3, 2).weight.shape
        (2, 3)
    """
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"skip_init: expected a Module class, got {module_cls!r}")
    device = kwargs.pop("device", None)
    module = module_cls(*args, **kwargs)
    return module if device is None or str(device) == "cpu" else module.to(device)


def convert_conv2d_weight_memory_format(module: Module, memory_format: Any) -> Module:
    """``module`` unchanged: PyTorch re-lays out its Conv2d weights in ``memory_format``
    (channels-last); xad's arrays have the backend's one layout, so there is nothing to do.

    Example:
        >>> import xad
        >>> m = xad.nn.Conv2d(1, 2, 3)
        >>> xad.nn.utils.convert_conv2d_weight_memory_format(m, None) is m
        True
    """
    return module


def convert_conv3d_weight_memory_format(module: Module, memory_format: Any) -> Module:
    """``module`` unchanged, as :func:`convert_conv2d_weight_memory_format` (Conv3d).

    Example:
        >>> import xad
        >>> m = xad.nn.Conv3d(1, 2, 3)
        >>> xad.nn.utils.convert_conv3d_weight_memory_format(m, None) is m
        True
    """
    return module
