#!/usr/bin/env bash
# Build a wheel and prove `import xad` (and its backends' entry points) work from a fresh venv.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$VENV/bin/python" -m pip wheel -q --no-deps -w "$tmp/dist" .
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q "$tmp"/dist/xad-*.whl
(cd "$tmp" && "$tmp/venv/bin/python" - <<'PY'
import xad, xad_backends
assert "site-packages" in xad.__file__, xad.__file__
x = xad.tensor([1.0, 2.0], requires_grad=True)
(x * x).sum().backward()
assert x.grad.tolist() == [2.0, 4.0]
print("wheel: import xad ok from", xad.__file__, "| backends:", xad.available_backends())
PY
)
