"""PyTorch as the tests' reference. CI pins torch 2.13; a GPU machine's image brings its own
(2.11 on 2026-11-28), which lacks derivatives 2.13 has (``grid_sampler_2d_backward``'s,
``narrow_copy``'s, ``aminmax``'s forward AD) and dies of SIGFPE in ``arange`` with an integer
dtype whose step truncates to 0, where 2.13 raises."""

from __future__ import annotations

import pytest
import torch

__all__ = ["OLDER", "lacks", "skip_if_lacking"]

OLDER = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) < (2, 13)


def lacks(error: BaseException) -> bool:
    """Whether ``error`` is an older torch missing what 2.13 has (never under 2.13)."""
    text = str(error)
    return OLDER and ("is not implemented" in text or "does not support it" in text)


def skip_if_lacking(error: BaseException) -> None:
    """Skip the test where the reference, an older torch, lacks what the test compares;
    re-raise anything else."""
    if not lacks(error):
        raise error
    pytest.skip(f"the reference torch {torch.__version__} lacks it (2.13 has it): {error}")
