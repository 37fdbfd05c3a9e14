#!/usr/bin/env bash
# The test job: set up, lint, the wheel check, then the test matrix (every numerical test
# runs once per backend; pytest prints the counts per backend at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
export VENV="${VENV:-.venv}"
bash ci/setup.sh
bash ci/lint.sh
bash ci/wheel.sh
"$VENV/bin/python" -m pytest -p no:cacheprovider -n auto tests --doctest-modules xad "$@"
