#!/usr/bin/env bash
# Create the virtual environment (default .venv) and install xad with everything the tests use.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
PY="${PYTHON:-python3}"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
# torch is pinned to the CPU wheel this project tests against; jax installs a CPU build.
"$VENV/bin/python" -m pip install -q -e ".[test,examples,bench,torch,jax,cupy]"
"$VENV/bin/python" -c "import xad; print('xad', xad.__version__, 'backends here:', xad.available_backends())"
