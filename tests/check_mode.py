"""Whether the tests run under ``XAD_COMPILE_CHECK=1`` (every compiled call also runs
eagerly beside its replay and is compared, raising at the first difference): what a test
counts of a replay (recordings, kernels, CUDA graphs, pool allocations) is then eager
mode's, by design, so those counts are asserted only outside check mode; the values still
are. The compile fuzzer runs its programs under check mode in every run
(tests/test_compile_fuzz.py); ``XAD_COMPILE_CHECK=1 pytest tests/test_compile*.py`` runs
the whole compile suite so (about 5 minutes on 2 cores)."""

from __future__ import annotations

import os

import pytest

CHECK_MODE = os.environ.get("XAD_COMPILE_CHECK") == "1"


def skip_in_check_mode(reason: str) -> pytest.MarkDecorator:
    """Skip a test only under ``XAD_COMPILE_CHECK=1``, saying why."""
    return pytest.mark.skipif(CHECK_MODE, reason=f"XAD_COMPILE_CHECK=1: {reason}")
