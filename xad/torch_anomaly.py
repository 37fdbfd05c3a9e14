"""PyTorch's anomaly mode under ``xad.as_torch``: ``torch.autograd.detect_anomaly`` and
``set_detect_anomaly`` record each operation's line of user code and, with ``check_nan``
(the default), raise where a backward produces NaN (not Inf, and nothing in forward: a
``-inf`` attention mask stays legal), as PyTorch's. xad's own
:class:`xad.detect_anomaly` is stricter: NaN or Inf, forward and backward."""

from __future__ import annotations

from .context import context
from .utils.anomaly import detect_anomaly as _detect

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]


class detect_anomaly(_detect):
    """``with torch.autograd.detect_anomaly(check_nan=True):``, PyTorch's checks.

    Example:
        >>> import xad
        >>> from xad.torch_anomaly import detect_anomaly
        >>> x = xad.tensor([-1.0, 4.0], requires_grad=True)
        >>> with detect_anomaly():
        ...     y = xad.where(x > 0, x, -float("inf")).exp().sum()  # forward -inf: allowed
        ...     y.backward()
        >>> x.grad.tolist()
        [0.0, 54.598148345947266]
    """

    def __init__(self, check_nan: bool = True) -> None:
        super().__init__("nan" if check_nan else "trace")


class set_detect_anomaly:
    """Turn PyTorch's anomaly mode on or off now; as a context manager, until its end.

    Example:
        >>> from xad.torch_anomaly import set_detect_anomaly, is_anomaly_enabled
        >>> with set_detect_anomaly(True):
        ...     print(is_anomaly_enabled())
        True
        >>> is_anomaly_enabled()
        False
    """

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = context.anomaly
        context.anomaly = ("nan" if check_nan else "trace") if mode else False

    def __enter__(self) -> set_detect_anomaly:
        return self

    def __exit__(self, *exc: object) -> None:
        context.anomaly = self.prev


def is_anomaly_enabled() -> bool:
    """Whether an anomaly mode is on (``torch.is_anomaly_enabled``).

    Example:
        >>> from xad.torch_anomaly import is_anomaly_enabled
        >>> is_anomaly_enabled()
        False
    """
    return bool(context.anomaly)


def is_anomaly_check_nan_enabled() -> bool:
    """Whether the anomaly mode checks for NaN (``torch.is_anomaly_check_nan_enabled``).

    Example:
        >>> from xad.torch_anomaly import is_anomaly_check_nan_enabled
        >>> is_anomaly_check_nan_enabled()
        False
    """
    return context.anomaly in (True, "nan")
