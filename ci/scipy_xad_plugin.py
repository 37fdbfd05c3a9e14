"""A pytest plugin that adds xad to SciPy's array-API test backends (ci/scipy_suite.sh).

SciPy's ``scipy/conftest.py`` builds its ``xp`` fixture from ``xp_available_backends`` when it
is imported (with ``SCIPY_ARRAY_API`` set). Loaded with ``-p ci.scipy_xad_plugin`` (or with
``ci/`` on ``sys.path``), this plugin imports that conftest first, adds an ``xad`` entry
beside ``array_api_strict`` (xad on its NumPy backend, float64 as the default floating dtype,
as the conftest sets torch), keeps only the backends named in ``SCIPY_XAD_BACKENDS``
(default ``xad,array_api_strict``) and rebuilds the ``xp`` fixture over them. pytest then
reuses the patched module when it collects the conftest, so nothing in site-packages changes.
Test ids name the backend (``test_foo[xad]``, ``test_foo[array_api_strict]``).
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("SCIPY_ARRAY_API", "1")

import scipy.conftest as _sc  # noqa: E402  (after SCIPY_ARRAY_API is set)

import xad  # noqa: E402

xad.set_backend(os.environ.get("SCIPY_XAD_BACKEND", "numpy"))
xad.set_default_dtype("float64")

_sc.xp_known_backends.add("xad")
_wanted = os.environ.get("SCIPY_XAD_BACKENDS", "xad,array_api_strict").split(",")
_params = [p for p in _sc.xp_available_backends if p.id in _wanted]
if "xad" in _wanted:
    _params.append(pytest.param(xad, id="xad", marks=pytest.mark.array_api_backends))
_sc.xp_available_backends[:] = _params
_sc.xp = pytest.fixture(params=_params)(_sc.xp._get_wrapped_function())
