#!/usr/bin/env bash
# The Array API conformance suite (data-apis/array-api-tests, a copy in ../shared) run
# against xad, printing the pass rate. Not part of ci/test.sh: about 1,400 tests, 1 to 3
# minutes on 2 cores (far more while many fail: hypothesis shrinks each failure), and it
# needs the suite's copy in ../shared; run it as its own CI job.
#   bash ci/conformance.sh [numpy|array_api_strict|torch|jax] [extra pytest args]
# Environment: VENV (default .venv), AAT_DIR (default ../shared/array-api-tests),
# AAT_EXAMPLES (hypothesis examples per test, default 5), AAT_REPORT (the JSON report).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
VENV="${VENV:-.venv}"
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
tail -n 3 "$WORK/log.txt"
"$VENV/bin/python" - "$REPORT" "$BACKEND" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
n = s.get("total", 0)
rate = 100.0 * s.get("passed", 0) / n if n else 0.0
print(f"conformance ({sys.argv[2]}): {s.get('passed', 0)} passed, {s.get('failed', 0)} "
      f"failed, {s.get('skipped', 0)} skipped of {n}: {rate:.1f}% pass")
PY
