"""Anomaly detection: find the first operation that makes NaN or Inf, forward or backward."""

from __future__ import annotations

import traceback
from typing import Any

from ..context import context
from ..graph import installed

__all__ = ["detect_anomaly", "AnomalyError"]


class AnomalyError(RuntimeError):
    """An operation produced NaN or Inf while anomaly detection was on."""


def _user_frame() -> str:
    """The innermost stack frame outside xad, as 'file:line in function: code'."""
    for fs in reversed(traceback.extract_stack()[:-1]):
        if "/xad/" not in fs.filename.replace("\\", "/"):
            return f"{fs.filename}:{fs.lineno} in {fs.name}: {fs.line}"
    return "<unknown>"


def _has_nonfinite(backend: Any, data: Any, nan_only: bool = False) -> bool:
    xp = backend.xp
    if not xp.isdtype(data.dtype, ("real floating", "complex floating")):
        return False
    bad = xp.isnan(data) if nan_only else xp.logical_not(xp.isfinite(data))
    # one explicit host read of a single boolean: anomaly mode is a debugging aid
    return bool(backend.item(xp.any(bad)))


def check_forward(node_name: str, backend: Any, data: Any, node: Any) -> None:
    """Called for each op result while detection is on; records where the op was made."""
    where = _user_frame()
    if node is not None:
        node.trace = where
    if context.anomaly is not True or not _has_nonfinite(backend, data):
        return  # PyTorch's modes check gradients only
    owner = context.backward_node
    if owner is not None:  # an operation inside a gradient rule
        raise AnomalyError(
            f"anomaly: the backward of {owner.name} produced NaN or Inf (in its {node_name} "
            f"step, shape {tuple(data.shape)}); the {owner.name} was created at "
            f"{owner.trace or '<unknown: created before detect_anomaly>'}")
    raise AnomalyError(f"anomaly: {node_name} produced NaN or Inf in its forward result "
                       f"(shape {tuple(data.shape)}), created at {where}")


def check_backward(node: Any, grads: tuple) -> None:
    """Called for each rule's gradients while detection is on."""
    mode = context.anomaly
    if mode == "trace":
        return
    for i, g in enumerate(grads):
        if g is None or not _has_nonfinite(node.backend, g._array, mode == "nan"):
            continue
        if mode == "nan":  # PyTorch's words
            raise AnomalyError(
                f"Function '{node.name}Backward' returned nan values in its {i}th output "
                f"(shape {tuple(g.shape)}); the operation was created at "
                f"{node.trace or '<unknown: created before detect_anomaly>'}")
        raise AnomalyError(
            f"anomaly: the backward of {node.name} produced NaN or Inf in the gradient of "
            f"its input {i} (shape {tuple(g.shape)}); the operation was created at "
            f"{node.trace or '<unknown: created before detect_anomaly>'}")


class detect_anomaly:
    """Raise at the first operation whose result or gradient holds NaN or Inf.

    Each operation's creating line of user code is recorded, so an error in backward names
    it. Slow: every result is checked with a host read. Use while debugging.

    Example:
        >>> import xad
        >>> x = xad.tensor([0.0], requires_grad=True)
        >>> with xad.detect_anomaly():
        ...     try:
        ...         xad.sqrt(x).sum().backward()
        ...     except xad.AnomalyError as e:
        ...         print("sqrt" in str(e))
        True
    """

    def __init__(self, enabled: bool | str = True) -> None:
        self.enabled = enabled  # (PyTorch's modes, xad.as_torch: "nan" or "trace")
        self._prev: list[bool | str] = []

    def __enter__(self) -> detect_anomaly:
        self._prev.append(context.anomaly)
        context.anomaly = self.enabled
        return self

    def __exit__(self, *exc: object) -> None:
        context.anomaly = self._prev.pop()


installed.check_forward = check_forward
installed.check_backward = check_backward
