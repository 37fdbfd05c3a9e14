#!/usr/bin/env bash
# The main job: set up and train the second seed text's ten-layer network on NumPy.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
PY="${PYTHON:-python3}"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q -e ".[examples]"
"$VENV/bin/python" examples/fit_nonlinear.py --backend numpy --plot fit.png "$@"
