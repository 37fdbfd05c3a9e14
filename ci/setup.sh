#!/usr/bin/env bash
# Create the virtual environment (default .venv) and install xad with everything the tests use.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
PY="${PYTHON:-python3}"
# Graphviz's `dot` renders xad.viz graphs (its tests need it): a Debian package.
if ! command -v dot >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  apt-get install -y -q graphviz >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q graphviz >/dev/null 2>&1; } \
    || echo "setup: could not install graphviz; the graph-rendering tests will skip"
fi
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
# torch is pinned to the CPU wheel this project tests against; jax installs a CPU build.
"$VENV/bin/python" -m pip install -q -e ".[test,examples,bench,fast,torch,jax,cupy,mpi,arrayapi,conformance]"
"$VENV/bin/python" -c "import xad; print('xad', xad.__version__, 'backends here:', xad.available_backends())"
