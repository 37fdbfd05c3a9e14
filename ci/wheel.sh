#!/usr/bin/env bash
# Build an sdist and, from it, a wheel (python -m build) and prove each installs into a fresh venv:
# `import xad` (and its backends' entry points) works, the version is the source's, the
# wheel ships py.typed, and the sdist builds a wheel of its own on install.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$VENV/bin/python" -c "import build" 2>/dev/null || "$VENV/bin/python" -m pip install -q build
# the sdist first, then the wheel built from the unpacked sdist (so a file missing from the
# sdist fails here); --no-isolation: this venv's setuptools, no download per run
"$VENV/bin/python" -m build --no-isolation --outdir "$tmp/dist" . >"$tmp/build.log" 2>&1 \
  || { cat "$tmp/build.log"; exit 1; }
version="$("$VENV/bin/python" -c "import ast,sys; m=ast.parse(open('xad/__init__.py').read()); print(next(n.value.value for n in m.body if isinstance(n, ast.Assign) and n.targets[0].id == '__version__'))")"
# (no `| grep -q`: under pipefail its early exit breaks the listing's pipe, a false failure)
python3 -c 'import sys, zipfile; sys.exit("xad/py.typed" not in zipfile.ZipFile(sys.argv[1]).namelist())' \
  "$tmp"/dist/xad-*.whl || { echo "wheel: no xad/py.typed"; exit 1; }
for kind in whl tar.gz; do
  python3 -m venv "$tmp/venv-$kind"
  # the sdist builds with setuptools from the index (build isolation), as a user's pip would
  "$tmp/venv-$kind/bin/python" -m pip install -q "$tmp"/dist/xad-*."$kind"
  (cd "$tmp" && XAD_EXPECT_VERSION="$version" KIND="$kind" "$tmp/venv-$kind/bin/python" - <<'PY'
import importlib.metadata, os, pathlib
import xad, xad_backends
assert "site-packages" in xad.__file__, xad.__file__
assert xad.__version__ == importlib.metadata.version("xad") == os.environ["XAD_EXPECT_VERSION"]
assert (pathlib.Path(xad.__file__).parent / "py.typed").exists(), "py.typed not installed"
x = xad.tensor([1.0, 2.0], requires_grad=True)
(x * x).sum().backward()
assert x.grad.tolist() == [2.0, 4.0]
print(f"{os.environ['KIND']}: import xad {xad.__version__} ok from", xad.__file__,
      "| backends:", xad.available_backends())
PY
  )
done
