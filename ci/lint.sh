#!/usr/bin/env bash
# ruff over the whole tree (its banned-import rule keeps numpy/cupy/torch/jax out of xad/),
# then import-linter: xad's modules import only downward (the layers in pyproject.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
"$VENV/bin/ruff" check .
echo "ruff: clean"
"$VENV/bin/lint-imports"
