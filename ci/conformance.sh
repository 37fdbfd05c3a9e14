#!/usr/bin/env bash
# The Array API conformance suite (data-apis/array-api-tests, a copy in ../shared) run
# against xad, printing the pass rate; with AAT_FLOOR set, fails when the rate is below it.
# ci/test.sh runs it after the tests for numpy and array_api_strict (AAT_FLOOR=98, -n 2:
# 0.5 to 2 minutes each on 2 cores). Without the suite's copy it skips with a message.
#   bash ci/conformance.sh [numpy|array_api_strict|torch|jax] [extra pytest args]
# Environment: VENV (default .venv), AAT_DIR (default ../shared/array-api-tests),
# AAT_EXAMPLES (hypothesis examples per test, default 5), AAT_REPORT (the JSON report),
# AAT_FLOOR (the lowest pass rate accepted, in percent; unset: no check).
# Every failure and skip is listed with its reason in docs/CONFORMANCE_DEVIATIONS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
VENV="${VENV:-.venv}"
case "$VENV" in /*) ;; *) VENV="$ROOT/$VENV" ;; esac  # the suite runs from a copy elsewhere
BACKEND="${1:-numpy}"
shift || true
SUITE="${AAT_DIR:-$ROOT/../shared/array-api-tests}"
if [ ! -d "$SUITE/array_api_tests" ]; then
    echo "conformance: skipped: no copy of array-api-tests at $SUITE (set AAT_DIR)"
    exit 0
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cp -r "$SUITE" "$WORK/suite"  # the suite writes .hypothesis/ where it runs
REPORT="${AAT_REPORT:-$WORK/report.json}"
cd "$WORK/suite"
PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" \
ARRAY_API_TESTS_MODULE="exec('import xad; xad.set_backend(\"$BACKEND\"); xp = xad')" \
ARRAY_API_TESTS_VERSION=2024.12 \
"$VENV/bin/python" -m pytest array_api_tests -q -p no:cacheprovider \
    --max-examples "${AAT_EXAMPLES:-5}" --json-report --json-report-file="$REPORT" \
    --disable-warnings "$@" >"$WORK/log.txt" 2>&1 || true
grep -E '^(FAILED|ERROR) ' "$WORK/log.txt" | cut -c1-200 || true
tail -n 1 "$WORK/log.txt"
"$VENV/bin/python" - "$REPORT" "$BACKEND" "${AAT_FLOOR:-}" <<'PY'
import json, os, sys
report, backend, floor = sys.argv[1:]
s = json.load(open(report))["summary"] if os.path.exists(report) else {}
n = s.get("total", 0)
rate = 100.0 * s.get("passed", 0) / n if n else 0.0
print(f"conformance ({backend}): {s.get('passed', 0)} passed, {s.get('failed', 0)} "
      f"failed, {s.get('skipped', 0)} skipped of {n}: {rate:.1f}% pass")
if floor and rate < float(floor):
    sys.exit(f"conformance ({backend}): {rate:.1f}% is below the floor of {floor}%; see the "
             f"failures above and docs/CONFORMANCE_DEVIATIONS.md")
PY
