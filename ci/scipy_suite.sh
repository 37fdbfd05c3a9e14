#!/usr/bin/env bash
# SciPy's own array-API test suites run on xad beside array_api_strict, as a real client's
# tests: fails when a test passes on array_api_strict and fails on xad (listed, with counts),
# unless ci/scipy_suite_compare.py lists it as justified (JUSTIFIED, with the reason).
# Its own CI job, not part of ci/test.sh: too slow for it (about 27,200 tests per backend;
# 18 minutes with -n 2 on 2 shared cores: signal 4, stats 3.7, integrate/special/fft ~1.8
# each, the rest under 1.6). Pass a few modules to run a subset.
#   bash ci/scipy_suite.sh [module ...]          (default: the eleven modules below)
# Environment: VENV (default .venv), SCIPY_SUITE_JOBS (xdist workers, default 2; 0: none),
# SCIPY_SUITE_REPORT (keep the junit XML here), SCIPY_XAD_BACKEND (xad's backend, numpy).
# SciPy's conftest learns of xad through ci/scipy_xad_plugin.py (a pytest plugin; nothing
# in site-packages is edited). xad runs with float64 as its default dtype, as SciPy sets torch.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
VENV="${VENV:-.venv}"
case "$VENV" in /*) ;; *) VENV="$ROOT/$VENV" ;; esac
PY="$VENV/bin/python"
MODULES=("$@")
[ ${#MODULES[@]} -gt 0 ] || MODULES=(special fft integrate cluster stats signal ndimage
                                      optimize interpolate linalg differentiate)
# SciPy wheels ship their tests; the `arrayapi` extra pins scipy>=1.17.
"$PY" -c "import scipy, array_api_strict, hypothesis" 2>/dev/null \
    || "$PY" -m pip install -q "scipy>=1.17" array-api-strict hypothesis
JOBS="${SCIPY_SUITE_JOBS:-2}"
XDIST=()
if [ "$JOBS" != 0 ] && "$PY" -c "import xdist" 2>/dev/null; then XDIST=(-n "$JOBS"); fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
REPORT="${SCIPY_SUITE_REPORT:-$WORK/report.xml}"
TARGETS=()
for m in "${MODULES[@]}"; do TARGETS+=("scipy.$m"); done
START=$SECONDS
(cd "$WORK" && SCIPY_ARRAY_API=1 PYTHONPATH="$ROOT/ci:$ROOT${PYTHONPATH:+:$PYTHONPATH}" \
    "$PY" -m pytest --pyargs "${TARGETS[@]}" -p scipy_xad_plugin -m array_api_backends \
    -q -p no:cacheprovider --disable-warnings --tb=no -rN "${XDIST[@]}" \
    --junitxml="$REPORT" >"$WORK/log.txt" 2>&1) || true
tail -n 1 "$WORK/log.txt"
echo "scipy-suite: ${MODULES[*]}: $((SECONDS - START)) s"
"$PY" "$ROOT/ci/scipy_suite_compare.py" "$REPORT" || { tail -n 30 "$WORK/log.txt"; exit 1; }
