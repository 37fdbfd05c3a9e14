#!/usr/bin/env bash
# Run the benchmarks: bash bench/run.sh [--only NAME[,NAME]] [--repeat N] [--quick] [--json PATH]
# This machine sets OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, which halve NumPy's matrix
# products; they are unset here, for this command only.
# Python: $PYTHON, else the active virtualenv's, else the repository's .venv (ci/setup.sh),
# else ../venv next to the repository, else python3.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${PYTHON:-}"
if [[ -z "$py" && -n "${VIRTUAL_ENV:-}" ]]; then py="$VIRTUAL_ENV/bin/python"; fi
if [[ -z "$py" && -x "$root/.venv/bin/python" ]]; then py="$root/.venv/bin/python"; fi
if [[ -z "$py" && -x "$root/../venv/bin/python" ]]; then py="$root/../venv/bin/python"; fi
py="${py:-python3}"
cd "$root"
exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$py" bench/run.py "$@"
