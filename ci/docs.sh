#!/usr/bin/env bash
# The documentation site (MkDocs + Material + mkdocstrings; mkdocs.yml).
#   bash ci/docs.sh          build with --strict into site/, check that every public name has
#                            a rendered API entry, then load every page in headless Chromium
#                            (ci/docs_browser.py; screenshots in site/screenshots/, or
#                            in $DOCS_SCREENSHOTS: docs/screenshots/ refreshes the
#                            committed ones the README shows)
#   bash ci/docs.sh serve    serve it on http://127.0.0.1:8000 (rebuilds on edits)
# Installs what it needs: the `docs` extra into $VENV (default .venv), and Debian's chromium
# (when root and missing; without it the browser check is skipped, saying so). The example
# gallery (docs/gallery/, generated) is made first: ci/docs_gallery.py.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
PY="${PYTHON:-python3}"
export NO_MKDOCS_2_WARNING=1 MPLBACKEND=Agg
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -c "import mkdocs, material, mkdocstrings_handlers.python, playwright, matplotlib, sklearn" \
  2>/dev/null || "$VENV/bin/python" -m pip install -q -e ".[docs]"
need_apt() { ! command -v "$1" >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; }
apt_install() {
  apt-get install -y -q "$@" >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "$@" >/dev/null 2>&1; }
}
# graphviz's `dot` draws the gallery's graphs; chromium runs the browser check
if need_apt dot; then apt_install graphviz || echo "docs: could not install graphviz"; fi

if [ "${1:-}" = serve ]; then
  [ -d docs/gallery ] || "$VENV/bin/python" ci/docs_gallery.py
  exec "$VENV/bin/mkdocs" serve -a "${DOCS_ADDR:-127.0.0.1:8000}"
fi

start=$SECONDS
lap() { echo "docs: $1 took $((SECONDS - t)) s"; t=$SECONDS; }
t=$SECONDS
"$VENV/bin/python" ci/docs_gallery.py; lap "the example gallery"
"$VENV/bin/mkdocs" build --strict --quiet; lap "mkdocs build --strict"
"$VENV/bin/python" ci/docs_api.py site
if need_apt chromium && [ -z "${XAD_CHROMIUM:-}" ]; then
  apt_install chromium || echo "docs: could not install chromium"
fi
t=$SECONDS
"$VENV/bin/python" ci/docs_browser.py site --screenshots "${DOCS_SCREENSHOTS:-site/screenshots}"
lap "the browser check"
echo "docs: built and checked in $((SECONDS - start)) s"
