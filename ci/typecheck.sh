#!/usr/bin/env bash
# Type-check xad's public API with mypy (config: [tool.mypy] in pyproject.toml):
#  1. tests/typing/public_api.py, a user's program with assert_type on tensors, operations,
#     layers, optimisers and data (xad's modules followed silently: internals not reported);
#  2. ci/typecheck_public.py: no public name of the documented modules is Any or untyped;
#  3. `mypy xad`, the internals: clean everywhere (xad/ops/ and xad/nn/functional/ since
#     the mypy-ops branch, 2026-11-26);
#  4. `mypy backends`, the adapters shipped as xad_backends: clean too (since 2026-11-26).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
"$VENV/bin/python" -c "import mypy" 2>/dev/null || "$VENV/bin/python" -m pip install -q mypy
"$VENV/bin/python" -m mypy --no-incremental
"$VENV/bin/python" ci/typecheck_public.py
if ! "$VENV/bin/python" -m mypy --no-incremental xad; then
    echo "typecheck: mypy errors in xad's internals (above)"
    exit 1
fi
echo "typecheck: xad's internals clean"
if ! "$VENV/bin/python" -m mypy --no-incremental backends; then
    echo "typecheck: mypy errors in backends/ (above)"
    exit 1
fi
echo "typecheck: backends/ clean"
